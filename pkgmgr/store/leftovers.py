"""Leftovers of interrupted writers (SPEC 4), sorted and removed at the start of every write.

`remove_leftovers` runs under the scope's writer lock: it empties `.staging/` and removes the
trees a dead writer recorded in `pending_trees` (a crash between the rename and the commit, or
before the old version was removed: `store.pending`), and empty name directories. A tree that no
row names is never deleted here: `pkgmgr.store.recovery` (doctor) reports and records it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.crash import crashpoint
from pkgmgr.fsutil import fsync_dirs, remove_tree

if TYPE_CHECKING:
    import sqlite3

    from pkgmgr.store.scope import Scope


@dataclass
class Survey:
    """What `extensions/` and `.staging/` hold besides the installs state.db names."""

    leftovers: list[Path] = field(default_factory=list)  # a dead writer's: staging, pending trees, empty name dirs
    unrecorded: list[Path] = field(default_factory=list)  # trees (or files) no row names: never deleted
    pending_rows: list[str] = field(default_factory=list)  # every pending row, settled once its tree is gone


def survey(scope: "Scope") -> Survey:
    """Sort what lies in the scope's directories (SPEC 4): `.staging/` contents and the trees
    `pending_trees` records are leftovers (of a writer that died, when no writer holds the lock);
    a tree neither `extensions` nor `pending_trees` names is unrecorded. Reads only."""
    from pkgmgr.store.checks import STORE_HOST
    from pkgmgr.store.db import rows
    from pkgmgr.store.installed import check_path
    from pkgmgr.store.pending import recorded

    found = Survey()
    if scope.staging_dir.is_dir():
        found.leftovers.extend(sorted(scope.staging_dir.iterdir()))
    conn = scope.reader()
    referenced: set[str] = set()
    pending: set[str] = set()
    if conn is not None:
        referenced = {check_path(row) for row in rows(conn, "extensions", "SELECT name, version, path FROM extensions "
                                                                          "WHERE host = ?", (STORE_HOST,))}
        referenced |= kept_paths(conn)
        pending = set(recorded(conn))
        found.pending_rows = sorted(pending)
    if not scope.extensions_dir.is_dir():
        return found
    for name_dir in sorted(scope.extensions_dir.iterdir()):
        if name_dir.is_symlink() or not name_dir.is_dir():
            found.unrecorded.append(name_dir)
            continue
        trees = sorted(name_dir.iterdir())
        if not trees and not any(rel.startswith(f"{scope_relative(scope, name_dir)}/") for rel in referenced):
            found.leftovers.append(name_dir)  # an empty directory holds no tree: a remove that died
        for tree in trees:
            rel = scope_relative(scope, tree)
            if rel in pending and rel not in referenced:
                found.leftovers.append(tree)
            elif rel not in referenced:
                found.unrecorded.append(tree)
    return found


def kept_paths(conn: "sqlite3.Connection") -> set[str]:
    """The trees the scope store keeps for a rollback (`extensions.previous`, SPEC 11)."""
    from pkgmgr.store.checks import STORE_HOST, install_path_problem, json_value

    kept = set()
    for (text,) in conn.execute("SELECT previous FROM extensions WHERE host = ? AND previous IS NOT NULL",
                                (STORE_HOST,)):
        row = json_value(text, dict)
        if row is not None and isinstance(row.get("path"), str) and install_path_problem(
                str(row.get("name")), str(row.get("version")), row["path"]) is None:
            kept.add(row["path"])
    return kept


def orphans(scope: "Scope") -> list[Path]:
    """What a writer that died left: `.staging/` contents, the trees it recorded as pending, empty
    name directories (never a tree state.db does not name)."""
    return survey(scope).leftovers


def scope_relative(scope: "Scope", path: Path) -> str:
    return path.relative_to(scope.root).as_posix()


def remove_leftovers(scope: "Scope") -> list[str]:
    """Remove what dead writers left (caller holds the writer lock), then forget their pending
    rows; returns what was removed."""
    from pkgmgr.store.pending import settle

    removed = _put_back_set_aside(scope)
    found = survey(scope)
    for path in found.leftovers:
        remove_tree(path)
        removed.append(scope_relative(scope, path))
        crashpoint("recovery.mid_cleanup")
        parent = path.parent
        if parent.parent == scope.extensions_dir and not any(parent.iterdir()):
            parent.rmdir()  # the name's last tree: its directory goes too, as `store.switch.remove` does
    if found.pending_rows:
        fsync_dirs(*{path for path in (scope.extensions_dir, *((scope.root / rel).parent for rel in found.pending_rows))
                     if path.is_dir()})
        settle(scope, found.pending_rows)
    return removed


_SET_ASIDE = re.compile(r"\.staging/dropped-[A-Za-z0-9_]+/[^/]+")  # where `store.switch` sets a kept tree aside


def _put_back_set_aside(scope: "Scope") -> list[str]:
    """A kept tree a switch set aside in `.staging/` to put the new tree in its place (a rollback
    lands where the kept version is), recorded as its intent's `tx` before it moved, goes back
    when the switch did not commit (its intent is still `in`): the tree the killed switch renamed
    there goes first. Returns what was put back."""
    from pkgmgr.fsutil import fsync_dir
    from pkgmgr.store.pending import IN, recorded

    done = []
    for rel, row in recorded(scope.db).items():
        tx = row["tx"]
        if row["pending"] != IN or not isinstance(tx, str) or _SET_ASIDE.fullmatch(tx) is None \
                or tx.rpartition("/")[2] != rel.rpartition("/")[2]:
            continue  # no kept tree set aside (or not where `store.switch` sets one): nothing is moved on its word
        away, target = scope.root / tx, scope.root / rel
        if not os.path.lexists(away) or os.path.islink(away) or not os.path.isdir(away):
            continue
        if os.path.lexists(target):
            remove_tree(target)  # what the killed switch renamed in after setting the kept tree aside
        scope.ensure_dir(rel.rpartition("/")[0])
        os.rename(away, target)
        fsync_dir(target.parent)
        done.append(f"put back the kept tree {rel}")
    return done
