"""Manifest discovery (SPEC 3): where in an extracted or copied tree the extension starts."""

from __future__ import annotations

import os
from pathlib import Path

from pkgmgr.errors import Code, PkgmgrError

MANIFEST_NAMES = ("extension.toml", "extension.json")
# the other hosts' manifests (SPEC 13; which host a level belongs to is `pkgmgr.hosts.detect`'s)
HOST_MANIFEST_NAMES = ("vera.extension.json", "extension.exs")
SKILL_FILE = "SKILL.md"
_SHOWN = 20


def find_manifest_root(directory: Path) -> Path:
    """Descend while a level holds exactly one directory and nothing else; that level must
    hold `extension.toml` or `extension.json`.

    Raises `invalid_archive` when it holds no manifest (listing what it holds) or holds both a
    manifest and `SKILL.md`.
    """
    level = Path(directory)
    while True:
        with os.scandir(level) as scan:
            entries = sorted(scan, key=lambda e: e.name)
        if len(entries) == 1 and entries[0].is_dir(follow_symlinks=False):
            level = Path(entries[0].path)
            continue
        break
    names = {entry.name for entry in entries if not entry.is_dir(follow_symlinks=False)}
    rel = level.relative_to(directory).as_posix()
    rel = "" if rel == "." else rel
    where = f" in {rel + '/'!r}" if rel else ""
    scripts = [name for name in names if name.endswith(".exs")]
    if not any(name in names for name in MANIFEST_NAMES + HOST_MANIFEST_NAMES) and len(scripts) != 1:
        found = [entry.name + ("/" if entry.is_dir(follow_symlinks=False) else "") for entry in entries]
        listed = ", ".join(found[:_SHOWN]) + (f", … ({len(found) - _SHOWN} more)" if len(found) > _SHOWN else "")
        raise PkgmgrError(
            f"no extension manifest (extension.toml, extension.json, vera.extension.json or an Eva .exs){where}; "
            + (f"found: {listed}" if found else "it is empty"),
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
