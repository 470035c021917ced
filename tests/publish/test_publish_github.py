"""`pkgmgr registry publish github:OWNER/REPO@TAG` against a fake GitHub on loopback."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pkgmgr.errors import Code, PkgmgrError
from tests.publish.helpers import entry_text, fail, ok, packed, snapshot
from tests.registry.conftest import fake_github  # noqa: F401 - the shared fake GitHub fixture
from tests.support.fakegithub import FakeGitHub


@pytest.fixture
def github(fake_github: FakeGitHub) -> FakeGitHub:  # noqa: F811
    fake_github.add_repo("acme", "review-pack")
    return fake_github


def test_publish_a_release_asset_records_its_download_url(tmp_path: Path, index: Path, github: FakeGitHub) -> None:
    archive = packed(tmp_path)
    release = github.add_release("acme", "review-pack", "v0.1.0", assets={"review-pack-0.1.0.tar.gz":
                                                                           archive.read_bytes()})
    doc = ok("registry", "publish", "github:acme/review-pack@v0.1.0", "--index", index)
    url = release["assets"][0]["browser_download_url"]
    assert doc["published"]["url"] == url and doc["published"]["archive"] is None
    assert not (index / "archives").exists()
    data = tomllib.loads(entry_text(index, "review-pack"))
    assert data["repository"] == "acme/review-pack"
    assert data["versions"][0]["url"] == url and data["versions"][0]["size"] == archive.stat().st_size
    # CI downloads it again through the web host's redirect to the storage host
    assert ok("registry", "validate", index, "--fetch")["checked"]["fetched"] == 1


def test_release_checksum_file_is_verified(tmp_path: Path, index: Path, github: FakeGitHub) -> None:
    archive = packed(tmp_path)
    github.add_release("acme", "review-pack", "v0.1.0", assets={
        "review-pack-0.1.0.tar.gz": archive.read_bytes(),
        "SHA256SUMS": ("0" * 64 + "  review-pack-0.1.0.tar.gz\n").encode(),
    })
    before = snapshot(index)
    fail("checksum_mismatch", "registry", "publish", "github:acme/review-pack@v0.1.0", "--index", index)
    assert snapshot(index) == before


def test_release_without_an_archive_asset_is_refused(index: Path, github: FakeGitHub) -> None:
    github.add_release("acme", "review-pack", "v0.1.0")
    doc = fail("not_found", "registry", "publish", "github:acme/review-pack@v0.1.0", "--index", index)
    assert "source tarball" in doc["error"]["message"]
    fail("usage", "registry", "publish", "github:acme/review-pack", "--index", index)
    fail("not_found", "registry", "publish", "github:acme/review-pack@v9.9.9", "--index", index)


def test_several_assets_need_asset(tmp_path: Path, index: Path, github: FakeGitHub) -> None:
    data = packed(tmp_path).read_bytes()
    github.add_release("acme", "review-pack", "v0.1.0", assets={"review-pack-0.1.0.tar.gz": data,
                                                                "review-pack-0.1.0.zip": b"PK"})
    fail("ambiguous_asset", "registry", "publish", "github:acme/review-pack@v0.1.0", "--index", index)
    ok("registry", "publish", "github:acme/review-pack@v0.1.0", "--index", index,
       "--asset", "review-pack-0.1.0.tar.gz")


def test_entry_of_another_repository_is_invalid_index(tmp_path: Path, index: Path, github: FakeGitHub) -> None:
    github.add_release("acme", "review-pack", "v0.1.0", assets={"r.tar.gz": packed(tmp_path).read_bytes()})
    ok("registry", "publish", "github:acme/review-pack@v0.1.0", "--index", index)
    github.add_repo("mallory", "review-pack")
    github.add_release("mallory", "review-pack", "v0.2.0",
                       assets={"r.tar.gz": packed(tmp_path, version="0.2.0").read_bytes()})
    before = snapshot(index)
    doc = fail("invalid_index", "registry", "publish", "github:mallory/review-pack@v0.2.0", "--index", index)
    assert "acme/review-pack" in doc["error"]["message"]
    assert snapshot(index) == before


def test_a_tag_naming_another_version_is_warned_about(tmp_path: Path, index: Path, github: FakeGitHub) -> None:
    from tests.support.cli import run_cli

    github.add_release("acme", "review-pack", "v0.9.0", assets={"r.tar.gz": packed(tmp_path).read_bytes()})
    result = run_cli(["registry", "publish", "github:acme/review-pack@v0.9.0", "--index", index])
    assert result.code == 0, result
    assert "names version 0.9.0" in result.stderr


def test_download_release_returns_the_asset_and_where_it_came_from(tmp_path: Path, github: FakeGitHub) -> None:
    from pkgmgr.config import Config
    from pkgmgr.progress import Reporter
    from pkgmgr.registry.publish import download_release
    from pkgmgr.registry.session import Session

    data = packed(tmp_path).read_bytes()
    release = github.add_release("acme", "review-pack", "v0.1.0", assets={"review-pack-0.1.0.tar.gz": data})
    session = Session(tmp_path / "home", Config())
    try:
        got = download_release(session, "github:acme/review-pack@v0.1.0", None, reporter=Reporter(),
                               max_bytes=len(data))
        assert got.path.read_bytes() == data
        assert (got.url, got.repository, got.tag) == (release["assets"][0]["browser_download_url"],
                                                      "acme/review-pack", "v0.1.0")
        with pytest.raises(PkgmgrError) as exc:
            download_release(session, "github:acme/review-pack", None, reporter=Reporter(), max_bytes=len(data))
        assert exc.value.code == Code.USAGE
    finally:
        session.close()


def test_tag_warning_names_the_two_versions() -> None:
    from pkgmgr.registry.publish import tag_warning

    assert tag_warning("v0.1.0", "0.1.0") is None
    assert tag_warning("nightly", "0.1.0") is None
    warning = tag_warning("v0.9.0", "0.1.0")
    assert warning is not None and "v0.9.0" in warning and "0.1.0 is what gets published" in warning
