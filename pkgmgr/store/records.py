"""The rows of `extensions`, every host's installs (SPEC 4, 13): read, written and, for a host that
switches a tree in a folder of its own, marked pending while the tree moves.

A writer switching a folder host's install first records the row it is moving to in `pending` (one
transaction), then renames, then commits the row; the host's recovery settles a pending row a
killed writer left by looking at the tree on disk (the old or the new install, never a mix). The
scope store's own installs record their moving trees in `pending_trees` instead (`store.pending`:
several trees of one transaction). A fresh install's row before its tree is in is a placeholder
(`is_placeholder`): readers never show it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pkgmgr.store.db import transaction
from pkgmgr.store.installed import Installed

if TYPE_CHECKING:
    from pkgmgr.store.scope import Scope

TABLE = "extensions"
_NO_TREE = "sha256-2:" + "0" * 64  # a fresh install's row before its tree is in: it matches no tree


def list_rows(scope: Scope, host: str | None = None) -> list[Installed]:
    """Every row of `scope` (a reader: creates nothing), placeholders included, by host and name."""
    conn = scope.reader()
    if conn is None:
        return []
    sql = f"SELECT * FROM {TABLE}" + (" WHERE host = ?" if host else "") + " ORDER BY host, name"
    return [Installed.from_row(r, scope.kind, scope.root) for r in conn.execute(sql, (host,) if host else ())]


def installed(scope: Scope, host: str | None = None) -> list[Installed]:
    """What `scope` holds (placeholders of an interrupted first install left out), by host and name."""
    return [row for row in list_rows(scope, host) if not is_placeholder(row)]


def get(scope: Scope, host: str, name: str, *, writer: bool = False) -> Installed | None:
    """The row of `host`'s install `name` (a placeholder too); `writer`: read through the writer's
    connection (its own uncommitted view)."""
    conn = scope.db if writer else scope.reader()
    if conn is None:
        return None
    row = conn.execute(f"SELECT * FROM {TABLE} WHERE host = ? AND name = ?", (host, name)).fetchone()
    return Installed.from_row(row, scope.kind, scope.root) if row is not None else None


def find(scope: Scope, name: str, host: str | None = None) -> list[Installed]:
    """Every install called `name` in `scope` (one per host; only `host`'s when given)."""
    conn = scope.reader()
    if conn is None:
        return []
    sql = f"SELECT * FROM {TABLE} WHERE name = ?" + (" AND host = ?" if host else "") + " ORDER BY host"
    rows = [Installed.from_row(r, scope.kind, scope.root) for r in conn.execute(sql, (name, host) if host else (name,))]
    return [row for row in rows if not is_placeholder(row)]


def visible(scopes: Sequence[Scope], host: str | None = None) -> list[Installed]:
    """The installs seen from `scopes` (nearest first: a workspace's shadow global ones of the same
    host and name), by host and name."""
    seen: dict[tuple[str, str], Installed] = {}
    for scope in scopes:
        for row in installed(scope, host):
            seen.setdefault((row.host, row.name), row)
    return [seen[key] for key in sorted(seen)]


def put(conn: sqlite3.Connection, item: Installed) -> None:
    """Write `item`'s row in the caller's transaction (replacing the row of its host and name)."""
    row = item.to_row()
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    conn.execute(f"INSERT OR REPLACE INTO {TABLE} ({columns}) VALUES ({marks})", tuple(row.values()))


def save(scope: Scope, item: Installed) -> None:
    """One durable transaction writing the row (the commit of a switch: on disk before old trees go)."""
    conn = scope.db
    conn.execute("PRAGMA synchronous = FULL")
    try:
        with transaction(conn):
            put(conn, item)
    finally:
        conn.execute("PRAGMA synchronous = NORMAL")


def delete(scope: Scope, host: str, name: str) -> None:
    with transaction(scope.db) as conn:
        conn.execute(f"DELETE FROM {TABLE} WHERE host = ? AND name = ?", (host, name))


def mark_pending(scope: Scope, current: Installed | None, new: Installed, extra: dict[str, Any]) -> None:
    """Record, before a tree is renamed in, the row the writer is moving to (SPEC 4): on the current
    row, or on a placeholder for a first install."""
    pending = {"row": new.to_row(), **extra}
    base = current if current is not None else new.with_changes(tree_sha256=_NO_TREE, tree_listing={})
    save(scope, base.with_changes(pending=pending))


def row_from_pending(data: dict[str, Any], scope: Scope) -> Installed:
    """The install a pending record describes (one a writer of schema 7 or 8 left names no
    `allow_unverified`, `network_digest`, `grants`, `max_scope`: filled in as migration 9 fills
    them). Raises `state_inconsistent` when it is damaged."""
    if "grants" not in data:
        data = {**data, "allow_unverified": 1 - data.get("verified", 0), "network_digest": "",
                "grants": data.get("capabilities", "[]"), "max_scope": None}
        data.pop("capabilities", None)
    return Installed.from_row(_Row(data), scope.kind, scope.root)


class _Row(dict[str, Any]):
    """A pending record's row, read as `sqlite3.Row` reads (`keys()`, `[column]`)."""

    def keys(self) -> Any:
        return list(super().keys())


def is_placeholder(item: Installed) -> bool:
    return item.tree_sha256 == _NO_TREE
