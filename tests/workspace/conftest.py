"""Fixtures of the workspace tests: a team registry served on loopback and a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.registry.helpers import RegistryDir
from tests.support.servers import StaticFileServer
from tests.workspace.helpers import BUNDLED, Team, crew_archive, write_local_tool


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    """Registry `team` (served over HTTP) listing team-crew 0.1.0 and 0.2.0; a workspace under
    $HOME with the path extension tools/local-tool (no pkgmgr.toml yet)."""
    registry = RegistryDir(tmp_path / "team-index", "team")
    for version in ("0.1.0", "0.2.0"):
        registry.publish(BUNDLED, version, data=crew_archive(BUNDLED, version, prompt=f"Plan {version}."))
    ws = tmp_path / "user-home" / "src" / "project"
    write_local_tool(ws / "tools" / "local-tool")
    with StaticFileServer(registry.root, name="team") as server:
        yield Team(registry, server, ws)
