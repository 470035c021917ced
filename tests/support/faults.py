"""Faults a test injects into one file: its read-only opens fail with the OS error a test names.

Tests run as root, whom a mode of 000 does not stop, and a file removed between listing and
reading cannot be timed: the one `os.open` for reading of that path (what `fsutil.open_regular_fd`,
the bounded read, calls) and `Path.read_bytes` of it are made to fail as the kernel fails them."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

# an errno as the OSError subclass the kernel's error becomes
_KINDS: dict[int, type[OSError]] = {errno.EACCES: PermissionError, errno.ENOENT: FileNotFoundError,
                                   errno.ENOTDIR: NotADirectoryError}


def os_error(number: int, path: str | os.PathLike[str]) -> OSError:
    return _KINDS.get(number, OSError)(number, os.strerror(number), os.fspath(path))


def deny_reading(monkeypatch: pytest.MonkeyPatch, path: Path, number: int = errno.EACCES) -> list[str]:
    """Every read-only open of `path` fails with `number`; returns the list of failed opens (one
    entry each), for the test to assert the file was read at all."""
    real_open, real_read = os.open, Path.read_bytes
    target, failed = os.path.abspath(path), []

    def guarded_open(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if not isinstance(name, int) and kwargs.get("dir_fd") is None and os.path.abspath(name) == target \
                and not flags & (os.O_WRONLY | os.O_RDWR):
            failed.append(target)
            raise os_error(number, target)
        return real_open(name, flags, *args, **kwargs)

    def guarded_read(self: Path) -> bytes:
        if os.path.abspath(self) == target:
            failed.append(target)
            raise os_error(number, target)
        return real_read(self)

    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(Path, "read_bytes", guarded_read)
    return failed
