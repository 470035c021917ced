"""An exclusive OS lock on a file, waited for with a timeout: the writer lock of a scope and of
a registry index directory.

`flock(2)` on a descriptor of its own, polled every 50 ms until the timeout, as the `filelock`
package does on POSIX (and compatible with it: both lock the same way) — without its import,
which costs tens of milliseconds for every command that writes. The lock dies with the process,
so a crashed writer never leaves it held; the file itself stays and is never trusted for content.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

POLL_SECONDS = 0.05
_BUSY = frozenset({errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK})
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


class ExclusiveLock:
    """`acquire()` / `release()` an exclusive lock on `path` (created if missing); also a
    context manager. `acquire` raises `LockTimeout` when the lock stays taken for `timeout`
    seconds (0: a single try)."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._fd: int | None = None

    def acquire(self) -> None:
        if self._fd is not None:
            raise RuntimeError("the lock is held already")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
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

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> "ExclusiveLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def is_held(path: Path) -> bool:
    """Whether some process holds the exclusive lock on `path` now. Asks for a shared lock without
    waiting and drops it at once (a writer polling for the lock just tries again); creates nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False  # no lock file: no writer ever ran
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in _BUSY
    finally:
        os.close(fd)  # closing drops the shared lock if it was granted
    return False
