"""The receiving end of an extraction: every member passes through `Staging`, which checks its
name against all names seen so far, counts it against the limits, and writes it."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any, Iterable, Iterator

from pkgmgr.archive.errors import unsafe
from pkgmgr.archive.files import TreeWriter, file_mode
from pkgmgr.archive.limits import Budget
from pkgmgr.archive.names import NameRefused, NameTable, file_path, split_member_name
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError


class Staging:
    """One extraction into one private directory."""

    def __init__(self, root: Path, limits: Limits, record: Any = None) -> None:
        self.limits = limits
        self.root = str(root)
        self.budget = Budget(limits)
        self._names = NameTable()
        self._writer = TreeWriter(root, record, offload=True)

    def admit(self, name: str, *, is_dir: bool) -> str:
        """Count and check a member before any of its data is read; return its relative path
        ("" for an entry naming the archive root, such as `./`)."""
        self.budget.entry(name)
        try:
            parts = split_member_name(name, is_dir=is_dir)
            self._names.add(parts, is_dir=is_dir, member=name)
        except NameRefused as exc:
            raise unsafe(name, exc.reason) from None
        return "/".join(parts)

    def admit_file(self, name: str, size: int) -> str:
        """`admit` of a regular member, with the `size` it declares reserved (refused up front,
        before any of its data is read); its relative path."""
        budget = self.budget
        budget.entry(name)
        try:
            rel = file_path(name)
            self._names.add_file(rel, name)
        except NameRefused as exc:
            raise unsafe(name, exc.reason) from None
        budget.reserve(size, name)
        return rel

    def mkdir(self, rel: str) -> None:
        try:
            self._writer.mkdir(rel)
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            raise self._too_long(rel) from None

    def write(self, rel: str, chunks: Iterable[bytes], *, mode: int, member: str, size: int | None = None) -> None:
        """Write a file from `chunks`, refusing a chunk before it is written if it would pass
        the uncompressed limit. `mode` is the archive's; it is normalised to 0644/0755. `size`
        is the length the archive declares (the tree checksum's record is fed before the
        content; a wrong one only costs reading the tree back)."""
        self._write(rel, self._counted(chunks, member), mode, member, size)

    def write_bytes(self, rel: str, data: bytes, *, mode: int, member: str) -> None:
        """`write` of a small file whose whole content is at hand."""
        self.budget.take(len(data), member)
        try:
            self._writer.write_bytes(rel, data, file_mode(mode))
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            raise self._too_long(self._member_of(exc, rel, member)) from None

    def _write(self, rel: str, chunks: Iterable[bytes], mode: int, member: str, size: int | None) -> None:
        try:
            self._writer.write(rel, chunks, file_mode(mode), size)
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            raise self._too_long(member) from None

    def _too_long(self, member: str) -> PkgmgrError:
        """A member whose path is too long where the staging directory is (a deep TMPDIR or
        home: ENAMETOOLONG) is refused like any member that cannot be extracted safely."""
        return unsafe(member, "its path is too long to extract under the staging directory "
                              f"({len(self.root)} bytes long): use a shorter TMPDIR or PKGMGR_HOME")

    def _counted(self, chunks: Iterable[bytes], member: str) -> Iterator[bytes]:
        for chunk in chunks:
            self.budget.take(len(chunk), member)
            yield chunk

    def finish(self) -> None:
        """Every file written (see `TreeWriter.finish`), directories given their mode."""
        try:
            self._writer.finish()
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            raise self._too_long(self._member_of(exc, "", "")) from None

    def abort(self) -> None:
        """After a failure, before the staging directory is emptied: nothing writes any more."""
        self._writer.abort()

    def _member_of(self, exc: OSError, rel: str, member: str) -> str:
        """The member an OSError of the writer is about: `member` (at `rel`) when it names that
        file or none, else the path it names under the root (a file the worker created earlier)."""
        name = exc.filename if isinstance(exc.filename, str) else ""
        under = name[len(self.root) + 1:] if name.startswith(self.root + "/") else name
        return member if under in ("", rel) else under
