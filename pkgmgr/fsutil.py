"""Small filesystem primitives: atomic writes, private directories, safe removal."""

from __future__ import annotations

import os
import stat
from pathlib import Path


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
