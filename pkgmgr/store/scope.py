"""Scope roots: the global scope (PKGMGR_HOME) and a workspace's store under it.

A `Scope` knows its directories, opens its `state.db` lazily, and hands out the writer lock.
Readers never create anything; a writer creates the root on first use and, while it holds the
lock, removes what a crashed writer left behind. Every directory on the way to a write is
checked without following symlinks and must be the user's own (`fsutil.secure_dirs`). Where a
workspace's store lives, and how it is registered, is the workspace layer's business: it hands
the scope its root and an `on_create` callback.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pkgmgr.store.db as dbmod
from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError, io_error
from pkgmgr.fsutil import EarlyWriteback, private_dir, refuse_links, remove_tree, secure_dirs
from pkgmgr.store.checks import has_trees

WORKSPACE_MANIFEST = "pkgmgr.toml"
# the files pkgmgr opens for writing in a scope root (SQLite adds the -wal and -shm files)
_ROOT_FILES = ("state.db", "state.db-wal", "state.db-shm", "state.lock")
T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Scope:
    kind: str  # "global" | "workspace"
    root: Path
    workspace: Path | None = None  # the workspace directory (None for global)
    parent: "Scope | None" = None  # the scope this one sees through (global, for a workspace)
    on_create: Callable[[Scope], None] | None = field(default=None, repr=False)  # before the root is made
    _conn: sqlite3.Connection | None = field(default=None, repr=False)
    _read_conn: sqlite3.Connection | None = field(default=None, repr=False)
    last_cleanup: list[str] = field(default_factory=list, repr=False)
    _writeback: EarlyWriteback | None = field(default=None, repr=False)  # while the writer lock is held

    @property
    def name(self) -> str:
        return self.kind

    @property
    def workspace_path(self) -> str:
        """Absolute workspace path, "" for the global scope (used by activation ids)."""
        return str(self.workspace) if self.workspace is not None else ""

    @property
    def db_path(self) -> Path:
        return self.root / "state.db"

    @property
    def staging_dir(self) -> Path:
        return self.root / ".staging"

    @property
    def extensions_dir(self) -> Path:
        return self.root / "extensions"

    @property
    def lock_path(self) -> Path:
        return self.root / "state.lock"

    def exists(self) -> bool:
        """Whether the scope was ever written; `state_inconsistent` when its trees outlived state.db."""
        self._refuse_lost_database()
        return self.db_path.exists()

    @property
    def db(self) -> sqlite3.Connection:
        """The scope's database; created (with the root) only if it does not exist yet.

        Raises `state_inconsistent` when installed trees exist but state.db is missing or empty:
        a new, empty database would disown them (SPEC 4: the database is the only authority)."""
        if self._conn is None:
            self._refuse_lost_database()
            self.ensure_root()
            self._conn = dbmod.connect(self.db_path, must_hold_data=self.has_trees())
        return self._conn

    def reader(self) -> sqlite3.Connection | None:
        """The database for reading, or None when the scope was never written (creates nothing).
        Opened read-only (and immutable where the root cannot be written, as on a read-only
        filesystem), unless this process writes the scope already."""
        if self._conn is not None:
            return self._conn
        if self._read_conn is None:
            self._refuse_lost_database()
            if not self.db_path.exists():
                return None
            self._read_conn = dbmod.connect_readonly(self.db_path, must_hold_data=self.has_trees())
            if self._read_conn is None:  # an older schema: migrated by a normal connection
                return self.db
        return self._read_conn

    def has_trees(self) -> bool:
        """Whether `extensions/` holds any version directory."""
        return has_trees(str(self.extensions_dir))

    def _refuse_lost_database(self) -> None:
        if not self.db_path.exists() and self.has_trees():
            raise dbmod.lost_database(self.db_path, "is missing")

    @property
    def anchor(self) -> Path:
        """The directory the user chose (PKGMGR_HOME): below it, nothing is followed through a link."""
        return self.parent.root if self.parent is not None else self.root

    def _below_anchor(self, rel: str = "") -> str:
        below = self.root.relative_to(self.anchor).as_posix()
        return "/".join(p for p in (below, rel) if p and p != ".")

    def ensure_root(self) -> None:
        """Create the root (checked: `path_escapes_root` for a link or another user's directory on
        the way, or among the files pkgmgr writes there)."""
        if self.on_create is not None and not os.path.lexists(self.root):
            self.on_create(self)
        secure_dirs(self.anchor, self._below_anchor(), create=True)
        refuse_links(self.root, _ROOT_FILES)

    def ensure_dir(self, rel: str) -> Path:
        """`root/rel`, created with every directory on the way checked (as `ensure_root`)."""
        self.ensure_root()
        secure_dirs(self.anchor, self._below_anchor(rel), create=True)
        return self.root / rel

    def check_layout(self) -> None:
        """Refuse (`path_escapes_root`) a store whose root, `extensions/` or `.staging/` is a link or
        another user's directory, or whose database or lock file is a link (creates nothing)."""
        for rel in ("", "extensions", ".staging"):
            secure_dirs(self.anchor, self._below_anchor(rel), create=False)
        if self.root.is_dir():
            refuse_links(self.root, _ROOT_FILES)

    def layout_problem(self) -> str | None:
        """Why `check_layout` refuses this scope, or None."""
        try:
            self.check_layout()
        except PkgmgrError as error:
            return error.message
        return None

    def close(self) -> None:
        for conn in (self._conn, self._read_conn):
            if conn is not None:
                conn.close()
        self._conn = self._read_conn = None

    @contextmanager
    def writer(self, timeout: float = 30.0) -> Iterator["Scope"]:
        """Hold the scope's writer lock; clean leftovers of crashed writers first.

        Raises `locked` when another writer keeps the lock longer than `timeout` seconds.
        """
        from pkgmgr.store.lock import ExclusiveLock, LockTimeout

        self.ensure_root()
        self.check_layout()  # what the cleanup below walks must be real directories of this user
        lock = ExclusiveLock(self.lock_path, timeout)
        try:
            lock.acquire()
        except LockTimeout:
            raise PkgmgrError(
                f"another pkgmgr process is changing the {self.kind} scope ({self.root}); "
                f"gave up after waiting {timeout:g} s",
                code=Code.LOCKED,
                hint="wait for it to finish, or raise --lock-timeout",
            ) from None
        try:
            crashpoint("writer.locked")
            self.db  # noqa: B018 - opening it migrates, under the lock
            from pkgmgr.store.leftovers import remove_leftovers

            self.last_cleanup = remove_leftovers(self)
            yield self
        except OSError as exc:
            disk = io_error(exc, self._user_path(exc.filename))
            if disk is None:
                raise
            raise disk from exc
        finally:
            if self._writeback is not None:
                self._writeback.stop()
                self._writeback = None
            lock.release()

    def each_under_writer(self, items: Iterable[T], action: Callable[[T], R], timeout: float = 30.0,
                          ) -> tuple[list[R], PkgmgrError | None]:
        """`action` on each of `items` in order, under the writer lock held once: what each returned,
        and the first failure (the others still run: one failure does not hide their outcome)."""
        done: list[R] = []
        error: PkgmgrError | None = None
        with self.writer(timeout):
            for item in items:
                try:
                    done.append(action(item))
                except PkgmgrError as exc:
                    error = error or exc
        return done, error

    def _user_path(self, path: object) -> object:
        """The path a disk failure names: the scope root instead of a private staging path (SPEC 11:
        messages never show internal paths), the scope root when the OS named none."""
        if path is None or str(path).startswith(str(self.staging_dir)):
            return self.root
        return path

    def new_staging(self) -> Path:
        """A fresh private directory under `.staging/` (only while holding the writer lock). The
        first one starts flushing the filesystem in the background until the lock is released
        (`fsutil.EarlyWriteback`): what the command stages reaches the disk while it is still
        extracting and checking, and its one `syncfs` before the renames (SPEC 4) waits less."""
        staging = private_dir(self.ensure_dir(".staging"), "tx-")
        if self._writeback is None:
            self._writeback = EarlyWriteback(self.staging_dir)
        return staging

    def discard(self, path: Path) -> None:
        remove_tree(path)


def global_scope(home: Path) -> Scope:
    return Scope("global", home)


def discover_workspace(start: Path, *, home: Path | None = None) -> Path:
    """The nearest ancestor of `start` holding `pkgmgr.toml` (SPEC 11).

    The walk stops at $HOME (not above it), at a filesystem boundary and at a directory the
    user (the effective uid) does not own; without a match the answer is `start` itself.
    """
    start = start.absolute()
    user_home = (home or Path(os.path.expanduser("~"))).absolute()
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        device = start.stat().st_dev
    except OSError:
        return start
    current = start
    while True:
        try:
            info = current.stat()
        except OSError:
            break
        if info.st_dev != device:
            break
        if uid is not None and info.st_uid != uid:
            break
        if (current / WORKSPACE_MANIFEST).is_file():
            return current
        if current == user_home or current.parent == current:
            break
        current = current.parent
    return start
