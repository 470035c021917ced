"""What a writer is changing, recorded before it acts (SPEC 4 `pending`): one row of `pending_trees`
per tree it moves or host file it rewrites, for every host (migration 10 of `store/db.py`).

One protocol for every change of installs, the scope store's and every folder host's (and a batch of
several hosts' at once): each change is recorded here first (`begin`, one durable transaction for
the whole batch, phase `in`), then its trees move, then ONE transaction writes the installs' rows
and flips the batch's intents (`commit`: the store's `in` rows go, a folder host's turn `out`,
and each tree the commit stops naming is recorded `out`), then what follows the commit happens (a
host's own records, old trees deleted) and the rows go (`settle`). So the phase of an intent a
killed writer left says what the next writer (and `doctor`) does with it: `in` — the commit did
not happen: undo the move (the old install stands); `out` — it did: finish (the new one stands).
A tree no intent and no install names is never deleted (`store.recovery` reports it).

The scope store's own rows (host `compozy`, action `tree`) name a version directory relative to
the scope root (with, in `tx`, where a kept tree the switch sets aside for it waits in `.staging/`:
put back by `store.leftovers` when the switch did not commit); a folder host's (actions `install`, `remove`, `move`, `enable`) the absolute path of
the install, with its transaction directory (`tx`: where the old tree waits until the commit) and
the record it moves to (`row`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pkgmgr.store.checks import STORE_HOST
from pkgmgr.store.db import rows, transaction

if TYPE_CHECKING:
    from pkgmgr.store.scope import Scope

TABLE = "pending_trees"
IN, OUT = "in", "out"  # the phase: before the commit (undone by recovery), after it (finished by recovery)
TREE = "tree"  # the scope store's action: a version directory moved in or out
_COLUMNS = "path, name, version, pending, recorded_at, host, action, tx, batch, row"


@dataclass(frozen=True)
class Intent:
    """One change a writer recorded before making it: the tree at `path` (or the host file it
    rewrites in place) of `host`'s install `name`."""

    path: str
    name: str
    version: str
    pending: str = IN
    host: str = STORE_HOST
    action: str = TREE  # tree (the scope store's) | install | remove | move | enable (a folder host's)
    tx: str | None = None  # a folder host's transaction directory; the scope store's: a kept tree set aside
    batch: str | None = None  # the command's batch: every intent of one commit
    row: dict[str, Any] | None = None  # what the change moves to: {"row": the new record, "host": its host's records}

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Intent:
        from pkgmgr.store.checks import json_value
        from pkgmgr.store.db import damaged_row
        from pkgmgr.store.installed import check_path

        path = check_path(row, TABLE)
        moving_to = None
        if row["row"] is not None:
            moving_to = json_value(row["row"], dict)
            if moving_to is None:
                raise damaged_row(TABLE, path, "row", "not a JSON dict")
        return cls(path=path, name=row["name"], version=row["version"], pending=row["pending"], host=row["host"],
                   action=row["action"], tx=row["tx"], batch=row["batch"], row=moving_to)

    def values(self, at: str) -> tuple[Any, ...]:
        return (self.path, self.name, self.version, self.pending, at, self.host, self.action, self.tx, self.batch,
                json.dumps(self.row, sort_keys=True) if self.row is not None else None)

    @property
    def label(self) -> str:
        """How `doctor --check` names it."""
        what = {"tree": "switch", "install": "install", "remove": "removal", "move": "move", "enable": "enable/disable"}
        return f"{self.host} {self.name}: an interrupted {what.get(self.action, self.action)} is pending"


def put(conn: sqlite3.Connection, intents: Iterable[Intent], at: str) -> None:
    """Record each intent (replacing one of the same path), in the caller's transaction."""
    conn.executemany(f"INSERT OR REPLACE INTO {TABLE} ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [intent.values(at) for intent in intents])


def record(conn: sqlite3.Connection, trees: Iterable[tuple[str, str, str]], pending: str, at: str,
           batch: str | None = None) -> None:
    """Record each of the scope store's `(path, name, version)` as `pending` (`IN` or `OUT`), in the
    caller's transaction."""
    put(conn, (Intent(path, name, version, pending, batch=batch) for path, name, version in trees), at)


def begin(scope: Scope, intents: Iterable[Intent], at: str) -> None:
    """One durable transaction recording what a command is about to change (before the first rename)."""
    intents = list(intents)
    if intents:
        with transaction(scope.db) as conn:
            put(conn, intents, at)


def record_moving_in(scope: Scope, trees: Iterable[tuple[str, str, str]], at: str, batch: str | None = None) -> None:
    """One durable transaction recording the scope store's trees about to be renamed in."""
    begin(scope, (Intent(path, name, version, IN, batch=batch) for path, name, version in trees), at)


def commit(conn: sqlite3.Connection, paths: Iterable[str]) -> None:
    """In the transaction that commits a change: its intents turn `out` (done, to be finished)."""
    conn.executemany(f"UPDATE {TABLE} SET pending = ? WHERE path = ?", [(OUT, path) for path in paths])


def drop(conn: sqlite3.Connection, paths: Iterable[str]) -> None:
    """Forget the rows of `paths` (their change is done), in the caller's transaction."""
    conn.executemany(f"DELETE FROM {TABLE} WHERE path = ?", [(path,) for path in paths])


def settle(scope: Scope, paths: Iterable[str]) -> None:
    """One transaction forgetting `paths` once their change is finished (their directories fsynced
    by the caller: the row goes only after what it recorded is on disk)."""
    paths = list(paths)
    if paths:
        with transaction(scope.db) as conn:
            drop(conn, paths)


def recorded(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    """The scope store's own pending trees by path, each checked (`state_inconsistent` naming a
    damaged one: a damaged path never lets a tree it does not name be taken for a pending one)."""
    from pkgmgr.store.installed import check_path

    return {check_path(row, TABLE): row for row in rows(conn, TABLE, f"SELECT * FROM {TABLE} WHERE host = ? "
                                                                       "ORDER BY path", (STORE_HOST,))}


def intents(conn: sqlite3.Connection | None, host: str | None = None) -> list[Intent]:
    """Every intent (of `host` when given), by host and path; `state_inconsistent` for a damaged one."""
    if conn is None:
        return []
    sql = f"SELECT * FROM {TABLE}" + (" WHERE host = ?" if host else "") + " ORDER BY host, path"
    return [Intent.from_row(row) for row in rows(conn, TABLE, sql, (host,) if host else ())]


def hosts_with_intents(conn: sqlite3.Connection | None) -> set[str]:
    """The hosts that have intents recorded (what a killed writer left)."""
    if conn is None:
        return set()
    return {row[0] for row in conn.execute(f"SELECT DISTINCT host FROM {TABLE}")}
