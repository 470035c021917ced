"""One bounded decoder for every JSON document from outside (issue 25 point 8).

A body of 200,000 `[` from an OCI token realm, as an OCI manifest, as Vera's lock file, from the
GitHub API or as a server's JSON error was exit 70 (`RecursionError` escaped `json.loads`); a
FIFO where pkgmgr reads a file (Vera's lock, Eva's trust file, Docker's config, the registry and
download caches) hung. Each attack changes one thing, runs the command a user would — through
the real entry point, in a child process under a timeout where a hang is possible — asserts the
code of the thing read, and asserts that nothing moved.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.hosts.helpers import eva_script, vera_extension
from tests.publish.helpers import packed
from tests.registry.helpers import RegistryDir, archive_bytes
from tests.support.cli import run_cli, run_subprocess
from tests.support.fakegithub import FakeGitHub
from tests.support.ociregistry import PASSWORD, USER, FakeDistribution, TokenServer
from tests.support.servers import FaultServer, Reply, StaticFileServer

BOMB = b"[" * 200_000
UNVERIFIED = ("--allow-unverified", "--yes")


def cli(*args: object, env: dict | None = None) -> tuple[int, dict, str]:
    result = run_cli([*map(str, args), "-o", "json"], env=env)
    assert "Traceback" not in result.stderr and result.code != 70, result
    return result.code, result.json, result.stderr


def child(*args: object, env: dict | None = None) -> tuple[int, dict, str]:
    """In a child process under a timeout: a read that blocks fails the test, not the suite."""
    result = run_subprocess([*map(str, args), "-o", "json"], env=env, timeout=60)
    assert "Traceback" not in result.stderr and result.code != 70, result
    return result.code, json.loads(result.stdout), result.stderr


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()} if root.exists() else {}


@pytest.fixture(autouse=True)
def _host_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERVA_HOME", str(tmp_path / "terva-home"))
    monkeypatch.setenv("VERA_HOME", str(tmp_path / "vera-home"))


# --------------------------------------------------------------------------- OCI


def oci_registry_index(tmp_path: Path, registry: FakeDistribution, archive: Path) -> None:
    index = RegistryDir(tmp_path / "oci-index", "ocireg")
    index.publish("acme-oci", "0.1.0", data=archive.read_bytes(), url=registry.ref())
    code, doc, _ = cli("registry", "add", "ocireg", index.root)
    assert code == 0, doc


def test_a_token_reply_bomb_is_auth_required(tmp_path: Path, home: Path) -> None:
    archive = packed(tmp_path, "review-pack", name="acme-oci")

    class BombRealm(TokenServer):
        def handle(self, h):  # noqa: ANN001, ANN202 - http.server's handler
            from tests.support.servers import respond

            respond(h, 200, BOMB, {"Content-Type": "application/json"})

    with BombRealm(USER, PASSWORD, "unused") as realm, \
            FakeDistribution(archive.read_bytes(), bearer=(f"{realm.url}/token", "never-minted")) as registry:
        oci_registry_index(tmp_path, registry, archive)
        code, doc, _ = cli("ext", "install", "acme-oci")
        assert realm.requests and registry.requests
    assert code == 4 and doc["error"]["code"] == "auth_required", doc
    assert "without a usable token" in doc["error"]["message"]
    assert files(home / "cache" / "downloads" / "sha256") == {} and doc["installed"] == []


def test_a_manifest_bomb_is_invalid_archive(tmp_path: Path, home: Path) -> None:
    archive = packed(tmp_path, "review-pack", name="acme-oci")
    with FakeDistribution(archive.read_bytes()) as registry:
        registry.manifest = BOMB  # the entry names its digest: the registry serves what the entry says
        oci_registry_index(tmp_path, registry, archive)
        code, doc, _ = cli("ext", "install", "acme-oci")
    assert code == 3 and doc["error"]["code"] == "invalid_archive", doc
    assert "nested deeper" in doc["error"]["message"]
    assert files(home / "cache" / "downloads" / "sha256") == {}


@pytest.mark.parametrize("planted", ["bomb", "fifo", "not-json"])
def test_dockers_config_is_read_bounded(tmp_path: Path, planted: str) -> None:
    archive = packed(tmp_path, "review-pack", name="acme-oci")
    config = tmp_path / "user-home" / ".docker" / "config.json"
    config.parent.mkdir(parents=True)
    if planted == "fifo":
        os.mkfifo(config)
    else:
        config.write_bytes(BOMB if planted == "bomb" else b'{"auths": ')
    with FakeDistribution(archive.read_bytes(), basic=(USER, PASSWORD)) as registry:
        oci_registry_index(tmp_path, registry, archive)
        code, doc, _ = child("ext", "install", "acme-oci")
        assert all("authorization" not in r.headers for r in registry.requests)
    assert code == 3 and doc["error"]["code"] == "invalid_config", doc
    assert "config.json" in doc["error"]["message"]


def test_a_good_docker_config_behind_a_link_still_pulls(tmp_path: Path) -> None:
    """The control: a config a dotfile manager links into place is read (Docker follows it)."""
    archive = packed(tmp_path, "review-pack", name="acme-oci")
    real = tmp_path / "dotfiles" / "docker.json"
    real.parent.mkdir()
    config = tmp_path / "user-home" / ".docker" / "config.json"
    config.parent.mkdir(parents=True)
    config.symlink_to(real)
    with FakeDistribution(archive.read_bytes(), basic=(USER, PASSWORD)) as registry:
        auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        real.write_text(json.dumps({"auths": {f"127.0.0.1:{registry.port}": {"auth": auth}}}))
        oci_registry_index(tmp_path, registry, archive)
        code, doc, _ = cli("ext", "install", "acme-oci")
    assert code == 0, doc


# --------------------------------------------------------------------------- GitHub and HTTP bodies


def test_a_github_api_bomb_is_http_error(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gh").mkdir()
    with FakeGitHub(tmp_path / "gh") as github:
        github.env(monkeypatch)
        github.add_repo("acme", "tool")
        github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": archive_bytes("gh-tool", "1.0.0")})
        github.queue_api(Reply(200, BOMB, {"Content-Type": "application/json"}))
        code, doc, _ = cli("ext", "install", "github:acme/tool", *UNVERIFIED)
    assert code == 7 and doc["error"]["code"] == "http_error", doc
    assert not (home / "extensions").exists() or not any((home / "extensions").iterdir())


def test_a_json_error_body_bomb_is_the_statuss_code(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.script("/registry.toml", Reply(404, b"[" * 4000, {"Content-Type": "application/json"}))
        code, doc, _ = cli("registry", "add", "bombed", server.url + "/")
    assert code == 3 and doc["error"]["code"] == "invalid_index", doc  # a registry without registry.toml


# --------------------------------------------------------------------------- the hosts' files


@pytest.mark.parametrize("planted", ["bomb", "fifo"])
def test_veras_lock_file_holds_the_lock_timeout(tmp_path: Path, planted: str) -> None:
    vera = tmp_path / "vera-home"
    vera.mkdir()
    lock = vera / "extensions.json.lock"
    if planted == "fifo":
        os.mkfifo(lock)
    else:
        lock.write_bytes(BOMB)
    source = vera_extension(tmp_path / "src" / "ctx")
    code, doc, _ = child("--lock-timeout", "0.2", "ext", "install", source, *UNVERIFIED)
    assert code == 6 and doc["error"]["code"] == "locked", doc
    assert not (vera / "extensions" / "acme.context-tools").exists() and not (vera / "extensions.json").exists()
    assert lock.exists() and (lock.is_fifo() if planted == "fifo" else lock.read_bytes() == BOMB)


@pytest.mark.parametrize("planted", ["fifo", "huge"])
def test_evas_trust_file_is_read_bounded(tmp_path: Path, planted: str) -> None:
    eva = tmp_path / "user-home" / ".eva"
    eva.mkdir(parents=True)
    trust = eva / "trust.json"
    if planted == "fifo":
        os.mkfifo(trust)
    else:
        with open(trust, "wb") as handle:
            handle.truncate(64 * 1024 * 1024)
    project = tmp_path / "project"
    project.mkdir()
    code, doc, _ = child("--workspace", project, "--scope", "workspace", "ext", "install",
                         eva_script(tmp_path / "src", "notes"), *UNVERIFIED, "--approve-host-trust")
    assert code == 3 and doc["error"]["code"] == "invalid_config", doc
    assert "trust" in doc["error"]["message"]
    assert trust.is_fifo() if planted == "fifo" else trust.stat().st_size == 64 * 1024 * 1024


# --------------------------------------------------------------------------- pkgmgr's own caches


def test_a_fifo_in_the_registry_cache_is_a_file_not_cached(tmp_path: Path, home: Path) -> None:
    index = RegistryDir(tmp_path / "index", "acme")
    index.publish("demo-ext", "0.1.0")
    with StaticFileServer(index.root) as static:
        code, doc, _ = cli("registry", "add", "acme", static.url)
        assert code == 0, doc
        cached = [p for p in (home / "cache" / "registries").rglob("*") if p.is_file()]
        assert cached
        for path in cached:
            path.unlink()
            os.mkfifo(path)
        code, doc, _ = child("ext", "search", "demo")
        assert code == 0 and [e["name"] for e in doc["results"]] == ["demo-ext"], doc
        code, doc, _ = child("registry", "refresh")
        assert code == 0, doc


def test_a_fifo_in_the_download_cache_is_dropped_and_fetched_again(tmp_path: Path, home: Path) -> None:
    index = RegistryDir(tmp_path / "index", "acme")
    published = index.publish("demo-ext", "0.1.0")
    entry = home / "cache" / "downloads" / "sha256" / published.sha256[:2] / published.sha256
    entry.parent.mkdir(parents=True)
    os.mkfifo(entry)
    with StaticFileServer(index.root) as static:
        assert cli("registry", "add", "acme", static.url)[0] == 0
        code, doc, _ = child("ext", "install", "demo-ext")
    assert code == 0, doc
    assert entry.is_file() and hashlib.sha256(entry.read_bytes()).hexdigest() == published.sha256
