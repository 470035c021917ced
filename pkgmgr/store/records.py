"""The rows of `extensions`, every host's installs (SPEC 4, 13): read and written. What a writer is
changing is recorded beside them, for every host, in `pending_trees` (`store.pending`): a row here is
always a committed install.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pkgmgr.store.db import transaction
from pkgmgr.store.installed import Installed

if TYPE_CHECKING:
    from pkgmgr.store.scope import Scope

TABLE = "extensions"


def list_rows(scope: Scope, host: str | None = None) -> list[Installed]:
    """Every row of `scope` (a reader: creates nothing), by host and name."""
    conn = scope.reader()
    if conn is None:
        return []
    sql = f"SELECT * FROM {TABLE}" + (" WHERE host = ?" if host else "") + " ORDER BY host, name"
    return [Installed.from_row(r, scope.kind, scope.root) for r in conn.execute(sql, (host,) if host else ())]


def installed(scope: Scope, host: str | None = None) -> list[Installed]:
    """What `scope` holds, by host and name."""
    return list_rows(scope, host)


def get(scope: Scope, host: str, name: str, *, writer: bool = False) -> Installed | None:
    """The row of `host`'s install `name`; `writer`: read through the writer's
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
    return [Installed.from_row(r, scope.kind, scope.root) for r in conn.execute(sql, (name, host) if host else (name,))]


def visible(scopes: Sequence[Scope], host: str | None = None) -> list[Installed]:
    """The installs seen from `scopes` (nearest first: a workspace's shadow global ones of the same
    host and name), by host and name."""
    seen: dict[tuple[str, str], Installed] = {}
    for scope in scopes:
        for row in installed(scope, host):
            seen.setdefault((row.host, row.name), row)
    return [seen[key] for key in sorted(seen)]


def visible_names(scopes: Sequence[Scope]) -> set[str]:
    """The names of every host's installs seen from `scopes`: the name column alone, no row decoded
    or checked (a did-you-mean before a command: `visible` of 50 installs costs ~6 ms)."""
    names: set[str] = set()
    for scope in scopes:
        conn = scope.reader()
        if conn is not None:
            names.update(name for (name,) in conn.execute(f"SELECT name FROM {TABLE}") if isinstance(name, str))
    return names


def put(conn: sqlite3.Connection, item: Installed) -> None:
    """Write `item`'s row in the caller's transaction (replacing the row of its host and name)."""
    row = item.to_row()
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    conn.execute(f"INSERT OR REPLACE INTO {TABLE} ({columns}) VALUES ({marks})", tuple(row.values()))


def save(scope: Scope, item: Installed) -> None:
    """One durable transaction writing the row (`store.db.connect`: synchronous = FULL)."""
    with transaction(scope.db) as conn:
        put(conn, item)


def delete(scope: Scope, host: str, name: str) -> None:
    with transaction(scope.db) as conn:
        remove(conn, host, name)


def remove(conn: sqlite3.Connection, host: str, name: str) -> None:
    """Delete the row of `host`'s install `name` in the caller's transaction."""
    conn.execute(f"DELETE FROM {TABLE} WHERE host = ? AND name = ?", (host, name))



