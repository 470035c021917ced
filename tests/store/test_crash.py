"""SIGKILL at each crash point of install and remove (a real child process): the old or the new
state is visible, never a mix, and the next writer cleans up what the crash left."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, UNVERIFIED, fail, install, ok
from tests.reliability.helpers import pending_rows
from tests.support.cli import run_subprocess


def crash(*args: object, at: str) -> None:
    result = run_subprocess([*args, "-o", "json"], env={"PKGMGR_TEST_CRASH_AT": at})
    assert result.code == -signal.SIGKILL, result


@pytest.mark.parametrize("point, committed", [
    ("install.after_extract", False),
    ("install.after_rename", False),
    ("install.before_commit", False),
    ("install.after_commit", True),
])
def test_crash_during_a_switch(point: str, committed: bool, tmp_path: Path, home: Path) -> None:
    source = tmp_path / "rp"
    shutil.copytree(FIXTURES / "review-pack", source)
    install(source)
    manifest = source / "extension.toml"
    manifest.write_text(manifest.read_text().replace('version = "0.1.0"', 'version = "0.2.0"'))
    crash("ext", "install", source, *UNVERIFIED, at=point)
    version = "0.2.0" if committed else "0.1.0"
    assert [(e["name"], e["version"]) for e in ok("ext", "list")["extensions"]] == [("review-pack", version)]
    assert ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True
    install(FIXTURES / "prompt-enhancer")  # the next writer removes the leftovers
    assert ok("doctor", "--check")["ok"] is True
    kept = ["0.1.0", "0.2.0"] if committed else ["0.1.0"]  # the switch keeps 0.1.0 for `ext rollback`
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == kept


@pytest.mark.parametrize("point, committed", [("remove.before_commit", False), ("remove.after_commit", True)])
def test_crash_during_a_remove(point: str, committed: bool, home: Path) -> None:
    install(FIXTURES / "review-pack")
    crash("ext", "remove", "review-pack", at=point)
    names = [e["name"] for e in ok("ext", "list")["extensions"]]
    assert names == ([] if committed else ["review-pack"])
    ok("doctor")
    assert ok("doctor", "--check")["ok"] is True
    assert (home / "extensions" / "review-pack").exists() is not committed


@pytest.mark.parametrize("point", ["install.after_pending", "install.before_commit", "install.after_old_removed"])
def test_a_kill_leaves_pending_trees_only_and_the_next_writer_spares_unrecorded_ones(
        point: str, tmp_path: Path, home: Path) -> None:
    """SPEC 4: what a killed switch leaves is recorded in pending_trees, and the next writer removes
    exactly that; a tree state.db never named (here 0.0.1, copied in by hand) survives it all."""
    source = tmp_path / "rp"
    shutil.copytree(FIXTURES / "review-pack", source)
    install(source)
    stranger = home / "extensions" / "review-pack" / "0.0.1"
    shutil.copytree(home / "extensions" / "review-pack" / "0.1.0", stranger)
    manifest = source / "extension.toml"
    manifest.write_text(manifest.read_text().replace('version = "0.1.0"', 'version = "0.1.5"'))
    install(source)  # 0.1.0 is kept for a rollback; the switch to 0.2.0 stops keeping it
    manifest.write_text(manifest.read_text().replace('version = "0.1.5"', 'version = "0.2.0"'))
    crash("ext", "install", source, *UNVERIFIED, at=point)
    recorded = {path for path, _ in pending_rows(home)}
    assert "extensions/review-pack/0.0.1" not in recorded
    install(FIXTURES / "prompt-enhancer")  # the next writer
    assert pending_rows(home) == []
    committed = point in ("install.after_commit", "install.after_old_removed")
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == (
        ["0.0.1", "0.1.5", "0.2.0"] if committed else ["0.0.1", "0.1.0", "0.1.5"])
    assert stranger.is_dir() and ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True
    [problem] = fail("state_inconsistent", "doctor", "--check")["problems"]
    assert problem["check"] == "unrecorded" and problem["message"].startswith("extensions/review-pack/0.0.1 ")

