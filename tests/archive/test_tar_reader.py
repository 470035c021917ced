"""tar.gz specifics: header formats tarfile handles for us, the forward-only stream, strictness."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from pkgmgr.archive.staging import Staging
from pkgmgr.archive.tar_reader import extract_tar_gz
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError
from tests.archive.corpus import MANIFEST, T, tar_bytes


def _extract(tmp_path: Path, raw: bytes, limits: Limits = Limits()) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    staging = Staging(out, limits)
    extract_tar_gz(io.BytesIO(gzip.compress(raw)), staging)
    staging.finish()
    return out


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_long_names_in_every_format(tmp_path: Path, fmt: int) -> None:
    long = "pkg/" + "/".join(["d" * 60] * 3) + "/file.txt"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for name, data in (("pkg/extension.toml", MANIFEST), (long, b"long")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = _extract(tmp_path, buf.getvalue())
    assert (out / long).read_bytes() == b"long"


def test_data_of_skipped_directory_entries_and_padding(tmp_path: Path) -> None:
    raw = tar_bytes([T("pkg/", kind=tarfile.DIRTYPE), T("pkg/a", b"a" * 513), T("pkg/b", b""), T("pkg/c", b"c")])
    out = _extract(tmp_path, raw)
    assert (out / "pkg/a").read_bytes() == b"a" * 513
    assert (out / "pkg/b").read_bytes() == b""
    assert (out / "pkg/c").read_bytes() == b"c"


def test_old_style_regular_file_types_are_files(tmp_path: Path) -> None:
    raw = tar_bytes([T("pkg/a", b"a", kind=tarfile.AREGTYPE), T("pkg/c", b"c", kind=tarfile.CONTTYPE)])
    out = _extract(tmp_path, raw)
    assert (out / "pkg/a").read_bytes() == b"a" and (out / "pkg/c").read_bytes() == b"c"


def test_truncated_member_data(tmp_path: Path) -> None:
    raw = tar_bytes([T("pkg/a", b"a" * 5000)])
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw[:512 + 2000])
    assert caught.value.code == "invalid_archive"


def test_missing_end_of_archive_blocks_are_tolerated(tmp_path: Path) -> None:
    raw = tar_bytes([T("pkg/a", b"a")])[:1024]  # header + one data block, no trailing zero blocks
    assert (_extract(tmp_path, raw) / "pkg/a").read_bytes() == b"a"


def test_declared_size_is_checked_before_reading_data(tmp_path: Path) -> None:
    raw = tar_bytes([T("pkg/big", b"x" * 5000)])
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw, Limits(max_uncompressed_bytes=4000))
    assert caught.value.code == "archive_too_large"
    assert not (tmp_path / "out/pkg/big").exists()  # refused before the file was created


def test_stream_overhead_is_capped(tmp_path: Path) -> None:
    # Members whose headers (pax records) dwarf their content still count against the stream cap.
    members = [T(f"pkg/f{i}", b"", pax={"comment": "c" * 20_000}) for i in range(3)]
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, tar_bytes(members),
                 Limits(max_uncompressed_bytes=1000, max_entries=2, max_ratio=1e9))
    assert caught.value.code == "archive_too_large"


def test_corruption_after_the_end_of_archive_is_seen(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(tar_bytes([T("pkg/a", b"a")])))
    data[-8] ^= 0xFF  # the gzip trailer's CRC
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(PkgmgrError) as caught:
        extract_tar_gz(io.BytesIO(bytes(data)), Staging(out, Limits()))
    assert caught.value.code == "invalid_archive"


def test_github_style_tarball_with_a_global_pax_header(tmp_path: Path) -> None:
    buf = io.BytesIO()  # git archive / GitHub tarballs start with a pax global header holding the commit
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "1a2b3c"}) as tar:
        for name in ("owner-repo-1a2b3c/", "owner-repo-1a2b3c/extension.toml"):
            info = tarfile.TarInfo(name.rstrip("/"))
            info.type = tarfile.DIRTYPE if name.endswith("/") else tarfile.REGTYPE
            data = b"" if info.isdir() else MANIFEST
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    assert raw[156:157] == tarfile.XGLTYPE
    out = _extract(tmp_path, raw)
    assert (out / "owner-repo-1a2b3c/extension.toml").read_bytes() == MANIFEST


def test_a_huge_header_record_is_refused_before_it_is_buffered(tmp_path: Path) -> None:
    # tarfile reads a pax or GNU long-name record whole: a 2 MiB one must not be read into memory
    raw = tar_bytes([T("pkg/extension.toml", MANIFEST, pax={"comment": "c" * (2 * 1024 * 1024)})])
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw, Limits(max_ratio=1e9))
    assert caught.value.code == "archive_too_large"
    assert "header" in caught.value.message
