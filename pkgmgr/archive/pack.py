"""`pack_directory`: a reproducible .tar.gz of a source tree (SPEC 3).

Fixed choices, so that the same tree gives the same bytes on any machine (with the same zlib):
POSIX pax format (tarfile.PAX_FORMAT; a pax record is written only for a name ustar cannot
hold, and it carries only the path), entries sorted by path under one top-level directory
`<name>-<version>/`, a directory entry (0755) for the top level and every parent of a file,
files 0644 or 0755 (owner-executable), mtime 0, uid/gid 0, empty owner names; gzip level 9
with header mtime 0 and no file name. The caller validates the extension first.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pkgmgr.archive.files import DIR_MODE
from pkgmgr.archive.selection import NoFollowOpener, SourceFile, select_files
from pkgmgr.fsutil import fsync_dir

TAR_FORMAT = tarfile.PAX_FORMAT
GZIP_LEVEL = 9


@dataclass(frozen=True)
class PackResult:
    path: Path
    sha256: str
    size: int


class _HashingWriter:
    """Passes writes through to a file while hashing and counting them."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self._raw.write(data)

    def flush(self) -> None:
        self._raw.flush()


def pack_directory(root: Path, name: str, version: str, output: Path) -> PackResult:
    """Pack `select_files(root)` into `output` (written atomically); return its path, sha256
    and size. Raises what `select_files` raises; an existing `output` inside `root` is not
    packed into itself."""
    output = Path(output).absolute()
    files = _without(select_files(root), output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    try:
        with open(fd, "wb") as raw:
            sink = _HashingWriter(raw)
            with gzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0,
                               compresslevel=GZIP_LEVEL) as gz:
                _write_tar(gz, f"{name}-{version}", files)
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, output)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(output.parent)
    return PackResult(output, sink.hash.hexdigest(), sink.size)


def _without(files: list[SourceFile], output: Path) -> list[SourceFile]:
    """`files` less an earlier `output` (re-packing into the source directory)."""
    try:
        out = os.stat(output)
    except OSError:
        return files
    kept = []
    for item in files:
        st = os.stat(item.path)
        if (st.st_dev, st.st_ino) != (out.st_dev, out.st_ino):
            kept.append(item)
    return kept


def _write_tar(stream: gzip.GzipFile, top: str, files: list[SourceFile]) -> None:
    dirs = {""}
    for file in files:
        parts = file.rel.split("/")[:-1]
        dirs.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    entries: list[tuple[str, SourceFile | None]] = [(d, None) for d in dirs]
    entries += [(f.rel, f) for f in files]
    entries.sort(key=lambda entry: entry[0])
    with tarfile.open(fileobj=stream, mode="w", format=TAR_FORMAT, encoding="utf-8") as tar, \
            NoFollowOpener() as opener:
        for rel, item in entries:
            info = tarfile.TarInfo(f"{top}/{rel}" if rel else top)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if item is None:
                info.type = tarfile.DIRTYPE
                info.mode = DIR_MODE
                tar.addfile(info)
                continue
            info.mode = item.mode
            fd = opener.open_file(str(item.path), display=item.rel)
            with open(fd, "rb") as content:
                info.size = os.fstat(fd).st_size
                tar.addfile(info, content)
