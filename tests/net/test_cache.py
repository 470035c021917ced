"""pkgmgr.net.cache: layout, re-verification, atomic entry."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from pkgmgr.net.cache import DownloadCache


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put(cache: DownloadCache, data: bytes) -> str:
    with cache.incoming() as incoming:
        incoming.file.write(data)
        incoming.commit(sha(data))
    return sha(data)


def test_layout_is_content_addressed(cache: DownloadCache) -> None:
    digest = sha(b"x")
    assert cache.path_for(digest) == cache.root / "sha256" / digest[:2] / digest
    assert cache.path_for(digest.upper()) == cache.path_for(digest)


@pytest.mark.parametrize("bad", ["", "abc", "g" * 64, "../" + "a" * 61, None])
def test_path_for_rejects_non_digests(cache: DownloadCache, bad) -> None:
    with pytest.raises(ValueError):
        cache.path_for(bad)


def test_get_returns_verified_entries(cache: DownloadCache) -> None:
    assert cache.get(sha(b"data")) is None
    digest = put(cache, b"data")
    assert cache.get(digest) == cache.path_for(digest)
    assert cache.get(digest).read_bytes() == b"data"


def test_corrupted_entry_is_deleted(cache: DownloadCache) -> None:
    digest = put(cache, b"data")
    cache.path_for(digest).write_bytes(b"dat")
    assert cache.get(digest) is None
    assert not cache.path_for(digest).exists()


def test_a_directory_in_place_of_an_entry_is_not_an_entry(cache: DownloadCache) -> None:
    cache.path_for(sha(b"d")).mkdir(parents=True)
    assert cache.get(sha(b"d")) is None


def test_incoming_without_commit_leaves_nothing(cache: DownloadCache) -> None:
    with pytest.raises(RuntimeError):
        with cache.incoming() as incoming:
            incoming.file.write(b"partial")
            raise RuntimeError("interrupted")
    with cache.incoming() as incoming:
        incoming.file.write(b"never committed")
    assert list(cache.root.rglob("*.part")) == []
    assert not (cache.root / "sha256").exists()


def test_temporary_files_live_under_tmp(cache: DownloadCache) -> None:
    with cache.incoming() as incoming:
        assert incoming.path.parent == cache.root / "tmp"
        assert incoming.path.exists()


def test_prune_tmp_removes_only_old_leftovers(cache: DownloadCache) -> None:
    tmp = cache.root / "tmp"
    tmp.mkdir(parents=True)
    old, fresh = tmp / "dl-old.part", tmp / "dl-new.part"
    old.write_bytes(b"o")
    fresh.write_bytes(b"n")
    past = time.time() - 3 * 24 * 3600
    os.utime(old, (past, past))
    assert cache.prune_tmp() == 1
    assert not old.exists() and fresh.exists()
    assert DownloadCache(cache.root / "missing").prune_tmp() == 0
