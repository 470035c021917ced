"""SIGKILL at each crash point of install and remove (a real child process): the old or the new
state is visible, never a mix, and the next writer cleans up what the crash left."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, UNVERIFIED, install, ok
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
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == [version]


@pytest.mark.parametrize("point, committed", [("remove.before_commit", False), ("remove.after_commit", True)])
def test_crash_during_a_remove(point: str, committed: bool, home: Path) -> None:
    install(FIXTURES / "review-pack")
    crash("ext", "remove", "review-pack", at=point)
    names = [e["name"] for e in ok("ext", "list")["extensions"]]
    assert names == ([] if committed else ["review-pack"])
    ok("doctor")
    assert ok("doctor", "--check")["ok"] is True
    assert (home / "extensions" / "review-pack").exists() is not committed
