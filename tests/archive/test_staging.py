"""Staging: members are checked and counted before anything is written for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.archive.staging import Staging
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError


def test_admit_returns_the_normalised_path(tmp_path: Path) -> None:
    staging = Staging(tmp_path, Limits())
    assert staging.admit("./pkg/./a.txt", is_dir=False) == "pkg/a.txt"
    assert staging.admit("./", is_dir=True) == ""


def test_admit_refuses_with_unsafe_archive_naming_the_member(tmp_path: Path) -> None:
    staging = Staging(tmp_path, Limits())
    with pytest.raises(PkgmgrError) as caught:
        staging.admit("../x", is_dir=False)
    assert caught.value.code == "unsafe_archive"
    assert caught.value.details == {"member": "../x", "reason": "name has a '..' component"}


def test_write_refuses_the_chunk_that_would_pass_the_limit(tmp_path: Path) -> None:
    staging = Staging(tmp_path, Limits(max_uncompressed_bytes=10))
    with pytest.raises(PkgmgrError) as caught:
        staging.write("f", [b"12345", b"67890", b"x"], mode=0o644, member="f")
    assert caught.value.code == "archive_too_large"
    assert (tmp_path / "f").read_bytes() == b"1234567890"  # the caller empties staging afterwards


def _deep(base: Path, length: int) -> Path:
    """A directory whose absolute path is about `length` bytes long."""
    path = base
    while len(str(path)) < length - 201:
        path = path / ("d" * 200)
    path.mkdir(parents=True)
    return path


def test_a_member_too_long_for_a_deep_staging_directory_is_unsafe(tmp_path: Path) -> None:
    from pkgmgr.archive import extract_archive
    from tests.archive.corpus import T, ok_tar

    staging = _deep(tmp_path / "tmp", 3500) / "staging"
    staging.mkdir()
    member = "pkg/" + "/".join(["m" * 200] * 4) + "/file.txt"  # a valid name of 800 bytes: 4,300 in all
    archive = ok_tar(tmp_path / "long.tar.gz", T(member, b"x"))
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(archive, staging, Limits())
    assert caught.value.code == "unsafe_archive" and caught.value.details["member"].startswith("pkg/mmm")
    assert list(staging.iterdir()) == []


def test_a_deep_tmpdir_through_the_entry_point_is_unsafe_archive_not_exit_70(tmp_path: Path) -> None:
    import json

    from tests.archive.corpus import T, ok_tar
    from tests.support.cli import run_subprocess

    temp = _deep(tmp_path / "tmp", 3700)
    archive = ok_tar(tmp_path / "long.tar.gz", T("pkg/" + "/".join(["m" * 200] * 4) + "/file.txt", b"x"))
    result = run_subprocess(["ext", "validate", archive, "-o", "json"], env={"TMPDIR": str(temp)}, timeout=60)
    assert (result.code, json.loads(result.stdout)["error"]["code"]) == (4, "unsafe_archive"), result
    assert list(temp.iterdir()) == []
