"""`Registry` and `Registries` (pkgmgr.registry.client): one operation's view of the configured
registries — ordered, read sparsely and once, checked against the rollback memory (SPEC 5.4),
read ahead concurrently by `prefetch` without changing what is requested, warned or raised."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest

from pkgmgr.config import Config, NetworkSettings, RegistryConfig
from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.registry.client import DEFAULT_NAME, DEFAULT_PRIORITY, Registries, Registry, default_registry_config
from pkgmgr.registry.index_format import entry_path
from pkgmgr.registry.memory import Memory
from pkgmgr.registry.session import Session
from pkgmgr.resources_data import default_registry_dir
from tests.registry.helpers import RegistryDir
from tests.support.servers import FaultServer, Reply, StaticFileServer, closed_port_url

FAST = NetworkSettings(connect_timeout=2.0, read_timeout=2.0, retries=1, parallel=4)


class Ops:
    """Sessions (one per operation) over the same home, closed at the end; warnings kept."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.warnings: list[str] = []
        self._sessions: list[Session] = []

    def session(self, *registries: RegistryConfig, extra: tuple[RegistryConfig, ...] = (),
                allow_expired: bool = False) -> Session:
        s = Session(self.home, Config(network=FAST, registries=registries), allow_expired=allow_expired,
                    warn=self.warnings.append, extra_registries=extra)
        self._sessions.append(s)
        return s

    def registry(self, config: RegistryConfig, **kwargs) -> Registry:
        return Registry(config, self.session(), **kwargs)

    def close(self) -> None:
        for s in self._sessions:
            s.close()


@pytest.fixture
def ops(home: Path) -> Iterator[Ops]:
    o = Ops(home)
    yield o
    o.close()


def http_config(server: StaticFileServer, name: str = "acme", **kwargs) -> RegistryConfig:
    return RegistryConfig(name, server.url, **kwargs)


def entry_url(name: str) -> str:
    return "/" + entry_path(name)


# --- a registry's identity ------------------------------------------------------------------------


def test_a_bad_source_is_a_config_error_naming_the_registry(ops: Ops) -> None:
    with pytest.raises(PkgmgrError) as exc:
        ops.registry(RegistryConfig("broken", "ftp://example.com/index"))
    assert exc.value.code == "invalid_config" and exc.value.message.startswith("registry broken: ")
    assert exc.value.details == {"registry": "broken"}


def test_identity_and_json(ops: Ops) -> None:
    registry = ops.registry(RegistryConfig("acme", "https://registry.example/idx", priority=7, insecure=True))
    assert registry.name == "acme" and registry.source == "https://registry.example/idx/"  # normalised
    assert registry.insecure is True and registry.declared is False and registry.exempt is False
    assert registry.to_json() == {"name": "acme", "source": "https://registry.example/idx/", "priority": 7,
                                  "insecure": True, "workspace": False, "signed": False}


def test_plain_http_off_loopback_is_refused_when_read_not_when_configured(ops: Ops) -> None:
    registry = ops.registry(RegistryConfig("plain", "http://registry.example/idx/"))  # constructing is fine
    with pytest.raises(PkgmgrError) as exc:
        registry.reader  # noqa: B018 - reading the property raises
    assert exc.value.code == "invalid_config" and exc.value.message.startswith("registry plain: ")
    assert exc.value.details == {"registry": "plain"}
    assert ops.registry(RegistryConfig("plain", "http://registry.example/idx/", insecure=True)).reader is not None


def test_the_default_registry_config() -> None:
    config = default_registry_config()
    assert (config.name, config.source, config.priority) == (DEFAULT_NAME, str(default_registry_dir()),
                                                             DEFAULT_PRIORITY)


# --- registry.toml ----------------------------------------------------------------------------------


def test_meta_is_read_once_per_operation(ops: Ops, regdir: RegistryDir, static_server: StaticFileServer) -> None:
    registry = ops.registry(http_config(static_server))
    assert registry.meta().serial == regdir.serial and registry.meta() is registry.meta()
    assert static_server.count("/registry.toml") == 1


def test_a_failed_meta_is_not_read_again(ops: Ops, tmp_path: Path) -> None:
    with FaultServer() as server:
        url = server.url
        server.script("/registry.toml", Reply(404, b"nope"))
        registry = ops.registry(RegistryConfig("acme", server.url))
        with pytest.raises(PkgmgrError) as first:
            registry.meta()
        with pytest.raises(PkgmgrError) as second:
            registry.entry("demo-ext")  # an entry needs the meta: the same error, no new request
        assert server.count("/registry.toml") == 1 and server.count() == 1
    assert first.value is second.value
    assert first.value.code == "invalid_index"
    assert first.value.details == {"registry": "acme", "file": "registry.toml"}
    assert first.value.message == f"registry acme ({url}/) has no registry.toml"


def test_network_errors_name_the_registry_and_its_source(ops: Ops) -> None:
    url = closed_port_url()
    registry = ops.registry(RegistryConfig("acme", url))
    with pytest.raises(PkgmgrError) as exc:
        registry.meta()
    assert exc.value.code == "network_error"
    assert exc.value.message.startswith(f"registry acme ({url}/): ")
    assert exc.value.details["registry"] == "acme"


def test_an_invalid_registry_toml_names_the_registry(ops: Ops, regdir: RegistryDir) -> None:
    (regdir.root / "registry.toml").write_text('[registry]\nformat = 1\nname = "x"\n', encoding="utf-8")
    with pytest.raises(ValidationFailed) as exc:
        ops.registry(RegistryConfig("acme", str(regdir.root))).meta()
    assert exc.value.code == "invalid_index"
    assert exc.value.message.startswith(f"registry acme ({regdir.root}):\n")


def test_a_rollback_against_the_memory(ops: Ops, home: Path, regdir: RegistryDir) -> None:
    memory = Memory(home)
    memory.record(str(regdir.root), regdir.serial + 5, [])
    memory.close()
    with pytest.raises(PkgmgrError) as exc:
        ops.registry(RegistryConfig("acme", str(regdir.root))).meta()
    assert exc.value.code == "registry_rollback"
    exempt = ops.registry(RegistryConfig("acme", str(regdir.root)), exempt=True)
    assert exempt.remembered_serial() is None and exempt.meta().serial == regdir.serial


def test_an_expired_registry_unless_allowed(ops: Ops, tmp_path: Path) -> None:
    expired = RegistryDir(tmp_path / "old", "old", expires="2020-01-01T00:00:00Z")
    config = RegistryConfig("old", str(expired.root))
    with pytest.raises(PkgmgrError) as exc:
        Registry(config, ops.session()).meta()
    assert exc.value.code == "registry_expired"
    assert Registry(config, ops.session(allow_expired=True)).meta().serial == expired.serial


# --- entries ----------------------------------------------------------------------------------------


def test_entries_are_read_once_and_only_when_asked(ops: Ops, regdir: RegistryDir,
                                                   static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0")
    regdir.publish("other-ext", "1.0.0")
    registry = ops.registry(http_config(static_server))
    entry = registry.entry("demo-ext")
    assert entry is not None and [v.version for v in entry.versions] == ["0.1.0"]
    assert registry.entry("demo-ext") is entry
    assert registry.entry("missing-ext") is None and registry.entry("missing-ext") is None
    routes = [r.route for r in static_server.requests]
    assert routes == ["/registry.toml", entry_url("demo-ext"), entry_url("missing-ext")]


def test_a_name_that_is_no_extension_name_is_not_requested(ops: Ops, regdir: RegistryDir,
                                                           static_server: StaticFileServer) -> None:
    registry = ops.registry(http_config(static_server))
    for name in ("Demo_Ext", "../registry", "x", "a" * 80):
        assert registry.entry(name) is None
    assert [r.route for r in static_server.requests] == ["/registry.toml"]


def test_an_invalid_entry_names_the_registry(ops: Ops, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    (regdir.root / entry_path("demo-ext")).write_text('name = "demo-ext"\nversions = 3\n', encoding="utf-8")
    with pytest.raises(ValidationFailed) as exc:
        ops.registry(RegistryConfig("acme", str(regdir.root))).entry("demo-ext")
    assert exc.value.code == "invalid_index" and exc.value.message.startswith(f"registry acme ({regdir.root}):")


def test_a_changed_checksum_is_refused(ops: Ops, home: Path, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    memory = Memory(home)
    memory.record(str(regdir.root), regdir.serial, [("demo-ext", "0.1.0", "f" * 64, False)])
    memory.close()
    with pytest.raises(PkgmgrError) as exc:
        ops.registry(RegistryConfig("acme", str(regdir.root))).entry("demo-ext")
    assert exc.value.code == "registry_checksum_changed" and exc.value.details["name"] == "demo-ext"
    exempt = ops.registry(RegistryConfig("acme", str(regdir.root)), exempt=True)
    assert exempt.entry("demo-ext") is not None  # the shipped registry has no memory to check


def test_a_vanished_version_is_warned_about_once(ops: Ops, home: Path, regdir: RegistryDir) -> None:
    published = regdir.publish("demo-ext", "0.1.0")
    memory = Memory(home)
    memory.record(str(regdir.root), regdir.serial,
                  [("demo-ext", "0.1.0", published.sha256, False), ("demo-ext", "0.2.0", "e" * 64, False)])
    memory.close()
    registry = ops.registry(RegistryConfig("acme", str(regdir.root)))
    assert registry.vanished("demo-ext") == ()
    registry.entry("demo-ext")
    registry.entry("demo-ext")
    assert registry.vanished("demo-ext") == ("0.2.0",)
    assert ops.warnings == ["registry acme: demo-ext 0.2.0 no longer listed; treated as yanked"]


# --- remembering -----------------------------------------------------------------------------------


def test_remember_records_the_serial_and_the_versions_read(ops: Ops, home: Path, regdir: RegistryDir) -> None:
    first = regdir.publish("demo-ext", "0.1.0")
    second = regdir.publish("demo-ext", "0.2.0")
    regdir.publish("other-ext", "1.0.0")
    registry = ops.registry(RegistryConfig("acme", str(regdir.root)))
    registry.entry("demo-ext")
    registry.remember()
    memory = Memory(home)
    try:
        assert memory.serial(str(regdir.root)) == regdir.serial
        assert sorted(memory.known(str(regdir.root), "demo-ext").values()) == [
            ("0.1.0", first.sha256), ("0.2.0", second.sha256)]
        assert memory.known(str(regdir.root), "other-ext") == {}  # never read
    finally:
        memory.close()


def test_remember_before_any_read_or_for_the_default_records_nothing(ops: Ops, home: Path,
                                                                    regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    ops.registry(RegistryConfig("acme", str(regdir.root))).remember()
    exempt = ops.registry(RegistryConfig("acme", str(regdir.root)), exempt=True)
    exempt.entry("demo-ext")
    exempt.remember()
    assert not (home / "state.db").exists()


def test_a_failed_read_is_not_remembered(ops: Ops, home: Path, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    memory = Memory(home)
    memory.record(str(regdir.root), 1, [("demo-ext", "0.1.0", "f" * 64, False)])
    memory.close()
    registry = ops.registry(RegistryConfig("acme", str(regdir.root)))
    with pytest.raises(PkgmgrError):
        registry.entry("demo-ext")
    registry.remember()
    memory = Memory(home)
    try:
        assert list(memory.known(str(regdir.root), "demo-ext").values()) == [("0.1.0", "f" * 64)]
    finally:
        memory.close()


# --- index.json and archive locations ----------------------------------------------------------------


def test_the_index(ops: Ops, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    index = ops.registry(RegistryConfig("acme", str(regdir.root))).index()
    assert index is not None and index.serial == regdir.serial
    assert [e.name for e in index.extensions] == ["demo-ext"]
    (regdir.root / "index.json").unlink()
    assert ops.registry(RegistryConfig("acme", str(regdir.root))).index() is None


def test_an_index_newer_than_registry_toml_is_warned_about(ops: Ops, regdir: RegistryDir) -> None:
    old_meta = (regdir.root / "registry.toml").read_bytes()
    regdir.publish("demo-ext", "0.1.0")  # both files move to the next serial
    (regdir.root / "registry.toml").write_bytes(old_meta)
    index = ops.registry(RegistryConfig("acme", str(regdir.root))).index()
    assert index is not None and index.serial == regdir.serial
    assert ops.warnings == [f"registry acme: index.json (serial {regdir.serial}) is newer than registry.toml "
                            f"(serial {regdir.serial - 1})"]


def test_an_index_rolled_back_below_the_memory_is_refused(ops: Ops, home: Path, regdir: RegistryDir) -> None:
    old_index = (regdir.root / "index.json").read_bytes()
    regdir.publish("demo-ext", "0.1.0")
    memory = Memory(home)
    memory.record(str(regdir.root), regdir.serial, [])
    memory.close()
    (regdir.root / "index.json").write_bytes(old_index)
    with pytest.raises(PkgmgrError) as exc:
        ops.registry(RegistryConfig("acme", str(regdir.root))).index()
    assert exc.value.code == "registry_rollback" and exc.value.details["file"] == "index.json"
    assert exc.value.hint == "if the registry was really reset, 'pkgmgr registry remove acme' and add it again"


def test_locate_in_a_directory_and_over_http(ops: Ops, regdir: RegistryDir, static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0")
    local = ops.registry(RegistryConfig("acme", str(regdir.root)))
    version = local.entry("demo-ext").versions[0]
    location = local.locate(version)
    assert location.path == (regdir.root / version.url).resolve()
    remote = ops.registry(http_config(static_server))
    assert remote.locate(version).url == f"{static_server.url}/{version.url}" and remote.locate(version).path is None


def test_a_plain_http_archive_url_off_loopback_is_an_index_error(ops: Ops, regdir: RegistryDir,
                                                                 static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0", url="http://cdn.example/demo-ext-0.1.0.tar.gz")
    registry = ops.registry(http_config(static_server))
    version = registry.entry("demo-ext").versions[0]
    with pytest.raises(PkgmgrError) as exc:
        registry.locate(version)
    assert exc.value.code == "invalid_index" and exc.value.message.startswith("registry acme: version 0.1.0: ")
    assert exc.value.details == {"registry": "acme", "url": "http://cdn.example/demo-ext-0.1.0.tar.gz"}
    insecure = ops.registry(http_config(static_server, insecure=True))
    assert insecure.locate(version).url == "http://cdn.example/demo-ext-0.1.0.tar.gz"


# --- reading ahead -----------------------------------------------------------------------------------


def test_prefetch_reads_entries_that_entry_then_serves(ops: Ops, regdir: RegistryDir,
                                                       static_server: StaticFileServer) -> None:
    for name in ("a-ext", "b-ext", "c-ext"):
        regdir.publish(name, "1.0.0", write=False)
    regdir.write()
    registry = ops.registry(http_config(static_server))
    assert registry.listed("a-ext") is None  # not read yet
    assert registry.prefetch(["a-ext", "b-ext", "a-ext", "missing-ext", "Not_A_Name"], workers=4) is True
    assert sorted(r.route for r in static_server.requests) == sorted(
        ["/registry.toml", entry_url("a-ext"), entry_url("b-ext"), entry_url("missing-ext")])
    assert (registry.listed("a-ext"), registry.listed("missing-ext"), registry.listed("c-ext")) == (True, False, None)
    static_server.clear()
    assert registry.entry("a-ext") is not None and registry.entry("missing-ext") is None
    assert static_server.count() == 0  # served from what was read ahead
    assert registry.prefetch(["a-ext", "b-ext"], workers=4) is True and static_server.count() == 0


def test_prefetch_skips_a_local_directory(ops: Ops, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    registry = ops.registry(RegistryConfig("acme", str(regdir.root)))
    assert registry.prefetch(["demo-ext"], workers=4) is False
    assert registry.listed("demo-ext") is None


def test_prefetch_of_an_unreadable_registry_reads_nothing_more(ops: Ops) -> None:
    with FaultServer() as server:
        server.script("/registry.toml", Reply(500, b"down"))
        registry = ops.registry(RegistryConfig("acme", server.url))
        assert registry.prefetch(["demo-ext"], workers=4) is False
        with pytest.raises(PkgmgrError) as exc:
            registry.entry("demo-ext")  # the error belongs to entry()
        assert [r.route for r in server.requests] == ["/registry.toml"]
    assert exc.value.code == "http_error"


def test_a_failed_read_ahead_is_raised_by_entry(ops: Ops, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    with FaultServer() as server:
        url = server.url
        server.script("/registry.toml", Reply(200, (regdir.root / "registry.toml").read_bytes()))
        server.script(entry_url("demo-ext"), Reply(500, b"broken"))
        registry = ops.registry(RegistryConfig("acme", server.url))
        assert registry.prefetch(["demo-ext"], workers=2) is True
        assert registry.listed("demo-ext") is None  # the read failed: unknown
        with pytest.raises(PkgmgrError) as exc:
            registry.entry("demo-ext")
        assert server.count(entry_url("demo-ext")) == 1  # raised from the read ahead, not read again
    assert exc.value.code == "http_error" and exc.value.message.startswith(f"registry acme ({url}/): ")


def test_prefetched_entries_are_still_checked(ops: Ops, home: Path, regdir: RegistryDir,
                                              static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0")
    memory = Memory(home)
    memory.record(static_server.url + "/", regdir.serial, [("demo-ext", "0.1.0", "f" * 64, False)])
    memory.close()
    registry = ops.registry(http_config(static_server))
    assert registry.prefetch(["demo-ext"], workers=2) is True
    with pytest.raises(PkgmgrError) as exc:
        registry.entry("demo-ext")
    assert exc.value.code == "registry_checksum_changed"


# --- the registries of an operation ----------------------------------------------------------------


def test_order_by_priority_then_declaration_with_default_last(ops: Ops, tmp_path: Path) -> None:
    configs = (RegistryConfig("b", str(tmp_path / "b"), priority=50),
               RegistryConfig("a", str(tmp_path / "a"), priority=50),
               RegistryConfig("first", str(tmp_path / "f"), priority=1),
               RegistryConfig("default", str(tmp_path / "mine"), priority=0))  # the name is the shipped one's
    extra = (RegistryConfig("ws-late", str(tmp_path / "w2"), priority=200),
             RegistryConfig("ws-early", str(tmp_path / "w1"), priority=0))
    registries = Registries(ops.session(), configs, extra)
    assert registries.names() == ["first", "b", "a", "ws-early", "ws-late", "default"]
    assert [r.declared for r in registries.ordered] == [False, False, False, True, True, False]
    assert [r.exempt for r in registries.ordered] == [False] * 5 + [True]
    assert registries.get("default").source == str(default_registry_dir())


def test_workspace_registries_may_not_reuse_names(ops: Ops, tmp_path: Path) -> None:
    configs = (RegistryConfig("mine", str(tmp_path / "m")),)
    with pytest.raises(PkgmgrError) as exc:
        Registries(ops.session(), configs, [RegistryConfig("mine", str(tmp_path / "x")),
                                            RegistryConfig("default", str(tmp_path / "y"))])
    assert exc.value.code == "invalid_config" and exc.value.details == {"registries": ["default", "mine"]}


def test_get_an_unknown_registry(ops: Ops, tmp_path: Path) -> None:
    registries = Registries(ops.session(), (RegistryConfig("mine", str(tmp_path / "m")),))
    assert registries.get("mine").name == "mine"
    with pytest.raises(PkgmgrError) as exc:
        registries.get("theirs")
    assert exc.value.code == "not_found" and exc.value.details == {"registry": "theirs",
                                                                   "registries": ["mine", "default"]}


def test_lookup_the_first_listing_answers_never_merged(ops: Ops, tmp_path: Path) -> None:
    high, low = RegistryDir(tmp_path / "high", "high"), RegistryDir(tmp_path / "low", "low")
    high.publish("demo-ext", "0.1.0")
    low.publish("demo-ext", "9.0.0")
    low.publish("low-only", "1.0.0")
    registries = Registries(ops.session(), (RegistryConfig("low", str(low.root), priority=20),
                                            RegistryConfig("high", str(high.root), priority=10)))
    registry, entry = registries.lookup("demo-ext")
    assert registry.name == "high" and [v.version for v in entry.versions] == ["0.1.0"]
    assert registries.lookup("low-only")[0].name == "low"
    with pytest.raises(PkgmgrError) as exc:
        registries.lookup("nowhere-ext")
    assert exc.value.code == "not_found" and exc.value.details == {"name": "nowhere-ext",
                                                                   "registries": ["high", "low", "default"]}
    assert "looked in high, low, default" in exc.value.message


def test_an_unreadable_registry_stops_the_lookup(ops: Ops, tmp_path: Path) -> None:
    good = RegistryDir(tmp_path / "good", "good")
    good.publish("demo-ext", "0.1.0")
    broken = RegistryDir(tmp_path / "broken", "broken")
    (broken.root / "registry.toml").unlink()
    registries = Registries(ops.session(), (RegistryConfig("broken", str(broken.root), priority=1),
                                            RegistryConfig("good", str(good.root), priority=2)))
    with pytest.raises(PkgmgrError) as exc:
        registries.lookup("demo-ext")  # a later registry listing it does not answer instead
    assert exc.value.code == "invalid_index" and exc.value.details["registry"] == "broken"


def test_prefetch_asks_each_registry_only_for_names_earlier_ones_lack(ops: Ops, tmp_path: Path) -> None:
    first, second = RegistryDir(tmp_path / "one", "one"), RegistryDir(tmp_path / "two", "two")
    first.publish("a-ext", "1.0.0")
    second.publish("a-ext", "2.0.0")
    second.publish("b-ext", "1.0.0")
    with StaticFileServer(first.root, name="one") as one, StaticFileServer(second.root, name="two") as two:
        s = ops.session(RegistryConfig("one", one.url, priority=1), RegistryConfig("two", two.url, priority=2))
        s.registries.prefetch(["a-ext", "b-ext", "c-ext", "Bad Name"])
        assert sorted(r.route for r in one.requests) == sorted(
            ["/registry.toml", entry_url("a-ext"), entry_url("b-ext"), entry_url("c-ext")])
        assert sorted(r.route for r in two.requests) == sorted(
            ["/registry.toml", entry_url("b-ext"), entry_url("c-ext")])
        one.clear()
        two.clear()
        assert s.registries.lookup("a-ext")[0].name == "one"
        assert s.registries.lookup("b-ext")[0].name == "two"
        with pytest.raises(PkgmgrError):
            s.registries.lookup("c-ext")
        assert one.count() == two.count() == 0  # every answer was read ahead


def test_prefetch_stops_at_an_unreadable_registry(ops: Ops, tmp_path: Path) -> None:
    later = RegistryDir(tmp_path / "later", "later")
    later.publish("demo-ext", "1.0.0")
    with FaultServer() as down, StaticFileServer(later.root, name="later") as up:
        down.script("/registry.toml", Reply(503, b"down"))
        s = ops.session(RegistryConfig("down", down.url, priority=1), RegistryConfig("later", up.url, priority=2))
        s.registries.prefetch(["demo-ext"])
        assert up.count() == 0  # the lookup would stop at `down`: nothing to read ahead after it
        with pytest.raises(PkgmgrError) as exc:
            s.registries.lookup("demo-ext")
    assert exc.value.details["registry"] == "down"


def test_a_copied_local_registry_is_another_source(ops: Ops, home: Path, regdir: RegistryDir,
                                                   tmp_path: Path) -> None:
    """The memory is keyed by the source: a copy of a registry starts with no memory."""
    regdir.publish("demo-ext", "0.1.0")
    registry = ops.registry(RegistryConfig("acme", str(regdir.root)))
    registry.entry("demo-ext")
    registry.remember()
    copy = tmp_path / "copy"
    shutil.copytree(regdir.root, copy)
    assert ops.registry(RegistryConfig("acme", str(copy))).remembered_serial() is None
    assert ops.registry(RegistryConfig("acme", str(regdir.root))).remembered_serial() == regdir.serial
