"""Trust (SPEC 10): nothing a repository declares runs before the user approved it.

The approval covers the digest of `pkgmgr.toml`, `pkgmgr.lock` and the tree of every `path`
extension, and lives in the global state (which the repository cannot write), as does the
workspace's store (`workspace/store.py`).

Files pkgmgr writes itself (the lock, `--save` edits) keep the approval: the new digest is
approved before the file is replaced and the old approval dropped after, so a crash between
the two leaves the workspace trusted under either content.
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pkgmgr.crash import crashpoint
from pkgmgr.errors import PkgmgrError
from pkgmgr.store.db import transaction
from pkgmgr.store.scope import global_scope


@dataclass(frozen=True)
class TrustState:
    digest: str
    paths: tuple[tuple[str, str, str], ...]  # (extension, relative path, tree sha256 or "missing")


def path_tree(root: Path, rel: str) -> str:
    """The tree checksum a `path` extension would install with (same file selection as pack)."""
    from pkgmgr.archive import files_checksum_and_listing, select_files

    directory = root / rel
    if not directory.is_dir():
        return "missing"
    try:
        checksum, _ = files_checksum_and_listing(select_files(directory))
    except PkgmgrError as error:
        return f"invalid:{error.code}"
    return checksum


def path_trees(root: Path, path_extensions: list[tuple[str, str]]) -> tuple[tuple[str, str, str], ...]:
    """(extension, relative path, tree checksum) of every `path` extension, sorted."""
    return tuple((extension, rel, path_tree(root, rel)) for extension, rel in sorted(path_extensions))


def compute(manifest_raw: bytes, lock_raw: bytes | None, root: Path, path_extensions: list[tuple[str, str]], *,
            trees: tuple[tuple[str, str, str], ...] | None = None) -> TrustState:
    """The digest over pkgmgr.toml + pkgmgr.lock + every path extension's tree (`trees`, when
    the caller already hashed them)."""
    digest = hashlib.sha256(b"pkgmgr-trust-v1\n")
    for name, data in (("pkgmgr.toml", manifest_raw), ("pkgmgr.lock", lock_raw)):
        size = -1 if data is None else len(data)
        digest.update(f"{name}\n{size}\n".encode())
        digest.update(data or b"")
    paths = trees if trees is not None else path_trees(root, path_extensions)
    for extension, rel, tree in paths:
        digest.update(f"path\n{extension}\n{rel}\n{tree}\n".encode())
    return TrustState(digest.hexdigest(), paths)


def _key(workspace: Path) -> str:
    return str(workspace.resolve())


@contextmanager
def _global(home: Path, *, write: bool) -> Iterator[sqlite3.Connection | None]:
    """The global state database for one operation (closed afterwards); None for a read when
    the global scope was never written."""
    scope = global_scope(home)
    try:
        yield scope.db if write else scope.reader()
    finally:
        scope.close()


def approved_digests(home: Path, workspace: Path) -> set[str]:
    with _global(home, write=False) as conn:
        if conn is None:
            return set()
        rows = conn.execute("SELECT digest FROM trust_approvals WHERE workspace = ?", (_key(workspace),))
        return {row["digest"] for row in rows}


def approve(home: Path, workspace: Path, digest: str, *, by: str, replace: bool = True) -> None:
    """Record the approval of `digest` (dropping older ones of this workspace when `replace`)."""
    from pkgmgr.store.install import now_utc

    with _global(home, write=True) as conn:
        assert conn is not None
        with transaction(conn):
            if replace:
                conn.execute("DELETE FROM trust_approvals WHERE workspace = ? AND digest != ?",
                             (_key(workspace), digest))
            conn.execute("INSERT OR REPLACE INTO trust_approvals (workspace, digest, approved_at, approved_by) "
                         "VALUES (?, ?, ?, ?)", (_key(workspace), digest, now_utc(), by))
            crashpoint("trust.approve.before_commit")


def forget_others(home: Path, workspace: Path, keep: str) -> None:
    with _global(home, write=True) as conn:
        assert conn is not None
        with transaction(conn):
            conn.execute("DELETE FROM trust_approvals WHERE workspace = ? AND digest != ?", (_key(workspace), keep))


def write_keeping_approval(home: Path, workspace: Path, path: Path, data: bytes, *, trusted: bool,
                           digest_after: str, after_write: Callable[[], None] = lambda: None) -> None:
    """Replace a workspace file pkgmgr owns the content of (the lock, a `--save` edit) without
    losing a valid approval: `digest_after` (the digest once `data` is written) is approved
    first, the file replaced, then older approvals dropped. A crash between any two steps
    leaves the workspace approved under whichever content is on disk. `after_write` runs
    between the write and the cleanup (the callers' crash points)."""
    from pkgmgr.fsutil import atomic_write_bytes
    from pkgmgr.store.install import login_user

    if trusted:
        approve(home, workspace, digest_after, by=login_user(), replace=False)
    crashpoint("trust.keep.before_write")
    atomic_write_bytes(path, data)
    after_write()
    if trusted:
        forget_others(home, workspace, keep=digest_after)
