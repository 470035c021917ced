"""zip specifics: central directory checked first, declared sizes never trusted."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.archive.files import OFFLOAD_AFTER
from pkgmgr.archive.staging import Staging
from pkgmgr.archive.zip_reader import _CENTRAL, extract_zip
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError
from tests.archive.corpus import MANIFEST, Z, zip_bytes, zip_directory_lie


def _extract(tmp_path: Path, raw: bytes, limits: Limits = Limits()) -> Path:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    staging = Staging(out, limits)
    extract_zip(io.BytesIO(raw), len(raw), staging)
    staging.finish()
    return out


def test_stdlib_zip_with_data_descriptors(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:  # a non-seekable-style writer uses descriptors
        zf.writestr("pkg/extension.toml", MANIFEST)
        with zf.open("pkg/streamed.txt", "w") as handle:
            handle.write(b"streamed " * 1000)
    out = _extract(tmp_path, buf.getvalue())
    assert (out / "pkg/streamed.txt").read_bytes() == b"streamed " * 1000


def test_nothing_is_written_when_a_late_member_is_unsafe(tmp_path: Path) -> None:
    raw = zip_bytes([Z("pkg/extension.toml", MANIFEST), Z("pkg/a", b"a"), Z("pkg/link", b"/", unix_mode=stat.S_IFLNK)])
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw)
    assert caught.value.code == "unsafe_archive"
    assert list((tmp_path / "out").iterdir()) == []  # the central directory is checked first


def test_declared_sizes_over_the_limit_are_refused_before_writing(tmp_path: Path) -> None:
    raw = zip_bytes([Z("pkg/a", b"a", declared_size=10_000), Z("pkg/b", b"b", declared_size=10_000)])
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw, Limits(max_uncompressed_bytes=15_000))
    assert caught.value.code == "archive_too_large"
    assert list((tmp_path / "out").iterdir()) == []


def test_directory_mode_on_a_file_name_is_refused(tmp_path: Path) -> None:
    raw = zip_bytes([Z("pkg/d", b"", unix_mode=stat.S_IFDIR | 0o755)])
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw)
    assert caught.value.code == "unsafe_archive"


def test_entry_pointing_past_the_central_directory(tmp_path: Path) -> None:
    raw = bytearray(zip_bytes([Z("pkg/a", b"abc", method=0, declared_size=10_000, declared_csize=10_000)]))
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, bytes(raw))
    assert caught.value.code == "unsafe_archive"
    assert "overlaps" in caught.value.message


def test_deflate_stream_shorter_than_declared_is_corrupt(tmp_path: Path) -> None:
    raw = zip_bytes([Z("pkg/a", b"x" * 1000, payload=b"\x00\x01")])  # a stored block that stops short
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw)
    assert caught.value.code == "invalid_archive"


def test_a_small_member_inflating_past_its_declared_size_is_refused_unwritten(tmp_path: Path) -> None:
    """A member the central directory declares small is read whole before it is written: data past
    the declared size is refused at the chunk that passes it, and nothing of the member is on disk."""
    raw = zip_bytes([Z("pkg/a", b"a" * (4 * 1024 * 1024), declared_size=10)])
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw)
    assert caught.value.code == "invalid_archive"
    assert "more data than the 10 bytes" in caught.value.message
    assert not (tmp_path / "out" / "pkg" / "a").exists()


def test_a_zip_of_many_small_files_is_written_by_the_helper_as_by_pkgmgr(tmp_path: Path) -> None:
    """Past OFFLOAD_AFTER small members the helper process creates the files (archive/offload.py),
    for a zip as for a tar: the same contents and modes."""
    members = [Z(f"pkg/d{i % 7}/f{i}.txt", f"file {i}\n".encode() * (i % 5), method=8 if i % 2 else 0,
                 unix_mode=0o100755 if i % 3 == 0 else 0o100644) for i in range(OFFLOAD_AFTER + 200)]
    out = _extract(tmp_path, zip_bytes([Z("pkg/extension.toml", MANIFEST), *members]))
    for i in range(OFFLOAD_AFTER + 200):
        path = out / f"pkg/d{i % 7}/f{i}.txt"
        assert path.read_bytes() == f"file {i}\n".encode() * (i % 5)
        assert stat.S_IMODE(path.stat().st_mode) == (0o755 if i % 3 == 0 else 0o644)


def test_empty_zip(tmp_path: Path) -> None:
    out = _extract(tmp_path, zip_bytes([]))
    assert list(out.iterdir()) == []


def test_owner_execute_bit_kept_when_the_mode_has_no_file_type(tmp_path: Path) -> None:
    # `info.external_attr = 0o755 << 16`: the common Python idiom records permissions only
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("pkg/extension.toml", MANIFEST)
        info = zipfile.ZipInfo("pkg/run.sh")
        info.external_attr = 0o4775 << 16
        zf.writestr(info, b"#!/bin/sh\n")
    out = _extract(tmp_path, buf.getvalue())
    assert stat.S_IMODE((out / "pkg/run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "pkg/extension.toml").stat().st_mode) == 0o644


# --- the central directory is bounded before zipfile parses it ---------------------------------

FEW = Limits(max_entries=3)
THREE = [Z("pkg/extension.toml", MANIFEST), Z("pkg/a", b"a"), Z("pkg/b", b"b")]


@pytest.mark.parametrize("zip64", [False, True])
def test_a_directory_at_the_entry_limit_is_read(tmp_path: Path, zip64: bool) -> None:
    out = _extract(tmp_path, zip_directory_lie(THREE, zip64=zip64), FEW)
    assert (out / "pkg/b").read_bytes() == b"b"


def test_a_zip64_archive_written_by_zipfile_is_read(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        zf.writestr("pkg/extension.toml", MANIFEST)
        with zf.open("pkg/big.txt", "w", force_zip64=True) as handle:
            handle.write(b"z" * 1000)
    assert (_extract(tmp_path, buf.getvalue(), FEW) / "pkg/big.txt").read_bytes() == b"z" * 1000


@pytest.mark.parametrize("zip64", [False, True])
@pytest.mark.parametrize("count", [4, 0xFFFF - 1])
def test_the_end_records_count_is_refused_before_the_directory_is_read(tmp_path: Path, zip64: bool,
                                                                       count: int) -> None:
    # the directory is junk after its first entry: parsing it would say invalid_archive
    raw = zip_directory_lie(THREE[:1], count=count, junk=b"\xff" * 100, zip64=zip64)
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw, FEW)
    assert caught.value.code == "archive_too_large" and "entry count" in caught.value.message
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("zip64", [False, True])
def test_a_directory_longer_than_its_count_is_refused_after_max_entries_headers(tmp_path: Path, zip64: bool) -> None:
    raw = zip_directory_lie([*THREE, Z("pkg/c", b"c")], count=1, junk=b"\xff" * 100, zip64=zip64)
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw, FEW)
    assert caught.value.code == "archive_too_large"
    assert list((tmp_path / "out").iterdir()) == []


@given(count=st.integers(0, 0xFFFF), members=st.integers(1, 6), junk=st.binary(max_size=80), zip64=st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_end_record_lies_get_an_archive_code(tmp_path: Path, count: int, members: int, junk: bytes,
                                             zip64: bool) -> None:
    raw = zip_directory_lie([*THREE, Z("pkg/c", b"c"), Z("pkg/d", b"d"), Z("pkg/e", b"e")][:members],
                            count=count, junk=junk, zip64=zip64)
    target = tmp_path / f"h{abs(hash((count, members, junk, zip64)))}"
    target.mkdir()
    try:
        staging = Staging(target, FEW)
        extract_zip(io.BytesIO(raw), len(raw), staging)
        staging.finish()
    except PkgmgrError as exc:
        assert exc.code in ("archive_too_large", "invalid_archive", "unsafe_archive")
        if count > FEW.max_entries or members > FEW.max_entries:
            assert exc.code == "archive_too_large"
    else:
        assert members <= FEW.max_entries and count <= FEW.max_entries


def test_a_directory_flood_of_300_000_entries_is_refused_after_the_limits_headers(tmp_path: Path) -> None:
    # the red team's shape at a third of its size: minimal central headers, one end record (zip64)
    # counting one entry; junk at the end, which zipfile would reach only after parsing them all
    one = _CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0) + b"a"
    raw = zip_directory_lie(THREE[:1], count=1, junk=one * 300_000 + b"\xff" * 64, zip64=True)
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, raw)
    assert caught.value.code == "archive_too_large" and "10,000" in caught.value.message
    assert list((tmp_path / "out").iterdir()) == []
