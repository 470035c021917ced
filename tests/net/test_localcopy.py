"""`copy_verified`: an archive of a local-directory registry enters the download cache only
when its exact size and sha256 match the entry; what is extracted is the verified copy."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.net.cache import DownloadCache
from pkgmgr.net.hashing import CHUNK
from pkgmgr.net.localcopy import copy_verified

LABEL = "demo-ext 0.1.0"


@pytest.fixture
def cache(tmp_path: Path) -> DownloadCache:
    return DownloadCache(tmp_path / "cache" / "downloads")


def archive(tmp_path: Path, data: bytes, name: str = "demo-ext-0.1.0.tar.gz") -> Path:
    path = tmp_path / "registry" / "archives" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cached(cache: DownloadCache) -> list[str]:
    root = cache.root / "sha256"
    return sorted(p.name for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def leftovers(cache: DownloadCache) -> list[Path]:
    tmp = cache.root / "tmp"
    return sorted(tmp.iterdir()) if tmp.is_dir() else []


def copy(source: Path, cache: DownloadCache, data_sha: str, size: int, limit: int = 1 << 20) -> Path:
    return copy_verified(source, cache, sha256=data_sha, size=size, limit=limit, label=LABEL)


def test_copies_into_the_cache_and_verifies(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"archive bytes" * 1000
    source = archive(tmp_path, data)
    path = copy(source, cache, sha(data), len(data))
    assert path == cache.path_for(sha(data)) and path != source
    assert path.read_bytes() == data
    assert cached(cache) == [sha(data)] and leftovers(cache) == []
    source.write_bytes(b"changed afterwards")
    assert path.read_bytes() == data  # a copy, not a link to the registry's file


def test_a_multi_chunk_archive(tmp_path: Path, cache: DownloadCache) -> None:
    data = os.urandom(2 * CHUNK + 17)
    path = copy(archive(tmp_path, data), cache, sha(data), len(data), limit=len(data))
    assert path.read_bytes() == data


def test_an_upper_case_digest_is_accepted(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"x" * 10
    path = copy(archive(tmp_path, data), cache, sha(data).upper(), len(data))
    assert path.name == sha(data)


def test_a_cached_copy_is_used_without_reading_the_source(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"cached archive"
    source = archive(tmp_path, data)
    first = copy(source, cache, sha(data), len(data))
    source.unlink()  # the registry's file is gone: the verified copy answers
    assert copy(source, cache, sha(data), len(data)) == first


def test_a_corrupted_cached_copy_is_replaced_from_the_source(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"good archive"
    source = archive(tmp_path, data)
    path = copy(source, cache, sha(data), len(data))
    path.write_bytes(b"rotten")
    again = copy(source, cache, sha(data), len(data))
    assert again == path and again.read_bytes() == data


def test_a_cached_copy_of_another_size_is_not_trusted(tmp_path: Path, cache: DownloadCache) -> None:
    """The entry says 3 bytes but names the sha256 of a cached 12-byte file: the cache does not
    answer, the source is read and refused."""
    data = b"good archive"
    source = archive(tmp_path, data)
    copy(source, cache, sha(data), len(data))
    with pytest.raises(PkgmgrError) as exc:
        copy(source, cache, sha(data), 3)
    assert exc.value.code == "archive_too_large"


def test_size_over_the_limit_is_refused_before_anything_is_read(tmp_path: Path, cache: DownloadCache) -> None:
    missing = tmp_path / "registry" / "archives" / "nothing-here.tar.gz"
    with pytest.raises(PkgmgrError) as exc:
        copy_verified(missing, cache, sha256="a" * 64, size=101, limit=100, label=LABEL)
    error = exc.value
    assert error.code == "archive_too_large" and error.details == {"size": 101, "limit": 100}
    assert error.message.startswith(f"{LABEL}: ") and "101 bytes" in error.message and "100-byte" in error.message
    assert not cache.root.exists()  # nothing was created


def test_size_at_the_limit_is_allowed(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"y" * 100
    assert copy(archive(tmp_path, data), cache, sha(data), 100, limit=100).read_bytes() == data


def test_a_missing_archive_is_not_found(tmp_path: Path, cache: DownloadCache) -> None:
    source = tmp_path / "registry" / "archives" / "gone.tar.gz"
    with pytest.raises(PkgmgrError) as exc:
        copy(source, cache, "b" * 64, 10)
    assert exc.value.code == "not_found" and str(source) in exc.value.message
    assert exc.value.message.startswith(f"{LABEL}: ")


def test_an_unreadable_archive_is_not_found(tmp_path: Path, cache: DownloadCache) -> None:
    directory = tmp_path / "registry" / "archives" / "a-directory.tar.gz"
    directory.mkdir(parents=True)
    with pytest.raises(PkgmgrError) as exc:
        copy(directory, cache, "b" * 64, 10)
    assert exc.value.code == "not_found" and "cannot read" in exc.value.message
    assert leftovers(cache) == []


def test_more_bytes_than_the_entry_says_is_too_large(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"z" * 11
    source = archive(tmp_path, data)
    with pytest.raises(PkgmgrError) as exc:
        copy(source, cache, sha(data[:10]), 10)
    error = exc.value
    assert error.code == "archive_too_large" and error.details == {"path": str(source), "size": 10}
    assert cached(cache) == [] and leftovers(cache) == []


def test_fewer_bytes_than_the_entry_says_is_a_checksum_mismatch(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"short"
    source = archive(tmp_path, data)
    with pytest.raises(PkgmgrError) as exc:
        copy(source, cache, sha(data), 6)
    error = exc.value
    assert error.code == "checksum_mismatch" and "5 bytes, expected 6" in error.message
    assert error.details == {"path": str(source), "actual": sha(data), "expected": sha(data)}
    assert cached(cache) == [] and leftovers(cache) == []


def test_another_sha256_is_a_checksum_mismatch(tmp_path: Path, cache: DownloadCache) -> None:
    data = b"tampered archive"
    source = archive(tmp_path, data)
    expected = sha(b"the published archive")
    with pytest.raises(PkgmgrError) as exc:
        copy(source, cache, expected, len(data))
    error = exc.value
    assert error.code == "checksum_mismatch"
    assert f"sha256 is {sha(data)}, expected {expected}" in error.message
    assert error.details == {"path": str(source), "actual": sha(data), "expected": expected}
    assert cached(cache) == [] and leftovers(cache) == []
    assert cache.get(sha(data)) is None  # the tampered bytes are not cached under their own digest either


def test_an_empty_archive_that_the_entry_describes(tmp_path: Path, cache: DownloadCache) -> None:
    path = copy(archive(tmp_path, b""), cache, sha(b""), 0)
    assert path.read_bytes() == b""
