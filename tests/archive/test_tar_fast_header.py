"""The quick header parser of `tar_reader._StrictTarInfo.frombuf` builds exactly what tarfile's
own `frombuf` builds, or hands the header to it: checked on headers tarfile writes and on
those headers with bytes changed."""

from __future__ import annotations

import tarfile

from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.archive.tar_reader import _StrictTarInfo

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
