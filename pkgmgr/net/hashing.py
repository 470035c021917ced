"""Streaming sha256 helpers and the constant-time comparison used before any extraction."""

from __future__ import annotations

import hmac

from pkgmgr.patterns import CHUNK, file_sha256

__all__ = ["CHUNK", "digests_equal", "file_sha256"]


def digests_equal(a: str, b: str) -> bool:
    """Constant-time comparison of two hex digests (case-insensitive)."""
    return hmac.compare_digest(a.lower().encode("ascii", "replace"), b.lower().encode("ascii", "replace"))
