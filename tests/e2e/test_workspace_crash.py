"""SIGKILL in the middle of `pkgmgr sync` (a real child process, PKGMGR_TEST_CRASH_AT): the next
sync completes the work, `doctor --check` finds every invariant holding, and the workspace stays
approved whatever the crash interrupted."""

from __future__ import annotations

import signal
import tomllib
from pathlib import Path

import pytest

from tests.support.cli import run_subprocess
from tests.support.stores import store_root
from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import BUNDLED, LOCAL, STORY_MANIFEST, Team, activations, installed, ok

INSTALL_POINTS = ["install.after_extract", "install.after_rename", "install.before_commit", "install.after_commit"]


def crash(ws: Path, at: str, *args: str) -> None:
    result = run_subprocess(["sync", *args, "--workspace", ws, "-o", "json"], env={"PKGMGR_TEST_CRASH_AT": at})
    assert result.code == -signal.SIGKILL, result


def assert_synced(ws: Path, version: str, trees: list[str] | None = None) -> None:
    done = ok("sync", "--workspace", ws)  # no re-approval needed, whatever the crash interrupted
    assert installed(ws) == {BUNDLED: version, LOCAL: "0.1.0"}, done
    assert activations(ws) == [(BUNDLED, "default", "active")]
    lock = tomllib.loads((ws / "pkgmgr.lock").read_text())
    assert {e["name"]: e["version"] for e in lock["extension"]} == {BUNDLED: version, LOCAL: "0.1.0"}
    assert ok("doctor", "--check", "--workspace", ws)["ok"] is True
    assert ok("sync", "--locked", "--workspace", ws)["plan"]["empty"] is True
    staging = store_root(ws) / ".staging"
    assert not staging.exists() or not any(staging.iterdir())
    assert sorted(p.name for p in (store_root(ws) / "extensions" / BUNDLED).iterdir()) == (trees or [version])


@pytest.mark.parametrize("point", [*INSTALL_POINTS, "activate.before_commit", "sync.after_lock_write"])
def test_crash_during_the_first_sync(team: Team, point: str) -> None:
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    crash(team.ws, point)
    if point == "sync.after_lock_write":  # the new lock is on disk, and approved
        assert (team.ws / "pkgmgr.lock").exists()
        assert ok("trust", "--show", "--workspace", team.ws)["approved"] is True
    assert_synced(team.ws, "0.1.0")


@pytest.mark.parametrize("point", ["install.after_rename", "install.after_commit", "sync.after_lock_write"])
def test_crash_during_a_switch(team: Team, point: str) -> None:
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    ok("sync", "--workspace", team.ws)
    manifest = team.ws / "pkgmgr.toml"
    manifest.write_text(manifest.read_text().replace('team-crew = "<0.2"', 'team-crew = ">=0.2"'))
    ok("trust", "--workspace", team.ws)
    crash(team.ws, point)
    assert installed(team.ws)[BUNDLED] == ("0.1.0" if point == "install.after_rename" else "0.2.0")
    assert_synced(team.ws, "0.2.0", ["0.1.0", "0.2.0"])  # the switch keeps 0.1.0 for `ext rollback`


@pytest.mark.parametrize("point", ["deactivate.before_commit", "remove.after_commit"])
def test_crash_while_removing_a_declaration(team: Team, point: str) -> None:
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    ok("sync", "--workspace", team.ws)
    text = STORY_MANIFEST.replace('team-crew = "<0.2"  # the 0.1 series for now\n', "")
    team.write_manifest(text.split("# Activate")[0])
    ok("trust", "--workspace", team.ws)
    crash(team.ws, point)
    ok("sync", "--workspace", team.ws)
    assert installed(team.ws) == {LOCAL: "0.1.0"} and activations(team.ws) == []
    assert not (store_root(team.ws) / "extensions" / BUNDLED).exists()
    assert ok("doctor", "--check", "--workspace", team.ws)["ok"] is True


def test_crash_after_a_save_keeps_the_approval(team: Team) -> None:
    team.write_manifest('[registries]\nteam = "@URL@"\n')
    ok("trust", "--workspace", team.ws)
    result = run_subprocess(["ext", "install", BUNDLED, "--save", "-o", "json"], cwd=team.ws,
                            env={"PKGMGR_TEST_CRASH_AT": "save.after_write"})
    assert result.code == -signal.SIGKILL, result
    assert BUNDLED in (team.ws / "pkgmgr.toml").read_text()
    ok("sync", "--workspace", team.ws)
    assert installed(team.ws) == {BUNDLED: "0.2.0"}
