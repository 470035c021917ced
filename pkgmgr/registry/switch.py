"""The one switch by which every command changes a registry index (docs/registry-format.md,
"Atomic signed publishing"): stage every new file, then rename them into place in order.

1. Stage: each new file is written (and fsynced) under `.pkgmgr-staging/<id>/` in the index,
   then `journal.json` naming, in order, each destination, its staged file (or a removal) and
   the new bytes' sha256 — the journal is written last, so a staging without one was never
   begun.
2. Switch: the staged files are renamed into place in the journal's order (the caller orders
   them: target files first, then TUF metadata, `timestamp.json` last), each directory fsynced,
   then the journal and the staging directory removed.

`recover` (run under the index lock by every command before it reads the index, and by
`registry doctor`) settles what a killed command left: a staging with a journal is switched to
the end (rolled forward: every staged file is there, or already renamed — its destination then
holds the journal's sha256); one without a journal is removed (rolled back: nothing was renamed
yet). A plain `os.replace` per file keeps each file whole at every instant; the order and the
journal keep the set of files consistent once settled.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import fsync_dir

STAGING_DIR = ".pkgmgr-staging"
JOURNAL = "journal.json"


@dataclass(frozen=True)
class FileChange:
    """`rel` (a path inside the index) gets `data`; None removes it."""

    rel: str
    data: bytes | None


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _safe_rel(rel: str) -> str:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0] == STAGING_DIR:
        raise PkgmgrError(f"internal: {rel!r} is not a path inside a registry index", code=Code.INTERNAL)
    return rel


def differs(root: Path, change: FileChange) -> bool:
    """Whether `change` changes anything in the index at `root`."""
    path = root / _safe_rel(change.rel)
    if change.data is None:
        return os.path.lexists(path)
    return not path.is_file() or path.is_symlink() or path.read_bytes() != change.data


def switch(root: Path, changes: Sequence[FileChange]) -> list[str]:
    """Stage `changes`, then switch them in, in order (module docstring). A change whose bytes
    the destination already holds is left out. Returns the paths changed."""
    todo = [change for change in changes if differs(root, change)]
    if not todo:
        return []
    tx = root / STAGING_DIR / uuid.uuid4().hex
    tx.mkdir(parents=True)
    entries = []
    try:
        for number, change in enumerate(todo):
            staged = None
            if change.data is not None:
                staged = str(number)
                _write(tx / staged, change.data)
                crashpoint("registry.switch.staging")
            entries.append({"rel": change.rel, "staged": staged,
                            "sha256": None if change.data is None else hashlib.sha256(change.data).hexdigest()})
        _write(tx / f"{JOURNAL}.tmp", json.dumps({"version": 1, "files": entries}).encode())
        os.replace(tx / f"{JOURNAL}.tmp", tx / JOURNAL)
        fsync_dir(tx)
    except BaseException:  # nothing was renamed yet: the index is as it was
        shutil.rmtree(tx, ignore_errors=True)
        _remove_empty(root / STAGING_DIR)
        raise
    crashpoint("registry.switch.staged")
    _apply(root, tx, entries)
    return [change.rel for change in todo]


def _apply(root: Path, tx: Path, entries: list[dict]) -> None:
    touched: set[Path] = set()
    for item in entries:
        dest = root / _safe_rel(item["rel"])
        if item["staged"] is None:
            try:
                dest.unlink()
            except FileNotFoundError:
                pass
        else:
            staged = tx / item["staged"]
            if staged.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, dest)
            elif not _holds(dest, item["sha256"]):
                raise PkgmgrError(f"{root}: an interrupted change cannot be completed: its staged {item['rel']} is "
                                  f"gone and the file is not the one it was writing ({tx})", code=Code.STATE_INCONSISTENT,
                                  hint=f"remove {tx}, restore the index from its git history, then run "
                                       f"'pkgmgr registry build {root}'")
        touched.add(dest.parent)
        crashpoint("registry.switch.renamed")
    for folder in sorted(touched):
        if folder.is_dir():
            fsync_dir(folder)
    crashpoint("registry.switch.done")
    shutil.rmtree(tx)
    _remove_empty(root / STAGING_DIR)


def _holds(path: Path, sha256: str | None) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return False


def _remove_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


@dataclass(frozen=True)
class Settled:
    completed: tuple[str, ...]  # staging directories switched to the end
    discarded: tuple[str, ...]  # staging directories removed (never begun)

    def to_json(self) -> dict[str, list[str]]:
        return {"completed": list(self.completed), "discarded": list(self.discarded)}


def pending(root: Path) -> list[Path]:
    """The staging directories a killed command left in the index at `root`."""
    folder = root / STAGING_DIR
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    except (FileNotFoundError, NotADirectoryError):
        return []


def recover(root: Path) -> Settled:
    """Settle every change a killed command left (module docstring). Call under the index lock."""
    completed, discarded = [], []
    for tx in pending(root):
        journal = tx / JOURNAL
        try:
            doc = json.loads(journal.read_bytes())
            entries = doc["files"]
            if doc.get("version") != 1 or not isinstance(entries, list):
                raise ValueError("not a journal")
        except FileNotFoundError:
            shutil.rmtree(tx, ignore_errors=True)
            discarded.append(tx.name)
            continue
        except (OSError, ValueError, KeyError, TypeError):
            raise PkgmgrError(f"{root}: {journal} is not a journal pkgmgr can read; the index may be mid-change",
                              code=Code.STATE_INCONSISTENT,
                              hint=f"remove {tx} and restore the index from its git history") from None
        _apply(root, tx, entries)
        completed.append(tx.name)
    _remove_empty(root / STAGING_DIR)
    return Settled(tuple(completed), tuple(discarded))
