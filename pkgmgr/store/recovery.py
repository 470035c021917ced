"""Leftovers of interrupted writers, and the invariants `pkgmgr doctor` checks.

`remove_leftovers` runs at the start of every write, under the scope's lock: it empties
`.staging/` and removes version directories that no committed row references (a crash
between the rename and the commit, or before the old version was removed).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.crash import crashpoint
from pkgmgr.fsutil import fsync_dirs, remove_tree

if TYPE_CHECKING:
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope


@dataclass
class Finding:
    """One violated invariant (or one repair done)."""

    scope: str
    check: str
    message: str
    repairable: bool = False

    def to_json(self) -> dict[str, object]:
        return {"scope": self.scope, "check": self.check, "message": self.message, "repairable": self.repairable}


def _referenced_paths(conn: sqlite3.Connection) -> set[str]:
    from pkgmgr.store.db import rows
    from pkgmgr.store.installed import check_path

    return {check_path(row) for row in rows(conn, "extensions", "SELECT name, version, path FROM extensions")}


def orphans(scope: "Scope") -> list[Path]:
    """Directories under `.staging/` and version directories no row references."""
    found: list[Path] = []
    if scope.staging_dir.is_dir():
        found.extend(sorted(scope.staging_dir.iterdir()))
    if scope.extensions_dir.is_dir():
        conn = scope.reader()
        referenced = _referenced_paths(conn) if conn is not None else set()
        owners = {path.rsplit("/", 1)[0] for path in referenced}
        for name_dir in sorted(scope.extensions_dir.iterdir()):
            if name_dir.is_symlink() or not name_dir.is_dir() or _rel(scope, name_dir) not in owners:
                found.append(name_dir)  # the whole directory: no install lives in it
                continue
            found.extend(v for v in sorted(name_dir.iterdir()) if _rel(scope, v) not in referenced)
    return found


def _rel(scope: "Scope", path: Path) -> str:
    return path.relative_to(scope.root).as_posix()


def remove_leftovers(scope: "Scope") -> list[str]:
    """Remove every orphan (caller holds the writer lock); returns what was removed."""
    removed = []
    for path in orphans(scope):
        remove_tree(path)
        removed.append(_rel(scope, path))
        crashpoint("recovery.mid_cleanup")
    return removed


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    repaired: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


RowCheck = Callable[["Scope", sqlite3.Connection], list[Finding]]


def check_store(scope: "Scope", *, verify_trees: bool = True, row_checks: Sequence[RowCheck] = ()) -> list[Finding]:
    """Read-only invariant checks of SPEC 4, and the `row_checks` of the layers above (the
    activations': `pkgmgr.doctor` composes them) once every row is known to be sound. Rows that are
    damaged are listed and nothing else is checked (every other check would believe them); a live
    writer's staging and the version directories it moves are not leftovers (its lock is held)."""
    from pkgmgr.store.lock import is_held

    findings: list[Finding] = []
    if not scope.root.exists():
        return findings
    layout = scope.layout_problem()
    if layout is not None:  # a link or another user's directory: nothing below it is read
        return [Finding(scope.kind, "layout", layout)]
    broken = database_problem(scope)
    if broken is not None:
        return [broken]
    conn = scope.reader()
    if conn is not None:
        damaged = damaged_rows(scope, conn)
        if damaged:
            return damaged
        findings.extend(_check_installs(scope, conn, verify_trees))
        for check in row_checks:
            findings.extend(check(scope, conn))
    writing = is_held(scope.lock_path)
    leftovers = orphans(scope)
    if not (writing or is_held(scope.lock_path)):
        for path in leftovers:
            findings.append(Finding(scope.kind, "leftover", f"{_rel(scope, path)} is not referenced by any install",
                                    True))
    return findings


def damaged_rows(scope: Scope, conn: sqlite3.Connection) -> list[Finding]:
    """Every row of the state tables that does not decode to what pkgmgr writes, one finding each."""
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.store.db import ROW_RULES, check_row
    from pkgmgr.store.installed import Installed

    findings = []
    for table in ROW_RULES:
        for row in conn.execute(f"SELECT * FROM {table}"):  # the names are ours, not input
            try:
                if table == "extensions":
                    Installed.from_row(row, scope.kind, scope.root)
                else:
                    check_row(table, row)
            except PkgmgrError as error:
                findings.append(Finding(scope.kind, "row", error.message))
    return findings


def database_problem(scope: "Scope") -> Finding | None:
    """The scope's state.db cannot be opened, or fails SQLite's `integrity_check` (a damaged
    page makes the check itself raise); None when it is sound or does not exist."""
    from pkgmgr.errors import PkgmgrError

    try:
        conn = scope.reader()
        if conn is None:
            return None
        results = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
    except PkgmgrError as error:  # not a database this pkgmgr can open, or none beside installed trees
        return Finding(scope.kind, "sqlite", error.message + (f"; {error.hint}" if error.hint else ""))
    except sqlite3.DatabaseError as exc:
        results = [str(exc)]
    if results == ["ok"]:
        return None
    return Finding(scope.kind, "sqlite", "state.db integrity_check: " + "; ".join(results))


def _check_installs(scope: "Scope", conn: sqlite3.Connection, verify_trees: bool) -> list[Finding]:
    """Each install's directory exists and holds what its row records: the tree checksum and the
    file listing `ext verify` compares (so the two never disagree), and a manifest that says what
    the row says."""
    from pkgmgr.store.switch import list_installed

    findings = []
    for item in list_installed(scope):
        label = f"{item.name} {item.version}"
        if not item.directory.is_dir():
            findings.append(Finding(scope.kind, "install", f"{label}: {item.path} is missing"))
            continue
        if verify_trees:
            findings.extend(Finding(scope.kind, "install", f"{label}: {problem}") for problem in _tree_problems(item))
    return findings


def _tree_problems(item: Installed) -> list[str]:
    from pkgmgr.archive import tree_checksum_and_listing, tree_report
    from pkgmgr.store.db import FORMAT_1_MARK

    if not tree_report(item.tree_sha256, item.tree_listing, tree_checksum_and_listing(item.directory))["ok"]:
        why = ("its files no longer matched what was installed when its checksum was migrated to format 2"
               if item.tree_sha256.startswith(FORMAT_1_MARK) else "tree checksum differs from the recorded one")
        return [f"{why} (run 'pkgmgr ext verify {item.name}' for the files)"]
    return _manifest_problems(item)


def _manifest_problems(item: Installed) -> list[str]:
    """The row's copy of the manifest, and what it derived from it, against the tree's manifest."""
    import json

    from pkgmgr.errors import PkgmgrError
    from pkgmgr.manifest import read_manifest

    try:
        manifest = read_manifest(item.directory)
    except PkgmgrError as error:
        return [f"its manifest no longer validates: {error.message.splitlines()[0]}"]
    recorded = {
        "manifest": json.loads(json.dumps(item.manifest, sort_keys=True, default=str)),
        "name": item.name, "version": item.version, "network_digest": item.network_digest,
        "grants": sorted(item.grants),
    }
    actual = {
        "manifest": json.loads(json.dumps(manifest.document, sort_keys=True, default=str)),
        "name": manifest.name, "version": manifest.version, "network_digest": manifest.network_digest,
        "grants": sorted(manifest.grants),
    }
    return [f"the recorded {key} differs from the installed manifest's" for key in recorded
            if recorded[key] != actual[key]]


def repair_scope(scope: "Scope", timeout: float) -> list[Finding]:
    """What `pkgmgr doctor` repairs safely: leftovers and orphaned version directories; nothing
    while the database is missing, empty, unreadable or holds a damaged row, nor through a link."""
    if not scope.root.exists() or scope.layout_problem() is not None or database_problem(scope) is not None:
        return []  # nothing is removed on the word of a database that cannot be read, nor through a link
    conn = scope.reader()
    if conn is not None and damaged_rows(scope, conn):
        return []
    with scope.writer(timeout):  # taking the writer lock removes the leftovers
        removed = scope.last_cleanup
    return [Finding(scope.kind, "leftover", f"removed {path}", True) for path in removed]


def staging_is_empty(scope: "Scope") -> bool:
    return not scope.staging_dir.is_dir() or not any(os.scandir(scope.staging_dir))


def rebuild_scope(scope: Scope, timeout: float) -> list[Finding]:
    """`pkgmgr doctor --rebuild` (SPEC 4): when state.db is missing, empty or unreadable while
    installed trees exist, set it aside (renamed, never deleted) and record each tree found from
    its own manifest and tree checksum, provenance unknown and not verified (the newest version of
    a name when several are there; the others are reported and left in place). Activations were
    only in the database and are not reconstructed. Nothing happens to a sound database.
    Raises `locked` when another writer holds the scope."""
    import pkgmgr.store.db as dbmod
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.store.lock import ExclusiveLock, LockTimeout

    if not scope.root.is_dir() or not scope.has_trees() or database_problem(scope) is None:
        return []
    scope.close()
    lock = ExclusiveLock(scope.lock_path, timeout)
    try:
        lock.acquire()
    except LockTimeout:
        raise PkgmgrError(f"another pkgmgr process is changing the {scope.kind} scope ({scope.root})",
                          code="locked", hint="wait for it to finish, or raise --lock-timeout") from None
    try:
        done = [Finding(scope.kind, "rebuild", f"set aside the unusable state.db as {name}", True)
                for name in _set_aside(scope)]
        rows, notes = _records_of_trees(scope)
        conn = dbmod.connect(scope.db_path)
        try:
            with dbmod.transaction(conn):
                for row in rows:
                    columns = ", ".join(row)
                    conn.execute(f"INSERT INTO extensions ({columns}) VALUES ({', '.join('?' for _ in row)})",
                                 tuple(row.values()))
        finally:
            conn.close()
        done.extend(Finding(scope.kind, "rebuild", f"recorded {row['name']} {row['version']} from {row['path']} "
                            "(provenance unknown, not verified)", True) for row in rows)
        done.extend(Finding(scope.kind, "rebuild", note, True) for note in notes)
        return done
    finally:
        lock.release()


def _set_aside(scope: Scope) -> list[str]:
    """Rename state.db and its -wal/-shm to `state.db.damaged-<UTC time>*`; the names used."""
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    moved = []
    for suffix in ("", "-wal", "-shm"):
        path = scope.root / f"state.db{suffix}"
        if path.exists():
            target = scope.root / f"state.db.damaged-{stamp}{suffix}"
            os.replace(path, target)
            moved.append(target.name)
    fsync_dirs(scope.root)
    return moved[:1]


def _records_of_trees(scope: Scope) -> tuple[list[dict[str, object]], list[str]]:
    """One `extensions` row per name found under extensions/, and what was not adopted and why."""
    from pkgmgr.archive import tree_checksum_and_listing
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.manifest import read_manifest
    from pkgmgr.store.switch import _row
    from pkgmgr.versions import version_key

    rows, notes = [], []
    for name_dir in sorted(p for p in scope.extensions_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        found = []
        for tree in sorted(p for p in name_dir.iterdir() if p.is_dir() and not p.is_symlink()):
            rel = _rel(scope, tree)
            try:
                manifest = read_manifest(tree)
            except PkgmgrError as error:
                notes.append(f"left {rel} alone: its manifest does not validate ({error.message.splitlines()[0]})")
                continue
            if manifest.name != name_dir.name or tree.name.split("~", 1)[0] != manifest.version:
                notes.append(f"left {rel} alone: it holds {manifest.name} {manifest.version}")
                continue
            found.append((version_key(manifest.version), rel, tree, manifest))
        if not found:
            continue
        found.sort(key=lambda item: item[0])
        for _, rel, _, manifest in found[:-1]:
            notes.append(f"left {rel} alone: a newer version of {manifest.name} was recorded")
        _, rel, tree, manifest = found[-1]
        tree_sha256, listing = tree_checksum_and_listing(tree)
        max_scope = "workspace" if manifest.publish_max_scope is not None else None
        adopted = _Adopted(_UNKNOWN_SOURCE, tree, tree, manifest, tree_sha256, listing, tuple(manifest.grants),
                           max_scope)
        rows.append(_row(adopted, rel, _AdoptOptions(), None))
    return rows, notes


@dataclass(frozen=True)
class _UnknownSource:
    """The provenance of a tree adopted by `doctor --rebuild`: unknown, not verified."""

    kind: str = "unknown"
    locator: str = ""
    registry: str | None = None
    source_url: str | None = None
    sha256: str | None = None
    verified: bool = False
    tier: str | None = None


_UNKNOWN_SOURCE = _UnknownSource()


@dataclass(frozen=True)
class _AdoptOptions:
    force: bool = False
    pin: bool = False
    allow_unverified: bool = False


@dataclass(frozen=True)
class _Adopted:
    """An installed tree found on disk, as `store.switch._row` records it (a `Staged`)."""

    fetched: _UnknownSource
    root: Path
    staging: Path
    manifest: Any  # pkgmgr.manifest.Manifest (the store does not import the codecs' types)
    tree_sha256: str
    listing: dict[str, str]
    grants: tuple[str, ...]
    max_scope: str | None
    durable: bool = True  # found on disk, never renamed: nothing to flush

    @property
    def name(self) -> str:
        return str(self.manifest.name)

    @property
    def version(self) -> str:
        return str(self.manifest.version)

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}
