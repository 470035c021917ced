"""`extract_archive`: a .tar.gz or .zip into a private staging directory, safely (SPEC 3).

The format is told by magic bytes, not by the file name. Whatever fails, the staging directory
is left empty and nothing was written outside it: names are checked before their data is
read, files are created with O_EXCL/O_NOFOLLOW, and no link is ever created.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Sequence

from pkgmgr.archive.discover import MANIFEST_NAMES, find_manifest_root
from pkgmgr.archive.errors import too_large
from pkgmgr.archive.files import CHUNK, DIR_MODE, empty_directory
from pkgmgr.archive.staging import Staging
from pkgmgr.archive.tar_reader import extract_tar_gz
from pkgmgr.config import Limits
from pkgmgr.errors import Code, PkgmgrError

_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def extract_archive(archive: Path, staging: Path, limits: Limits, *, record: Any = None, digest: Any = None,
                    manifests: Sequence[str] = MANIFEST_NAMES) -> Path:
    """Extract `archive` into `staging` (an existing, empty, private directory) and return the
    manifest root inside it (`find_manifest_root`, with `manifests`: the manifest files that mark
    it), with mode 0755 like every directory made.
    A `checksum.TreeRecord` given as `record` sees every file written (the tree checksum
    without reading the tree back). A hashlib object given as `digest` is fed every byte of the
    archive file, in order: a .tar.gz is hashed while it is inflated (the file is read once); a
    zip, whose reader seeks, is hashed before it is extracted.

    Raises `not_found` (no such file), `invalid_archive` (not a .tar.gz/.zip, corrupt, no
    manifest), `unsafe_archive` (a member SPEC 3 refuses, named in the message) or
    `archive_too_large` (a `[limits]` value passed, found while streaming). On any failure
    `staging` is emptied before the error propagates.
    """
    staging = Path(staging)
    with os.scandir(staging) as scan:
        if next(scan, None) is not None:
            raise ValueError(f"staging directory {staging} is not empty")
    target: Staging | None = None
    try:
        with _open_archive(Path(archive), limits) as (raw, size, kind):
            target = Staging(staging, limits, record)
            if kind == "zip":
                from pkgmgr.archive.zip_reader import extract_zip  # zipfile only when needed

                if digest is not None:
                    _hash_rest(raw, digest)
                    raw.seek(0)
                extract_zip(raw, size, target)
            elif digest is not None:
                hashing = _HashingReader(raw, digest)
                extract_tar_gz(hashing, target, size=size)  # type: ignore[arg-type]
                _hash_rest(raw, digest)  # whatever follows the gzip data
            else:
                extract_tar_gz(raw, target, size=size)
            target.finish()
        root = find_manifest_root(staging, manifests)
        os.chmod(root, DIR_MODE)  # the extension root, even when it is staging itself
        return root
    except BaseException:
        if target is not None:
            target.abort()  # the files still being created (the worker) first
        empty_directory(staging)
        raise


class _HashingReader:
    """`read(n)` of a raw file that feeds every byte read to `digest` (hashlib releases the GIL:
    with ReadAhead, hashing overlaps the extraction too)."""

    def __init__(self, raw: BinaryIO, digest: Any) -> None:
        self._raw, self._digest = raw, digest

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._digest.update(data)
        return data


def _hash_rest(raw: BinaryIO, digest: Any) -> None:
    while chunk := raw.read(CHUNK):
        digest.update(chunk)


@contextlib.contextmanager
def _open_archive(path: Path, limits: Limits) -> Iterator[tuple[BinaryIO, int, str]]:
    """Open without blocking (a FIFO is refused, not read), check the size, sniff the format."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise PkgmgrError(f"{path}: no such archive", code=Code.NOT_FOUND, path=str(path)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _not_an_archive(path, "not a regular file")
    with open(fd, "rb") as raw:
        if st.st_size > limits.max_archive_bytes:
            raise too_large("compressed size", limits.max_archive_bytes)
        magic = raw.read(4)
        raw.seek(0)
        if magic.startswith(_GZIP_MAGIC):
            kind = "tar.gz"
        elif magic in _ZIP_MAGICS:
            kind = "zip"
        else:
            raise _not_an_archive(path, "unknown format")
        yield raw, st.st_size, kind


def _not_an_archive(path: Path, why: str) -> PkgmgrError:
    return PkgmgrError(f"{path}: not a .tar.gz or .zip archive ({why})", code=Code.INVALID_ARCHIVE,
                       path=str(path))
