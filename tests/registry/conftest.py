"""Fixtures of the registry tests: registry directories, loopback servers, a fake GitHub."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.registry.helpers import RegistryDir
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import StaticFileServer


@pytest.fixture
def regdir(tmp_path: Path) -> RegistryDir:
    return RegistryDir(tmp_path / "index", "acme")


@pytest.fixture
def static_server(regdir: RegistryDir) -> Iterator[StaticFileServer]:
    with StaticFileServer(regdir.root) as server:
        yield server


@pytest.fixture
def fake_github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    work = tmp_path / "fakegithub"
    work.mkdir()
    with FakeGitHub(work) as fake:
        fake.env(monkeypatch)
        yield fake
