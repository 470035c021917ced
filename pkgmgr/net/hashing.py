"""Streaming sha256 helpers and the constant-time comparison used before any extraction."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

CHUNK = 1024 * 1024


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def digests_equal(a: str, b: str) -> bool:
    """Constant-time comparison of two hex digests (case-insensitive)."""
    return hmac.compare_digest(a.lower().encode("ascii", "replace"), b.lower().encode("ascii", "replace"))
