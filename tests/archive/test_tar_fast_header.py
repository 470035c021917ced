"""The quick header parser of `tar_reader._StrictTarInfo.frombuf` builds exactly what tarfile's
own `frombuf` builds, or hands the header to it: checked on headers tarfile writes and on
those headers with bytes changed."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.archive.staging import Staging
from pkgmgr.archive.tar_reader import _StrictTarInfo, extract_tar_gz
from pkgmgr.config import Limits

FIELDS = ("name", "mode", "uid", "gid", "size", "mtime", "chksum", "type", "linkname", "uname", "gname",
          "devmajor", "devminor")
_NAME = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF, blacklist_characters="\x7f"), min_size=1,
                max_size=150)


def parse(cls: type[tarfile.TarInfo], buf: bytes) -> object:
    try:
        info = cls.frombuf(buf, "utf-8", "surrogateescape")
    except Exception as exc:  # noqa: BLE001 - the outcome compared, whatever it is
        return type(exc)
    return {field: getattr(info, field) for field in FIELDS} | {"sparse": getattr(info, "_sparse_structs", None)}


def header(name: str, kind: bytes, size: int, mode: int, mtime: int, fmt: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode, info.mtime = kind, size if kind == tarfile.REGTYPE else 0, mode, mtime
    info.uname, info.gname = "user", "group"
    try:
        return info.tobuf(fmt, "utf-8", "surrogateescape")[-512:]  # the member's own header (after any pax)
    except ValueError:
        return b""


@settings(max_examples=400, deadline=None)
@given(name=_NAME, kind=st.sampled_from([tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.AREGTYPE, tarfile.SYMTYPE]),
       size=st.integers(0, 2**40), mode=st.integers(0, 0o7777), mtime=st.integers(0, 2**34),
       fmt=st.sampled_from([tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]),
       edits=st.lists(st.tuples(st.integers(0, 511), st.integers(0, 255)), max_size=3))
def test_same_tarinfo_as_tarfile(name: str, kind: bytes, size: int, mode: int, mtime: int, fmt: int,
                                 edits: list[tuple[int, int]]) -> None:
    buf = header(name, kind, size, mode, mtime, fmt)
    if not buf:
        return
    data = bytearray(buf)
    for pos, value in edits:
        data[pos] = value
    for candidate in (buf, bytes(data)):
        assert parse(_StrictTarInfo, candidate) == parse(tarfile.TarInfo, candidate)


def test_unusual_number_fields_and_checksums_go_to_tarfile() -> None:
    buf = bytearray(header("a/b.txt", tarfile.REGTYPE, 10, 0o644, 0, tarfile.USTAR_FORMAT))
    variants = []
    for field in (b"0000644 ", b"  644\0\0\0", b"6_4_4\0\0\0", b"0o644\0\0\0", b"\x80\0\0\0\0\0\x01\xa4", b"64 4\0\0\0\0"):
        copy = bytearray(buf)
        copy[100:108] = field
        chk = 256 + sum(copy) - sum(copy[148:156])
        copy[148:156] = b"%06o\0 " % chk
        variants.append(bytes(copy))
    signed = bytearray(buf)
    signed[0:1] = b"\xe9"
    chk = 256 + sum(b - 256 if b > 127 else b for b in signed[:148] + signed[156:])
    signed[148:156] = b"%06o\0 " % chk
    variants += [bytes(signed), bytes(512), bytes(buf[:511])]
    for candidate in variants:
        assert parse(_StrictTarInfo, candidate) == parse(tarfile.TarInfo, candidate)


_PART = st.text(st.characters(min_codepoint=0x61, max_codepoint=0x7A), min_size=1, max_size=70)


@settings(max_examples=60, deadline=None)
@given(files=st.dictionaries(st.lists(_PART, min_size=1, max_size=4).map("/".join),
                             st.tuples(st.binary(max_size=700), st.sampled_from([0o644, 0o755, 0o600])),
                             min_size=1, max_size=8),
       fmt=st.sampled_from([tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]),
       dir_data=st.integers(0, 1300), global_pax=st.booleans())
def test_members_are_read_as_tarfile_reads_them(tmp_path_factory: pytest.TempPathFactory, files: dict,
                                                fmt: int, dir_data: int, global_pax: bool) -> None:
    """What `extract_tar_gz` writes (the quick header path, tarfile for the rest: long names,
    pax records, a global pax header, a directory entry declaring a size) is what tarfile
    itself reads from the same archive."""
    files = {f"top/{rel}": value for rel, value in files.items()
             if not any(other.startswith(f"top/{rel}/") for other in (f"top/{r}" for r in files))}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt,
                      pax_headers={"comment": "c0ffee"} if global_pax and fmt == tarfile.PAX_FORMAT else None) as tar:
        for name in ("top", "top/a-dir"):
            folder = tarfile.TarInfo(name)
            folder.type, folder.size = tarfile.DIRTYPE, 0
            tar.addfile(folder)
        for name, (data, mode) in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    if dir_data:  # the second directory entry declares data it does not have: tarfile skips none
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            at = tar.getmember("top/a-dir").offset
        header = bytearray(raw[at:at + 512])
        header[124:136] = b"%011o\0" % dir_data
        header[148:156] = b"%06o\0 " % (256 + sum(header) - sum(header[148:156]))
        raw = raw[:at] + bytes(header) + raw[at + 512:]
    expected = {}
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        for member in tar.getmembers():
            if member.isfile():
                handle = tar.extractfile(member)
                assert handle is not None
                expected[member.name] = (handle.read(), 0o755 if member.mode & 0o100 else 0o644)
    out = tmp_path_factory.mktemp("out")
    staging = Staging(out, Limits())
    extract_tar_gz(io.BytesIO(gzip.compress(raw)), staging)
    staging.finish()
    written = {}
    for path in out.rglob("*"):
        if path.is_file():
            written[path.relative_to(out).as_posix()] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    assert written == expected
