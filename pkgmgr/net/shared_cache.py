"""A fleet's shared read-only download cache (SPEC 5.6): `PKGMGR_SHARED_CACHE=DIR`.

`DIR` has the download cache's own layout, `DIR/sha256/<first two hex>/<hex>`, so one
machine's `cache/downloads/` can be exported as it is (an NFS mount, a CI cache volume). It is
consulted before the network for an archive whose sha256 and size are known (a registry
entry); a file there is copied into the local download cache while it is hashed, and used only
when its size and sha256 match — the bytes that are extracted are the bytes that were checked,
whatever happens to the shared file afterwards. pkgmgr never writes, creates or deletes
anything under `DIR`: a missing, unreadable or mismatched file is skipped (the archive is
downloaded as usual), a mismatch with a warning.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.net.cache import DownloadCache

ENV = "PKGMGR_SHARED_CACHE"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def shared_root(env: Mapping[str, str] | None = None) -> Path | None:
    """The shared cache directory, or None when `PKGMGR_SHARED_CACHE` is unset or empty.
    Raises `usage` for a relative path (as for PKGMGR_HOME)."""
    value = (os.environ if env is None else env).get(ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise PkgmgrError(f"{ENV} must be an absolute path, not {value!r}", code=Code.USAGE)
    return path


def fetch_shared(cache: DownloadCache, *, sha256: str, size: int, limit: int, label: str,
                 warn: Callable[[str], None] | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """The archive with `sha256` and `size` in the local download `cache`, copied there from the
    shared cache when it holds it; None when it does not (or its copy does not match). The local
    cache is looked at first."""
    cached = cache.get(sha256)
    if cached is not None and cached.stat().st_size == size:
        return cached
    root = shared_root(env)
    digest = sha256.lower()
    if root is None or not _HEX64.fullmatch(digest):
        return None
    source = root / "sha256" / digest[:2] / digest
    if not os.path.lexists(source):
        return None
    from pkgmgr.net.localcopy import copy_verified

    try:
        return copy_verified(source, cache, sha256=digest, size=size, limit=limit, label=label)
    except PkgmgrError as error:
        if error.code == Code.ARCHIVE_TOO_LARGE and size > limit:
            raise
        if warn is not None and error.code in (Code.CHECKSUM_MISMATCH, Code.ARCHIVE_TOO_LARGE, Code.INVALID_INDEX):
            why = error.message.removeprefix(f"{label}: ")
            warn(f"{label}: ignoring the shared cache's copy ({ENV}) and downloading it: {why}")
        return None
