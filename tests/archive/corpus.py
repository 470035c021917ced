"""Hostile archives for the extraction tests, built byte by byte where the stdlib writers would
refuse or sanitise what an attacker can put in a file.

`ATTACKS` is the adversarial corpus: each entry builds one archive (given the directory the
archive goes into and the sandbox parent, for absolute-path targets) and names the error code
it must get and the limits it is read with.
"""

from __future__ import annotations

import gzip
import io
import random
import stat
import struct
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pkgmgr.config import Limits

MANIFEST = b'name = "demo-ext"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n'
KIB = 1024
MIB = 1024 * KIB
# Small limits so that size attacks stay fast; the ratio threshold is far below one chunk.
SMALL = Limits(max_archive_bytes=4 * MIB, max_uncompressed_bytes=256 * KIB, max_entries=8, max_ratio=20.0,
               ratio_threshold_bytes=64 * KIB)


# --- tar.gz ---------------------------------------------------------------------------------


@dataclass
class T:
    """One tar member: `kind` is a tarfile type; `pax` records override header fields."""

    name: str
    data: bytes = b""
    kind: bytes = tarfile.REGTYPE
    mode: int = 0o644
    linkname: str = ""
    pax: dict[str, str] = field(default_factory=dict)


def tar_bytes(members: list[T]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tar:
        for member in members:
            info = tarfile.TarInfo(member.name)
            info.type = member.kind
            info.mode = member.mode
            info.linkname = member.linkname
            info.pax_headers = dict(member.pax)
            regular = member.kind in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE)
            info.size = len(member.data) if regular else 0
            tar.addfile(info, io.BytesIO(member.data) if regular else None)
    return buf.getvalue()


def tar_gz(path: Path, members: list[T]) -> Path:
    path.write_bytes(gzip.compress(tar_bytes(members), mtime=0))
    return path


def ok_tar(path: Path, *extra: T, prefix: str = "pkg/") -> Path:
    """A valid extension archive plus `extra` members."""
    return tar_gz(path, [T(prefix + "extension.toml", MANIFEST), *extra])


# --- zip --------------------------------------------------------------------------------------

_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")


@dataclass
class Z:
    """One zip member, with every field an attacker controls open to a lie.

    `declared_size` / `declared_csize` / `crc`: what the central directory claims (default: the
    truth). `local_name`: the name in the local header (default: the central name).
    `descriptor`: use a data descriptor (flag bit 3, zero sizes in the local header) that
    claims `descriptor_size`.
    """

    name: str | bytes
    data: bytes = b""
    method: int = 8
    unix_mode: int | None = 0o100644
    flags: int = 0
    declared_size: int | None = None
    declared_csize: int | None = None
    crc: int | None = None
    local_name: bytes | None = None
    descriptor: bool = False
    descriptor_size: int | None = None
    payload: bytes | None = None


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def zip_bytes(members: list[Z]) -> bytes:
    out = bytearray()
    central = bytearray()
    for member in members:
        name = member.name if isinstance(member.name, bytes) else member.name.encode("utf-8", "surrogateescape")
        payload = member.payload
        if payload is None:
            payload = _deflate(member.data) if member.method == 8 else member.data
        crc = zlib.crc32(member.data) if member.crc is None else member.crc
        size = len(member.data) if member.declared_size is None else member.declared_size
        csize = len(payload) if member.declared_csize is None else member.declared_csize
        flags = member.flags | 0x800 | (0x8 if member.descriptor else 0)
        local_name = name if member.local_name is None else member.local_name
        offset = len(out)
        local_sizes = (0, 0, 0) if member.descriptor else (crc, csize, size)
        out += _LOCAL.pack(b"PK\x03\x04", 20, flags, member.method, 0, 0x21, *local_sizes, len(local_name), 0)
        out += local_name + payload
        if member.descriptor:
            claimed = size if member.descriptor_size is None else member.descriptor_size
            out += struct.pack("<4s3L", b"PK\x07\x08", crc, csize, claimed)
        attr = (member.unix_mode << 16) if member.unix_mode is not None else 0
        central += _CENTRAL.pack(b"PK\x01\x02", (3 << 8) | 20, 20, flags, member.method, 0, 0x21, crc, csize, size,
                                 len(name), 0, 0, 0, 0, attr, offset) + name
    directory_offset = len(out)
    out += central
    out += _END.pack(b"PK\x05\x06", 0, 0, len(members), len(members), len(central), directory_offset, 0)
    return bytes(out)


def zip_directory_lie(members: list[Z], *, count: int | None = None, junk: bytes = b"", zip64: bool = False) -> bytes:
    """`zip_bytes(members)` with an end record claiming `count` entries, `junk` appended to the
    central directory (and counted in its size), and, with `zip64`, the counts and sizes moved to
    a zip64 end record as writers do for more than 65,535 entries."""
    raw = zip_bytes(members)
    body, end = raw[:-_END.size], _END.unpack(raw[-_END.size:])
    entries = len(members) if count is None else count
    size, offset = end[5] + len(junk), end[6]
    body += junk
    if not zip64:
        return body + _END.pack(b"PK\x05\x06", 0, 0, entries, entries, size, offset, 0)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, size, offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, len(body), 1)
    return body + record + locator + _END.pack(b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)


def zip_file(path: Path, members: list[Z]) -> Path:
    path.write_bytes(zip_bytes(members))
    return path


def ok_zip(path: Path, *extra: Z, prefix: str = "pkg/") -> Path:
    return zip_file(path, [Z(prefix + "extension.toml", MANIFEST), *extra])


# --- the corpus -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attack:
    id: str
    build: Callable[[Path, Path], Path]  # (archive path without suffix, sandbox parent) -> archive
    code: str
    limits: Limits = Limits()


def noise(n: int, seed: int = 0) -> bytes:
    """Incompressible bytes, the same on every run."""
    return random.Random(seed).randbytes(n)


def _pax_chain(depth: int) -> bytes:
    """A tar stream of `depth` pax headers, each announcing the next."""
    record = b"17 comment=xxxxx\n"
    block = record + b"\0" * (512 - len(record))
    out = bytearray()
    for _ in range(depth):
        info = tarfile.TarInfo("././@PaxHeader")
        info.type = tarfile.XHDTYPE
        info.size = len(record)
        out += info.tobuf(tarfile.USTAR_FORMAT) + block
    return bytes(out) + b"\0" * 1024


def pax_member(payload: bytes, name: str = "pkg/victim.txt") -> bytes:
    """A tar stream: a valid manifest, then a pax header whose content is `payload` (written as
    it is, whatever tarfile would write), then the member it describes, then the end blocks."""
    manifest = tarfile.TarInfo("pkg/extension.toml")
    manifest.size = len(MANIFEST)
    head = manifest.tobuf(tarfile.USTAR_FORMAT) + MANIFEST + b"\0" * (-len(MANIFEST) % 512)
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type = tarfile.XHDTYPE
    pax.size = len(payload)
    member = tarfile.TarInfo(name)
    member.size = 1
    padding = b"\0" * (-len(payload) % 512)
    return (head + pax.tobuf(tarfile.USTAR_FORMAT) + payload + padding
            + member.tobuf(tarfile.USTAR_FORMAT) + b"x" + b"\0" * 511 + b"\0" * 1024)


def pax_record(keyword: str, value: bytes) -> bytes:
    """One well-framed pax record `"<length> <keyword>=<value>\\n"`."""
    body = b" " + keyword.encode() + b"=" + value + b"\n"
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


def _bad_second_header(path: Path, _: Path) -> Path:
    raw = bytearray(tar_bytes([T("pkg/extension.toml", MANIFEST), T("pkg/b.txt", b"b")]))
    raw[1024 + 148:1024 + 156] = b"0000000\0"  # second header's checksum field
    path.with_suffix(".tar.gz").write_bytes(gzip.compress(bytes(raw)))
    return path.with_suffix(".tar.gz")


def _truncated(path: Path, _: Path) -> Path:
    full = gzip.compress(tar_bytes([T("pkg/extension.toml", MANIFEST), T("pkg/data", noise(64 * KIB))]))
    out = path.with_suffix(".tar.gz")
    out.write_bytes(full[: len(full) // 2])
    return out


def _tar(*members: Callable[[Path], T], ok: bool = True) -> Callable[[Path, Path], Path]:
    def build(path: Path, sandbox_parent: Path) -> Path:
        made = [m(sandbox_parent) for m in members]
        out = path.with_suffix(".tar.gz")
        return ok_tar(out, *made) if ok else tar_gz(out, made)
    return build


def _zip(*members: Callable[[Path], Z]) -> Callable[[Path, Path], Path]:
    def build(path: Path, sandbox_parent: Path) -> Path:
        return ok_zip(path.with_suffix(".zip"), *[m(sandbox_parent) for m in members])
    return build


def _raw(suffix: str, data: Callable[[], bytes]) -> Callable[[Path, Path], Path]:
    def build(path: Path, _: Path) -> Path:
        out = path.with_suffix(suffix)
        out.write_bytes(data())
        return out
    return build


def _t(name: str, data: bytes = b"x", **kw: object) -> Callable[[Path], T]:
    return lambda _: T(name, data, **kw)  # type: ignore[arg-type]


def _z(name: str | bytes, data: bytes = b"x", **kw: object) -> Callable[[Path], Z]:
    return lambda _: Z(name, data, **kw)  # type: ignore[arg-type]


ZEROS = b"\0" * (8 * MIB)
EMPTY_GZIP_MEMBER = gzip.compress(b"", mtime=0)  # 20 bytes that inflate to nothing


def gzip_members(data: bytes, size: int) -> bytes:
    """`data` as consecutive gzip members of `size` bytes each (what bgzip writes with 64 KiB)."""
    return b"".join(gzip.compress(data[i:i + size], mtime=0) for i in range(0, len(data), size))


def member_flood(count: int) -> bytes:
    """A valid extension archive followed by `count` empty gzip members (issue 25: 48 MiB of
    them, 2.5 million, inflated for 86 s and were accepted)."""
    return gzip.compress(tar_bytes([T("pkg/extension.toml", MANIFEST)]), mtime=0) + EMPTY_GZIP_MEMBER * count

ATTACKS: list[Attack] = [
    # names
    Attack("tar-absolute", _tar(lambda p: T(f"{p}/pwned-abs", b"x")), "unsafe_archive"),
    Attack("zip-absolute", _zip(lambda p: Z(f"{p}/pwned-abs", b"x")), "unsafe_archive"),
    Attack("tar-dotdot", _tar(_t("../pwned-dotdot")), "unsafe_archive"),
    Attack("zip-dotdot", _zip(_z("../pwned-dotdot")), "unsafe_archive"),
    Attack("tar-nested-dotdot", _tar(_t("pkg/a/../../../pwned-nested")), "unsafe_archive"),
    Attack("zip-nested-dotdot", _zip(_z("pkg/a/../../../pwned-nested")), "unsafe_archive"),
    Attack("tar-dotdot-dir", _tar(_t("../", kind=tarfile.DIRTYPE)), "unsafe_archive"),
    Attack("tar-backslash", _tar(_t("..\\..\\pwned-backslash")), "unsafe_archive"),
    Attack("zip-backslash", _zip(_z("pkg\\..\\..\\pwned-backslash")), "unsafe_archive"),
    Attack("tar-drive-letter", _tar(_t("C:/pwned-drive")), "unsafe_archive"),
    Attack("zip-drive-letter", _zip(_z("c:pwned-drive")), "unsafe_archive"),
    Attack("tar-nul-in-name", _tar(_t("pkg/benign", pax={"path": "pkg/evil\0.toml"})), "unsafe_archive"),
    Attack("zip-nul-in-name", _zip(_z(b"pkg/evil.txt\0../../pwned")), "unsafe_archive"),
    Attack("tar-control-char", _tar(_t("pkg/bell\x07.txt")), "unsafe_archive"),
    Attack("zip-control-char", _zip(_z("pkg/esc\x1b[31m.txt")), "unsafe_archive"),
    Attack("tar-c1-control", _tar(_t("pkg/csi\u009b.txt")), "unsafe_archive"),
    Attack("tar-empty-name", _tar(_t("")), "unsafe_archive"),
    Attack("zip-empty-name", _zip(_z("")), "unsafe_archive"),
    Attack("tar-not-utf8", _tar(_t("pkg/latin1-\udce9.txt")), "unsafe_archive"),
    Attack("zip-not-utf8", _zip(_z(b"pkg/latin1-\xe9.txt")), "unsafe_archive"),
    Attack("tar-component-too-long", _tar(_t("pkg/" + "a" * 300)), "unsafe_archive"),
    # member types
    Attack("tar-symlink", _tar(_t("pkg/link", b"", kind=tarfile.SYMTYPE, linkname="/etc/passwd")), "unsafe_archive"),
    Attack("tar-symlink-then-write", _tar(_t("pkg/up", b"", kind=tarfile.SYMTYPE, linkname=".."),
                                          _t("pkg/up/pwned-via-link")), "unsafe_archive"),
    Attack("zip-symlink", _zip(_z("pkg/link", b"/etc/passwd", unix_mode=stat.S_IFLNK | 0o777)), "unsafe_archive"),
    Attack("tar-hardlink", _tar(_t("pkg/hard", b"", kind=tarfile.LNKTYPE, linkname="pkg/extension.toml")),
           "unsafe_archive"),
    Attack("tar-chardev", _tar(_t("pkg/null", b"", kind=tarfile.CHRTYPE)), "unsafe_archive"),
    Attack("tar-blockdev", _tar(_t("pkg/sda", b"", kind=tarfile.BLKTYPE)), "unsafe_archive"),
    Attack("tar-fifo", _tar(_t("pkg/fifo", b"", kind=tarfile.FIFOTYPE)), "unsafe_archive"),
    Attack("zip-fifo", _zip(_z("pkg/fifo", b"", unix_mode=stat.S_IFIFO | 0o644)), "unsafe_archive"),
    Attack("zip-chardev", _zip(_z("pkg/null", b"", unix_mode=stat.S_IFCHR | 0o644)), "unsafe_archive"),
    Attack("tar-unknown-type", _tar(_t("pkg/odd", b"", kind=b"Z")), "unsafe_archive"),
    Attack("tar-gnu-sparse", _tar(_t("pkg/sparse", b"x", pax={"GNU.sparse.map": "0,1", "GNU.sparse.size": "1"})),
           "unsafe_archive"),
    # the shape of the tree
    Attack("tar-duplicate", _tar(_t("pkg/a.txt"), _t("pkg/a.txt")), "unsafe_archive"),
    Attack("zip-duplicate", _zip(_z("pkg/a.txt"), _z("pkg/a.txt")), "unsafe_archive"),
    Attack("tar-duplicate-via-dot", _tar(_t("pkg/a.txt"), _t("./pkg/./a.txt")), "unsafe_archive"),
    Attack("tar-case-collision", _tar(_t("pkg/README.md"), _t("pkg/readme.md")), "unsafe_archive"),
    Attack("zip-case-collision", _zip(_z("pkg/Docs/a"), _z("pkg/docs/b")), "unsafe_archive"),
    Attack("tar-unicode-collision", _tar(_t("pkg/caf\u00e9"), _t("pkg/cafe\u0301")), "unsafe_archive"),
    Attack("tar-file-then-dir", _tar(_t("pkg/a"), _t("pkg/a/b")), "unsafe_archive"),
    Attack("tar-dir-then-file", _tar(_t("pkg/a/b"), _t("pkg/a")), "unsafe_archive"),
    Attack("tar-dir-entry-then-file", _tar(_t("pkg/a", b"", kind=tarfile.DIRTYPE), _t("pkg/a")), "unsafe_archive"),
    Attack("zip-file-then-dir", _zip(_z("pkg/a"), _z("pkg/a/b")), "unsafe_archive"),
    Attack("zip-dir-then-file", _zip(_z("pkg/a/"), _z("pkg/a")), "unsafe_archive"),
    Attack("zip-local-name-differs", _zip(_z("pkg/ok.txt", local_name=b"../pwned-local")), "unsafe_archive"),
    Attack("zip-overlapping-entries", _zip(_z("pkg/a", noise(2 * KIB), method=0, declared_csize=2 * KIB + 60,
                                              declared_size=2 * KIB + 60), _z("pkg/b")), "unsafe_archive"),
    # limits
    Attack("tar-too-many-entries", _tar(*[_t(f"pkg/f{i}") for i in range(8)]), "archive_too_large", SMALL),
    Attack("zip-too-many-entries", _zip(*[_z(f"pkg/f{i}") for i in range(8)]), "archive_too_large", SMALL),
    Attack("tar-uncompressed-over-limit", _tar(*[_t(f"pkg/r{i}", noise(100 * KIB)) for i in range(3)]),
           "archive_too_large", SMALL),
    Attack("zip-uncompressed-over-limit", _zip(*[_z(f"pkg/r{i}", noise(100 * KIB)) for i in range(3)]),
           "archive_too_large", SMALL),
    Attack("zip-sizes-lie-over-limit", _zip(_z("pkg/r", noise(300 * KIB), declared_size=10)),
           "archive_too_large", SMALL),
    Attack("tar-gz-bomb", _tar(_t("pkg/zeros", ZEROS)), "archive_too_large", SMALL),
    Attack("zip-bomb-honest-headers", _zip(_z("pkg/zeros", ZEROS)), "archive_too_large", SMALL),
    Attack("zip-bomb-lying-headers", _zip(_z("pkg/zeros", ZEROS, declared_size=100)), "archive_too_large", SMALL),
    Attack("zip-bomb-descriptor-lies", _zip(_z("pkg/zeros", ZEROS, declared_size=100, descriptor=True,
                                               descriptor_size=1)), "archive_too_large", SMALL),
    Attack("compressed-too-large", _tar(_t("pkg/r", noise(64 * KIB))), "archive_too_large",
           Limits(max_archive_bytes=16 * KIB)),
    Attack("pax-header-chain", _raw(".tar.gz", lambda: gzip.compress(_pax_chain(3000))), "invalid_archive"),
    # pax headers tarfile's regexes take quadratic time on (CVE-2024-6232), refused before it parses them
    Attack("tar-pax-digit-run", _raw(".tar.gz", lambda: gzip.compress(pax_member(b"1" * 60_000))), "unsafe_archive"),
    Attack("tar-pax-digits-in-value", _raw(".tar.gz", lambda: gzip.compress(pax_member(
        pax_record("comment", b"9" * 2000) * 20))), "unsafe_archive"),
    Attack("tar-pax-unframed", _raw(".tar.gz", lambda: gzip.compress(pax_member(b"1 hdrcharset=" * 4000))),
           "unsafe_archive"),
    Attack("tar-pax-long-record", _raw(".tar.gz", lambda: gzip.compress(pax_member(
        pax_record("path", b"pkg/" + b"a/" * 3000 + b"f")))), "unsafe_archive"),
    Attack("tar-pax-huge-header", _raw(".tar.gz", lambda: gzip.compress(pax_member(
        pax_record("comment", b"x" * 2000) * 40))), "archive_too_large"),
    # gzip members that cost a decompressor each and inflate to nothing, after the tar stream or
    # inside it, and data after the end of the tar archive: refused while streaming
    Attack("tar-gzip-member-flood", _raw(".tar.gz", lambda: member_flood(100_000)), "archive_too_large"),
    Attack("tar-gzip-one-byte-members", _raw(".tar.gz", lambda: gzip_members(
        tar_bytes([T("pkg/extension.toml", MANIFEST)]), 1)), "archive_too_large"),
    Attack("tar-data-after-the-end", _raw(".tar.gz", lambda: gzip.compress(
        tar_bytes([T("pkg/extension.toml", MANIFEST)]) + noise(2 * MIB), mtime=0)), "archive_too_large"),
    # central directories zipfile would parse whole before the entry count is seen: refused from
    # the end record, or after max_entries headers (the junk after them would be invalid_archive)
    Attack("zip-end-record-count-flood", _raw(".zip", lambda: zip_directory_lie(
        [Z("pkg/extension.toml", MANIFEST)], count=60_000, junk=b"\xff" * 64)), "archive_too_large"),
    Attack("zip64-end-record-count-flood", _raw(".zip", lambda: zip_directory_lie(
        [Z("pkg/extension.toml", MANIFEST)], count=1_100_000, junk=b"\xff" * 64, zip64=True)), "archive_too_large"),
    Attack("zip-directory-longer-than-its-count", _raw(".zip", lambda: zip_directory_lie(
        [Z("pkg/extension.toml", MANIFEST), *[Z(f"pkg/f{i}") for i in range(8)]], count=1, junk=b"\xff" * 64)),
        "archive_too_large", SMALL),
    Attack("zip64-directory-longer-than-its-count", _raw(".zip", lambda: zip_directory_lie(
        [Z("pkg/extension.toml", MANIFEST), *[Z(f"pkg/f{i}") for i in range(8)]], count=1, junk=b"\xff" * 64,
        zip64=True)), "archive_too_large", SMALL),
    # not an archive, or a broken one
    Attack("not-an-archive", _raw(".tar.gz", lambda: b"just some text, not an archive\n"), "invalid_archive"),
    Attack("empty-file", _raw(".zip", lambda: b""), "invalid_archive"),
    Attack("plain-tar", _raw(".tar", lambda: tar_bytes([T("pkg/extension.toml", MANIFEST)])), "invalid_archive"),
    Attack("gzip-not-tar", _raw(".tar.gz", lambda: gzip.compress(b"hello" * 1000)), "invalid_archive"),
    Attack("truncated-gzip", _truncated, "invalid_archive"),
    Attack("tar-bad-second-header", _bad_second_header, "invalid_archive"),
    Attack("zip-truncated", _raw(".zip", lambda: zip_bytes([Z("pkg/extension.toml", MANIFEST)])[:40]),
           "invalid_archive"),
    Attack("zip-bad-crc", _zip(_z("pkg/a.txt", b"hello", crc=1234)), "invalid_archive"),
    Attack("zip-size-lie-small", _zip(_z("pkg/a.txt", b"hello world", declared_size=3)), "invalid_archive"),
    Attack("zip-encrypted", _zip(_z("pkg/secret", b"x", flags=0x1)), "invalid_archive"),
    Attack("zip-bzip2-method", _zip(_z("pkg/b", b"x", method=12, payload=b"BZh9")), "invalid_archive"),
    Attack("no-manifest", _tar(_t("pkg/README.md"), ok=False), "invalid_archive"),
    Attack("manifest-and-skill", _tar(_t("pkg/SKILL.md")), "invalid_archive"),
]
