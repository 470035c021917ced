"""Tree checksum (SPEC 3, format 2) and per-file listing of an installed tree, for `ext verify`.

Checksum: sha256 over the entries sorted by relative POSIX path (UTF-8 bytes); for each regular
file feed the netstring-style record `<len(rel)>:<rel>,<mode>,<len(content)>:<content>,` with
`<mode>` `0755` or `0644` (only the owner execute bit counts, so umask and archive modes do not
change it) and decimal byte lengths; the value is written `sha256-2:<hex>`. Every field is
either length-prefixed or one of four fixed words, so one sequence of records is fed by exactly
one tree (format 1 fed `file:<rel>\\nmode:<m>\\n<content>\\0` with no lengths: a file whose
content embedded a record boundary hashed like two files). An installed tree holds only files
and directories; should a symbolic link or special file appear (tampering), it is fed as
`<len(rel)>:<rel>,link,<len(target)>:<target>,` or `<len(rel)>:<rel>,special,0:,`, so the
checksum changes (the SPEC formula is unchanged for every tree that holds only regular files).
Empty directories do not count.

Listing: rel -> `"<0755|0644>:<sha256 of content>"` (`"link:<sha256 of target>"`, `"special"`).

`TreeRecord` computes both while an extraction writes the files, so that an install does not
read its whole tree back: it holds when the files arrive sorted under one top-level directory
that turns out to be the manifest root (what `pkgmgr ext pack` and `git archive` produce), each
with its size known before its content; otherwise it says so and the tree is read back as before.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from pkgmgr.archive.files import mode_label, open_regular, read_chunks
from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.archive.selection import SourceFile

PREFIX = "sha256-2:"
_CHECKSUM = re.compile(r"sha256-2:[0-9a-f]{64}")
_REREADS = 3  # a file whose size changes while it is hashed is read again, this many times at most


_LABEL_BYTES = {"0644": b"0644", "0755": b"0755"}
# `os.fsencode(rel)` without its Python-level checks: a path the writer was given as `str`
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def is_tree_checksum(value: str) -> bool:
    """`value` is a format-2 tree checksum (`sha256-2:` and 64 lower-case hex), matched whole."""
    return _CHECKSUM.fullmatch(value) is not None


def checksum_hex(value: str) -> str:
    """The hex digits of a format-2 tree checksum (for names that cannot hold a colon)."""
    return value.removeprefix(PREFIX)


def record_header(rel: bytes, kind: bytes, size: int) -> bytes:
    """What precedes `size` bytes of content in the checksum: `<len(rel)>:<rel>,<kind>,<size>:`."""
    return b"%d:%s,%s,%d:" % (len(rel), rel, kind, size)


@dataclass(frozen=True)
class TreeDiff:
    """What changed between a recorded listing and the tree now (sorted relative paths)."""

    added: list[str]
    removed: list[str]
    modified: list[str]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified)


def tree_checksum(root: Path) -> str:
    """SPEC 3 tree checksum of every file under `root` (nothing is skipped)."""
    return tree_checksum_and_listing(root)[0]


def tree_listing(root: Path) -> dict[str, str]:
    """rel path -> `"<mode>:<sha256>"` for every file under `root`."""
    return tree_checksum_and_listing(root)[1]


def tree_checksum_and_listing(root: Path) -> tuple[str, dict[str, str]]:
    """Checksum and listing of `root` in one read of every file. Raises `tree_modified` for a
    file whose size keeps changing while it is read."""
    return _digest(sorted(_entries(os.fspath(root)), key=_byte_order))


def files_checksum_and_listing(files: Iterable[SourceFile]) -> tuple[str, dict[str, str]]:
    """Checksum and listing of a source tree's selected files: the same values its copy
    (`copy_source_tree`) or its extracted pack will have."""
    return _digest(sorted(((f.rel, "file", os.fspath(f.path), f.mode) for f in files), key=_byte_order))


class TreeRecord:
    """The checksum and listing of a tree as its files are written (module docstring).

    `file(rel, mode, size)` starts a file (rel: relative to the extraction directory, mode
    already normalised, size: its length as the archive declares it, None when unknown) and
    returns the function that takes its content, chunk by chunk; `end()` closes it. `add(rel,
    mode, data)` is the three for a file written whole.
    `result(directory, root)` is `tree_checksum_and_listing(root)` of what was written, or None
    when this recording cannot tell (files out of order, a size unknown or not the one written,
    or the manifest root is not the single top-level directory the first file suggested)."""

    def __init__(self) -> None:
        self._tree = hashlib.sha256()
        self._prefix: str | None = None
        self._skip = 0  # len(os.fsencode(self._prefix))
        self._last = b""
        self._usable = sys.platform != "darwin"  # HFS+ may store a name differently than written
        self._content: Any = None
        self._rel = ""
        self._label = ""
        self._size: int | None = None
        self._fed = 0
        self._listing: dict[str, str] = {}

    def _start(self, rel: str, mode: int, size: int | None) -> bytes | None:
        """Begin file `rel`: the header of its record in the tree checksum, or None once this
        recording cannot tell."""
        if self._prefix is None:
            self._prefix = rel[: rel.index("/") + 1] if "/" in rel else ""
            self._skip = len(os.fsencode(self._prefix))
        name = rel.encode(_FS_ENCODING, _FS_ERRORS)
        if not rel.startswith(self._prefix) or name <= self._last or size is None:
            self._usable = False
        self._last = name
        self._rel, self._label = rel, mode_label(mode)
        if not self._usable:
            return None
        assert size is not None
        return record_header(name[self._skip:], _LABEL_BYTES[self._label], size)

    def file(self, rel: str, mode: int, size: int | None = None) -> Callable[[bytes], None]:
        header = self._start(rel, mode, size)
        self._size, self._fed = size, 0
        self._content = content = hashlib.sha256()
        if header is None:
            return content.update
        tree = self._tree
        tree.update(header)

        def take(chunk: bytes) -> None:
            self._fed += len(chunk)
            content.update(chunk)
            tree.update(chunk)

        return take

    def add(self, rel: str, mode: int, data: bytes) -> None:
        """`file(rel, mode, len(data))`, the whole content and `end()` in one call (`_start` inlined
        for the usual case: one call per member of an archive of small files)."""
        name = rel.encode(_FS_ENCODING, _FS_ERRORS)
        prefix = self._prefix
        label = "0755" if mode & stat.S_IXUSR else "0644"  # mode_label
        if prefix is None or not self._usable or not rel.startswith(prefix) or name <= self._last:
            header = self._start(rel, mode, len(data))
        else:
            self._last, self._rel, self._label = name, rel, label
            header = b"%d:%s,%s,%d:" % (len(name) - self._skip, name[self._skip:], _LABEL_BYTES[label], len(data))
        if header is not None:
            self._tree.update(b"".join((header, data, b",")))
        self._listing[rel] = f"{label}:{hashlib.sha256(data).hexdigest()}"

    def end(self) -> None:
        if self._usable:
            if self._fed != self._size:
                self._usable = False  # the record's length was not the content's
            else:
                self._tree.update(b",")
        self._listing[self._rel] = f"{self._label}:{self._content.hexdigest()}"

    def result(self, directory: Path, root: Path) -> tuple[str, dict[str, str]] | None:
        rel = Path(root).relative_to(directory).as_posix()
        prefix = "" if rel == "." else rel + "/"
        if not self._usable or self._prefix != prefix:
            return None
        return PREFIX + self._tree.hexdigest(), {name[len(prefix):]: value for name, value in self._listing.items()}


def diff_listings(recorded: dict[str, str], current: dict[str, str]) -> TreeDiff:
    return TreeDiff(
        added=sorted(current.keys() - recorded.keys()),
        removed=sorted(recorded.keys() - current.keys()),
        modified=sorted(rel for rel in recorded.keys() & current.keys() if recorded[rel] != current[rel]),
    )


def tree_report(recorded_sha256: str, recorded_listing: dict[str, str],
                current: tuple[str, dict[str, str]] | None) -> dict[str, Any]:
    """`ext verify`'s verdict on one installed tree: `current` is its checksum and listing now
    (None: the tree is gone). `ok` when nothing was added, removed or modified and the checksum
    is the recorded one; the paths of each change are listed sorted."""
    if current is None:
        return {"ok": False, "missing": True, "added": [], "removed": sorted(recorded_listing), "modified": []}
    checksum, listing = current
    diff = diff_listings(recorded_listing, listing)
    return {"ok": not diff and checksum == recorded_sha256, "added": diff.added, "removed": diff.removed,
            "modified": diff.modified, "tree_sha256": checksum, "recorded_tree_sha256": recorded_sha256}


def _byte_order(entry: tuple[str, str, str, int]) -> bytes:
    return os.fsencode(entry[0])


def _entries(root: str) -> Iterator[tuple[str, str, str, int]]:
    """(rel, kind, path, st_mode) of everything under `root`, links not followed."""
    stack = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        with os.scandir(directory) as scan:
            entries = list(scan)
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, rel + "/"))
            elif entry.is_symlink():
                yield rel, "link", entry.path, 0
            elif entry.is_file(follow_symlinks=False):
                yield rel, "file", entry.path, entry.stat(follow_symlinks=False).st_mode
            else:
                yield rel, "special", entry.path, 0


def install_checksum_and_listing(path: Path, overrides: Mapping[str, bytes] | None = None,
                                 leave_out: Collection[str] = ()) -> tuple[str, dict[str, str]]:
    """`tree_checksum_and_listing` of an install that may be one file (a single-file extension: named by
    its base name) and whose `overrides` (relative path -> bytes) are hashed instead of those
    files' content (a field the host rewrites, left out). `leave_out`: names at the top of the
    tree (files, or directories with everything below them) that are not part of it (what the
    host writes there while it runs)."""
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        entries = sorted((e for e in _entries(os.fspath(path)) if e[0].split("/", 1)[0] not in leave_out),
                         key=_byte_order)
    else:
        kind = "file" if stat.S_ISREG(info.st_mode) else "link" if stat.S_ISLNK(info.st_mode) else "special"
        entries = [(path.name, kind, os.fspath(path), info.st_mode)]
    return _digest(entries, overrides or {})


def _digest(entries: Iterable[tuple[str, str, str, int]], overrides: Mapping[str, bytes] | None = None,
            ) -> tuple[str, dict[str, str]]:
    tree = hashlib.sha256()
    listing: dict[str, str] = {}
    for rel, kind, path, st_mode in entries:
        name = os.fsencode(rel)
        if kind == "file" and overrides and rel in overrides:
            label, data = mode_label(st_mode), overrides[rel]
            tree.update(record_header(name, label.encode(), len(data)) + data + b",")
            listing[rel] = f"{label}:{hashlib.sha256(data).hexdigest()}"
        elif kind == "file":
            label = mode_label(st_mode)
            tree, content = _file_record(tree, name, label.encode(), path, rel)
            listing[rel] = f"{label}:{content}"
        elif kind == "link":
            target = os.fsencode(os.readlink(path))
            tree.update(record_header(name, b"link", len(target)) + target + b",")
            listing[rel] = f"link:{hashlib.sha256(target).hexdigest()}"
        else:
            tree.update(record_header(name, b"special", 0) + b",")
            listing[rel] = "special"
    return PREFIX + tree.hexdigest(), listing


def _file_record(tree: Any, name: bytes, label: bytes, path: str, rel: str) -> tuple[Any, str]:
    """`tree` fed one file's record, and the sha256 of its content. The length goes before the
    content, so a file that grows or shrinks while it is read is read again from the state
    before its record."""
    fd = open_regular(path, display=rel)
    try:
        for _ in range(_REREADS):
            attempt, content = tree.copy(), hashlib.sha256()
            size = os.fstat(fd).st_size
            attempt.update(record_header(name, label, size))
            left = size
            for chunk in read_chunks(fd):
                attempt.update(chunk)
                content.update(chunk)
                left -= len(chunk)
                if left <= 0:
                    break
            if left == 0 and not os.read(fd, 1):
                attempt.update(b",")
                return attempt, content.hexdigest()
            os.lseek(fd, 0, os.SEEK_SET)
    finally:
        os.close(fd)
    raise PkgmgrError(f"{rel!r} changed while it was being hashed", code=Code.TREE_MODIFIED, details={"path": rel})
