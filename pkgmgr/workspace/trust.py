"""Trust (SPEC 10): nothing a repository declares runs before the user approved it.

The approval covers the digest of `pkgmgr.toml`, `pkgmgr.lock`, the tree of every `path`
extension and the whole tree of every registry the workspace declares as a directory inside the
repository, and lives in the global state (which the repository cannot write), as does the
workspace's store (`workspace/store.py`). Every part of the digest is a netstring
(`<length>:<bytes>,`), and each record starts with its kind, which fixes how many parts follow:
no two different sets of files share a digest.

Files pkgmgr writes itself (the lock, `--save` edits) keep the approval: the new digest is
approved before the file is replaced and the old approval dropped after, so a crash between
the two leaves the workspace trusted under either content.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from pkgmgr.config import RegistryConfig
from pkgmgr.crash import crashpoint
from pkgmgr.errors import PkgmgrError
from pkgmgr.store.db import transaction
from pkgmgr.store.scope import global_scope


@dataclass(frozen=True)
class TrustState:
    digest: str
    paths: tuple[tuple[str, str, str], ...]  # (extension, relative path, tree sha256 or "missing")
    # (registry, where its directory is, tree digest): directories inside the workspace are
    # relative to it and hashed whole; others are absolute and marked "outside" (their source
    # is in pkgmgr.toml, which the digest covers)
    registries: tuple[tuple[str, str, str], ...] = ()


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


def registry_trees(root: Path, registries: Sequence[RegistryConfig]) -> tuple[tuple[str, str, str], ...]:
    """(registry, where, tree) of every declared directory registry, sorted by name."""
    from pkgmgr.registry.readers import parse_source

    out = []
    base = os.path.realpath(root)
    for registry in sorted(registries, key=lambda r: r.name):
        try:
            spec = parse_source(registry.source)
        except PkgmgrError:
            continue  # refused when the registry is opened; its text is in pkgmgr.toml
        if spec.kind != "dir" or spec.path is None:
            continue
        try:
            directory = os.path.realpath(spec.path, strict=True)
        except OSError:
            out.append((registry.name, str(spec.path), "missing"))
            continue
        if directory != base and not directory.startswith(base + os.sep):
            out.append((registry.name, directory, "outside"))  # which directory counts; its files do not
            continue
        where = os.path.relpath(directory, base).replace(os.sep, "/")
        out.append((registry.name, where, _whole_tree(directory, base)))
    return tuple(out)


def _netstring(data: bytes | str) -> bytes:
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return b"%d:%s," % (len(raw), raw)


def _record(*parts: bytes | str) -> bytes:
    return b"".join(_netstring(part) for part in parts)


def _whole_tree(directory: str, workspace: str) -> str:
    """sha256 over every entry under `directory`, links not followed and special files never
    opened: a registry's files are read by the registry client, whatever they are, so all of
    them count. Left out: VCS directories, and pkgmgr's own files at the workspace root (the
    lock that `sync` writes must not change a registry that is the repository itself)."""
    from pkgmgr.archive import VCS_NAMES
    from pkgmgr.archive.selection import WORKSPACE_NAMES
    from pkgmgr.fsutil import NotRegularFile, open_regular_fd

    records: list[tuple[bytes, bytes]] = []
    stack = [(directory, "")]
    while stack:
        current, prefix = stack.pop()
        try:
            with os.scandir(current) as scan:
                entries = list(scan)
        except OSError as exc:
            records.append((os.fsencode(prefix), _record("unreadable", prefix, exc.strerror or "")))
            continue
        for entry in entries:
            if entry.name in VCS_NAMES or (current == workspace and entry.name in WORKSPACE_NAMES):
                continue
            rel = prefix + entry.name
            key = os.fsencode(rel)
            if entry.is_symlink():
                records.append((key, _record("link", rel, os.fsencode(os.readlink(entry.path)))))
            elif entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, rel + "/"))
            else:
                try:
                    fd = open_regular_fd(entry.path)
                except NotRegularFile as exc:
                    records.append((key, _record("special", rel, exc.kind)))
                    continue
                except OSError as exc:
                    records.append((key, _record("unreadable", rel, exc.strerror or "")))
                    continue
                content = hashlib.sha256()
                try:
                    mode = "0755" if os.fstat(fd).st_mode & stat.S_IXUSR else "0644"
                    while chunk := os.read(fd, 1024 * 1024):
                        content.update(chunk)
                finally:
                    os.close(fd)
                records.append((key, _record("file", rel, mode, content.digest())))
    digest = hashlib.sha256()
    for _, record in sorted(records):
        digest.update(record)
    return digest.hexdigest()


def compute(manifest_raw: bytes, lock_raw: bytes | None, root: Path, path_extensions: list[tuple[str, str]], *,
            registries: Sequence[RegistryConfig] = (), trees: tuple[tuple[str, str, str], ...] | None = None,
            registry_dirs: tuple[tuple[str, str, str], ...] | None = None) -> TrustState:
    """The digest over pkgmgr.toml + pkgmgr.lock + every path extension's tree + the whole tree
    of every declared directory registry inside the workspace (`trees` and `registry_dirs`, when
    the caller already hashed them). Every part is length-prefixed (module docstring)."""
    digest = hashlib.sha256(_record("pkgmgr-trust-2"))
    digest.update(_record("pkgmgr.toml", manifest_raw))
    digest.update(_record("no pkgmgr.lock") if lock_raw is None else _record("pkgmgr.lock", lock_raw))
    paths = trees if trees is not None else path_trees(root, path_extensions)
    for extension, rel, tree in paths:
        digest.update(_record("path", extension, rel, tree))
    dirs = registry_dirs if registry_dirs is not None else registry_trees(root, registries)
    for name, where, tree in dirs:
        digest.update(_record("registry", name, where, tree))
    return TrustState(digest.hexdigest(), paths, dirs)


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


def last_approval(home: Path, workspace: Path) -> tuple[str, str] | None:
    """(approved_at, approved_by) of the workspace's latest approval, None when it has none."""
    with _global(home, write=False) as conn:
        if conn is None:
            return None
        from pkgmgr.store.db import rows

        found = rows(conn, "trust_approvals", "SELECT approved_at, approved_by FROM trust_approvals WHERE workspace = ? "
                     "ORDER BY approved_at DESC LIMIT 1", (_key(workspace),))
        return (found[0]["approved_at"], found[0]["approved_by"]) if found else None


def changed_since(root: Path, approved_at: str, parts: Sequence[str]) -> list[str]:
    """The files (and folders) among `parts` (paths relative to `root`: files, or folders walked
    without following links) whose status changed after `approved_at` (a UTC second): what an
    edit since the approval touched, by the files' change time (`st_ctime`, which copying a file's
    times does not set back). A change within the second of the approval is not told apart."""
    from datetime import datetime

    try:
        since = datetime.fromisoformat(approved_at.replace("Z", "+00:00")).timestamp() + 1
    except ValueError:
        return []
    changed: list[str] = []
    for part in parts:
        path = root / part
        stack = [path]
        while stack:
            current = stack.pop()
            try:
                info = os.lstat(current)
            except OSError:
                continue
            rel = current.relative_to(root).as_posix()
            if info.st_ctime >= since and rel not in changed:
                changed.append(rel)
            if stat.S_ISDIR(info.st_mode):
                try:
                    stack.extend(sorted((child for child in current.iterdir()
                                         if child.name not in (".git", ".hg", ".svn")), reverse=True))
                except OSError:
                    continue
    return changed


def approve(home: Path, workspace: Path, digest: str, *, by: str, replace: bool = True) -> None:
    """Record the approval of `digest` (dropping older ones of this workspace when `replace`)."""
    from pkgmgr.store.switch import now_utc

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
    from pkgmgr.store.switch import login_user

    if trusted:
        approve(home, workspace, digest_after, by=login_user(), replace=False)
    crashpoint("trust.keep.before_write")
    atomic_write_bytes(path, data)
    after_write()
    if trusted:
        forget_others(home, workspace, keep=digest_after)
