"""Archives copied from a local file (a directory registry, a shared cache) into the
content-addressed download cache while hashed, with the same rules as a download (exact size,
sha256 compared in constant time), so the file that is extracted is the file that was verified."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import NotRegularFile, open_regular_fd
from pkgmgr.net.hashing import CHUNK, digests_equal

if TYPE_CHECKING:
    from pkgmgr.net.cache import DownloadCache


def copy_verified(source: Path, cache: DownloadCache, *, sha256: str, size: int, limit: int, label: str) -> Path:
    """The cached copy of `source`, verified. Raises archive_too_large (more than `size` bytes,
    or `size` over `limit`), checksum_mismatch (fewer bytes, another sha256) and not_found."""
    if size > limit:
        raise PkgmgrError(f"{label}: the archive is {size} bytes, over the {limit}-byte limit",
                          code=Code.ARCHIVE_TOO_LARGE, details={"size": size, "limit": limit})
    cached = cache.get(sha256)
    if cached is not None and cached.stat().st_size == size:
        return cached
    try:
        handle = os.fdopen(open_regular_fd(source), "rb")  # never blocks on a FIFO
    except NotRegularFile as exc:
        if exc.kind == "a directory":
            raise PkgmgrError(f"{label}: cannot read {source}: it is a directory", code=Code.NOT_FOUND) from None
        raise PkgmgrError(f"{label}: the registry's archive {source} is {exc.kind}, not a regular file",
                          code=Code.INVALID_INDEX, path=str(source)) from None
    except FileNotFoundError:
        raise PkgmgrError(f"{label}: the registry's archive {source} does not exist", code=Code.NOT_FOUND) from None
    except OSError as exc:
        raise PkgmgrError(f"{label}: cannot read {source}: {exc.strerror}", code=Code.NOT_FOUND) from None
    with handle, cache.incoming() as incoming:
        digest = hashlib.sha256()
        total = 0
        while total <= size:
            chunk = handle.read(min(CHUNK, size + 1 - total))
            if not chunk:
                break
            total += len(chunk)
            digest.update(chunk)
            incoming.file.write(chunk)
        if total > size:
            raise PkgmgrError(f"{label}: {source} is larger than the {size} bytes the registry entry says",
                              code=Code.ARCHIVE_TOO_LARGE, details={"size": size}, path=str(source))
        actual = digest.hexdigest()
        if total != size or not digests_equal(actual, sha256):
            why = f"{total} bytes, expected {size}" if total != size else f"sha256 is {actual}, expected {sha256}"
            raise PkgmgrError(f"{label}: checksum mismatch for {source}: {why}", code=Code.CHECKSUM_MISMATCH,
                              details={"actual": actual, "expected": sha256}, path=str(source))
        return incoming.commit(actual)
