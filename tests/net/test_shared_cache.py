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


@pytest.mark.parametrize("planted", ["fifo", "sparse-and-longer", "directory"])
def test_a_fifo_or_a_lying_file_in_the_shared_cache_is_passed_over(tmp_path: Path, home: Path, planted: str) -> None:
    """Issue 25: the shared cache is another machine's (an NFS mount): a FIFO there must not hang
    the install, a file longer than the entry says is read no further than size + 1 bytes, and
    neither is used. Through the real entry point in a child process, under a timeout."""
    import json
    import os

    from tests.registry.helpers import RegistryDir
    from tests.support.cli import run_cli, run_subprocess

    index = RegistryDir(tmp_path / "index", "acme")
    published = index.publish("demo-ext", "0.1.0")
    shared = tmp_path / "shared"
    path = shared / "sha256" / published.sha256[:2] / published.sha256
    path.parent.mkdir(parents=True)
    if planted == "fifo":
        os.mkfifo(path)
    elif planted == "directory":
        path.mkdir()
    else:
        with open(path, "wb") as handle:
            handle.write(published.data)
            handle.truncate(8 * 1024 ** 3)  # 8 GiB, sparse: a read to its end would take minutes
    from tests.support.servers import StaticFileServer

    with StaticFileServer(index.root) as static:  # an HTTP registry: the shared cache comes before the network
        assert run_cli(["registry", "add", "acme", static.url]).code == 0
        result = run_subprocess(["ext", "install", "demo-ext", "-o", "json"],
                                env={"PKGMGR_SHARED_CACHE": str(shared)}, timeout=60)
        assert static.count(f"/{published.url}") == 1  # downloaded, since the shared copy was not used
    assert result.code == 0, result
    assert json.loads(result.stdout)["installed"][0]["sha256"] == published.sha256
    assert ("shared cache" in result.stderr) == (planted != "directory")  # a warning says why it was passed over
    assert path.is_fifo() if planted == "fifo" else True  # pkgmgr never changes the shared cache
