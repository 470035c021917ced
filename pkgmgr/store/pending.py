"""The trees a writer is moving in or out of `extensions/` (SPEC 4 `pending`), as rows of
`pending_trees` (migration 8 of `store/db.py`).

A writer records each tree it is about to rename in (`in`) in a transaction of its own before
the rename, and each tree it stops naming (`out`: the old version of a switch, a removed
install) in the transaction that stops naming it; once the move is done the row goes. A tree
recorded here by a command that died is a leftover the next writer (and `doctor`) removes; a
tree that neither `extensions` nor this table names is never deleted (`store.recovery`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pkgmgr.store.db import rows, transaction

if TYPE_CHECKING:
    from pkgmgr.store.scope import Scope

TABLE = "pending_trees"
IN, OUT = "in", "out"


def record(conn: sqlite3.Connection, trees: Iterable[tuple[str, str, str]], pending: str, at: str) -> None:
    """Record each `(path, name, version)` as `pending` (`IN` or `OUT`), in the caller's transaction."""
    conn.executemany(f"INSERT OR REPLACE INTO {TABLE} (path, name, version, pending, recorded_at) "
                     "VALUES (?, ?, ?, ?, ?)", [(path, name, version, pending, at) for path, name, version in trees])


def record_moving_in(scope: Scope, trees: Iterable[tuple[str, str, str]], at: str) -> None:
    """One durable transaction recording the trees about to be renamed in (before the first rename)."""
    trees = list(trees)
    if trees:
        with transaction(scope.db) as conn:
            record(conn, trees, IN, at)


def drop(conn: sqlite3.Connection, paths: Iterable[str]) -> None:
    """Forget the rows of `paths` (their move is done), in the caller's transaction."""
    conn.executemany(f"DELETE FROM {TABLE} WHERE path = ?", [(path,) for path in paths])


def settle(scope: Scope, paths: Iterable[str]) -> None:
    """One transaction forgetting `paths` once their trees are in place or gone (their directories
    fsynced by the caller: the row goes only after what it recorded is on disk)."""
    paths = list(paths)
    if paths:
        with transaction(scope.db) as conn:
            drop(conn, paths)


def recorded(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    """Every pending row by its path, each checked (`state_inconsistent` naming a damaged one: a
    damaged path never lets a tree it does not name be taken for a pending one)."""
    from pkgmgr.store.installed import check_path

    return {check_path(row, TABLE): row for row in rows(conn, TABLE, f"SELECT * FROM {TABLE} ORDER BY path")}
