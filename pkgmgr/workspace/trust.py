"""Trust (SPEC 10): nothing a repository declares runs before the user approved it.

The approval covers the digest of `pkgmgr.toml`, `pkgmgr.lock` and the tree of every `path`
extension, and lives in the global state (which the repository cannot write). A workspace's
`.pkgmgr/` store carries a random id that the global state registers when pkgmgr creates the
store; a store whose id is unknown (committed, or copied from elsewhere) is refused until
`pkgmgr trust` adopts it — by discarding it, since nothing in it was written by this user here.

Files pkgmgr writes itself (the lock, `--save` edits) keep the approval: the new digest is
approved before the file is replaced and the old approval dropped after, so a crash between
the two leaves the workspace trusted under either content.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from pkgmgr.crash import crashpoint
from pkgmgr.errors import PkgmgrError
from pkgmgr.fsutil import atomic_write_text, remove_tree
from pkgmgr.store.db import transaction
from pkgmgr.store.scope import Scope, global_scope

STORE_ID = "store-id"


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
        from pkgmgr.store.db import rows

        found = rows(conn, "trust_approvals", "SELECT digest FROM trust_approvals WHERE workspace = ?",
                     (_key(workspace),))
        return {row["digest"] for row in found}


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


# --- the workspace store ------------------------------------------------------------------------

# What a store pkgmgr is creating holds before its id is written (a crash in between leaves it)
_PRISTINE = {".gitignore", STORE_ID, "state.lock"}


def store_id(scope: Scope) -> str | None:
    try:
        return (scope.root / STORE_ID).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def register_store(home: Path, scope: Scope, ident: str) -> None:
    from pkgmgr.store.install import now_utc

    with _global(home, write=True) as conn:
        assert conn is not None
        with transaction(conn):
            conn.execute("INSERT OR REPLACE INTO workspace_stores (id, path, created_at) VALUES (?, ?, ?)",
                         (ident, _key(scope.workspace or scope.root), now_utc()))


def create_store_id(home: Path, scope: Scope) -> str:
    """Give a store pkgmgr just created its random id, registered in the global state (first,
    so that a crash never leaves an id file the global state does not know)."""
    ident = secrets.token_hex(16)
    register_store(home, scope, ident)
    crashpoint("store.after_register")
    atomic_write_text(scope.root / STORE_ID, ident + "\n")
    return ident


def store_is_known(home: Path, scope: Scope) -> bool:
    ident = store_id(scope)
    if ident is None:
        return False
    with _global(home, write=False) as conn:
        if conn is None:
            return False
        from pkgmgr.store.db import one_row

        row = one_row(conn, "workspace_stores", "SELECT path FROM workspace_stores WHERE id = ?", (ident,))
    return row is not None and row["path"] == _key(scope.workspace or scope.root)


def _pristine(scope: Scope) -> bool:
    """Nothing in the store but what pkgmgr writes before registering it: nothing to distrust."""
    try:
        return all(entry.name in _PRISTINE and entry.is_file(follow_symlinks=False)
                   for entry in os.scandir(scope.root))
    except OSError:
        return False


def check_store(home: Path, scope: Scope) -> None:
    """Refuse a `.pkgmgr/` this user's pkgmgr did not create here (SPEC 10): `trust_required`.
    An empty store (pkgmgr was interrupted while creating it) is claimed instead."""
    if scope.kind != "workspace" or not os.path.lexists(scope.root):  # a dangling link is no absence
        return
    if store_is_known(home, scope):
        return
    if scope.root.is_dir() and not scope.root.is_symlink() and _pristine(scope):
        # a crash may have come before the .gitignore was written, and a repository's own
        # .gitignore need not ignore anything: the store this user now owns gets pkgmgr's
        atomic_write_text(scope.root / ".gitignore", "*\n")
        create_store_id(home, scope)
        return
    raise PkgmgrError(
        f"{scope.root} was not created by pkgmgr for this user here (committed to the repository, or copied "
        "from elsewhere); it is not used until you adopt it",
        code="trust_required",
        hint=f"review the workspace, then run 'pkgmgr trust --workspace {scope.workspace}' to adopt its store "
             "(its content is discarded; 'pkgmgr sync' installs the declared extensions again)",
    )


def adopt_store(home: Path, scope: Scope) -> bool:
    """`pkgmgr trust` adopts an unknown store. What it holds was written by someone else (a
    repository, another machine, another path), so none of it is believed: the directory is
    removed, and the next writer creates a fresh store with a registered id. Returns True
    when a store was adopted."""
    root = scope.root
    if not (root.is_dir() or root.is_symlink()) or store_is_known(home, scope):
        return False
    remove_tree(root)  # a crash half-way leaves an unknown store: refused, adopted again
    return True
