"""Extraction of a .zip: the whole central directory is checked before anything is written.

Checked up front: the entry count, every name (`Staging.admit`), member types (links, devices
and FIFOs are refused), compression methods (stored and deflate only; encrypted members are
refused), declared sizes against the limits, and each local header: it must name the same
member as the central directory, and no member's data may reach into the next member (the
overlapping-entry bomb). Then data is read in file order and the declared sizes are not
trusted: actual output is counted, the ratio is checked per entry while inflating, and the
size and CRC must match the central directory at the end.
"""

from __future__ import annotations

import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from pkgmgr.archive.errors import corrupt, too_large, unsafe
from pkgmgr.archive.files import CHUNK, SMALL_MEMBER_BYTES, kind_of
from pkgmgr.archive.limits import RAW_DEFLATE_WBITS, Inflater
from pkgmgr.archive.staging import Staging

_LOCAL = struct.Struct("<4s5H3L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_ZIP64_END_BYTES = 56 + 20  # the zip64 end record and its locator, between directory and end record
_ENCRYPTED = 0x1
_UTF8_NAMES = 0x800
_ALLOWED_TYPES = (0, stat.S_IFREG, stat.S_IFDIR)
_MALFORMED = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OverflowError, struct.error,
              NotImplementedError)


@dataclass
class _Entry:
    info: zipfile.ZipInfo
    name: str
    rel: str
    is_dir: bool
    mode: int
    data_start: int = 0


def extract_zip(raw: BinaryIO, size: int, staging: Staging) -> None:
    """Extract the zip archive `raw` (`size` bytes) into `staging`; raises PkgmgrError only."""
    limits = staging.limits
    try:
        _check_directory(raw, limits.max_entries)
        archive = zipfile.ZipFile(raw)
    except UnicodeDecodeError:
        raise unsafe("(undecodable name)", "a member name is not valid UTF-8") from None
    except _MALFORMED as exc:
        raise corrupt(f"bad zip structure ({exc})") from None
    infos = archive.infolist()
    if len(infos) > limits.max_entries:
        raise too_large("entry count", limits.max_entries)
    entries = [_check(info, staging) for info in infos]
    files = [entry for entry in entries if not entry.is_dir]
    if sum(entry.info.file_size for entry in files) > limits.max_uncompressed_bytes:
        raise too_large("uncompressed size", limits.max_uncompressed_bytes)
    _locate_data(raw, entries, end=min(getattr(archive, "start_dir", size), size))
    for entry in entries:
        if entry.is_dir and entry.rel:
            staging.mkdir(entry.rel)
    for entry in sorted(files, key=lambda e: e.data_start):
        if entry.info.file_size <= SMALL_MEMBER_BYTES:
            staging.write_bytes(entry.rel, _whole(raw, entry, staging), mode=entry.mode, member=entry.name)
        else:
            staging.write(entry.rel, _content(raw, entry, staging), mode=entry.mode, member=entry.name,
                          size=entry.info.file_size)


def _check_directory(raw: BinaryIO, max_entries: int) -> None:
    """Refuse a central directory of more than `max_entries` entries before zipfile parses it
    (it builds an object per entry: a 49 MiB directory of 1.1 M entries cost 22 s and 425 MB).
    The end record's count (the zip64 one when present) is checked first; then the directory
    zipfile will read (the same bytes: its end record, its offset rule) is walked header by
    header, at most `max_entries` of them, since zipfile reads entries until the directory's
    declared size is used up whatever the count says."""
    end = zipfile._EndRecData(raw)  # type: ignore[attr-defined]  # zipfile's own reading of the end
    if not end:
        return  # not a zip: zipfile says so
    count = max(end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_ENTRIES_THIS_DISK])  # type: ignore[attr-defined]
    if count > max_entries:
        raise too_large("entry count", max_entries)
    size = end[zipfile._ECD_SIZE]  # type: ignore[attr-defined]
    start = end[zipfile._ECD_LOCATION] - size  # type: ignore[attr-defined]
    if end[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:  # type: ignore[attr-defined]
        start -= _ZIP64_END_BYTES
    if start < 0:
        return  # zipfile refuses the offset
    pos = entries = 0
    while pos < size:  # header by header: nothing of the directory is held in memory
        if entries == max_entries:
            raise too_large("entry count", max_entries)
        raw.seek(start + pos)
        header = raw.read(_CENTRAL.size)
        if len(header) < _CENTRAL.size or header[:4] != _CENTRAL_SIGNATURE:
            return  # a broken directory: zipfile refuses it where it breaks
        fields = _CENTRAL.unpack(header)
        pos += _CENTRAL.size + fields[10] + fields[11] + fields[12]  # name, extra, comment lengths
        entries += 1


def _check(info: zipfile.ZipInfo, staging: Staging) -> _Entry:
    name = info.orig_filename  # before zipfile cuts the name at a NUL
    is_dir = name.endswith("/")
    st_mode = info.external_attr >> 16
    kind = stat.S_IFMT(st_mode)
    if kind not in _ALLOWED_TYPES:
        raise unsafe(name, f"the member is {kind_of(st_mode)}: only regular files and directories are allowed")
    if kind == stat.S_IFDIR and not is_dir:
        raise unsafe(name, "marked as a directory but its name does not end with '/'")
    rel = staging.admit(name, is_dir=is_dir)
    if info.flag_bits & _ENCRYPTED:
        raise corrupt("encrypted members are not supported", member=name)
    limits = staging.limits
    if not is_dir:
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise corrupt(f"compression method {info.compress_type} is not supported (only stored and deflate)",
                          member=name)
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise corrupt("stored member whose compressed and uncompressed sizes differ", member=name)
        declared_ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.ratio_threshold_bytes and declared_ratio > limits.max_ratio:
            raise too_large("compression ratio", limits.max_ratio, member=name)
    return _Entry(info, name, rel, is_dir, st_mode)  # permissions without a file type still count


def _locate_data(raw: BinaryIO, entries: list[_Entry], *, end: int) -> None:
    """Read every local header; refuse renamed members and data that overlaps the next member."""
    for entry in entries:
        info = entry.info
        if info.header_offset < 0:
            raise corrupt("member offset out of range", member=entry.name)
        raw.seek(info.header_offset)
        header = raw.read(_LOCAL.size)
        if len(header) < _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
            raise corrupt("bad local file header", member=entry.name)
        name_length, extra_length = _LOCAL.unpack(header)[-2:]
        local_name = raw.read(name_length)
        if local_name != entry.name.encode("utf-8" if info.flag_bits & _UTF8_NAMES else "cp437"):
            shown = local_name.decode("utf-8", "backslashreplace")
            raise unsafe(entry.name, f"its local header names it {shown!r}")
        entry.data_start = info.header_offset + _LOCAL.size + name_length + extra_length
    ordered = sorted(entries, key=lambda e: e.info.header_offset)
    for current, following in zip(ordered, [*ordered[1:], None]):
        limit = following.info.header_offset if following is not None else end
        if current.data_start + current.info.compress_size > limit:
            raise unsafe(current.name, "its data overlaps another member or the central directory")


def _whole(raw: BinaryIO, entry: _Entry, staging: Staging) -> bytes:
    """The content of a member the central directory declares small (SMALL_MEMBER_BYTES), read
    whole and checked (size, CRC: `_content`) before anything of it is written, so that one call
    writes it (and a helper process may: `TreeWriter.write_bytes`). Data past the declared size is
    refused at the chunk that passes it: no more than that is ever held."""
    declared = entry.info.file_size
    parts: list[bytes] = []
    produced = 0
    for chunk in _content(raw, entry, staging):
        produced += len(chunk)
        if produced > declared:
            raise corrupt(f"more data than the {declared} bytes the central directory says", member=entry.name)
        parts.append(chunk)
    return b"".join(parts)


def _content(raw: BinaryIO, entry: _Entry, staging: Staging) -> Iterator[bytes]:
    info = entry.info
    remaining = info.compress_size
    raw.seek(entry.data_start)

    def read_raw(size: int) -> bytes:
        nonlocal remaining
        data = raw.read(min(size, remaining)) if remaining > 0 else b""
        remaining -= len(data)
        return data

    if info.compress_type == zipfile.ZIP_STORED:
        read = read_raw
    else:
        limits = staging.limits
        read = Inflater(read_raw, wbits=RAW_DEFLATE_WBITS, limits=limits, cap=limits.max_uncompressed_bytes,
                        member=entry.name).read
    crc = produced = 0
    while True:
        data = read(CHUNK)
        if not data:
            break
        crc = zlib.crc32(data, crc)
        produced += len(data)
        yield data
    if produced != info.file_size:
        raise corrupt(f"{produced} bytes of data where the central directory says {info.file_size}",
                      member=entry.name)
    if crc != info.CRC:
        raise corrupt("CRC-32 mismatch", member=entry.name)
