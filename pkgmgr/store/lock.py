"""An exclusive OS lock on a file, waited for with a timeout: the writer lock of a scope and of
a registry index directory.

`flock(2)` on a descriptor of its own, polled every 50 ms until the timeout, as the `filelock`
package does on POSIX (and compatible with it: both lock the same way) — without its import,
which costs tens of milliseconds for every command that writes. The lock dies with the process,
so a crashed writer never leaves it held; the file itself stays and is never trusted for content.

The lock file is opened without following a final link and must be a regular file: a lock file
committed to an index repository as a symbolic link (or a FIFO, a device) is refused with
`UnsafeLockFile` — it never creates or opens whatever the link points at (the bug class of
filelock's CVE-2025-68146).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import HELD_LOCKS

POLL_SECONDS = 0.05
_BUSY = frozenset({errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK})
_OPEN_FLAGS = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)

_wait_notice: Callable[[str], None] | None = None


def on_wait(notice: Callable[[str], None] | None) -> None:
    """Have every lock that has to wait say so once, through `notice` (the CLI: a line on
    stderr, as cargo's "Blocking waiting for file lock")."""
    global _wait_notice
    _wait_notice = notice


def _holder(fd: int) -> str:
    """Who holds the lock on `fd`'s file, as "pkgmgr (pid N)" when /proc/locks (Linux) says so
    (the file's content is never written: it is not pkgmgr's to change)."""
    try:
        info = os.fstat(fd)
        wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for line in locks:
                fields = line.split()
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == wanted and fields[4].isdigit():
                    return f"pkgmgr (pid {fields[4]})"
    except OSError:
        pass
    return "pkgmgr process"


class LockTimeout(Exception):
    """Another process held the lock for longer than the timeout."""


class UnsafeLockFile(PkgmgrError):
    """The lock file is a symbolic link or not a regular file; nothing was created or opened
    through it. The code is the caller's (`state_inconsistent` for a scope, `invalid_index`
    for a registry index directory)."""


def open_lock_file(path: Path, flags: int, *, code: Code) -> int:
    """A descriptor of the regular file `path` (created with `os.O_CREAT` in `flags`), opened
    without following a final link. Raises `UnsafeLockFile` with `code` for a link, a FIFO, a
    directory or a device, and `OSError` for the rest."""
    try:
        fd = os.open(path, flags | _OPEN_FLAGS, 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.EISDIR):
            raise _unsafe(path, "is a symbolic link" if exc.errno != errno.EISDIR else "is a directory",
                          code) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _unsafe(path, "is not a regular file", code)
    return fd


def _unsafe(path: Path, why: str, code: Code) -> UnsafeLockFile:
    return UnsafeLockFile(f"the lock file {path} {why}; refusing to use it", code=code, path=str(path),
                          hint="remove it (pkgmgr creates it as a plain file when it is missing)")


class ExclusiveLock:
    """`acquire()` / `release()` an exclusive lock on `path` (created if missing); also a
    context manager. `acquire` raises `LockTimeout` when the lock stays taken for `timeout`
    seconds (0: a single try), and `UnsafeLockFile` (with `code`) when `path` is a link or not a
    regular file."""

    def __init__(self, path: Path, timeout: float, *, code: Code = Code.STATE_INCONSISTENT) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.code = code
        self._fd: int | None = None

    def acquire(self) -> None:
        if self._fd is not None:
            raise RuntimeError("the lock is held already")
        fd = open_lock_file(self.path, os.O_RDWR | os.O_CREAT, code=self.code)
        deadline = time.monotonic() + max(self.timeout, 0.0)
        waited = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in _BUSY:
                        raise
                if not waited and _wait_notice is not None and self.timeout > 0:
                    _wait_notice(f"waiting for another {_holder(fd)} to finish "
                                 f"(lock {self.path}, up to {self.timeout:g} s) …")
                waited = True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LockTimeout(str(self.path))
                time.sleep(min(POLL_SECONDS, remaining))
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        HELD_LOCKS.add(fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            HELD_LOCKS.discard(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> ExclusiveLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_held(path: Path) -> bool:
    """Whether some process holds the exclusive lock on `path` now. Asks for a shared lock without
    waiting and drops it at once (a writer polling for the lock just tries again); creates nothing
    and follows no link (a lock file that is not a regular file is held by nobody)."""
    try:
        fd = open_lock_file(path, os.O_RDONLY, code=Code.STATE_INCONSISTENT)
    except (OSError, UnsafeLockFile):
        return False  # no lock file: no writer ever ran
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in _BUSY
    finally:
        os.close(fd)  # closing drops the shared lock if it was granted
    return False
