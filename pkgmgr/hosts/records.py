"""What pkgmgr records of a host install: one row of `host_extensions` in the state.db of the
scope it belongs to (the global scope for the hosts' global folders, a workspace's store for
the project folders of that workspace). The table is created by migration 7 of `store/db.py`.

A writer switching a host install first records the row it is moving to in `pending` (one
transaction), then renames, then commits the row; `recover` settles a pending row a killed
writer left by looking at the tree on disk (SPEC 4: the old or the new install, never a mix).
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.store.db import damaged_row, transaction

if TYPE_CHECKING:
    from pkgmgr.store.scope import Scope

TABLE = "host_extensions"
COLUMNS = ("host", "name", "version", "path", "layout", "enabled", "disabled_path", "pinned", "source_kind",
           "source", "registry", "source_url", "sha256", "verified", "tier", "tree_sha256", "tree_listing",
           "manifest", "capabilities", "pending", "installed_at", "installed_by")



@dataclass(frozen=True)
class HostInstalled:
    """One row: a host install pkgmgr manages. Mirrors `store.installed.Installed` where the CLI
    reads both (name, version, scope, source_kind, sha256, verified, enabled, pinned)."""

    host: str
    name: str
    version: str
    path: Path  # where the host loads it from (absolute; a file for an Eva script)
    layout: str
    enabled: bool
    disabled_path: Path | None
    pinned: bool
    source_kind: str
    source: str
    registry: str | None
    source_url: str | None
    sha256: str | None
    verified: bool
    tier: str | None
    tree_sha256: str
    tree_listing: dict[str, str]
    manifest: dict[str, Any]
    capabilities: tuple[str, ...]
    installed_at: str
    installed_by: str
    pending: dict[str, Any] | None = None
    scope: str = "global"
    notes: tuple[str, ...] = field(default=(), compare=False)
    trust: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def directory(self) -> Path:
        """Where the install is now: its place in the host folder, or where a disabled Eva
        extension waits."""
        if not self.enabled and self.disabled_path is not None:
            return self.disabled_path
        return self.path

    @property
    def allow_unverified(self) -> bool:
        return not self.verified

    @property
    def network_digest(self) -> str:
        return ""  # no host but Compozy has network requirements

    def provenance(self) -> dict[str, Any]:
        return {"source": self.source_kind, "locator": self.source, "registry": self.registry,
                "source_url": self.source_url, "sha256": self.sha256, "verified": self.verified, "tier": self.tier,
                "tree_sha256": self.tree_sha256, "installed_at": self.installed_at, "installed_by": self.installed_by,
                "pinned": self.pinned}

    def to_row(self) -> dict[str, Any]:
        return {
            "host": self.host, "name": self.name, "version": self.version, "path": str(self.path),
            "layout": self.layout, "enabled": int(self.enabled),
            "disabled_path": str(self.disabled_path) if self.disabled_path else None, "pinned": int(self.pinned),
            "source_kind": self.source_kind, "source": self.source, "registry": self.registry,
            "source_url": self.source_url, "sha256": self.sha256, "verified": int(self.verified), "tier": self.tier,
            "tree_sha256": self.tree_sha256,
            "tree_listing": json.dumps(self.tree_listing, sort_keys=True, separators=(",", ":")),
            "manifest": json.dumps(self.manifest, sort_keys=True, default=str),
            "capabilities": json.dumps(list(self.capabilities)),
            "pending": json.dumps(self.pending, sort_keys=True) if self.pending is not None else None,
            "installed_at": self.installed_at, "installed_by": self.installed_by,
        }

    def with_changes(self, **changes: Any) -> HostInstalled:
        return replace(self, **changes)


def _json(row: sqlite3.Row, column: str, kind: type) -> Any:
    try:
        value = json.loads(row[column])
    except (TypeError, ValueError, RecursionError):
        value = None
    if not isinstance(value, kind):
        raise damaged_row(TABLE, f"{row['host']}/{row['name']}", column, f"not a JSON {kind.__name__}")
    return value


def from_row(row: sqlite3.Row, scope: str) -> HostInstalled:
    """A checked row (`state_inconsistent` naming the row and column when it is damaged)."""
    from pkgmgr.store.db import check_row

    check_row(TABLE, row)
    key = f"{row['host']}/{row['name']}"
    if not os.path.isabs(row["path"]):
        raise damaged_row(TABLE, key, "path", "not an absolute path")
    listing = _json(row, "tree_listing", dict)
    capabilities = _json(row, "capabilities", list)
    pending = _json(row, "pending", dict) if row["pending"] is not None else None
    return HostInstalled(
        host=row["host"], name=row["name"], version=row["version"], path=Path(row["path"]), layout=row["layout"],
        enabled=bool(row["enabled"]), disabled_path=Path(row["disabled_path"]) if row["disabled_path"] else None,
        pinned=bool(row["pinned"]), source_kind=row["source_kind"], source=row["source"], registry=row["registry"],
        source_url=row["source_url"], sha256=row["sha256"], verified=bool(row["verified"]), tier=row["tier"],
        tree_sha256=row["tree_sha256"], tree_listing=listing, manifest=_json(row, "manifest", dict),
        capabilities=tuple(str(c) for c in capabilities), installed_at=row["installed_at"],
        installed_by=row["installed_by"], pending=pending, scope=scope,
    )


def _has_table(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone() is not None


def list_rows(scope: Scope, host: str | None = None) -> list[HostInstalled]:
    """Every host install recorded in `scope` (a reader: creates nothing), by host and name."""
    conn = scope.reader()
    if conn is None or not _has_table(conn):
        return []
    sql = f"SELECT * FROM {TABLE}" + (" WHERE host = ?" if host else "") + " ORDER BY host, name"
    return [from_row(r, scope.kind) for r in conn.execute(sql, (host,) if host else ())]


def get(scope: Scope, host: str, name: str, *, writer: bool = False) -> HostInstalled | None:
    conn = scope.db if writer else scope.reader()
    if conn is None or not _has_table(conn):
        return None
    row = conn.execute(f"SELECT * FROM {TABLE} WHERE host = ? AND name = ?", (host, name)).fetchone()
    return from_row(row, scope.kind) if row is not None else None


def put(conn: sqlite3.Connection, item: HostInstalled) -> None:
    row = item.to_row()
    columns = ", ".join(row)
    marks = ", ".join("?" for _ in row)
    conn.execute(f"INSERT OR REPLACE INTO {TABLE} ({columns}) VALUES ({marks})", tuple(row.values()))


def save(scope: Scope, item: HostInstalled) -> None:
    """One transaction writing the row (the commit of a switch: durable before old trees go)."""
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


def mark_pending(scope: Scope, current: HostInstalled | None, new: HostInstalled, extra: dict[str, Any]) -> None:
    """Record, before a tree is renamed in, the row the writer is moving to (SPEC 4)."""
    pending = {"row": new.to_row(), **extra}
    base = current if current is not None else new.with_changes(tree_sha256=_NO_TREE, tree_listing={})
    save(scope, base.with_changes(pending=pending))


_NO_TREE = "sha256-2:" + "0" * 64  # a fresh install's row before its tree is in: it matches no tree


def row_from_pending(data: dict[str, Any], scope: str) -> HostInstalled:
    """The HostInstalled a pending record describes."""
    class _Row(dict):  # sqlite3.Row-like access for from_row
        def keys(self) -> Any:
            return list(super().keys())

    return from_row(_Row(data), scope)  # type: ignore[arg-type]


def is_placeholder(item: HostInstalled) -> bool:
    return item.tree_sha256 == _NO_TREE


def find_installed(scope: Scope, name: str, host: str | None = None) -> HostInstalled | None:
    """A host install of `name` in `scope` (the first host that holds it, or `host`'s)."""
    for item in list_rows(scope, host):
        if item.name == name and not is_placeholder(item):
            return item
    return None


def visible(scopes: list[Scope], host: str | None = None) -> list[HostInstalled]:
    """Host installs seen from `scopes` (nearest first: a workspace's rows shadow global ones of
    the same host and name), placeholders of an interrupted first install left out."""
    seen: dict[tuple[str, str], HostInstalled] = {}
    for scope in scopes:
        for row in list_rows(scope, host):
            if not is_placeholder(row):
                seen.setdefault((row.host, row.name), row)
    return [seen[key] for key in sorted(seen)]


def list_entry(row: HostInstalled) -> dict[str, Any]:
    """A row as `ext list` shows it (SPEC 11's shape, with its host)."""
    return {"name": row.name, "version": row.version or None, "scope": row.scope, "enabled": row.enabled,
            "source": row.source_kind, "verified": row.verified, "path": str(row.directory), "pinned": row.pinned,
            "host": row.host}
