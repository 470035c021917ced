"""A sandbox for extraction tests: staging lives in `<tmp>/sandbox/staging`, and everything
under `<tmp>` (the sandbox and its parent) except the staging directory is listed before and
after, so a file that escapes staging is seen wherever it lands."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest


def listing(top: Path, *, skip: Path | None = None) -> dict[str, tuple[str, int, int]]:
    """Every path under `top` (links not followed) -> (type, size, mode), `skip`'s subtree left out."""
    out: dict[str, tuple[str, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        if skip is not None and Path(dirpath) == skip:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
            out[str(path.relative_to(top))] = (kind, st.st_size if kind == "file" else 0, st.st_mode)
    return out


@dataclass
class Sandbox:
    top: Path  # the sandbox's parent: absolute-path attacks aim here
    root: Path
    staging: Path
    archives: Path

    def snapshot(self) -> dict[str, tuple[str, int, int]]:
        return listing(self.top, skip=self.staging)

    def assert_untouched(self, before: dict[str, tuple[str, int, int]]) -> None:
        after = self.snapshot()
        assert after == before, f"files changed outside staging: {set(after) ^ set(before)}"
        assert list(self.staging.iterdir()) == [], "staging is not empty"


def make_sandbox(top: Path) -> Sandbox:
    root = top / "sandbox"
    staging = root / "staging"
    archives = top / "archives"
    staging.mkdir(parents=True)
    archives.mkdir()
    os.chmod(staging, 0o700)
    return Sandbox(top, root, staging, archives)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return make_sandbox(tmp_path / "top")
