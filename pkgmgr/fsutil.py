"""Small filesystem primitives: atomic writes, private directories, safe removal, and reading a
file that must be a regular one (never blocking on a FIFO, never through a final link)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"))


def kind_of(st_mode: int) -> str:
    """A human word for a file type, for messages about files that are neither files nor dirs."""
    for test, word in _KINDS:
        if test(st_mode):
            return word
    return "not a regular file"


class NotRegularFile(OSError):
    """`path` is not a regular file: `kind` says what it is ("a FIFO", "a symbolic link", ...).
    Callers turn it into their own error code."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", os.fspath(path))
        self.kind = kind


def open_regular_fd(path: str | os.PathLike[str], *, follow_symlinks: bool = False) -> int:
    """Open a regular file for reading and return its descriptor. Opened non-blocking, so a FIFO
    (or a device) is refused instead of hanging the open; a symbolic link in the last component
    is refused unless `follow_symlinks`. Raises NotRegularFile, and the OSError of the open
    (FileNotFoundError, PermissionError, ...)."""
    flags = _READ_FLAGS | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        # ELOOP (EMLINK on FreeBSD) is what O_NOFOLLOW says for a final link
        if not follow_symlinks and exc.errno in (errno.ELOOP, errno.EMLINK):
            raise NotRegularFile(path, "a symbolic link") from exc
        raise
    st_mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(st_mode):
        os.close(fd)
        raise NotRegularFile(path, kind_of(st_mode))
    return fd


def read_regular(path: str | os.PathLike[str], *, limit: int, follow_symlinks: bool = False) -> bytes:
    """At most `limit` + 1 bytes of the regular file `path` (a caller that gets more than `limit`
    knows the file is too large without reading it all). Raises as `open_regular_fd`."""
    fd = open_regular_fd(path, follow_symlinks=follow_symlinks)
    try:
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def user_path(text: str | os.PathLike[str]) -> Path:
    """`~` and `~user` expanded; an unknown `~user` stays as written (where Path.expanduser raises
    RuntimeError, which would surface as an internal error)."""
    return Path(os.path.expanduser(text))


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then `os.replace` it in.

    `durable=False` skips both fsyncs, for files whose loss after a power cut costs nothing
    (caches that verify what they read): the replace stays atomic, readers never see a torn
    file before a crash, only possibly after one."""
    import tempfile  # here, not at import time: read-only commands never need it

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def private_dir(parent: Path, prefix: str) -> Path:
    """Create a fresh 0700 directory under `parent`."""
    import tempfile

    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def remove_tree(path: Path) -> None:
    """Remove a file or a directory tree, however deep (no recursion), tolerating members that
    are already gone and read-only directories."""
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        path.unlink(missing_ok=True)
        return
    stack = [(str(path), False)]
    while stack:
        current, visited = stack.pop()
        if visited:
            try:
                os.rmdir(current)
            except FileNotFoundError:
                pass
            continue
        try:
            os.chmod(current, 0o700)
            entries = list(os.scandir(current))
        except FileNotFoundError:
            continue
        stack.append((current, True))
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, False))
            else:
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass
