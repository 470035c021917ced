"""Fixtures for network tests: real loopback servers (tests/support/servers.py,
tests/support/fakegithub.py) and a client that never sleeps between retries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pkgmgr.config import NetworkSettings
from pkgmgr.net.cache import DownloadCache
from pkgmgr.net.http import HttpClient
from pkgmgr.progress import Reporter
from tests.support.fakegithub import FakeGitHub
from tests.support.ociregistry import auth_registry, open_registry  # noqa: F401 - real OCI registries
from tests.support.servers import FaultServer, StaticFileServer

TOKEN = "ghp_s3cr3tT0kenForTests0123456789"


class RecordingReporter(Reporter):
    """Keeps every download event as a tuple."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def download_started(self, key: str, label: str, total: int | None) -> None:
        self.events.append(("started", key, label, total))

    def download_answered(self, key: str, total: int | None) -> None:
        self.events.append(("answered", key, total))

    def download_advanced(self, key: str, amount: int) -> None:
        self.events.append(("advanced", key, amount))

    def download_finished(self, key: str) -> None:
        self.events.append(("finished", key))

    def received(self, key: str) -> int:
        return sum(e[2] for e in self.events if e[0] == "advanced" and e[1] == key)


@pytest.fixture
def settings() -> NetworkSettings:
    return NetworkSettings(connect_timeout=2.0, read_timeout=2.0, min_rate=1024.0, min_rate_after=30.0, retries=3)


@pytest.fixture
def sleeps() -> list[float]:
    """The waits a client asked for between retries (it does not really sleep)."""
    return []


@pytest.fixture
def make_client(settings: NetworkSettings, sleeps: list[float]) -> Iterator:
    clients: list[HttpClient] = []

    def make(**kwargs) -> HttpClient:
        kwargs.setdefault("sleep", sleeps.append)
        kwargs.setdefault("backoff_base", 0.01)
        client = HttpClient(kwargs.pop("settings", settings), **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(make_client) -> HttpClient:
    return make_client()


@pytest.fixture
def cache(tmp_path: Path) -> DownloadCache:
    return DownloadCache(tmp_path / "cache" / "downloads")


@pytest.fixture
def reporter() -> RecordingReporter:
    return RecordingReporter()


@pytest.fixture
def www(tmp_path: Path) -> Path:
    root = tmp_path / "www"
    root.mkdir()
    return root


@pytest.fixture
def static_server(www: Path) -> Iterator[StaticFileServer]:
    with StaticFileServer(www) as server:
        yield server
    assert server.errors == []


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    with FaultServer() as server:
        yield server
    assert server.errors == []


@pytest.fixture
def fake_github(tmp_path: Path) -> Iterator[FakeGitHub]:
    workdir = tmp_path / "fakegithub"
    workdir.mkdir()
    with FakeGitHub(workdir, token=TOKEN) as fake:
        yield fake
    assert [e for server in fake.servers for e in server.errors] == []
