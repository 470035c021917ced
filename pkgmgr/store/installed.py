"""Values the store hands around: what is installed (a row of `extensions`)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pkgmgr.store.checks import install_path_problem, json_value


class InstalledRecord(Protocol):
    """What every install record offers, a row of `extensions` (`Installed`) or another host's
    (`hosts.records.HostInstalled`): what a switch's `Outcome` carries and the callers read."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def pinned(self) -> bool: ...
    @property
    def source_kind(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def registry(self) -> str | None: ...
    @property
    def sha256(self) -> str | None: ...
    @property
    def verified(self) -> bool: ...
    @property
    def tree_sha256(self) -> str: ...
    @property
    def manifest(self) -> dict[str, Any]: ...
    @property
    def directory(self) -> Path: ...

    def provenance(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Installed:
    """One row of `extensions`."""

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

    @classmethod
    def from_row(cls, row: sqlite3.Row, scope: str, root: Path) -> "Installed":
        """The install a row of `extensions` records. Raises `state_inconsistent` naming the row
        when a column is damaged (undecodable, out of its domain, JSON that is not what was written)."""
        from pkgmgr.store.db import check_row, damaged_row

        check_row("extensions", row)
        name = row["name"]
        tree_listing = json_column(row, "tree_listing", dict)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in tree_listing.items()):
            raise damaged_row("extensions", name, "tree_listing", "entries that are not text")
        grants = json_column(row, "grants", list)
        if not all(isinstance(g, str) for g in grants):
            raise damaged_row("extensions", name, "grants", "grants that are not text")
        path, version = check_path(row), row["version"]
        return cls(
            name=name,
            version=version,
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
        )

    @property
    def directory(self) -> Path:
        assert self.root is not None
        return self.root / self.path

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


def json_column(row: sqlite3.Row, column: str, kind: type) -> Any:
    """The JSON document a column of `extensions` holds; `state_inconsistent` when it does not parse
    or is not a `kind`."""
    from pkgmgr.store.db import damaged_row

    value = json_value(row[column], kind)
    if value is None:
        raise damaged_row("extensions", row["name"], column, f"not a JSON {kind.__name__}")
    return value


def check_path(row: sqlite3.Row, table: str = "extensions") -> str:
    """The `path` of a (checked) row of `extensions` or `pending_trees`: `extensions/<name>/<version>`,
    or that with `~<tree prefix>` (a forced reinstall); `state_inconsistent` otherwise, so that a
    damaged path never makes the tree it names look like a leftover, nor another tree like a
    pending one."""
    from pkgmgr.store.db import damaged_row

    name, version, path = row["name"], row["version"], row["path"]
    problem = install_path_problem(name, version, path)
    if problem is not None:
        raise damaged_row(table, path if table != "extensions" else name, "path", problem)
    return path
