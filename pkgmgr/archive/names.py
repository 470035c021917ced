"""Member names: the SPEC 3 rules a name must pass before anything is written for it.

Pure: no I/O. `split_member_name` turns one archive name into safe path components;
`NameTable` remembers every name seen in one archive (or one source tree) and refuses
duplicates, names that collide case-insensitively and paths that are both a file and a
directory, whatever order the members come in. Both raise `NameRefused`; the caller turns it
into the error code of its context (`unsafe_archive` for archives, `invalid_archive` for a
source tree that could not be carried by an archive).
"""

from __future__ import annotations

import re

# C0 and C1 control characters (NUL included), DEL, backslash, and lone surrogates (what a
# name that is not valid UTF-8 decodes to with surrogateescape).
_BAD_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\\\\\ud800-\udfff]")
_DRIVE = re.compile(r"^[A-Za-z]:")
MAX_COMPONENT_BYTES = 255
MAX_NAME_BYTES = 2048


class NameRefused(Exception):
    """A member name or a member's place in the tree is refused; `reason` says why."""

    def __init__(self, member: str, reason: str) -> None:
        super().__init__(f"{member!r}: {reason}")
        self.member = member
        self.reason = reason


def _describe(char: str) -> str:
    if char == "\\":
        return "a backslash"
    if char == "\0":
        return "a NUL character"
    if "\ud800" <= char <= "\udfff":
        return "bytes that are not valid UTF-8"
    return f"the control character U+{ord(char):04X}"


def split_member_name(name: str, *, is_dir: bool) -> tuple[str, ...]:
    """Safe components of an archive member name, or `NameRefused`.

    Tolerated: a leading `./`, `.` components, repeated slashes, a trailing `/` on a directory.
    The archive root itself (`./`, `.`) gives `()` for a directory entry. Refused: empty names,
    absolute names, drive letters, `..`, backslashes, NUL/control characters, non-UTF-8 bytes,
    over-long names.
    """
    if not name:
        raise NameRefused(name, "empty name")
    bad = _BAD_CHARS.search(name)
    if bad:
        raise NameRefused(name, f"name contains {_describe(bad.group())}")
    if name.startswith("/"):
        raise NameRefused(name, "absolute name")
    if _DRIVE.match(name):
        raise NameRefused(name, "name starts with a drive letter")
    if name.endswith("/") and not is_dir:
        raise NameRefused(name, "a file name ends with '/'")
    parts = name.split("/")
    if "" in parts or "." in parts:
        parts = [part for part in parts if part not in ("", ".")]
    if ".." in parts:
        raise NameRefused(name, "name has a '..' component")
    if not parts and not is_dir:
        raise NameRefused(name, "empty name")
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise NameRefused(name, f"name longer than {MAX_NAME_BYTES} bytes")
    if size > MAX_COMPONENT_BYTES and any(len(part.encode("utf-8")) > MAX_COMPONENT_BYTES for part in parts):
        raise NameRefused(name, f"a path component longer than {MAX_COMPONENT_BYTES} bytes")
    return tuple(parts)


# A name of printable ASCII without backslashes, in `/`-separated components that are neither empty,
# `.` nor `..`, not starting with a drive letter: `split_member_name` returns exactly its components
# (at most MAX_COMPONENT_BYTES long in all, checked beside it). One match decides the common name;
# any other goes through every rule.
_PLAIN_FILE = re.compile(r"(?![A-Za-z]:)(?!\.\.?(?:/|\Z))[ -.0-\[\]-~]+(?:/(?!\.\.?(?:/|\Z))[ -.0-\[\]-~]+)*")


def file_path(name: str) -> str:
    """`"/".join(split_member_name(name, is_dir=False))`: the relative path of a file member, or
    `NameRefused`."""
    if len(name) <= MAX_COMPONENT_BYTES and _PLAIN_FILE.fullmatch(name) is not None:
        return name
    return "/".join(split_member_name(name, is_dir=False))


def fold(path: str) -> str:
    """The key under which two names collide: case-folded, NFC-normalised (as on macOS/Windows)."""
    if path.isascii():
        return path.lower()  # ASCII: casefold() is lower(), and NFC changes nothing
    import unicodedata  # here: an archive of ASCII names never needs it

    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", path).casefold())


class NameTable:
    """Every path of one tree, to refuse duplicates, case collisions and file/directory clashes.

    Directories implied by a deeper member ("a" for "a/b") count as directories; an explicit
    directory entry for an implied directory is not a duplicate.
    """

    def __init__(self) -> None:
        self._files: dict[str, str] = {}  # folded path -> path as spelled
        self._dirs: dict[str, str] = {}
        self._explicit_dirs: set[str] = set()
        self._known_dirs: set[str] = set()  # exact spellings already checked (fast path)

    def add(self, parts: tuple[str, ...], *, is_dir: bool, member: str) -> None:
        """Record one member (its `split_member_name` parts); `NameRefused` on any clash."""
        if not parts:
            return
        path = "/".join(parts)
        if not is_dir:
            self.add_file(path, member)
            return
        if path.rpartition("/")[0] not in self._known_dirs:  # a known directory's parents are known
            for depth in range(1, len(parts)):
                self._add_dir("/".join(parts[:depth]), member)
        key = fold(path)
        self._add_dir(path, member)
        if key in self._explicit_dirs:
            raise NameRefused(member, f"duplicate directory {path!r}")
        self._explicit_dirs.add(key)

    def add_file(self, path: str, member: str) -> None:
        """`add` of a file member by its relative path (`file_path`: normalised, never empty)."""
        parent = path.rpartition("/")[0]
        if parent and parent not in self._known_dirs:  # a known directory's parents are known
            parts = path.split("/")
            for depth in range(1, len(parts)):
                self._add_dir("/".join(parts[:depth]), member)
        key = path.lower() if path.isascii() else fold(path)
        if key in self._dirs:
            raise NameRefused(member, f"{path!r} is both a file and a directory")
        seen = self._files.get(key)
        if seen is not None:
            if seen == path:
                raise NameRefused(member, f"duplicate name {path!r}")
            raise _collision(member, seen, path)
        self._files[key] = path

    def _add_dir(self, path: str, member: str) -> None:
        if path in self._known_dirs:
            return
        key = fold(path)
        if key in self._files:
            raise NameRefused(member, f"{self._files[key]!r} is both a file and a directory")
        seen = self._dirs.setdefault(key, path)
        if seen != path:
            raise _collision(member, seen, path)
        self._known_dirs.add(path)


def _collision(member: str, first: str, second: str) -> NameRefused:
    import unicodedata

    if unicodedata.normalize("NFC", first) == unicodedata.normalize("NFC", second):
        return NameRefused(member, f"names collide by Unicode normalisation: {ascii(first)} and {ascii(second)}")
    return NameRefused(member, f"names collide case-insensitively: {first!r} and {second!r}")
