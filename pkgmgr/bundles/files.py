"""Read-only access to an extension tree that never leaves its root.

Every relative path an author writes is resolved (symlinks included) and must stay inside the
extension root, else `path_escapes_root`. Reads are bounded; directory walks follow symlinked
directories only inside the root and never loop. Nothing here writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pkgmgr.documents import DocumentError, size_text
from pkgmgr.errors import Code, Problem, ProblemSink
from pkgmgr.manifest.godoc import load_go_document

NAME_MAX = 255  # bytes in one path component (Linux's and macOS's limit)
PATH_MAX = 4096  # bytes in a whole path (Linux's)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class TreeError(Exception):
    """A path that cannot be used: `code` is `path_escapes_root` or the caller's invalid_* code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def normalize(rel: str) -> str:
    """The form an author's path is reported and cached under: `.` parts and repeated or trailing
    slashes dropped (`a/./b/` -> `a/b`). `..` is kept: it resolves after the symlinks before it,
    as the host resolves it, so collapsing it lexically could check a different file."""
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    text = "/".join(parts) or "."
    return "/" + text if rel.startswith("/") else text


def child(rel: str, name: str) -> str:
    return name if rel in ("", ".") else f"{rel}/{name}"


@dataclass(frozen=True)
class PackageTree:
    """An extension root, resolved once. `code` is used for non-escape path problems."""

    root: Path
    code: str = Code.INVALID_BUNDLE

    @classmethod
    def open(cls, root: Path, *, code: str = Code.INVALID_BUNDLE) -> "PackageTree":
        return cls(Path(root).resolve(), code)

    def resolve(self, rel: str) -> Path:
        """The real path of `rel`; raises TreeError when it escapes the root or cannot resolve."""
        if not rel:
            raise TreeError(self.code, "must not be empty")
        if "\\" in rel:
            raise TreeError(self.code, f"{rel!r} uses '\\'; write paths with '/'")
        if "\x00" in rel:
            raise TreeError(self.code, f"{rel!r} contains a NUL character")
        if rel.startswith("/"):
            raise TreeError(Code.PATH_ESCAPES_ROOT, f"{rel!r} must be a relative path inside the extension root")
        if _size(f"{self.root}/{rel}") >= PATH_MAX or any(_size(part) > NAME_MAX for part in rel.split("/")):
            # no such file can exist, and asking the filesystem raises ENAMETOOLONG
            raise TreeError(self.code, f"{rel[:80]!r}... is longer than a path can be ({NAME_MAX} bytes a name, "
                                       f"{PATH_MAX} in all)")
        try:
            target = (self.root / rel).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: a symlink loop (3.11)
            raise TreeError(self.code, f"{rel!r} cannot be resolved: {exc}") from None
        if not target.is_relative_to(self.root):
            raise TreeError(Code.PATH_ESCAPES_ROOT, f"{rel!r} resolves outside the extension root")
        return target

    def names(self, rel: str) -> frozenset[str]:
        """The entry names of directory `rel` (empty when it cannot be listed)."""
        try:
            return frozenset(os.listdir(self.resolve(rel)))
        except (OSError, TreeError):
            return frozenset()

    def read(self, rel: str, *, limit: int, code: str | None = None) -> bytes:
        """The bytes of regular file `rel`, at most `limit` of them; raises TreeError."""
        code = code or self.code
        path = self.resolve(rel)
        if not path.is_file():
            what = "does not exist" if not path.exists() else "is not a regular file"
            raise TreeError(code, f"{rel} {what}")
        from pkgmgr.fsutil import read_regular

        try:
            data = read_regular(path, limit=limit, follow_symlinks=True)  # a FIFO is refused, never waited on
        except OSError as exc:
            raise TreeError(code, f"cannot read {rel}: {exc.strerror}") from None
        if len(data) > limit:
            raise TreeError(code, f"{rel} is larger than {size_text(limit)}")
        return data

    def read_document(self, rel: str, *, kind: str, limit: int, code: str | None = None) -> tuple[Any, list[Problem]]:
        """Read and decode a `json`/`toml` document; every problem is filed under `rel`.

        Returns the value (None when unreadable) and the problems; never raises for bad input.
        """
        sink = ProblemSink(rel, code or self.code)
        try:
            value, issues = load_go_document(self.read(rel, limit=limit, code=code), kind=kind, max_bytes=limit)
        except TreeError as exc:
            sink.add("", exc.message, code=exc.code)
            return None, sink.problems
        except DocumentError as exc:
            sink.add(exc.key, exc.message, line=exc.line)
            return None, sink.problems
        for key, message in issues:
            sink.add(key, message)
        return value, sink.problems

    def walk(self, rel: str, suffixes: tuple[str, ...]) -> tuple[list[str], list[tuple[str, TreeError]]]:
        """Files under directory `rel` whose names end in `suffixes`, sorted by path components.

        Returns the files (lexical relative paths) and (path, error) for entries that could not
        be followed, such as a symlink escaping the root. Raises TreeError for `rel` itself.
        """
        start = self.resolve(rel)
        files: list[str] = []
        issues: list[tuple[str, TreeError]] = []
        visited: set[Path] = set()
        pending = [(normalize(rel), start)]
        while pending:
            lexical, real = pending.pop()
            if real in visited:
                continue
            visited.add(real)
            try:
                entries = sorted(os.scandir(real), key=lambda entry: entry.name)
            except OSError as exc:
                issues.append((lexical, TreeError(self.code, f"cannot list {lexical}: {exc.strerror}")))
                continue
            subdirs = []
            for entry in entries:
                name = child(lexical, entry.name)
                try:
                    target = self.resolve(name) if entry.is_symlink() else Path(entry.path)
                except TreeError as exc:
                    issues.append((name, exc))
                    continue
                if target.is_dir():
                    subdirs.append((name, target))
                elif entry.name.endswith(suffixes) and target.is_file():
                    files.append(name)
            pending.extend(reversed(subdirs))  # depth-first in name order: the first name of a directory wins
        files.sort(key=lambda path: path.split("/"))
        return files, issues
