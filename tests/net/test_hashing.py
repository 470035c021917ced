"""pkgmgr.net.hashing."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pkgmgr.net.hashing import digests_equal, file_sha256


def test_file_sha256(tmp_path: Path) -> None:
    path = tmp_path / "f"
    data = b"abc" * 1_000_000
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_digests_equal() -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    assert digests_equal(digest, digest.upper())
    assert not digests_equal(digest, hashlib.sha256(b"y").hexdigest())
    assert not digests_equal(digest, "é" * 64)
