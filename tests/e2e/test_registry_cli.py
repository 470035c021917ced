"""End-to-end: `pkgmgr registry ...` and `pkgmgr ext install|update|info|search` against real
registries on loopback (a static HTTP server and a fake GitHub), through the CLI entry point."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Iterator

import pytest

from pkgmgr.resources_data import default_registry_dir
from tests.registry.conftest import regdir, static_server  # noqa: F401 - shared fixtures
from tests.registry.helpers import RegistryDir, archive_bytes
from tests.support.cli import run_cli
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import StaticFileServer

TOKEN = "ghp_registryTestToken0123456789abcdef"


_DEFAULT = default_registry_dir()
DEFAULT_SERIAL = tomllib.loads((_DEFAULT / "registry.toml").read_text(encoding="utf-8"))["registry"]["serial"]
DEFAULT_COUNT = len(list((_DEFAULT / "extensions").glob("*/*.toml")))

def ok(*args: str, env: dict | None = None) -> dict:
    result = run_cli([*args, "-o", "json"], env=env)
    assert result.code == 0, result
    return result.json


def fail(code: str, *args: str, env: dict | None = None) -> dict:
    result = run_cli([*args, "-o", "json"], env=env)
    assert result.code != 0, result
    doc = result.json
    assert doc["error"]["code"] == code, result
    return doc


@pytest.fixture
def added(regdir: RegistryDir, static_server: StaticFileServer) -> StaticFileServer:
    regdir.publish("demo-ext", "0.1.0")
    regdir.publish("demo-ext", "0.2.0")
    ok("registry", "add", "acme", static_server.url + "/")
    static_server.clear()
    return static_server


# --- registry add / list / remove / refresh ----------------------------------------------------


def test_registry_add_list_remove_keeps_comments(home: Path, regdir: RegistryDir,
                                                  static_server: StaticFileServer) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("# my settings\n[host]\nversion = \"1.0.0\"  # the host\n", encoding="utf-8")
    added = ok("registry", "add", "acme", static_server.url, "--priority", "50")["added"]
    assert added == {"name": "acme", "source": static_server.url + "/", "priority": 50, "insecure": False, "serial": 1,
                     "signed": False}
    text = (home / "config.toml").read_text()
    assert "# my settings" in text and "# the host" in text and "[registries.acme]" in text
    listed = ok("registry", "list")["registries"]
    assert [(r["name"], r["priority"], r["serial"]) for r in listed] == [("acme", 50, 1), ("default", 1000, DEFAULT_SERIAL)]
    assert set(listed[0]) >= {"name", "source", "priority", "serial"}
    fail("usage", "registry", "add", "acme", static_server.url)
    fail("usage", "registry", "add", "default", static_server.url)
    ok("registry", "remove", "acme")
    assert "acme" not in (home / "config.toml").read_text()
    assert "# the host" in (home / "config.toml").read_text()
    fail("not_found", "registry", "remove", "acme")


def test_registry_add_refuses_an_unreachable_source_unless_told_not_to_check(home: Path, tmp_path: Path) -> None:
    fail("not_found", "registry", "add", "later", str(tmp_path / "not-yet"))
    assert [r["name"] for r in ok("registry", "list")["registries"]] == ["default"]
    result = run_cli(["registry", "add", "later", str(tmp_path / "not-yet"), "--no-check"])
    assert result.code == 0 and result.stderr == ""
    assert [r["name"] for r in ok("registry", "list")["registries"]] == ["later", "default"]


def test_registry_add_of_a_server_that_does_not_answer_is_network_error(home: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    document = fail("network_error", "registry", "add", "gone", f"http://127.0.0.1:{port}/")
    assert "nothing was recorded" in document["error"]["message"]
    assert not (home / "config.toml").exists()


def test_registry_add_refuses_plain_http_to_a_remote_host(home: Path) -> None:
    fail("usage", "registry", "add", "far", "http://registry.example.com/")
    result = run_cli(["registry", "add", "far", "http://registry.example.com/", "--insecure", "--offline"])
    assert result.code == 0, result
    assert "insecure = true" in (home / "config.toml").read_text()


def test_registry_remove_forgets_the_rollback_memory(home: Path, regdir: RegistryDir, added: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.3.0")
    ok("registry", "refresh", "acme")
    regdir.serial = 1
    regdir.write()
    fail("registry_rollback", "registry", "refresh")
    ok("registry", "remove", "acme")
    ok("registry", "add", "acme", added.url)  # a reset registry is accepted again once re-added
    assert ok("registry", "refresh")["refreshed"][0]["serial"] == 1


def test_registry_refresh_reads_again_without_validators(regdir: RegistryDir, added: StaticFileServer) -> None:
    first = ok("registry", "refresh")["refreshed"]
    assert [(r["name"], r["extensions"]) for r in first] == [("acme", 1), ("default", DEFAULT_COUNT)]
    ok("ext", "search")
    added.clear()
    ok("ext", "search")
    assert [r.headers.get("if-none-match") is not None for r in added.requests] == [True, True]  # revalidated
    added.clear()
    ok("registry", "refresh", "acme")  # SPEC 5.2: drops the cached validators, reads it again
    assert [(r.path, r.headers.get("if-none-match")) for r in added.requests] == \
        [("/registry.toml", None), ("/index.json", None)]


# --- install ----------------------------------------------------------------------------------


def test_install_touches_registry_toml_one_entry_and_the_archive(home: Path, regdir: RegistryDir,
                                                                  static_server: StaticFileServer) -> None:
    for i in range(20):
        regdir.publish(f"other-{i:02d}", "1.0.0", write=False)
    regdir.publish("demo-ext", "0.1.0")
    ok("registry", "add", "acme", static_server.url)
    static_server.clear()
    installed = ok("ext", "install", "demo-ext")["installed"]
    assert [(i["name"], i["version"], i["source"], i["verified"]) for i in installed] == \
        [("demo-ext", "0.1.0", "registry", True)]
    assert sorted(r.path for r in static_server.requests) == [
        "/archives/demo-ext-0.1.0.tar.gz", "/extensions/de/demo-ext.toml", "/registry.toml"]
    status = ok("ext", "status", "demo-ext")["provenance"]
    assert status["registry"] == "acme"
    assert status["source_url"] == static_server.url + "/archives/demo-ext-0.1.0.tar.gz"


def test_install_resolution_rules_end_to_end(regdir: RegistryDir, added: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.3.0", yanked=True)
    regdir.publish("demo-ext", "0.4.0-rc.1")
    assert ok("ext", "install", "demo-ext")["installed"][0]["version"] == "0.2.0"
    assert ok("ext", "install", "demo-ext@0.3.0")["installed"][0]["version"] == "0.3.0"  # yanked, named exactly
    doc = fail("version_not_found", "ext", "install", "demo-ext@>=0.3,<0.4")
    assert "yanked" in doc["error"]["message"]
    assert ok("ext", "install", "demo-ext@>=0.1", "--pre")["installed"][0]["version"] == "0.4.0-rc.1"
    fail("not_found", "ext", "install", "nowhere-ext")


def test_install_respects_the_host_version(regdir: RegistryDir, added: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.3.0", min_compozy_version="2.0.0")
    env = {"PKGMGR_HOST_VERSION": "1.0.0"}
    assert ok("ext", "install", "demo-ext", env=env)["installed"][0]["version"] == "0.2.0"
    doc = fail("version_not_found", "ext", "install", "demo-ext@0.3.0", env=env)
    assert "needs host 2.0.0" in doc["error"]["message"]


def test_install_from_a_local_directory_registry_and_default_is_empty(home: Path, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    fail("not_found", "ext", "install", "demo-ext")  # only the shipped (empty) default registry
    ok("registry", "add", "local", str(regdir.root))
    assert ok("ext", "install", "demo-ext")["installed"][0]["verified"] is True
    cached = list((home / "cache" / "downloads" / "sha256").rglob("*"))
    assert any(p.is_file() for p in cached)  # the verified copy that was extracted


def test_offline_install_uses_the_cache(regdir: RegistryDir, added: StaticFileServer) -> None:
    ok("ext", "install", "demo-ext@0.1.0")
    ok("ext", "remove", "demo-ext")
    added.clear()
    assert ok("--offline", "ext", "install", "demo-ext@0.1.0")["installed"][0]["version"] == "0.1.0"
    assert added.count() == 0
    doc = fail("network_error", "--offline", "ext", "install", "demo-ext@0.2.0")
    assert "offline" in doc["error"]["message"]


def test_tier_unverified_needs_consent(regdir: RegistryDir, added: StaticFileServer) -> None:
    regdir.publish("loose-ext", "1.0.0", tier="unverified")
    fail("unverified_source", "ext", "install", "loose-ext")
    assert ok("ext", "install", "loose-ext", "--allow-unverified", "--yes")["installed"][0]["verified"] is False


def test_grant_ceiling_and_official_tier(regdir: RegistryDir, added: StaticFileServer) -> None:
    regdir.publish("power-ext", "1.0.0", permissions=("net.write",))
    doc = fail("grant_not_allowed", "ext", "install", "power-ext")
    assert doc["error"]["details"]["grants"] == ["net.write"]
    regdir.publish("core-ext", "1.0.0", permissions=("net.write",), tier="official")
    assert ok("ext", "install", "core-ext")["installed"][0]["name"] == "core-ext"


# --- info / search ------------------------------------------------------------------------------


def test_info_and_search(regdir: RegistryDir, added: StaticFileServer) -> None:
    regdir.publish("review-pack", "1.0.0", description="Code review helpers", permissions=("session.read",))
    info = ok("ext", "info", "review-pack")
    assert info["name"] == "review-pack" and info["registry"] == "acme" and info["latest"] == "1.0.0"
    version = info["versions"][0]
    assert version["permissions"] == ["session.read"] and version["size"] > 0 and version["yanked"] is False
    assert version["network_digest"] == "" and len(version["sha256"]) == 64
    added.clear()
    results = ok("ext", "search", "REVIEW")["results"]
    assert [(r["name"], r["registry"], r["latest"]) for r in results] == [("review-pack", "acme", "1.0.0")]
    assert "/index.json" in [r.path for r in added.requests]
    assert not any(r.path.startswith("/extensions/") for r in added.requests)  # search reads index.json only
    everything = ok("ext", "search")["results"]
    assert [r["name"] for r in everything if r["registry"] == "acme"] == ["demo-ext", "review-pack"]
    fail("not_found", "ext", "info", "missing-ext")
    human = run_cli(["ext", "info", "review-pack"])
    assert human.code == 0 and "VERSION" in human.stdout and "session.read" in human.stdout


# --- update -------------------------------------------------------------------------------------


def test_update_check_then_update(regdir: RegistryDir, added: StaticFileServer) -> None:
    ok("ext", "install", "demo-ext@0.1.0")
    check = ok("ext", "update", "--all", "--check")
    assert [(a["name"], a["version"], a["latest"]) for a in check["available"]] == [("demo-ext", "0.1.0", "0.2.0")]
    assert ok("ext", "list")["extensions"][0]["version"] == "0.1.0"
    dry = ok("ext", "update", "demo-ext", "--dry-run")
    assert dry["planned"][0]["latest"] == "0.2.0" and ok("ext", "list")["extensions"][0]["version"] == "0.1.0"
    updated = ok("ext", "update", "demo-ext")
    assert [(u["name"], u["previous_version"], u["version"]) for u in updated["updated"]] == \
        [("demo-ext", "0.1.0", "0.2.0")]
    again = ok("ext", "update", "--all")
    assert [u["name"] for u in again["unchanged"]] == ["demo-ext"] and again["updated"] == []


def test_update_shows_what_it_installs_before_acting(regdir: RegistryDir, added: StaticFileServer) -> None:
    ok("ext", "install", "demo-ext@0.1.0")
    dry = run_cli(["ext", "update", "demo-ext", "--dry-run"])
    assert dry.code == 0, dry
    assert dry.stdout.splitlines()[-3:] == [
        "would install:", "demo-ext 0.2.0 (resource extension, source registry, verified)", "  permissions: none"]
    updated = run_cli(["ext", "update", "demo-ext"])
    assert updated.code == 0, updated
    assert updated.stderr.splitlines() == ["installing demo-ext 0.2.0 (resource extension, source registry, verified)",
                                           "  permissions: none"]
    assert updated.stdout.splitlines()[0].split() == ["NAME", "INSTALLED", "NEWEST", "STATUS", "NOTE"]


def test_second_update_check_sends_only_conditional_requests(regdir: RegistryDir, added: StaticFileServer) -> None:
    for name in ("alpha-ext", "beta-ext", "gamma-ext"):
        regdir.publish(name, "1.0.0")
        ok("ext", "install", name)
    ok("ext", "update", "--all", "--check")
    added.clear()
    ok("ext", "update", "--all", "--check")
    assert added.requests, "the registry was not asked at all"
    for request in added.requests:
        assert request.headers.get("if-none-match") or request.headers.get("if-modified-since"), request.path
    assert len(added.requests) == 4  # registry.toml + three entries, each a 304


def test_update_reports_pinned_unchanged_and_failures_without_hiding_others(
        tmp_path: Path, regdir: RegistryDir, added: StaticFileServer) -> None:
    regdir.publish("held-ext", "1.0.0")
    regdir.publish("gone-ext", "1.0.0")
    ok("ext", "install", "demo-ext@0.1.0")
    ok("ext", "install", "held-ext", "--pin")
    ok("ext", "install", "gone-ext")
    local = tmp_path / "local-ext-1.0.0.tar.gz"
    local.write_bytes(archive_bytes("local-ext", "1.0.0"))
    ok("ext", "install", str(local), "--allow-unverified", "--yes")
    regdir.publish("held-ext", "2.0.0")
    (regdir.root / "extensions" / "go" / "gone-ext.toml").unlink()
    result = run_cli(["ext", "update", "--all", "-o", "json"])
    doc = result.json
    assert result.code == 5 and doc["error"]["code"] == "not_found"
    assert [u["name"] for u in doc["updated"]] == ["demo-ext"]
    assert [p["name"] for p in doc["pinned"]] == ["held-ext"]
    assert [f["name"] for f in doc["failed"]] == ["gone-ext"]
    unchanged = {u["name"]: u["reason"] for u in doc["unchanged"]}
    assert "not updatable" in unchanged["local-ext"]
    fail("usage", "ext", "update")
    fail("not_found", "ext", "update", "never-installed")


def test_update_check_exits_zero_when_updates_exist(regdir: RegistryDir, added: StaticFileServer) -> None:
    ok("ext", "install", "demo-ext@0.1.0")
    human = run_cli(["ext", "update", "--all", "--check"])
    assert human.code == 0 and "update available" in human.stdout and "0.2.0" in human.stdout


# --- GitHub -------------------------------------------------------------------------------------


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    work = tmp_path / "gh"
    work.mkdir()
    with FakeGitHub(work, token=TOKEN) as fake:
        fake.env(monkeypatch)
        yield fake


def index_files(regdir: RegistryDir) -> dict[str, bytes]:
    return {p.relative_to(regdir.root).as_posix(): p.read_bytes() for p in regdir.root.rglob("*") if p.is_file()}


def test_github_registry_install_and_update(regdir: RegistryDir, github: FakeGitHub) -> None:
    regdir.publish("demo-ext", "0.1.0")
    github.add_repo("acme", "index", index_files(regdir))
    ok("registry", "add", "acme", "github:acme/index")
    assert ok("ext", "install", "demo-ext")["installed"][0]["version"] == "0.1.0"
    regdir.publish("demo-ext", "0.2.0")
    github.commit("acme", "index", index_files(regdir))
    assert ok("ext", "update", "demo-ext")["updated"][0]["version"] == "0.2.0"


def test_github_release_install_and_update(github: FakeGitHub) -> None:
    github.add_repo("acme", "tool")
    github.add_release("acme", "tool", "v1.0.0", assets={"tool-1.0.0.tar.gz": archive_bytes("gh-tool", "1.0.0")})
    fail("unverified_source", "ext", "install", "github:acme/tool")
    installed = ok("ext", "install", "github:acme/tool", "--allow-unverified", "--yes")["installed"][0]
    assert (installed["name"], installed["version"], installed["source"], installed["verified"]) == \
        ("gh-tool", "1.0.0", "github", False)
    assert ok("ext", "update", "--all", "--check")["available"] == []
    github.add_release("acme", "tool", "v1.1.0", assets={"tool-1.1.0.tar.gz": archive_bytes("gh-tool", "1.1.0")})
    assert ok("ext", "update", "--all", "--check")["available"][0]["latest"] == "1.1.0"
    fail("unverified_source", "ext", "update", "gh-tool")  # new unreviewed code needs consent again
    updated = ok("ext", "update", "gh-tool", "--allow-unverified", "--yes")["updated"]
    assert updated[0]["version"] == "1.1.0"


def test_github_release_verified_against_checksums_file(github: FakeGitHub) -> None:
    data = archive_bytes("gh-tool", "1.0.0")
    github.add_repo("acme", "tool")
    sums = b"0" * 64 + b"  tool.tar.gz\n"
    github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": data, "SHA256SUMS": sums})
    fail("checksum_mismatch", "ext", "install", "github:acme/tool", "--allow-unverified", "--yes")


def test_url_install_and_update(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "u.tar.gz").write_bytes(archive_bytes("url-ext", "1.0.0"))
    with StaticFileServer(files) as srv:
        url = srv.url + "/u.tar.gz"
        assert ok("ext", "install", url, "--allow-unverified", "--yes")["installed"][0]["source"] == "url"
        assert ok("ext", "update", "--all", "--check")["unchanged"][0]["name"] == "url-ext"
        (files / "u.tar.gz").write_bytes(archive_bytes("url-ext", "1.1.0"))
        assert ok("ext", "update", "--all", "--check")["available"][0]["name"] == "url-ext"
        updated = ok("ext", "update", "url-ext", "--allow-unverified", "--yes")["updated"]
        assert updated[0]["version"] == "1.1.0"


def test_token_goes_only_to_github_hosts_and_is_never_shown_or_stored(
        home: Path, regdir: RegistryDir, static_server: StaticFileServer, github: FakeGitHub) -> None:
    env = {"GITHUB_TOKEN": TOKEN}
    regdir.publish("demo-ext", "0.1.0")
    github.add_repo("acme", "private-index", index_files(regdir), private=True)
    github.add_repo("acme", "tool", private=True)
    github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": archive_bytes("gh-tool", "1.0.0")})
    outputs = []
    for args in (["registry", "add", "acme", "github:acme/private-index"],
                 ["registry", "add", "plain", static_server.url],
                 ["ext", "install", "demo-ext"],
                 ["ext", "install", "github:acme/tool", "--allow-unverified", "--yes"],
                 ["ext", "update", "--all", "--check"],
                 ["ext", "search"],
                 ["registry", "list"],
                 ["-v", "ext", "info", "demo-ext"]):
        for mode in ([], ["-o", "json"]):
            result = run_cli([*args, *mode], env=env)
            outputs.append(result.stdout + result.stderr)
            assert result.code == 0 or args[1] in ("add",), result
    assert ok("ext", "status", "gh-tool", env=env)["provenance"]["verified"] is False
    assert not any(TOKEN in text for text in outputs)
    for path in home.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    for server_name, path, auth in github.auth_log():
        if server_name in ("storage", "web"):
            assert auth is None, (server_name, path)
    assert any(auth for name, _, auth in github.auth_log() if name in ("api", "raw"))
    assert all("authorization" not in r.headers for r in static_server.requests)


# --- a dry run writes nothing (issue 12) -----------------------------------------------------------


def _memory_rows(home: Path) -> list[tuple]:
    import sqlite3

    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute("SELECT source, name, version FROM registry_versions ORDER BY name, version").fetchall()
    finally:
        conn.close()


def test_install_and_update_dry_runs_record_nothing_in_the_rollback_memory(home: Path, regdir: RegistryDir,
                                                                          added: StaticFileServer) -> None:
    before = _memory_rows(home)
    dry = ok("ext", "install", "demo-ext@0.1.0", "--dry-run")
    assert [p["name"] for p in dry["planned"]] == ["demo-ext"]
    assert _memory_rows(home) == before
    ok("ext", "install", "demo-ext@0.1.0")
    installed = _memory_rows(home)
    assert installed != before
    regdir.publish("demo-ext", "0.3.0")
    ok("ext", "update", "demo-ext", "--dry-run")
    assert _memory_rows(home) == installed
