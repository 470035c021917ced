"""Builders of the workspace tests: extensions with a bundle, a team registry on loopback, and a
workspace directory with its pkgmgr.toml."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from tests.registry.helpers import RegistryDir, archive_bytes
from tests.support.builders import write_extension
from tests.support.cli import Result, run_cli
from tests.support.servers import StaticFileServer
from tests.support.stores import store_root

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
BUNDLED = "team-crew"  # the registry extension with a bundle (two versions)
LOCAL = "local-tool"  # the path extension: a subprocess, a permission, env


def crew_files(name: str, version: str, *, prompt: str = "Plan the week.", bundles: int = 1) -> dict[str, str]:
    """extension.toml + one bundle (profile `default`, one agent) per `bundles`."""
    manifest = (f'name = "{name}"\nversion = "{version}"\nmin_compozy_version = "0.5.0"\n'
                '[resources]\nbundles = ["bundles"]\n')
    files = {"extension.toml": manifest,
             "agents/planner/AGENT.md": f"---\nname: {name}-planner\n---\n\n{prompt}\n"}
    for index in range(bundles):
        bundle = name if index == 0 else f"{name}-{index}"
        files[f"bundles/{bundle}.toml"] = (
            f'name = "{bundle}"\n[[profiles]]\nname = "default"\n'
            '[[profiles.agents]]\npath = "agents/planner"\n')
    return files


def crew_archive(name: str, version: str, **kwargs: Any) -> bytes:
    files = crew_files(name, version, **kwargs)
    return archive_bytes(name, version, manifest=files.pop("extension.toml"), files=files)


def write_local_tool(root: Path, version: str = "0.1.0") -> Path:
    """A path extension a reviewer must see: a subprocess command and a permission."""
    manifest = (f'name = "{LOCAL}"\nversion = "{version}"\nmin_compozy_version = "0.5.0"\n'
                '[security]\ncapabilities = ["session.read"]\n'
                '[subprocess]\ncommand = "./bin/serve"\nargs = ["--stdio"]\n')
    return write_extension(root, manifest, {"bin/serve": "#!/bin/sh\necho serve\n"})


def copy_release_crew(dest: Path) -> Path:
    """fixtures/release-crew: a bundle whose extension requires the network (digest below)."""
    shutil.copytree(FIXTURES / "release-crew", dest)
    return dest


@dataclass
class Team:
    """A registry served on loopback and a workspace that declares from it."""

    registry: RegistryDir
    server: StaticFileServer
    ws: Path

    @property
    def url(self) -> str:
        return self.server.url + "/"

    def write_manifest(self, text: str) -> None:
        (self.ws / "pkgmgr.toml").write_text(text.replace("@URL@", self.url), encoding="utf-8")

    def archive_requests(self) -> list[str]:
        return [r.path for r in self.server.requests if "/archives/" in r.path]

    def unconditional(self) -> list[str]:
        """Requests that could carry a body: without If-None-Match / If-Modified-Since."""
        return [r.path for r in self.server.requests
                if "if-none-match" not in r.headers and "if-modified-since" not in r.headers]


STORY_MANIFEST = """\
# The team's extensions (reviewed in pull requests).
[registries]
team = "@URL@"   # our static registry

[extensions]
team-crew = "<0.2"  # the 0.1 series for now
local-tool = { path = "tools/local-tool" }

# Activate the crew's default profile in this workspace.
[[activations]]
extension = "team-crew"
profile = "default"
"""


def cli(*args: Any, cwd: Path | None = None, env: Mapping[str, str | None] | None = None) -> Result:
    return run_cli([str(a) for a in args], cwd=cwd, env=env)


def js(*args: Any, cwd: Path | None = None, env: Mapping[str, str | None] | None = None) -> tuple[int, dict]:
    """Run in JSON mode: (exit status, the one JSON document)."""
    result = run_cli([*map(str, args), "-o", "json"], cwd=cwd, env=env)
    assert result.stdout.strip(), result
    return result.code, result.json


def ok(*args: Any, cwd: Path | None = None, env: Mapping[str, str | None] | None = None) -> dict:
    code, doc = js(*args, cwd=cwd, env=env)
    assert code == 0 and "error" not in doc, (code, doc)
    return doc


def fail(code: str, *args: Any, cwd: Path | None = None, env: Mapping[str, str | None] | None = None) -> dict:
    status, doc = js(*args, cwd=cwd, env=env)
    assert "error" in doc, (status, doc)
    assert doc["error"]["code"] == code, doc
    assert status == doc["error"]["exit_code"] != 0, (status, doc)
    return doc


def trust(ws: Path, **env: str) -> str:
    """Approve the workspace as it is now; returns the digest."""
    return ok("trust", "--workspace", ws, env=env or None)["digest"]


def installed(ws: Path) -> dict[str, str]:
    """name -> version installed in the workspace store (read directly, no trust check)."""
    db = store_root(ws) / "state.db"
    if not db.exists():
        return {}
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT name, version FROM extensions ORDER BY name").fetchall())
    finally:
        conn.close()


def activations(ws: Path) -> list[tuple[str, str, str]]:
    """(extension, profile, status) of the workspace's activations, and their resource counts."""
    db = store_root(ws) / "state.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT extension, profile, status FROM activations ORDER BY extension").fetchall()
    finally:
        conn.close()


def resource_count(ws: Path) -> int:
    db = store_root(ws) / "state.db"
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM resources").fetchone()[0]
    finally:
        conn.close()
