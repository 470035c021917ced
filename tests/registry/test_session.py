"""The Session of one remote operation: configuration and flags passed through, every shared
object (HTTP and GitHub clients, download cache, memory, registries) created lazily and once —
from several threads too —, warnings shown once, and `close()` releasing what was opened."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from pkgmgr.cli.workspace_registries import session_for
from pkgmgr.config import Config, NetworkSettings, RegistryConfig
from pkgmgr.errors import PkgmgrError
from pkgmgr.net.cache import DownloadCache
from pkgmgr.net.github import GitHub
from pkgmgr.net.http import HttpClient
from pkgmgr.registry.client import Registries
from pkgmgr.registry.memory import Memory
from pkgmgr.registry.session import Session
from pkgmgr.workspace import trust
from pkgmgr.workspace.workspace import Workspace
from tests.registry.helpers import RegistryDir
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import StaticFileServer

FAST = NetworkSettings(connect_timeout=2.0, read_timeout=2.0, retries=1)
TOKEN = "ghp_sessionTestToken0123456789abcdef"


def config(*registries: RegistryConfig) -> Config:
    return Config(network=FAST, registries=tuple(registries))


def test_flags_are_kept(home: Path) -> None:
    cfg = config()
    extra = [RegistryConfig("team", "/srv/team")]
    s = Session(home, cfg, offline=True, allow_expired=True, extra_registries=extra)
    assert (s.home, s.config, s.offline, s.allow_expired) == (home, cfg, True, True)
    assert s.extra_registries == (RegistryConfig("team", "/srv/team"),)  # a tuple, whatever was passed
    extra.clear()
    assert len(s.extra_registries) == 1


def test_nothing_is_created_before_it_is_asked_for(home: Path) -> None:
    s = Session(home, config())
    s.close()  # closing an unused session opens nothing
    assert s._objects == {}
    assert not home.exists()


def test_each_object_is_created_once(home: Path) -> None:
    s = Session(home, config())
    try:
        assert isinstance(s.http, HttpClient) and s.http is s.http
        assert isinstance(s.github, GitHub) and s.github is s.github and s.github.http is s.http
        assert isinstance(s.downloads, DownloadCache) and s.downloads is s.downloads
        assert s.downloads.root == home / "cache" / "downloads"
        assert isinstance(s.memory, Memory) and s.memory is s.memory
        assert isinstance(s.registries, Registries) and s.registries is s.registries
        assert s.registries.session is s
    finally:
        s.close()


def test_offline_reaches_the_http_client(home: Path) -> None:
    online, offline = Session(home, config()), Session(home, config(), offline=True)
    try:
        assert online.http.offline is False and offline.http.offline is True
        with pytest.raises(PkgmgrError) as exc:
            offline.http.get_small("http://127.0.0.1:9/registry.toml", max_bytes=10)
        assert exc.value.code == "network_error" and exc.value.details.get("offline") is True
    finally:
        online.close()
        offline.close()


def test_concurrent_first_use_creates_one_object(home: Path) -> None:
    s = Session(home, config())
    workers = 8
    barrier = threading.Barrier(workers)
    seen: dict[str, list[int]] = {"memory": [], "http": [], "registries": [], "downloads": []}
    errors: list[BaseException] = []

    def touch() -> None:
        try:
            barrier.wait(10)
            for key in seen:
                seen[key].append(id(getattr(s, key)))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=touch) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    try:
        assert errors == []
        assert {key: len(set(ids)) for key, ids in seen.items()} == dict.fromkeys(seen, 1)
        assert all(len(ids) == workers for ids in seen.values())
    finally:
        s.close()


def test_registries_follow_the_configuration(home: Path, tmp_path: Path) -> None:
    mine = RegistryConfig("mine", str(tmp_path / "mine"), priority=5)
    team = RegistryConfig("team", str(tmp_path / "team"))
    s = Session(home, config(mine), extra_registries=[team])
    assert s.registries.names() == ["mine", "team", "default"]
    assert [r.declared for r in s.registries.ordered] == [False, True, False]


# --- warnings --------------------------------------------------------------------------------------


def test_each_warning_is_shown_once(home: Path) -> None:
    shown: list[str] = []
    s = Session(home, config(), warn=shown.append)
    for message in ("registry a: stale", "registry b: stale", "registry a: stale", "registry b: stale"):
        s.warn(message)
    assert shown == ["registry a: stale", "registry b: stale"]


def test_warnings_without_a_sink_are_dropped(home: Path) -> None:
    s = Session(home, config())
    s.warn("nobody listens")
    s.warn("nobody listens")


def test_a_warning_from_many_threads_is_shown_once(home: Path) -> None:
    shown: list[str] = []
    s = Session(home, config(), warn=shown.append)
    barrier = threading.Barrier(6)

    def warn() -> None:
        barrier.wait(10)
        s.warn("registry acme: index.json is newer")

    threads = [threading.Thread(target=warn) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert shown == ["registry acme: index.json is newer"]


# --- closing ----------------------------------------------------------------------------------------


def test_close_closes_the_memory(home: Path) -> None:
    s = Session(home, config())
    s.memory.record("src", 3, [])
    assert s.memory._scope._conn is not None
    s.close()
    assert s.memory._scope._conn is None
    assert s.memory.serial("src") == 3  # still usable: reopened on demand
    s.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[StaticFileServer]:
    root = tmp_path / "www"
    root.mkdir()
    (root / "a.txt").write_bytes(b"a")
    with StaticFileServer(root) as srv:
        yield srv


def test_close_closes_pooled_connections(home: Path, server: StaticFileServer) -> None:
    s = Session(home, config())
    for _ in range(2):
        assert s.http.get_small(f"{server.url}/a.txt", max_bytes=10).body == b"a"
    s.close()
    assert s.http.get_small(f"{server.url}/a.txt", max_bytes=10).body == b"a"  # usable after close
    s.close()
    clients = [r.client for r in server.requests]
    assert clients[0] == clients[1]  # kept alive while open
    assert clients[2] != clients[1]  # a new connection after close


# --- GitHub and the token --------------------------------------------------------------------------


def test_the_token_goes_to_github_hosts_only(home: Path, tmp_path: Path, server: StaticFileServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "gh"
    work.mkdir()
    with FakeGitHub(work, token=TOKEN) as fake:
        fake.env(monkeypatch)
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        fake.add_repo("acme", "tools", {"extension.toml": "x"}, private=True)
        fake.add_release("acme", "tools", "v1.0.0")
        s = Session(home, config())
        try:
            assert s.github.api_url == fake.api_url and s.github.raw_url == fake.raw_url
            assert s.github.release("acme", "tools", None, pre=False).tag == "v1.0.0"
            sha = s.github.commit_sha("acme", "tools", "main").sha
            assert s.http.get_small(s.github.raw_file_url("acme", "tools", sha, "extension.toml"),
                                    max_bytes=100).body == b"x"
            assert s.http.get_small(f"{server.url}/a.txt", max_bytes=10).body == b"a"
        finally:
            s.close()
        api_and_raw = [auth for name, _, auth in fake.auth_log() if name in ("api", "raw")]
        assert api_and_raw and all(auth is not None and TOKEN in auth for auth in api_and_raw)
    assert [r.headers.get("authorization") for r in server.requests] == [None]


# --- session_for -------------------------------------------------------------------------------------


def make_ctx(home: Path, *, workspace: Path | None = None, offline: bool = False,
             scope: str = "workspace") -> SimpleNamespace:
    warnings: list[str] = []
    return SimpleNamespace(home=home, config=config(), offline=offline, warn=warnings.append,
                           workspace_arg=workspace, warnings=warnings, scope=scope)


def test_session_for_takes_the_context(home: Path) -> None:
    ctx = make_ctx(home, offline=True)
    s = session_for(ctx, allow_expired=True, extra_registries=())
    assert (s.home, s.config, s.offline, s.allow_expired, s.extra_registries) == \
        (home, ctx.config, True, True, ())
    s.warn("through the context")
    assert ctx.warnings == ["through the context"]


def trusted_workspace(home: Path, tmp_path: Path) -> tuple[Path, RegistryDir]:
    registry = RegistryDir(tmp_path / "team-index", "team")
    ws = tmp_path / "user-home" / "project"
    ws.mkdir(parents=True)
    (ws / "pkgmgr.toml").write_text(f'[registries]\nteam = "{registry.root}"\n', encoding="utf-8")
    trust.approve(home, ws, Workspace(ws, home).trust_state().digest, by="test")
    return ws, registry


def test_session_for_adds_an_approved_workspace_s_registries(home: Path, tmp_path: Path) -> None:
    ws, registry = trusted_workspace(home, tmp_path)
    s = session_for(make_ctx(home, workspace=ws))
    assert [(r.name, r.source) for r in s.extra_registries] == [("team", str(registry.root))]
    assert s.registries.names() == ["team", "default"]
    assert session_for(make_ctx(home, workspace=ws, scope="global")).extra_registries == ()  # SPEC 10


def test_session_for_explicit_registries_replace_the_workspace_s(home: Path, tmp_path: Path) -> None:
    ws, _ = trusted_workspace(home, tmp_path)
    assert session_for(make_ctx(home, workspace=ws), extra_registries=()).extra_registries == ()


def test_session_for_ignores_an_unapproved_workspace(home: Path, tmp_path: Path) -> None:
    ws, _ = trusted_workspace(home, tmp_path)
    (ws / "pkgmgr.toml").write_text('[registries]\nother = "/srv/other"\n', encoding="utf-8")  # changed since
    ctx = make_ctx(home, workspace=ws)
    assert session_for(ctx).extra_registries == ()
    assert len(ctx.warnings) == 1 and "not used until you approve them" in ctx.warnings[0]
