"""pkgmgr.net.shared_cache: a read-only, content-addressed cache shared by a fleet (SPEC 5.6)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.net.cache import DownloadCache
from pkgmgr.net.shared_cache import fetch_shared, shared_root

DATA = b"an archive's bytes\n" * 100
SHA = hashlib.sha256(DATA).hexdigest()


def shared_with(root: Path, data: bytes, name: str = SHA) -> Path:
    path = root / "sha256" / name[:2] / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def get(cache: DownloadCache, root: Path | None, warnings: list[str], size: int = len(DATA), limit: int = 10**6):
    env = {"PKGMGR_SHARED_CACHE": str(root)} if root is not None else {}
    return fetch_shared(cache, sha256=SHA, size=size, limit=limit, label="demo 1.0.0", warn=warnings.append, env=env)


def test_a_matching_file_is_copied_into_the_local_cache_and_the_shared_one_is_untouched(tmp_path: Path) -> None:
    shared, cache, warnings = tmp_path / "shared", DownloadCache(tmp_path / "local"), []
    shared_with(shared, DATA)
    before = files(shared)
    path = get(cache, shared, warnings)
    assert path == cache.path_for(SHA) and path.read_bytes() == DATA
    assert files(shared) == before and warnings == []


def test_nothing_configured_or_nothing_there_is_none(tmp_path: Path) -> None:
    cache, warnings = DownloadCache(tmp_path / "local"), []
    assert get(cache, None, warnings) is None
    assert get(cache, tmp_path / "missing", warnings) is None
    assert not (tmp_path / "missing").exists() and warnings == []


@pytest.mark.parametrize("content", [DATA[:-1] + b"X", DATA + b"more", DATA[:-5]])
def test_a_file_that_does_not_match_is_ignored_with_a_warning(tmp_path: Path, content: bytes) -> None:
    shared, cache, warnings = tmp_path / "shared", DownloadCache(tmp_path / "local"), []
    shared_with(shared, content)
    assert get(cache, shared, warnings) is None
    assert cache.get(SHA) is None and len(warnings) == 1 and "PKGMGR_SHARED_CACHE" in warnings[0]
    assert (shared / "sha256" / SHA[:2] / SHA).read_bytes() == content


def test_a_symlink_in_the_shared_cache_is_not_followed(tmp_path: Path) -> None:
    shared, cache, warnings = tmp_path / "shared", DownloadCache(tmp_path / "local"), []
    real = tmp_path / "elsewhere"
    real.write_bytes(DATA)
    link = shared / "sha256" / SHA[:2] / SHA
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert get(cache, shared, warnings) is None and len(warnings) == 1


def test_the_local_cache_comes_first_and_a_relative_directory_is_usage(tmp_path: Path) -> None:
    cache, warnings = DownloadCache(tmp_path / "local"), []
    with cache.incoming() as incoming:
        incoming.file.write(DATA)
        incoming.commit(SHA)
    assert get(cache, tmp_path / "shared-does-not-exist", warnings) == cache.path_for(SHA)
    with pytest.raises(PkgmgrError) as info:
        shared_root({"PKGMGR_SHARED_CACHE": "relative"})
    assert info.value.code == "usage"


def test_an_archive_over_the_limit_is_refused(tmp_path: Path) -> None:
    shared, cache = tmp_path / "shared", DownloadCache(tmp_path / "local")
    shared_with(shared, DATA)
    with pytest.raises(PkgmgrError) as info:
        get(cache, shared, [], limit=10)
    assert info.value.code == "archive_too_large"
