"""The content-addressed download cache: `<root>/sha256/<first two hex>/<hex>` (SPEC 4).

A file enters the cache only through `Incoming.commit`, which `HttpClient.download` calls after
the body's sha256 matched: downloads are written to `<root>/tmp/<random>` while they are hashed
and moved into place with `os.replace`, so a mismatched or interrupted download never appears
under `sha256/`. Entries are re-hashed on every `get`, so a corrupted or torn file (no fsync is
spent on cache files) is deleted and fetched again rather than trusted.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

from pkgmgr.crash import crashpoint
from pkgmgr.fsutil import NotRegularFile, open_regular_fd
from pkgmgr.net.hashing import CHUNK, digests_equal
from pkgmgr.patterns import HEX64

_HEX64 = HEX64


def _checked(sha256: str) -> str:
    value = sha256.lower() if isinstance(sha256, str) else ""
    if not _HEX64.fullmatch(value):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return value


class DownloadCache:
    """Verified archives by sha256. Safe for concurrent threads and processes: writers use
    private temporary files, and `os.replace` of identical content is harmless."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"DownloadCache({str(self.root)!r})"

    def path_for(self, sha256: str) -> Path:
        """Where the file with this digest lives (whether or not it exists). ValueError if
        `sha256` is not 64 hex digits."""
        value = _checked(sha256)
        return self.root / "sha256" / value[:2] / value

    def get(self, sha256: str) -> Path | None:
        """The cached file, after re-hashing it; a corrupted entry is deleted (None), and so is
        anything but a regular file there (a FIFO, a device or a link is never read: opened
        with the bounded primitive, it cannot hang the command)."""
        path = self.path_for(sha256)
        try:
            fd = open_regular_fd(path)
        except FileNotFoundError:
            return None
        except NotRegularFile as exc:
            if exc.kind != "a directory":
                path.unlink(missing_ok=True)
            return None
        digest = hashlib.sha256()
        with os.fdopen(fd, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
        if digests_equal(digest.hexdigest(), path.name):
            return path
        path.unlink(missing_ok=True)
        return None

    def incoming(self) -> Incoming:
        """A new temporary file under `<root>/tmp`; use as a context manager."""
        return Incoming(self)

    def prune_tmp(self, *, older_than: float = 24 * 3600) -> int:
        """Delete temporary files left by interrupted downloads (older than `older_than` s,
        so a download running in another process is left alone). Returns how many."""
        tmp = self.root / "tmp"
        removed = 0
        cutoff = time.time() - older_than
        try:
            entries = list(tmp.iterdir())
        except FileNotFoundError:
            return 0
        for entry in entries:
            try:
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    entry.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
        return removed


class Incoming:
    """A download in progress: write to `file`, then `commit(sha256)` or let it be discarded.

    Leaving the `with` block without a commit (or with an exception) deletes the file.
    """

    def __init__(self, cache: DownloadCache) -> None:
        self._cache = cache
        tmp = cache.root / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="dl-", suffix=".part", dir=tmp)
        self.path = Path(name)
        self.file: BinaryIO = os.fdopen(fd, "wb")
        self._done = False

    def __enter__(self) -> Incoming:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._done:
            self.discard()

    def commit(self, sha256: str) -> Path:
        """Move the file into place as the entry for `sha256` (which the caller verified)."""
        target = self._cache.path_for(sha256)
        self.file.close()
        target.parent.mkdir(parents=True, exist_ok=True)
        crashpoint("cache.before_replace")
        os.replace(self.path, target)
        crashpoint("cache.after_replace")
        self._done = True
        return target

    def discard(self) -> None:
        self.file.close()
        self.path.unlink(missing_ok=True)
        self._done = True
