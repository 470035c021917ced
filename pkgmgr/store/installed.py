"""Values the store hands around: what is installed, for every host (a row of `extensions`)."""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pkgmgr.store.checks import STORE_HOST, install_path_problem, json_value


@dataclass(frozen=True)
class Installed:
    """One install pkgmgr manages: a row of `extensions`, keyed by (host, name).

    `path` is where the host loads it from: relative to the scope root for the scope store's own
    installs (`extensions/<name>/<version>`), absolute for a host that loads extensions from a folder
    of its own. `grants` is what it is granted (Compozy's permissions) or asks for (another host's
    capabilities). What a writer is changing is not here but in `pending_trees` (`store.pending`).
    `notes` and `trust` are not stored: what the last change calls for (a host's trust step), for the
    operator."""

    name: str
    version: str
    path: str
    enabled: bool
    pinned: bool
    source_kind: str
    source: str
    registry: str | None
    source_url: str | None
    sha256: str | None
    verified: bool
    allow_unverified: bool
    tier: str | None
    tree_sha256: str
    tree_listing: dict[str, str]
    manifest: dict[str, Any]
    network_digest: str
    grants: tuple[str, ...]
    max_scope: str | None
    installed_at: str
    installed_by: str
    scope: str = "global"
    root: Path | None = field(default=None, compare=False)
    host: str = STORE_HOST
    layout: str = "directory"  # directory | script (a single-file extension)
    disabled_path: str | None = None  # where a disabled install waits, for a host that moves it away
    previous: dict[str, Any] | None = None  # the row of the install this one replaced, its tree kept (`ext rollback`)
    linked: str | None = None  # the folder a development link makes its host load (`ext link`)
    notes: tuple[str, ...] = field(default=(), compare=False)
    trust: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: sqlite3.Row | Any, scope: str, root: Path) -> Installed:
        """The install a row of `extensions` records. Raises `state_inconsistent` naming the row
        when a column is damaged (undecodable, out of its domain, JSON that is not what was written)."""
        from pkgmgr.store.db import check_row, damaged_row

        check_row("extensions", row)
        key = row_key(row)
        tree_listing = json_column(row, "tree_listing", dict)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in tree_listing.items()):
            raise damaged_row("extensions", key, "tree_listing", "entries that are not text")
        grants = json_column(row, "grants", list)
        if not all(isinstance(g, str) for g in grants):
            raise damaged_row("extensions", key, "grants", "grants that are not text")
        path = check_path(row)
        keys = row.keys()
        previous = json_column(row, "previous", dict) if "previous" in keys and row["previous"] is not None else None
        linked = row["linked"] if "linked" in keys else None
        if linked is not None and not (isinstance(linked, str) and os.path.isabs(linked)):
            raise damaged_row("extensions", key, "linked", "not an absolute path")
        return cls(
            name=row["name"],
            version=row["version"],
            path=path,
            enabled=bool(row["enabled"]),
            pinned=bool(row["pinned"]),
            source_kind=row["source_kind"],
            source=row["source"],
            registry=row["registry"],
            source_url=row["source_url"],
            sha256=row["sha256"],
            verified=bool(row["verified"]),
            allow_unverified=bool(row["allow_unverified"]),
            tier=row["tier"],
            tree_sha256=row["tree_sha256"],
            tree_listing=tree_listing,
            manifest=json_column(row, "manifest", dict),
            network_digest=row["network_digest"],
            grants=tuple(grants),
            max_scope=row["max_scope"],
            installed_at=row["installed_at"],
            installed_by=row["installed_by"],
            scope=scope,
            root=root,
            host=row["host"],
            layout=row["layout"],
            disabled_path=row["disabled_path"],
            previous=previous,
            linked=linked,
        )

    @property
    def in_store(self) -> bool:
        """Whether this is one of the scope store's own installs (`extensions/<name>/<version>` of
        its scope), rather than an install in a folder of another host."""
        return self.host == STORE_HOST

    @property
    def label(self) -> str:
        """How messages name the install: its name and version, and its host when it is another's."""
        text = f"{self.name} {self.version}".strip()
        return text if self.in_store else f"{text} ({self.host})"

    @property
    def where(self) -> str:
        """Where the install is, for messages: its scope, or its host and directory."""
        return f"{self.scope} scope" if self.in_store else f"{self.host}, {self.directory}"

    def located(self) -> dict[str, Any]:
        """The JSON fields that say where the install is beside its scope: its host and directory
        when it is in a folder of another host ({} for the scope store's own)."""
        return {} if self.in_store else {"host": self.host, "path": str(self.directory)}

    def entry(self, **extra: Any) -> dict[str, Any]:
        """The install as a command that changed it lists it in JSON: name, version, scope, `extra`,
        where it is (`located`) and, for an install in a folder of its host, the notes and the
        approval its host's trust step left. One shape for every host."""
        data: dict[str, Any] = {"name": self.name, "version": self.version or None, "scope": self.scope, **extra,
                                **self.located()}
        if not self.in_store:
            data["notes"] = list(self.notes)
            if self.trust:
                data["trust"] = self.trust
        return data

    @property
    def place(self) -> Path:
        """Where the host loads the install from (absolute)."""
        return self.root / self.path if self.root is not None else Path(self.path)

    @property
    def directory(self) -> Path:
        """Where the install is now: its place, or where a disabled one waits."""
        if not self.enabled and self.disabled_path is not None:
            return Path(self.disabled_path)
        return self.place

    def provenance(self) -> dict[str, Any]:
        return {
            "source": self.source_kind,
            "locator": self.source,
            "registry": self.registry,
            "source_url": self.source_url,
            "sha256": self.sha256,
            "verified": self.verified,
            "tier": self.tier,
            "tree_sha256": self.tree_sha256,
            "installed_at": self.installed_at,
            "installed_by": self.installed_by,
            "allow_unverified": self.allow_unverified,
            "pinned": self.pinned,
        }

    def to_row(self) -> dict[str, Any]:
        """The row of `extensions` that records this install."""
        return {
            "host": self.host, "name": self.name, "version": self.version, "path": self.path,
            "enabled": int(self.enabled), "pinned": int(self.pinned), "source_kind": self.source_kind,
            "source": self.source, "registry": self.registry, "source_url": self.source_url, "sha256": self.sha256,
            "verified": int(self.verified), "allow_unverified": int(self.allow_unverified), "tier": self.tier,
            "tree_sha256": self.tree_sha256,
            "tree_listing": json.dumps(self.tree_listing, sort_keys=True, separators=(",", ":")),
            "manifest": json.dumps(self.manifest, sort_keys=True, default=str),
            "network_digest": self.network_digest, "grants": json.dumps(list(self.grants)),
            "max_scope": self.max_scope, "installed_at": self.installed_at, "installed_by": self.installed_by,
            "layout": self.layout, "disabled_path": self.disabled_path,
            "previous": json.dumps(self.previous, sort_keys=True) if self.previous is not None else None,
            "linked": self.linked,
        }

    def with_changes(self, **changes: Any) -> Installed:
        return replace(self, **changes)

    def kept(self) -> Installed | None:
        """The install this one replaced, whose tree is kept for `ext rollback` (None: none is)."""
        if self.previous is None:
            return None
        root: Any = self.root  # a folder host's row names an absolute path: no root is needed to read it
        return Installed.from_row(dict(self.previous), self.scope, root)  # read as its row is read

    def as_previous(self) -> dict[str, Any]:
        """This install as the row a switch keeps of it (`previous`): its own kept install left out,
        so that one previous install is kept per extension."""
        return {**self.to_row(), "previous": None, "linked": None}


def row_key(row: sqlite3.Row | Any) -> str:
    """How messages name a row of `extensions`: its name, or `host/name` for another host's."""
    host = row["host"] if "host" in row.keys() else STORE_HOST
    return row["name"] if host == STORE_HOST else f"{host}/{row['name']}"


def json_column(row: sqlite3.Row | Any, column: str, kind: type) -> Any:
    """The JSON document a column of `extensions` holds; `state_inconsistent` when it does not parse
    or is not a `kind`."""
    from pkgmgr.store.db import damaged_row

    value = json_value(row[column], kind)
    if value is None:
        raise damaged_row("extensions", row_key(row), column, f"not a JSON {kind.__name__}")
    return value


def check_path(row: sqlite3.Row | Any, table: str = "extensions") -> str:
    """The `path` of a (checked) row of `extensions` or `pending_trees`: for the scope store's own
    installs `extensions/<name>/<version>`, or that with `~<tree prefix>` (a forced reinstall), so
    that a damaged path never makes the tree it names look like a leftover, nor another tree like a
    pending one; for another host's, an absolute path. `state_inconsistent` otherwise."""
    from pkgmgr.store.db import damaged_row

    name, version, path = row["name"], row["version"], row["path"]
    if "host" in row.keys() and row["host"] != STORE_HOST:
        if not os.path.isabs(path):
            raise damaged_row(table, row_key(row) if table == "extensions" else path, "path", "not an absolute path")
        return str(path)
    problem = install_path_problem(name, version, path)
    if problem is not None:
        raise damaged_row(table, path if table != "extensions" else name, "path", problem)
    return str(path)
