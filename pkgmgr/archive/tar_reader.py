"""Streaming extraction of a .tar.gz: one sequential pass, each header checked before its data.

The gzip layer is ours (`Inflater`) so that compressed bytes, produced bytes and the ratio are
checked on every read. tarfile only parses headers: it reads a forward-only view of the
decompressed stream (`_ForwardStream`, opened in `r:` mode, which never seeks backwards when
members are read in order), and member data is copied straight from the inflater's chunks, so
no byte is copied more than once. Only regular files and directories are accepted; every other
member type (links, devices, FIFOs, sparse files, unknown types) is refused with
`unsafe_archive`.
"""

from __future__ import annotations

import re
import struct
import tarfile
import zlib
from typing import BinaryIO, Iterator, Self

from pkgmgr.archive.errors import corrupt, too_large, unsafe
from pkgmgr.archive.files import CHUNK, SMALL_MEMBER_BYTES
from pkgmgr.archive.limits import GZIP_WBITS, CountingReader, Inflater, ReadAhead
from pkgmgr.archive.names import MAX_NAME_BYTES
from pkgmgr.archive.staging import Staging

_FILE_TYPES = frozenset((tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE))
_TYPE_WORDS = {
    tarfile.SYMTYPE: "symbolic links are not allowed",
    tarfile.LNKTYPE: "hard links are not allowed",
    tarfile.CHRTYPE: "character devices are not allowed",
    tarfile.BLKTYPE: "block devices are not allowed",
    tarfile.FIFOTYPE: "FIFOs are not allowed",
    tarfile.GNUTYPE_SPARSE: "sparse files are not allowed",
}
# What tarfile raises on malformed input (numbers out of range, bad pax records, deep header
# chains, bad encodings); PkgmgrError is none of these, so our own refusals pass through.
_MALFORMED = (tarfile.TarError, EOFError, ValueError, OverflowError, UnicodeError, RecursionError, struct.error)
# Bytes a member costs in the stream beyond its content: header, pax/long-name records, padding.
_OVERHEAD_PER_ENTRY = 4096
# tarfile reads a header record (a pax or GNU long-name record) whole into memory; names are at
# most MAX_NAME_BYTES, so a record this large is refused before it is buffered.
MAX_HEADER_BYTES = 1024 * 1024
# After the end-of-archive blocks a tar stream holds only the padding of its last record (10 KiB
# with tar's default blocking factor of 20; 1 MiB allows a factor of 2,048): more is refused.
MAX_TRAILING_BYTES = 1024 * 1024
# A pax record carries one value (a path at most MAX_NAME_BYTES, a number, an attribute), and a
# pax header a handful of records. Before 3.11.10/3.12.6 tarfile parsed them with regexes that
# are quadratic on long digit runs (CVE-2024-6232), so every pax header is checked first, in
# linear time, against these bounds (whatever the Python).
MAX_PAX_RECORD_BYTES = MAX_NAME_BYTES + 256
MAX_PAX_HEADER_BYTES = 64 * 1024
MAX_PAX_DIGITS = 64
_PAX_LENGTH = re.compile(rb"([0-9]{1,%d}) " % len(str(MAX_PAX_RECORD_BYTES)))
_DIGIT_RUN = re.compile(rb"[0-9]{%d}" % (MAX_PAX_DIGITS + 1))


class _ForwardStream:
    """The decompressed tar stream as the seekable file tarfile's `r:` mode expects, as long as
    nobody seeks backwards. `chunks(n)` hands out the next n bytes without copying them."""

    def __init__(self, source: Inflater | ReadAhead) -> None:
        self._source = source
        self._buffer = b""
        self._offset = 0
        self._position = 0

    def tell(self) -> int:
        return self._position

    def seek(self, position: int, whence: int = 0) -> int:
        if whence != 0 or position < self._position:
            raise corrupt("tar data out of order")
        skip = position - self._position
        if skip <= len(self._buffer) - self._offset:  # within the chunk at hand (padding, mostly)
            self._offset += skip
            self._position = position
            return position
        for _ in self.chunks(skip):
            pass
        return position

    def block_at(self, position: int) -> bytes:
        """`seek(position)`, then `take(BLOCK)`: the header of the next member, in one call when
        it lies within the chunk at hand (one per member of an archive of small files)."""
        start = self._offset + position - self._position
        end = start + BLOCK
        if self._offset <= start and end <= len(self._buffer):
            self._offset, self._position = end, position + BLOCK
            return self._buffer[start:end]
        self.seek(position)
        return self.take(BLOCK)

    def read(self, size: int = -1) -> bytes:
        """What tarfile reads itself: headers and their records (member data goes through
        `take` and `chunks`)."""
        if size is None or size < 0:
            raise corrupt("unbounded read of tar data")
        if size > MAX_HEADER_BYTES:
            raise too_large("tar header record size", MAX_HEADER_BYTES, configurable=False)
        return self.take(size)

    def take(self, size: int) -> bytes:
        """The next `size` bytes as one piece (fewer at the end of the stream): a header, or
        the content of a small member (`SMALL_MEMBER_BYTES`), copied once."""
        end = self._offset + size
        if end <= len(self._buffer):  # within the chunk at hand: one slice
            piece = self._buffer[self._offset:end]
            self._offset = end
            self._position += size
            return piece
        return b"".join(self.chunks(size))

    def unread(self, data: bytes) -> None:
        """Put back `data`, the bytes just read: the next read returns them again."""
        self._buffer = data + self._buffer[self._offset:]
        self._offset = 0
        self._position -= len(data)

    def drain(self) -> None:
        """Read to the end of the stream: the record padding after the end-of-archive blocks (at
        most `MAX_TRAILING_BYTES`: more is refused before it is inflated further)."""
        left = MAX_TRAILING_BYTES - (len(self._buffer) - self._offset)
        while left >= 0:
            chunk = self._source.read(CHUNK)
            if not chunk:
                break
            left -= len(chunk)
        else:
            raise too_large("data after the end of the tar archive", MAX_TRAILING_BYTES, configurable=False)
        self._buffer, self._offset = b"", 0

    def chunks(self, size: int) -> Iterator[bytes]:
        while size > 0:
            if self._offset == len(self._buffer):
                self._buffer = self._source.read(CHUNK)
                self._offset = 0
                if not self._buffer:
                    return
            take = min(size, len(self._buffer) - self._offset)
            if take == len(self._buffer):
                piece = self._buffer
            else:
                piece = self._buffer[self._offset:self._offset + take]
            self._offset += take
            self._position += take
            size -= take
            yield piece


_OCTAL_FIELD_BYTES = b"01234567 \0"
_SPLIT_DIGITS = re.compile(rb"[0-7] +[0-7]")  # "12 34": int() refuses it, so tarfile decides
_FAST_TYPES = (tarfile.REGTYPE, tarfile.DIRTYPE)
BLOCK = tarfile.BLOCKSIZE


def _octal(field: bytes) -> int:
    """tarfile's `nti` of a field of octal digits, spaces and NULs — or ValueError, also for
    some fields `nti` reads (digits after a NUL): those go to tarfile."""
    return int(field.rstrip(b" \0") or b"0", 8)


def _nts(field: bytes) -> str:
    """tarfile's `nts` with the archive's encoding: the field up to its first NUL."""
    end = field.find(b"\0")
    return (field if end < 0 else field[:end]).decode("utf-8", "surrogateescape")


def _byte_sum(buf: bytes) -> int:
    """sum(buf) of a 512-byte header in C: the low half of Adler-32 is 1 + the byte sum modulo
    65521, exact for 256 bytes (at most 65,280)."""
    return (zlib.adler32(buf[:256]) & 0xFFFF) + (zlib.adler32(buf[256:]) & 0xFFFF) - 2


def plain_header(buf: bytes) -> tuple[str, bytes, int, int, int] | None:
    """(name, type, mode, size, chksum) of the common header, as tarfile's `frombuf` reads it:
    a regular file or a directory whose number fields are plain octal (each one tarfile's
    `nti` reads, the ones not returned too) and whose checksum is the unsigned one (what every
    tar writer emits). None for any other header, or any doubt: tarfile's own parser then
    decides (and raises its errors)."""
    if len(buf) != BLOCK:
        return None
    kind, numbers, devices = buf[156:157], buf[100:156], buf[329:345]  # mode .. chksum; devmajor, devminor
    if (kind not in _FAST_TYPES or numbers.translate(None, _OCTAL_FIELD_BYTES)
            or devices.translate(None, _OCTAL_FIELD_BYTES)):
        return None
    if ((numbers.find(b" ", 0, 48) >= 0 or b" " in devices)
            and (_SPLIT_DIGITS.search(numbers) or _SPLIT_DIGITS.search(devices))):
        return None
    field = numbers[48:56]
    try:  # `_octal` of each, inlined (one header per member)
        chksum = int(field.rstrip(b" \0") or b"0", 8)
        mode = int(numbers[:8].rstrip(b" \0") or b"0", 8)
        size = int(numbers[24:36].rstrip(b" \0") or b"0", 8)
    except ValueError:
        return None
    # tarfile's unsigned checksum: 256 + the sum of every byte but the checksum field's (`_byte_sum`;
    # the field's own 8 bytes sum to its Adler-32 low half minus 1)
    if chksum != 255 + (zlib.adler32(buf[:256]) & 0xFFFF) + (zlib.adler32(buf[256:]) & 0xFFFF) - (
            zlib.adler32(field) & 0xFFFF):
        return None  # a signed checksum, or a bad one
    end = buf.find(b"\0", 0, 100)
    name = buf[:end if end >= 0 else 100].decode("utf-8", "surrogateescape")
    if kind == tarfile.DIRTYPE:
        name = name.rstrip("/")
    if buf[345]:
        name = _nts(buf[345:500]) + "/" + name
    return name, kind, mode, size, chksum


# tarfile's header errors but the end of the archive (EOFHeaderError, EmptyHeaderError); typeshed
# does not declare them
_BAD_HEADER: tuple[type[Exception], ...] = (
    tarfile.InvalidHeaderError, tarfile.TruncatedHeaderError, tarfile.SubsequentHeaderError)  # type: ignore[attr-defined]


class _StrictTarInfo(tarfile.TarInfo):
    """tarfile takes a bad header after the first one for the end of the archive and stops
    silently; we refuse the archive instead."""

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
        """tarfile's `frombuf`, quicker for the common header (`plain_header`): the same
        TarInfo; any other header goes to tarfile's own parser."""
        buf = bytes(buf)  # tarfile reads bytes: the same object, no copy
        plain = plain_header(buf) if encoding == "utf-8" and errors == "surrogateescape" else None
        if plain is None:
            return super().frombuf(buf, encoding, errors)
        obj = cls()
        obj.name, obj.type, obj.mode, obj.size, obj.chksum = plain
        try:
            obj.uid, obj.gid, obj.mtime = _octal(buf[108:116]), _octal(buf[116:124]), _octal(buf[136:148])
            obj.devmajor, obj.devminor = _octal(buf[329:337]), _octal(buf[337:345])
        except ValueError:  # digits after a NUL
            return super().frombuf(buf, encoding, errors)
        obj.linkname, obj.uname, obj.gname = _nts(buf[157:257]), _nts(buf[265:297]), _nts(buf[297:329])
        return obj

    @classmethod
    def fromtarfile(cls, tarfile_: tarfile.TarFile) -> Self:
        try:
            return super().fromtarfile(tarfile_)
        except _BAD_HEADER as exc:
            raise corrupt(f"bad tar header ({exc})") from None

    def _proc_pax(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        """tarfile parses the pax header only after `check_pax_header` accepted it."""
        stream = tarfile_.fileobj
        if self.size > MAX_PAX_HEADER_BYTES:
            raise too_large("pax header size", MAX_PAX_HEADER_BYTES, member=self.name, configurable=False)
        if isinstance(stream, _ForwardStream):
            data = stream.read(self._block(self.size))  # type: ignore[attr-defined]
            check_pax_header(data, self.name)  # with its padding: tarfile reads that too
            stream.unread(data)
        return super()._proc_pax(tarfile_)  # type: ignore[misc]


def check_pax_header(data: bytes, member: str) -> None:
    """Refuse (`unsafe_archive`) a pax header that is not a sequence of well-framed records
    `"<length> <keyword>=<value>\n"` within the bounds above, followed only by NUL padding;
    GNU sparse records are refused (sparse files are). Linear in `len(data)`."""
    run = _DIGIT_RUN.search(data)
    if run is not None:
        raise unsafe(member, f"pax header holds a run of more than {MAX_PAX_DIGITS} digits")
    pos = 0
    while pos < len(data) and data[pos] != 0:
        match = _PAX_LENGTH.match(data, pos)
        if match is None:
            raise unsafe(member, f"malformed pax record at byte {pos}")
        length = int(match.group(1))
        end = pos + length
        if length > MAX_PAX_RECORD_BYTES:
            raise unsafe(member, f"pax record longer than {MAX_PAX_RECORD_BYTES} bytes")
        keyword, equals, _ = data[match.end():end - 1].partition(b"=")
        if end > len(data) or data[end - 1] != 0x0A or not equals or not keyword:
            raise unsafe(member, f"malformed pax record at byte {pos}")
        if keyword.startswith(b"GNU.sparse."):
            raise unsafe(member, "sparse files are not allowed")
        pos = end
    if data[pos:].strip(b"\0"):
        raise unsafe(member, f"malformed pax record at byte {pos}")


# From this compressed size on, inflating runs in a thread ahead of the extraction (ReadAhead).
READ_AHEAD_BYTES = 4 * 1024 * 1024


def extract_tar_gz(raw: BinaryIO, staging: Staging, *, size: int = 0) -> None:
    """Extract the .tar.gz read from `raw` (`size` bytes) into `staging`; raises PkgmgrError only."""
    limits = staging.limits
    counting = CountingReader(raw, limits.max_archive_bytes)
    cap = limits.max_uncompressed_bytes + _OVERHEAD_PER_ENTRY * limits.max_entries + CHUNK
    inflater = Inflater(counting.read, wbits=GZIP_WBITS, limits=limits, cap=cap)
    ahead = ReadAhead(inflater.read) if size >= READ_AHEAD_BYTES else None
    stream = _ForwardStream(ahead if ahead is not None else inflater)
    try:
        try:
            tar = tarfile.open(fileobj=stream, mode="r:", tarinfo=_StrictTarInfo,  # type: ignore[call-overload]
                               encoding="utf-8", errors="surrogateescape")
        except _MALFORMED as exc:
            raise corrupt(f"not a tar stream inside the gzip data ({exc})") from None
        with tar:
            _extract_members(tar, stream, staging)
        stream.drain()  # inflate to the end: the gzip CRC and length are checked, truncation is seen
    finally:
        if ahead is not None:
            ahead.close()


def _extract_members(tar: tarfile.TarFile, stream: _ForwardStream, staging: Staging) -> None:
    """Extract every member in order, in one pass. A plain header (`plain_header`) is read here,
    with no TarInfo, and a small regular file behind it is admitted (count, name rules, size
    reserved), read, written and recorded in the same turn of the loop. Any other header — pax and
    GNU long-name records, links, the end of the archive, anything odd — and every header after a
    global pax header (whose fields apply to the members that follow) goes through tarfile, which
    then reads on from `tar.offset` as it always does."""
    offset = tar.offset
    fast = tar.firstmember is None and not tar.pax_headers  # type: ignore[attr-defined]  # not in typeshed
    take, block_at, admit_file, write_bytes = stream.take, stream.block_at, staging.admit_file, staging.write_bytes
    while True:
        if fast:
            buf = block_at(offset)
            plain = plain_header(buf)
            if plain is not None:
                name, kind, mode, size, _ = plain
                data_at = offset + BLOCK
                if kind != tarfile.REGTYPE:  # as tarfile's `_proc_builtin`: only a regular file's data is skipped
                    offset = data_at
                else:
                    offset = data_at + -(-size // BLOCK) * BLOCK
                    if size <= SMALL_MEMBER_BYTES:
                        rel = admit_file(name, size)
                        data = take(size)
                        if len(data) != size:
                            raise corrupt("unexpected end of data (truncated archive)", member=name)
                        write_bytes(rel, data, mode=mode, member=name)
                        continue
                _extract_member(stream, staging, name, kind, mode, size, data_at)
                continue
            stream.unread(buf)
        tar.offset = offset
        try:
            member = tar.next()
        except _MALFORMED as exc:
            raise corrupt(f"bad tar data ({exc})") from None
        if member is None:
            return
        kind = member.type
        if kind != tarfile.DIRTYPE and (kind not in _FILE_TYPES or member.sparse is not None):
            reason = _TYPE_WORDS.get(kind, f"member type {kind!r} is not allowed")
            raise unsafe(member.name, "sparse files are not allowed" if member.sparse is not None else reason)
        _extract_member(stream, staging, member.name, kind, member.mode, member.size, member.offset_data)
        offset = tar.offset
        fast = tar.firstmember is None and not tar.pax_headers  # type: ignore[attr-defined]  # not in typeshed


def _extract_member(stream: _ForwardStream, staging: Staging, name: str, kind: bytes, mode: int, size: int,
                    data_at: int) -> None:
    is_dir = kind == tarfile.DIRTYPE
    rel = staging.admit(name, is_dir=is_dir)
    if is_dir:
        if rel:
            staging.mkdir(rel)
        return
    staging.budget.reserve(size, name)
    if stream.tell() != data_at:
        raise corrupt("tar data out of order", member=name)
    if size > SMALL_MEMBER_BYTES:
        staging.write(rel, _content(stream, name, size), mode=mode, member=name, size=size)
        return
    data = stream.take(size)
    if len(data) != size:
        raise corrupt("unexpected end of data (truncated archive)", member=name)
    staging.write_bytes(rel, data, mode=mode, member=name)


def _content(stream: _ForwardStream, name: str, size: int) -> Iterator[bytes]:
    produced = 0
    for chunk in stream.chunks(size):
        produced += len(chunk)
        yield chunk
    if produced != size:
        raise corrupt("unexpected end of data (truncated archive)", member=name)
