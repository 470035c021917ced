"""Which files a source directory contributes (pack, install from a directory), and the copy.

- VCS metadata is left out: any file or directory named `.git`, `.hg`, `.svn`, `.bzr`,
  `_darcs`, `CVS` or `.fslckout`, at any depth (a `.git` *file* marks a worktree/submodule).
- So are a workspace's own files at the root (`pkgmgr.toml`, `pkgmgr.lock`, `.pkgmgr`): a
  repository whose root is the extension (`path = "."`) installs without them (SPEC 10).
- `<root>/.pkgmgrignore` (gitignore syntax, via pathspec) leaves out what it matches; an
  ignored directory is not walked (as in git, a file inside it cannot be re-included). Only the
  root's `.pkgmgrignore` is read; it is itself packed unless it ignores itself.
- Symbolic links: followed when their target resolves inside the root (a file's content is
  copied as a regular file, a directory is walked under the link's name); a link that escapes
  the root, dangles, or loops (a chain of links, or a directory link to an enclosing
  directory) → `path_escapes_root`.
- FIFOs, sockets and devices → `invalid_archive` (they cannot be packed); never opened, so a
  FIFO cannot hang the walk.
- Names an archive could not carry (control characters, backslashes, non-UTF-8 bytes, names
  that collide case-insensitively) → `invalid_archive`, so what is packed can be installed.
- Empty directories contribute nothing (like git).
- Every directory and file is opened by its resolved path one component at a time from `/`
  with `O_NOFOLLOW` (`NoFollowOpener`), and directories are listed through those descriptors:
  a component swapped for a symbolic link after it was resolved (a concurrent
  `renameat2(RENAME_EXCHANGE)`) is refused, never followed out of the root.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Self, Sequence

from pkgmgr.archive.files import (
    DIR_MODE,
    TreeWriter,
    empty_directory,
    file_mode,
    not_regular,
    open_regular,
    read_chunks,
)
from pkgmgr.archive.names import NameRefused, NameTable, split_member_name
from pkgmgr.errors import Code, PkgmgrError

VCS_NAMES = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".fslckout"})
# pkgmgr's own files at a workspace root, never part of an extension whose root it is (`path = "."`)
WORKSPACE_NAMES = frozenset({"pkgmgr.toml", "pkgmgr.lock", ".pkgmgr"})
IGNORE_FILE = ".pkgmgrignore"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class SourceFile:
    """One file of a source tree: its relative POSIX path, where its content is read from (a
    link's resolved target), and its normalised mode (0o644 or 0o755)."""

    rel: str
    path: Path
    mode: int


def select_files(root: Path) -> list[SourceFile]:
    """The files `root` contributes, sorted by relative path (see the module docstring).

    Raises `path_escapes_root` for escaping, dangling or looping links and `invalid_archive`
    for special files and names an archive cannot carry.
    """
    try:
        base = os.path.realpath(root, strict=True)
    except FileNotFoundError:
        raise PkgmgrError(f"{root}: no such directory", code=Code.NOT_FOUND, path=str(root)) from None
    if not os.path.isdir(base):
        raise PkgmgrError(f"{root}: not a directory", code=Code.INVALID_ARCHIVE, path=str(root))
    with NoFollowOpener() as opener:
        walker = _Walker(base, _ignore_spec(base, opener), opener)
        files = sorted(walker.walk(), key=lambda f: f.rel)
    names = NameTable()
    for item in files:
        try:
            names.add(split_member_name(item.rel, is_dir=False), is_dir=False, member=item.rel)
        except NameRefused as exc:
            raise PkgmgrError(f"{item.rel!r} cannot be packed: {exc.reason}", code=Code.INVALID_ARCHIVE,
                              details={"path": item.rel}) from None
    return files


def copy_source_tree(src: Path, dest: Path) -> Path:
    """Copy `select_files(src)` into `dest` (empty; created if missing, its parent must exist)
    with normalised modes (`dest` itself gets 0755); return `dest`. On failure `dest` is left
    empty."""
    return copy_selected(select_files(src), dest)


def copy_selected(files: Sequence[SourceFile], dest: Path) -> Path:
    """Copy `files` (from `select_files`) into `dest`, as `copy_source_tree`. Each file is
    opened without following any link on its resolved path, so a directory swapped for a link
    since the selection is `path_escapes_root` and nothing outside the root is read."""
    Path(dest).mkdir(mode=0o700, exist_ok=True)
    writer = TreeWriter(dest)
    try:
        with NoFollowOpener() as opener:
            for item in files:
                fd = opener.open_file(str(item.path), display=item.rel)
                try:
                    writer.write(item.rel, read_chunks(fd), item.mode)
                finally:
                    os.close(fd)
        writer.finish()
        os.chmod(dest, DIR_MODE)
    except BaseException:
        empty_directory(dest)
        raise
    return Path(dest)


class NoFollowOpener:
    """Opens resolved absolute paths (no link in them) one component at a time from `/`, each
    with `O_NOFOLLOW` and the previous one's descriptor as `dir_fd`: a component that became a
    symbolic link (or stopped being a directory) since the path was resolved is refused with
    `path_escapes_root`, one that vanished with `not_found`. The descriptors of the last
    directory's chain stay open, so sorted paths cost one `openat` per new component."""

    def __init__(self) -> None:
        self._root = os.open("/", _DIR_FLAGS)
        self._chain: list[tuple[str, int]] = []  # (component, descriptor) from / down

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for _, fd in reversed(self._chain):
            os.close(fd)
        self._chain.clear()
        if self._root >= 0:
            os.close(self._root)
            self._root = -1

    def directory(self, path: str, *, display: str) -> int:
        """The descriptor of directory `path` (owned by the opener: valid until its next call)."""
        return self._descend([part for part in path.split("/") if part], display)

    def open_file(self, path: str, *, display: str) -> int:
        """A new descriptor of regular file `path` (the caller closes it)."""
        parent, _, name = path.rpartition("/")
        directory = self.directory(parent, display=display)
        try:
            return open_regular(name, display=display, dir_fd=directory)
        except FileNotFoundError:
            raise _vanished(display) from None

    def _descend(self, parts: list[str], display: str) -> int:
        keep = 0
        while keep < len(self._chain) and keep < len(parts) and self._chain[keep][0] == parts[keep]:
            keep += 1
        for _, fd in reversed(self._chain[keep:]):
            os.close(fd)
        del self._chain[keep:]
        for part in parts[keep:]:
            parent = self._chain[-1][1] if self._chain else self._root
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
                    raise PkgmgrError(f"{display!r}: a directory on its path changed into a symbolic link or a "
                                      "file while being read", code=Code.PATH_ESCAPES_ROOT,
                                      details={"path": display}) from None
                if exc.errno == errno.ENOENT:
                    raise _vanished(display) from None
                raise
            self._chain.append((part, fd))
        return self._chain[-1][1] if self._chain else self._root


def _vanished(display: str) -> PkgmgrError:
    return PkgmgrError(f"{display!r} vanished while being read", code=Code.NOT_FOUND, details={"path": display})


def _ignore_spec(base: str, opener: NoFollowOpener) -> Any:
    path = os.path.join(base, IGNORE_FILE)
    if not os.path.lexists(path):
        return None
    target = _resolve(path, base, IGNORE_FILE) if os.path.islink(path) else path
    fd = opener.open_file(target, display=IGNORE_FILE)
    with open(fd, "rb") as handle:
        text = handle.read().decode("utf-8", "replace")
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def _escape(rel: str, why: str) -> PkgmgrError:
    return PkgmgrError(f"symbolic link {rel!r} {why}", code=Code.PATH_ESCAPES_ROOT, details={"path": rel})


def _resolve(path: str, base: str, rel: str) -> str:
    """The target of link `path`, which must exist and lie inside `base`."""
    try:
        target = os.path.realpath(path, strict=True)
    except FileNotFoundError:
        raise _escape(rel, "dangles (its target does not exist)") from None
    except OSError:
        raise _escape(rel, "is part of a loop of links") from None
    if target != base and not target.startswith(base + os.sep):
        raise _escape(rel, f"points outside the directory (to {target})")
    return target


class _Walker:
    def __init__(self, base: str, spec: Any, opener: NoFollowOpener) -> None:
        self.base = base
        self.spec = spec
        self.opener = opener

    def _ignored(self, rel: str, is_dir: bool) -> bool:
        return self.spec is not None and self.spec.match_file(rel + "/" if is_dir else rel)

    def walk(self) -> Iterator[SourceFile]:
        """Every selected file. Directories are walked with an explicit stack; each carries the
        real paths of the directories enclosing it (the loop guard for directory links)."""
        stack: list[tuple[str, str, tuple[str, ...]]] = [(self.base, "", (self.base,))]
        while stack:
            directory, prefix, ancestors = stack.pop()
            # listed through its descriptor, and every entry inspected before the next directory
            # is opened: the opener's descriptor (the entries' dir_fd) is valid until then
            with os.scandir(self.opener.directory(directory, display=prefix.rstrip("/") or ".")) as scan:
                entries = list(scan)
            for entry in entries:
                if entry.name in VCS_NAMES or (not prefix and entry.name in WORKSPACE_NAMES):
                    continue
                rel = prefix + entry.name
                path, st_mode = self._inspect(entry, os.path.join(directory, entry.name), rel)
                if st_mode is None or self._ignored(rel, stat.S_ISDIR(st_mode)):
                    continue
                if stat.S_ISDIR(st_mode):
                    if path in ancestors:
                        raise _escape(rel, "points to a directory that encloses it (a loop)")
                    stack.append((path, rel + "/", (*ancestors, path)))
                elif stat.S_ISREG(st_mode):
                    yield SourceFile(rel, Path(path), file_mode(st_mode))
                else:
                    raise not_regular(rel, st_mode)

    def _inspect(self, entry: os.DirEntry[str], path: str, rel: str) -> tuple[str, int | None]:
        """Where the entry's content is (`path`, or a link's target) and its type; a link is
        resolved (inside the root) and an ignored broken link gives `None`."""
        if entry.is_symlink():
            try:
                target = _resolve(path, self.base, rel)
            except PkgmgrError:
                if self._ignored(rel, False):
                    return path, None
                raise
            return target, os.stat(target).st_mode
        if entry.is_dir(follow_symlinks=False):
            return path, stat.S_IFDIR
        return path, entry.stat(follow_symlinks=False).st_mode
