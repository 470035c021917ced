"""Manifest discovery (SPEC 3): where in an extracted or copied tree the extension starts."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from pkgmgr.errors import Code, PkgmgrError

MANIFEST_NAMES = ("extension.toml", "extension.json")  # Compozy's (SPEC 2)
SKILL_FILE = "SKILL.md"
_SHOWN = 20


def find_manifest_root(directory: Path, manifests: Sequence[str] = MANIFEST_NAMES) -> Path:
    """Descend while a level holds exactly one directory and nothing else; that level must
    hold one of `manifests` (file names, `dir/file` paths below it, or `*.suffix`: every host's manifest files,
    `pkgmgr.hosts.manifest_patterns`, where any host's extension may be; which host it is for is
    `pkgmgr.hosts.detect`'s).

    Raises `invalid_archive` when it holds no manifest (listing what it holds) or holds both a
    manifest and `SKILL.md`.
    """
    level = Path(directory)
    while True:
        with os.scandir(level) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        if len(entries) == 1 and entries[0].is_dir(follow_symlinks=False) and not nested_manifests(level, manifests):
            level = Path(entries[0].path)
            continue
        break
    names = {entry.name for entry in entries if not entry.is_dir(follow_symlinks=False)} | nested_manifests(
        level, manifests)
    rel = level.relative_to(directory).as_posix()
    rel = "" if rel == "." else rel
    where = f" in {rel + '/'!r}" if rel else ""
    if not any(_matches(pattern, name) for pattern in manifests for name in names):
        found = [entry.name + ("/" if entry.is_dir(follow_symlinks=False) else "") for entry in entries]
        listed = ", ".join(found[:_SHOWN]) + (f", … ({len(found) - _SHOWN} more)" if len(found) > _SHOWN else "")
        expected = ", ".join(manifests[:-1]) + f" or {manifests[-1]}" if len(manifests) > 1 else manifests[0]
        raise PkgmgrError(
            f"no extension manifest ({expected}){where}; " + (f"found: {listed}" if found else "it is empty"),
            code=Code.INVALID_ARCHIVE,
            details={"found": found, "level": rel},
        )
    if SKILL_FILE in names:
        raise PkgmgrError(
            f"contains both an extension manifest and {SKILL_FILE}{where}: a directory is either an extension "
            "or a skill",
            code=Code.INVALID_ARCHIVE,
            details={"level": rel},
        )
    return level


def nested_manifests(level: Path, manifests: Sequence[str]) -> set[str]:
    """The manifests of `manifests` that are a path below `level` (a folder of the extension holding it)
    and are a regular file there, every directory on the way a directory, no link followed."""
    found = set()
    for pattern in manifests:
        if "/" not in pattern or pattern.startswith("*"):
            continue
        path, parts = level, pattern.split("/")
        for index, part in enumerate(parts):
            path = path / part
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                break
            if not (stat.S_ISREG(mode) if index == len(parts) - 1 else stat.S_ISDIR(mode)):
                break
        else:
            found.add(pattern)
    return found


def _matches(pattern: str, name: str) -> bool:
    return name.endswith(pattern[1:]) if pattern.startswith("*") else name == pattern
