"""tar.gz specifics: header formats tarfile handles for us, the forward-only stream, strictness."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.archive.staging import Staging
from pkgmgr.archive.tar_reader import (
    _DIGIT_RUN,
    MAX_PAX_DIGITS,
    MAX_PAX_RECORD_BYTES,
    check_pax_header,
    extract_tar_gz,
)
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError
from tests.archive.corpus import MANIFEST, T, pax_member, pax_record, tar_bytes
from tests.support.cli import run_subprocess


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
    members = [T(f"pkg/f{i}", b"", pax={f"comment{j}": "c" * 2000 for j in range(10)}) for i in range(3)]
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


# --- pax headers: bounded before tarfile parses them (CVE-2024-6232 on Python < 3.11.10) -------

PAX_OK = [
    pax_record("path", b"pkg/" + (b"d" * 200 + b"/") * 9 + b"f"),  # a long path: well within the limits
    pax_record("mtime", b"1700000000.123456789") + pax_record("SCHILY.xattr.user.note", b"\xff\x00bin"),
    pax_record("path", b"pkg/2026-01-01T12:00:00.123456789Z.txt") + pax_record("comment", b""),
]


@pytest.mark.parametrize("payload", PAX_OK, ids=["long-path", "numbers-and-binary", "digits-in-name"])
def test_pax_headers_real_tools_write_are_read(tmp_path: Path, payload: bytes) -> None:
    out = _extract(tmp_path, pax_member(payload))
    [written] = [p for p in (out / "pkg").rglob("*") if p.is_file() and p.name != "extension.toml"]
    assert written.read_bytes() == b"x"


@pytest.mark.parametrize("payload, reason", [
    (b"1" * 60_000, "run of more than 64 digits"),
    (pax_record("comment", b"7" * (MAX_PAX_DIGITS + 1)), "run of more than 64 digits"),
    (b"1 hdrcharset=" * 4000, "malformed pax record"),
    (b"30 path=pkg/short\n", "malformed pax record"),  # the length runs past the record
    (pax_record("path", b"pkg/a") + b"garbage", "malformed pax record"),
    (b"0 =\n", "malformed pax record"),
    (pax_record("path", b"pkg/" + b"a" * MAX_PAX_RECORD_BYTES), "longer than"),
    (pax_record("GNU.sparse.map", b"0,1"), "sparse"),
])
def test_hostile_pax_header_is_refused_before_tarfile_parses_it(tmp_path: Path, payload: bytes, reason: str) -> None:
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, pax_member(payload))
    assert caught.value.code == "unsafe_archive" and reason in caught.value.message
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) in ([], ["extension.toml", "pkg"])


@given(st.binary(max_size=3000))
@settings(max_examples=300, deadline=None)
def test_check_pax_header_accepts_exactly_what_it_frames(data: bytes) -> None:
    try:
        check_pax_header(data, "m")
    except PkgmgrError as exc:
        assert exc.code == "unsafe_archive"
        return
    # accepted: a sequence of records with their lengths, then NUL padding only
    pos = 0
    while pos < len(data) and data[pos] != 0:
        length = int(data[pos:data.index(b" ", pos)])
        assert data[pos + length - 1] == 0x0A and b"=" in data[pos:pos + length]
        pos += length
    assert not data[pos:].strip(b"\0")


@given(st.lists(st.tuples(st.from_regex(r"[A-Za-z.]{1,20}", fullmatch=True), st.binary(max_size=200)), max_size=8))
@settings(max_examples=200, deadline=None)
def test_well_framed_records_are_accepted(records: list[tuple[str, bytes]]) -> None:
    records = [(k, v) for k, v in records if not k.startswith("GNU.sparse.")]
    data = b"".join(pax_record(k, v.replace(b"\0", b"")) for k, v in records)
    if _DIGIT_RUN.search(data) is None:
        check_pax_header(data + b"\0" * (-len(data) % 512), "m")


def test_a_large_pax_header_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with pytest.raises(PkgmgrError) as caught:
        _extract(tmp_path, pax_member(pax_record("comment", b"x" * 2000) * 40))
    assert caught.value.code == "archive_too_large" and "pax header size" in caught.value.message
    assert not (tmp_path / "out/pkg/victim.txt").exists()


def test_pax_redos_archive_is_refused_quickly_by_every_command(tmp_path: Path, home: Path) -> None:
    """The red team's archive shape (about 1 KiB compressed, a pax header of digits) through the
    real entry point, under a timeout: a regression fails instead of hanging for an hour."""
    archive = tmp_path / "redos.tar.gz"
    archive.write_bytes(gzip.compress(pax_member(b"1" * 1_000_000)))
    assert archive.stat().st_size < 4096
    several = tmp_path / "redos-digits.tar.gz"  # within the size bound: the digit run is refused
    several.write_bytes(gzip.compress(pax_member(b"1" * 60_000)))
    index = tmp_path / "index"
    assert run_subprocess(["registry", "init", index], timeout=60).code == 0
    before = sorted(p.relative_to(index) for p in index.rglob("*"))
    for path, code in ((archive, "archive_too_large"), (several, "unsafe_archive")):
        for args in (("ext", "validate", path), ("ext", "install", path, "--allow-unverified", "--yes"),
                     ("registry", "publish", path, "--index", index)):
            result = run_subprocess([*args, "-o", "json"], timeout=60)
            assert result.code == 4, result
            assert json.loads(result.stdout)["error"]["code"] == code
    assert not (home / "extensions").exists() or list((home / "extensions").iterdir()) == []
    assert sorted(p.relative_to(index) for p in index.rglob("*")) == before
    # `registry validate --fetch` (the generated CI workflow) inspects each listed archive the same way
    from tests.registry.helpers import archive_bytes

    good = tmp_path / "demo-0.1.0.tar.gz"
    good.write_bytes(archive_bytes("demo", "0.1.0"))
    assert run_subprocess(["registry", "publish", good, "--index", index], timeout=60).code == 0
    (index / "archives" / "demo-0.1.0.tar.gz").write_bytes(several.read_bytes())
    result = run_subprocess(["registry", "validate", index, "--fetch", "-o", "json"], timeout=60)
    assert result.code == 3, result
    assert ("unsafe_archive", "versions[0]") in [(p["code"], p["key"]) for p in json.loads(result.stdout)["problems"]]


def test_gzip_members_that_carry_data_are_read_as_gzip_reads_them(tmp_path: Path) -> None:
    """bgzip's 64 KiB members (32 of them) and a plain `cat a.gz b.gz` extract; only members
    that inflate to little are budgeted (corpus `tar-gzip-*`)."""
    from tests.archive.corpus import MANIFEST, T, gzip_members, noise, tar_bytes

    tar = tar_bytes([T("pkg/extension.toml", MANIFEST), T("pkg/data.bin", noise(2 * 1024 * 1024))])
    for count, data in enumerate((gzip_members(tar, 64 * 1024), gzip_members(tar, len(tar) // 3 + 1))):
        out = tmp_path / f"out{count}"
        out.mkdir()
        staging = Staging(out, Limits())
        extract_tar_gz(io.BytesIO(data), staging, size=len(data))
        staging.finish()
        assert (out / "pkg" / "data.bin").read_bytes() == noise(2 * 1024 * 1024)


def test_the_gzip_member_flood_is_refused_by_every_command(tmp_path: Path, home: Path) -> None:
    """The red team's archive (issue 25): one small tar, then 2.5 million empty gzip members, 48
    MiB in all (it inflated for 86 s and was accepted). Through the real entry point under a
    timeout; refused after the first few members (well under a second: `python -m bench`'s
    figures, never a timed test)."""
    from tests.archive.corpus import EMPTY_GZIP_MEMBER, member_flood

    archive = tmp_path / "flood.tar.gz"
    archive.write_bytes(member_flood((48 * 1024 * 1024 - 200) // len(EMPTY_GZIP_MEMBER)))
    assert 47 * 1024 * 1024 < archive.stat().st_size <= 48 * 1024 * 1024
    index = tmp_path / "index"
    assert run_subprocess(["registry", "init", index], timeout=60).code == 0
    before = sorted(p.relative_to(index) for p in index.rglob("*"))
    for args in (("ext", "validate", archive), ("ext", "install", archive, "--allow-unverified", "--yes"),
                 ("registry", "publish", archive, "--index", index)):
        result = run_subprocess([*args, "-o", "json"], timeout=60)
        assert result.code == 4, result
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "archive_too_large" and "gzip member count" in error["message"]
    assert not (home / "extensions").exists() or list((home / "extensions").iterdir()) == []
    assert sorted(p.relative_to(index) for p in index.rglob("*")) == before
