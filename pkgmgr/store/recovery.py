"""The invariants `pkgmgr doctor` checks, and its repairs and rebuild.

What an interrupted writer left is sorted and removed by `pkgmgr.store.leftovers` (every write
runs it). A tree that no
row names at all is never deleted: `doctor --check` reports it and `doctor --rebuild` records it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, Problem
from pkgmgr.fsutil import fsync_dirs
from pkgmgr.store.leftovers import scope_relative, survey

if TYPE_CHECKING:
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope


@dataclass
class Report:
    findings: list[Problem] = field(default_factory=list)
    repaired: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


RowCheck = Callable[["Scope", sqlite3.Connection], list[Problem]]


def check_store(scope: "Scope", *, verify_trees: bool = True, row_checks: Sequence[RowCheck] = ()) -> list[Problem]:
    """Read-only invariant checks of SPEC 4, and the `row_checks` of the layers above (the
    activations': `pkgmgr.doctor` composes them) once every row is known to be sound. Rows that are
    damaged are listed and nothing else is checked (every other check would believe them); a live
    writer's staging and the version directories it moves are not leftovers (its lock is held)."""
    findings: list[Problem] = []
    if not scope.root.exists():
        return findings
    layout = scope.layout_problem()
    if layout is not None:  # a link or another user's directory: nothing below it is read
        return [Problem.invariant(scope.kind, "layout", layout)]
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
    findings.extend(_directory_findings(scope, conn))
    return findings


def _directory_findings(scope: "Scope", conn: sqlite3.Connection | None) -> list[Problem]:
    """Leftovers (repairable) and unrecorded trees (reported, never deleted), unless a writer is at
    work: it holds the lock, or committed while the directories were read (its staging and the
    trees it moves are not leftovers)."""
    from pkgmgr.store.lock import is_held

    def version() -> int | None:
        return int(conn.execute("PRAGMA data_version").fetchone()[0]) if conn is not None else None

    before = version()
    if is_held(scope.lock_path):
        return []
    found = survey(scope)
    if is_held(scope.lock_path) or version() != before:
        return []
    findings = [Problem.invariant(scope.kind, "leftover", f"{scope_relative(scope, path)} is a leftover of an interrupted command", True)
                for path in found.leftovers]
    findings.extend(Problem.invariant(scope.kind, "unrecorded", f"{scope_relative(scope, path)} is not named by state.db: left in place "
                            "(run 'pkgmgr doctor --rebuild' to record it, or remove it by hand)")
                    for path in found.unrecorded)
    return findings


def damaged_rows(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
    """Every row of the state tables that does not decode to what pkgmgr writes, one finding each."""
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.store.db import ROW_RULES, check_row
    from pkgmgr.store.installed import Installed, check_path

    findings = []
    for table in ROW_RULES:
        for row in conn.execute(f"SELECT * FROM {table}"):  # the names are ours, not input
            try:
                if table == "extensions":
                    Installed.from_row(row, scope.kind, scope.root)
                elif table == "pending_trees":
                    check_path(check_row(table, row), table)
                else:
                    check_row(table, row)
            except PkgmgrError as error:
                findings.append(Problem.invariant(scope.kind, "row", error.message))
    return findings


def database_problem(scope: "Scope") -> Problem | None:
    """The scope's state.db cannot be opened, or fails SQLite's `integrity_check` (a damaged
    page makes the check itself raise); None when it is sound or does not exist."""
    from pkgmgr.errors import PkgmgrError

    try:
        conn = scope.reader()
        if conn is None:
            return None
        results = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
    except PkgmgrError as error:  # not a database this pkgmgr can open, or none beside installed trees
        if error.code == Code.IO_ERROR:
            raise  # the disk fails, not the state: exit 9 with the path (SPEC 11)
        return Problem.invariant(scope.kind, "sqlite", error.message + (f"; {error.hint}" if error.hint else ""))
    except sqlite3.DatabaseError as exc:
        results = [str(exc)]
    if results == ["ok"]:
        return None
    return Problem.invariant(scope.kind, "sqlite", "state.db integrity_check: " + "; ".join(results))


def _check_installs(scope: "Scope", conn: sqlite3.Connection, verify_trees: bool) -> list[Problem]:
    """Each install's directory exists and holds what its row records: the tree checksum and the
    file listing `ext verify` compares (so the two never disagree), and a manifest that says what
    the row says."""
    from pkgmgr.store.switch import list_installed

    findings = []
    for item in list_installed(scope):
        label = f"{item.name} {item.version}"
        if not item.directory.is_dir():
            what = f"the folder it is linked to ({item.linked})" if item.linked else item.path
            findings.append(Problem.invariant(scope.kind, "install", f"{label}: {what} is missing",
                                              name=item.name))
            continue
        if verify_trees and item.linked is None:  # a development link: the user's working folder
            findings.extend(Problem.invariant(scope.kind, "install", f"{label}: {problem}", name=item.name)
                            for problem in _tree_problems(item))
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


def repair_scope(scope: "Scope", timeout: float) -> list[Problem]:
    """What `pkgmgr doctor` repairs safely: `.staging/` contents and the trees dead writers
    recorded as pending (never a tree no row names); nothing while the database is missing,
    empty, unreadable or holds a damaged row, nor through a link."""
    if not scope.root.exists() or scope.layout_problem() is not None or database_problem(scope) is not None:
        return []  # nothing is removed on the word of a database that cannot be read, nor through a link
    conn = scope.reader()
    if conn is not None and damaged_rows(scope, conn):
        return []
    with scope.writer(timeout):  # taking the writer lock removes the leftovers
        removed = scope.last_cleanup
    return [Problem.invariant(scope.kind, "leftover", path if path.startswith("put back") else f"removed {path}", True)
            for path in removed]


def staging_is_empty(scope: "Scope") -> bool:
    return not scope.staging_dir.is_dir() or not any(os.scandir(scope.staging_dir))


def rebuild_scope(scope: Scope, timeout: float) -> list[Problem]:
    """`pkgmgr doctor --rebuild` (SPEC 4): when state.db is missing, empty or unreadable while
    installed trees exist, set it aside (renamed, never deleted) and record each tree found from
    its own manifest and tree checksum, provenance unknown and not verified (the newest version of
    a name when several are there; the others are reported and left in place). Activations were
    only in the database and are not reconstructed. A sound database keeps every row: only the
    trees it does not name at all are recorded, each of a name it has no install of.
    Raises `locked` when another writer holds the scope."""
    import pkgmgr.store.db as dbmod
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.store.lock import ExclusiveLock, LockTimeout

    if not scope.root.is_dir() or not scope.has_trees():
        return []
    if database_problem(scope) is None:
        return _adopt_unrecorded(scope, timeout)
    scope.close()
    lock = ExclusiveLock(scope.lock_path, timeout)
    try:
        lock.acquire()
    except LockTimeout:
        raise PkgmgrError(f"another pkgmgr process is changing the {scope.kind} scope ({scope.root})",
                          code=Code.LOCKED, hint="wait for it to finish, or raise --lock-timeout") from None
    try:
        done = [Problem.invariant(scope.kind, "rebuild", f"set aside the unusable state.db as {name}", True)
                for name in _set_aside(scope)]
        trees = [tree for name_dir in sorted(scope.extensions_dir.iterdir())
                 if name_dir.is_dir() and not name_dir.is_symlink() for tree in sorted(name_dir.iterdir())]
        conn = dbmod.connect(scope.db_path)
        try:
            return done + _record_trees(scope, conn, trees)
        finally:
            conn.close()
    finally:
        lock.release()


def _adopt_unrecorded(scope: Scope, timeout: float) -> list[Problem]:
    """`doctor --rebuild` beside a sound state.db: under the writer lock, record the trees no row
    names (`survey`) of names with no install; a tree of an installed name is reported and left
    in place (one install per name), as is anything that is not a directory."""
    conn = scope.reader()
    if conn is None or damaged_rows(scope, conn) or not survey(scope).unrecorded:
        return []
    from pkgmgr.store.switch import list_installed

    with scope.writer(timeout):
        installed = {item.name: item for item in list_installed(scope)}
        trees, notes = [], []
        for path in survey(scope).unrecorded:
            rel = scope_relative(scope, path)
            current = installed.get(path.parent.name) if path.parent != scope.extensions_dir else None
            if path.parent == scope.extensions_dir or path.is_symlink() or not path.is_dir():
                notes.append(f"left {rel} alone: not a directory of installed trees")
            elif current is not None:
                notes.append(f"left {rel} alone: {current.name} is installed at {current.version} ({current.path})")
            else:
                trees.append(path)
        return _record_trees(scope, scope.db, trees) + [Problem.invariant(scope.kind, "rebuild", note, True) for note in notes]


def _record_trees(scope: Scope, conn: sqlite3.Connection, trees: list[Path]) -> list[Problem]:
    """One transaction inserting the rows `_records_of_trees` makes of `trees`; what was done."""
    import pkgmgr.store.db as dbmod

    rows, notes = _records_of_trees(scope, trees)
    with dbmod.transaction(conn):
        for row in rows:
            columns = ", ".join(row)
            conn.execute(f"INSERT INTO extensions ({columns}) VALUES ({', '.join('?' for _ in row)})",
                         tuple(row.values()))
    done = [Problem.invariant(scope.kind, "rebuild", f"recorded {row['name']} {row['version']} from {row['path']} "
                    "(provenance unknown, not verified)", True) for row in rows]
    return done + [Problem.invariant(scope.kind, "rebuild", note, True) for note in notes]


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


def _records_of_trees(scope: Scope, trees: list[Path]) -> tuple[list[dict[str, object]], list[str]]:
    """One `extensions` row per name among `trees` (version directories under extensions/: the
    newest valid one of each name), and what was not adopted and why."""
    from pkgmgr.archive import tree_checksum_and_listing
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.manifest import read_manifest
    from pkgmgr.store.switch import _row
    from pkgmgr.versions import version_key

    rows, notes = [], []
    by_name: dict[str, list[Path]] = {}
    for tree in trees:
        by_name.setdefault(tree.parent.name, []).append(tree)
    for name, candidates in sorted(by_name.items()):
        found = []
        for tree in sorted(p for p in candidates if p.is_dir() and not p.is_symlink()):
            rel = scope_relative(scope, tree)
            try:
                manifest = read_manifest(tree)
            except PkgmgrError as error:
                notes.append(f"left {rel} alone: its manifest does not validate ({error.message.splitlines()[0]})")
                continue
            if manifest.name != name or tree.name.split("~", 1)[0] != manifest.version:
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
        adopted = _Adopted(_UNKNOWN_SOURCE, tree, tree, manifest.name, manifest.version, manifest.document,
                           manifest.network_digest, tree_sha256, listing, tuple(manifest.grants), max_scope)
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
    name: str
    version: str
    document: dict[str, Any]
    network_digest: str
    tree_sha256: str
    listing: dict[str, str]
    grants: tuple[str, ...]
    max_scope: str | None
    durable: bool = True  # found on disk, never renamed: nothing to flush
    linked: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}
