"""Registry sources (SPEC 5.2) read sparsely and through the cache (5.2): a local directory, a
static HTTP server and a fake GitHub, all real, on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.config import Config, NetworkSettings, RegistryConfig
from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.readers import parse_source
from pkgmgr.registry.session import Session
from tests.registry.helpers import RegistryDir
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import StaticFileServer

FAST = NetworkSettings(connect_timeout=2.0, read_timeout=2.0, retries=1)


def session(home: Path, *registries: RegistryConfig, offline: bool = False, warnings: list | None = None) -> Session:
    config = Config(network=FAST, registries=tuple(registries))
    return Session(home, config, offline=offline, warn=(warnings.append if warnings is not None else None))


def test_parse_source_forms(tmp_path: Path) -> None:
    assert parse_source("github:acme/index").text == "github:acme/index@main"
    assert parse_source("github:acme/index@v2").ref == "v2"
    assert parse_source("https://example.com/idx").text == "https://example.com/idx/"
    assert parse_source("./idx", cwd=tmp_path).text == str(tmp_path / "idx")
    for bad in ("github:acme", "ftp://x/y", "https://u:p@example.com/", "https://example.com/?q=1"):
        with pytest.raises(PkgmgrError) as exc:
            parse_source(bad)
        assert exc.value.code == "usage"


def test_directory_registry(home: Path, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    s = session(home, RegistryConfig("acme", str(regdir.root)))
    registry, entry = s.registries.lookup("demo-ext")
    assert registry.name == "acme" and entry.versions[0].version == "0.1.0"
    location = registry.locate(entry.versions[0])
    assert location.path == (regdir.root / "archives" / "demo-ext-0.1.0.tar.gz").resolve()
    with pytest.raises(PkgmgrError) as exc:
        s.registries.lookup("other-ext")
    assert exc.value.code == "not_found" and "acme, default" in exc.value.message


def test_registries_by_priority_first_listing_answers(home: Path, tmp_path: Path) -> None:
    low = RegistryDir(tmp_path / "low", "low")
    high = RegistryDir(tmp_path / "high", "high")
    low.publish("demo-ext", "9.0.0")
    high.publish("demo-ext", "0.1.0")
    s = session(home, RegistryConfig("low", str(low.root), priority=200),
                RegistryConfig("high", str(high.root), priority=10))
    assert s.registries.names() == ["high", "low", "default"]
    registry, entry = s.registries.lookup("demo-ext")
    assert registry.name == "high" and [v.version for v in entry.versions] == ["0.1.0"]  # never merged


def test_unreadable_registry_stops_resolution(home: Path, tmp_path: Path) -> None:
    broken = RegistryDir(tmp_path / "broken", "broken")
    good = RegistryDir(tmp_path / "good", "good")
    good.publish("demo-ext", "0.1.0")
    (broken.root / "registry.toml").write_text("not toml [", encoding="utf-8")
    s = session(home, RegistryConfig("broken", str(broken.root), priority=1), RegistryConfig("good", str(good.root)))
    with pytest.raises(PkgmgrError) as exc:
        s.registries.lookup("demo-ext")
    assert exc.value.code == "invalid_index"
    assert "registry broken" in exc.value.message and "registry.toml" in exc.value.message


def test_invalid_entry_names_the_file_and_key(home: Path, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    regdir.change("demo-ext", "0.1.0", sha256="XYZ")
    s = session(home, RegistryConfig("acme", str(regdir.root)))
    with pytest.raises(PkgmgrError) as exc:
        s.registries.lookup("demo-ext")
    problem = exc.value.details["problems"][0]
    assert (problem["file"], problem["key"]) == ("extensions/de/demo-ext.toml", "versions[0].sha256")


def test_static_http_is_sparse_and_revalidated(home: Path, regdir: RegistryDir,
                                               static_server: StaticFileServer) -> None:
    for i in range(30):
        regdir.publish(f"filler-{i:02d}", "1.0.0", write=False)
    regdir.publish("demo-ext", "0.1.0")
    config = RegistryConfig("acme", static_server.url + "/")
    s = session(home, config)
    s.registries.lookup("demo-ext")
    assert sorted(r.path for r in static_server.requests) == ["/extensions/de/demo-ext.toml", "/registry.toml"]
    static_server.clear()
    s2 = session(home, config)
    s2.registries.lookup("demo-ext")
    statuses = [(r.path, "if-none-match" in r.headers) for r in static_server.requests]
    assert statuses == [("/registry.toml", True), ("/extensions/de/demo-ext.toml", True)]


def test_static_http_missing_name_is_not_listed(home: Path, regdir: RegistryDir,
                                                static_server: StaticFileServer) -> None:
    s = session(home, RegistryConfig("acme", static_server.url))
    assert s.registries.get("acme").entry("nothing-here") is None


def test_offline_uses_only_the_cache(home: Path, regdir: RegistryDir, static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0")
    config = RegistryConfig("acme", static_server.url)
    session(home, config).registries.lookup("demo-ext")
    static_server.clear()
    registry, entry = session(home, config, offline=True).registries.lookup("demo-ext")
    assert entry.name == "demo-ext" and static_server.count() == 0
    with pytest.raises(PkgmgrError) as exc:
        session(home, config, offline=True).registries.get("acme").entry("other-ext")
    assert exc.value.code == "network_error" and "offline" in exc.value.message


def test_plain_http_needs_loopback_or_insecure(home: Path) -> None:
    s = session(home, RegistryConfig("far", "http://registry.example.com/"))
    with pytest.raises(PkgmgrError) as exc:
        s.registries.lookup("demo-ext")
    assert "loopback" in exc.value.message


def test_github_registry_reads_one_commit(home: Path, regdir: RegistryDir, fake_github: FakeGitHub) -> None:
    regdir.publish("demo-ext", "0.1.0")
    files = {p.relative_to(regdir.root).as_posix(): p.read_bytes() for p in regdir.root.rglob("*") if p.is_file()}
    sha = fake_github.add_repo("acme", "index", files)
    config = RegistryConfig("acme", "github:acme/index")
    registry, entry = session(home, config).registries.lookup("demo-ext")
    location = registry.locate(entry.versions[0])
    assert location.url == f"{fake_github.raw_url}/acme/index/{sha}/archives/demo-ext-0.1.0.tar.gz"
    raw_paths = sorted(r.path for r in fake_github.raw.requests)
    assert raw_paths == [f"/acme/index/{sha}/extensions/de/demo-ext.toml", f"/acme/index/{sha}/registry.toml"]
    # second operation: the branch did not move -> a 304 on the commit, nothing from the raw host
    fake_github.api.clear()
    fake_github.raw.clear()
    session(home, config).registries.lookup("demo-ext")
    assert [r.headers.get("if-none-match") for r in fake_github.api.requests] == [f'"{sha}"']
    assert fake_github.raw.count() == 0
    # a new commit is read at its own sha
    regdir.publish("demo-ext", "0.2.0")
    files = {p.relative_to(regdir.root).as_posix(): p.read_bytes() for p in regdir.root.rglob("*") if p.is_file()}
    new_sha = fake_github.commit("acme", "index", files)
    _, entry = session(home, config).registries.lookup("demo-ext")
    assert [v.version for v in entry.versions] == ["0.1.0", "0.2.0"]
    assert all(f"/{new_sha}/" in r.path for r in fake_github.raw.requests)


def test_dropped_validators_make_a_github_registry_read_again(home: Path, regdir: RegistryDir,
                                                               fake_github: FakeGitHub) -> None:
    regdir.publish("demo-ext", "0.1.0")
    files = {p.relative_to(regdir.root).as_posix(): p.read_bytes() for p in regdir.root.rglob("*") if p.is_file()}
    sha = fake_github.add_repo("acme", "index", files)
    config = RegistryConfig("acme", "github:acme/index")
    registry, _ = session(home, config).registries.lookup("demo-ext")
    registry.cache.drop_validators()  # what `registry refresh acme` does first
    _, entry = session(home, config, offline=True).registries.lookup("demo-ext")  # the bodies stay
    assert entry.name == "demo-ext"
    fake_github.api.clear()
    fake_github.raw.clear()
    session(home, config).registries.lookup("demo-ext")
    assert [r.headers.get("if-none-match") for r in fake_github.api.requests] == [None]  # the commit, afresh
    # files at a commit never change, but a stale one is fetched again rather than trusted
    assert sorted(r.path for r in fake_github.raw.requests) == [
        f"/acme/index/{sha}/extensions/de/demo-ext.toml", f"/acme/index/{sha}/registry.toml"]
    fake_github.raw.clear()
    session(home, config).registries.lookup("demo-ext")
    assert fake_github.raw.count() == 0  # fresh again: cached and used without asking


def test_github_registry_offline_uses_the_cached_commit(home: Path, regdir: RegistryDir,
                                                         fake_github: FakeGitHub) -> None:
    regdir.publish("demo-ext", "0.1.0")
    files = {p.relative_to(regdir.root).as_posix(): p.read_bytes() for p in regdir.root.rglob("*") if p.is_file()}
    fake_github.add_repo("acme", "index", files)
    config = RegistryConfig("acme", "github:acme/index")
    session(home, config).registries.lookup("demo-ext")
    before = sum(s.count() for s in fake_github.servers)
    _, entry = session(home, config, offline=True).registries.lookup("demo-ext")
    assert entry.name == "demo-ext" and sum(s.count() for s in fake_github.servers) == before


def test_default_registry_is_last_and_exempt(home: Path) -> None:
    s = session(home)
    default = s.registries.get("default")
    assert default.exempt and default.config.priority == 1000
    assert default.meta().name == "default"
    assert default.entry("demo-ext") is None
    index = default.index()
    shipped = sorted(p.stem for p in (default.spec.path / "extensions").glob("*/*.toml"))
    assert index is not None and [e.name for e in index.extensions] == shipped


def test_remote_plain_http_archive_url_is_an_index_error(home: Path, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0", url="http://downloads.example.com/demo.tar.gz", data=b"x")
    s = session(home, RegistryConfig("acme", str(regdir.root)))
    registry, entry = s.registries.lookup("demo-ext")
    with pytest.raises(PkgmgrError) as exc:
        registry.locate(entry.versions[0])
    assert exc.value.code == "invalid_index" and "registry acme" in exc.value.message
    insecure = session(home, RegistryConfig("acme", str(regdir.root), insecure=True))
    registry, entry = insecure.registries.lookup("demo-ext")
    assert registry.locate(entry.versions[0]).url == "http://downloads.example.com/demo.tar.gz"


def test_bad_configured_source_is_a_config_error(home: Path) -> None:
    with pytest.raises(PkgmgrError) as exc:
        session(home, RegistryConfig("bad", "github:nobody")).registries.names()
    assert exc.value.code == "invalid_config" and "registry bad" in exc.value.message


def test_workspace_registries_come_after_configured_ones(home: Path, tmp_path: Path) -> None:
    from pkgmgr.registry.client import Registries

    config = [RegistryConfig("mine", str(tmp_path / "a"), priority=500)]
    workspace = [RegistryConfig("team", str(tmp_path / "b"), priority=1)]
    s = session(home)
    assert Registries(s, config, workspace).names() == ["mine", "team", "default"]
    with pytest.raises(PkgmgrError) as exc:
        Registries(s, config, [RegistryConfig("mine", str(tmp_path / "c"))])
    assert exc.value.code == "invalid_config"
