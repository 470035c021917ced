"""Tree checksum (SPEC 3) and per-file listing of an installed tree, for `ext verify`.

Checksum: sha256 over the entries sorted by relative POSIX path; for each regular file feed
`file:<rel>\\nmode:<0755|0644>\\n`, its content, then one NUL byte. Only the owner execute bit
counts, so umask and archive modes do not change it. An installed tree holds only files and
directories; should a symbolic link or special file appear (tampering), it is fed as
`link:<rel>\\n<target>\\0` or `special:<rel>\\n\\0`, so the checksum changes (the SPEC formula
is unchanged for every tree that holds only regular files). Empty directories do not count.

Listing: rel -> `"<0755|0644>:<sha256 of content>"` (`"link:<sha256 of target>"`, `"special"`).

`TreeRecord` computes both while an extraction writes the files, so that an install does not
read its whole tree back: it holds when the files arrive sorted under one top-level directory
that turns out to be the manifest root (what `pkgmgr ext pack` and `git archive` produce);
otherwise it says so and the tree is read back as before.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pkgmgr.archive.files import mode_label, open_regular, read_chunks
from pkgmgr.archive.selection import SourceFile


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
    """Checksum and listing of `root` in one read of every file."""
    return _digest(sorted(_entries(os.fspath(root))))


def files_checksum_and_listing(files: Iterable[SourceFile]) -> tuple[str, dict[str, str]]:
    """Checksum and listing of a source tree's selected files: the same values its copy
    (`copy_source_tree`) or its extracted pack will have."""
    return _digest(sorted((f.rel, "file", os.fspath(f.path), f.mode) for f in files))


class TreeRecord:
    """The checksum and listing of a tree as its files are written (module docstring).

    `file(rel, mode)` starts a file (rel: relative to the extraction directory, mode already
    normalised) and returns the function that takes its content, chunk by chunk; `end()`
    closes it. `result(directory, root)` is `tree_checksum_and_listing(root)` of what was
    written, or None when this recording cannot tell (files out of order, or the manifest root
    is not the single top-level directory the first file suggested)."""

    def __init__(self) -> None:
        self._tree = hashlib.sha256()
        self._prefix: str | None = None
        self._last = ""
        self._usable = sys.platform != "darwin"  # HFS+ may store a name differently than written
        self._content: Any = None
        self._rel = ""
        self._label = ""
        self._listing: dict[str, str] = {}

    def file(self, rel: str, mode: int) -> Callable[[bytes], None]:
        if self._prefix is None:
            self._prefix = rel[: rel.index("/") + 1] if "/" in rel else ""
        if not rel.startswith(self._prefix) or rel <= self._last:
            self._usable = False
        self._last = rel
        self._rel, self._label = rel, mode_label(mode)
        self._content = content = hashlib.sha256()
        if not self._usable:
            return content.update
        tree = self._tree
        tree.update(b"file:%s\nmode:%s\n" % (os.fsencode(rel[len(self._prefix):]), self._label.encode()))

        def take(chunk: bytes) -> None:
            content.update(chunk)
            tree.update(chunk)

        return take

    def end(self) -> None:
        if self._usable:
            self._tree.update(b"\0")
        self._listing[self._rel] = f"{self._label}:{self._content.hexdigest()}"

    def result(self, directory: Path, root: Path) -> tuple[str, dict[str, str]] | None:
        rel = Path(root).relative_to(directory).as_posix()
        prefix = "" if rel == "." else rel + "/"
        if not self._usable or self._prefix != prefix:
            return None
        return self._tree.hexdigest(), {name[len(prefix):]: value for name, value in self._listing.items()}


def diff_listings(recorded: dict[str, str], current: dict[str, str]) -> TreeDiff:
    return TreeDiff(
        added=sorted(current.keys() - recorded.keys()),
        removed=sorted(recorded.keys() - current.keys()),
        modified=sorted(rel for rel in recorded.keys() & current.keys() if recorded[rel] != current[rel]),
    )


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


def _digest(entries: Iterable[tuple[str, str, str, int]]) -> tuple[str, dict[str, str]]:
    tree = hashlib.sha256()
    listing: dict[str, str] = {}
    for rel, kind, path, st_mode in entries:
        name = os.fsencode(rel)
        if kind == "file":
            label = mode_label(st_mode)
            tree.update(b"file:%s\nmode:%s\n" % (name, label.encode()))
            content = hashlib.sha256()
            fd = open_regular(path, display=rel)
            try:
                for chunk in read_chunks(fd):
                    tree.update(chunk)
                    content.update(chunk)
            finally:
                os.close(fd)
            tree.update(b"\0")
            listing[rel] = f"{label}:{content.hexdigest()}"
        elif kind == "link":
            target = os.fsencode(os.readlink(path))
            tree.update(b"link:%s\n%s\0" % (name, target))
            listing[rel] = f"link:{hashlib.sha256(target).hexdigest()}"
        else:
            tree.update(b"special:%s\n\0" % name)
            listing[rel] = "special"
    return tree.hexdigest(), listing
