"""Where a workspace's store lives (SPEC 10): `$PKGMGR_HOME/workspaces/<id>/`, never in the work tree.

`<id>` is the first 32 hex digits of the sha256 of the workspace's canonical absolute path
(`Path.resolve()`, as bytes: `os.fsencode`), so `printf %s "$PWD" | sha256sum | cut -c1-32`
names it from the workspace root. The global state records every store pkgmgr creates with the
path it belongs to (`workspace_stores`), which `pkgmgr doctor` walks. Nothing a repository commits
and nothing `git pull` overwrites reaches the store; a `.pkgmgr/` directory left in the work tree
by earlier versions is ignored (never read, migrated nor deleted).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from pkgmgr.crash import crashpoint
from pkgmgr.errors import PkgmgrError
from pkgmgr.store.db import transaction
from pkgmgr.store.scope import Scope, global_scope

STORES_DIR = "workspaces"
LEGACY_DIR = ".pkgmgr"  # the in-tree store of earlier versions


def store_id(workspace: Path) -> str:
    """The id of the store of `workspace` (its canonical absolute path)."""
    import hashlib  # not at import: `ext list` outside a workspace never needs OpenSSL

    return hashlib.sha256(os.fsencode(str(Path(workspace).resolve()))).hexdigest()[:32]


def workspace_scope(workspace: Path, home: Path) -> Scope:
    """The store of `workspace`; it sees the global scope (`home`) through `parent`, and is
    registered in the global state when a writer first creates it."""
    root = Path(workspace).resolve()
    return Scope("workspace", Path(home) / STORES_DIR / store_id(root), root, global_scope(home),
                 on_create=_register)


def _register(scope: Scope) -> None:
    """Record the store with its workspace's path in the global state, before it is created (a
    crash in between leaves a row whose store does not exist, which nothing reads)."""
    from pkgmgr.store.switch import now_utc

    assert scope.parent is not None and scope.workspace is not None
    home = scope.parent
    try:
        with transaction(home.db) as conn:
            conn.execute("INSERT OR REPLACE INTO workspace_stores (id, path, created_at) VALUES (?, ?, ?)",
                         (scope.root.name, str(scope.workspace), now_utc()))
    finally:
        home.close()
    crashpoint("store.after_register")


def recorded_stores(home: Path) -> list[Scope]:
    """The stores the global state records whose workspace still exists and whose store was
    created (rows of earlier versions, with random ids, name no store here), sorted by path;
    none while the global state cannot be read (its own check reports that)."""
    scope = global_scope(home)
    try:
        conn = scope.reader()
        rows = [] if conn is None else conn.execute("SELECT id, path FROM workspace_stores ORDER BY path").fetchall()
    except (PkgmgrError, sqlite3.DatabaseError):
        rows = []
    finally:
        scope.close()
    stores = []
    for row in rows:
        workspace = Path(row["path"])
        if not workspace.is_dir() or store_id(workspace) != row["id"]:
            continue
        candidate = workspace_scope(workspace, home)
        if os.path.lexists(candidate.root):
            stores.append(candidate)
    return stores


def legacy_store(workspace: Path) -> Path | None:
    """The `.pkgmgr/` an earlier version left in the work tree (a directory or a link), if any."""
    path = Path(workspace) / LEGACY_DIR
    return path if os.path.lexists(path) else None


def legacy_warning(workspace: Path) -> str | None:
    """The one-line warning for a left-over `.pkgmgr/` (None without one)."""
    path = legacy_store(workspace)
    if path is None:
        return None
    return (f"{path} was left by an earlier pkgmgr and is ignored (the workspace's store is outside the work tree "
            "now); 'pkgmgr doctor' says how to delete it")
