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
