"""Byte-preserving edits of a host's JSON settings file: one member set or removed, every other
byte kept (indentation, key order, numbers, escapes, a byte order mark, the final newline or its
absence).

The hosts rewrite their whole settings files when they change one value (Claude Code re-serialises
`settings.json` through its schema, reordering keys; Gemini CLI `JSON.stringify`s
`extension-enablement.json`); pkgmgr edits only the member it owns — `enabledPlugins["P@M"]`, its
marketplace's entry, an extension's enablement entry — so a file a user formats by hand stays as
they wrote it. A new member is written as `JSON.stringify(value, null, indent)` writes it at its
depth, with the file's own indentation, so that a file in the host's format stays byte-identical to
what the host would write.

The text is decoded by pkgmgr's strict bounded decoder first (`documents.decode_json`: UTF-8,
duplicate keys refused, 64 levels); the scanner below then only locates members in text known to
be one JSON object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pkgmgr.documents import DocumentError, decode_json

BOM = b"\xef\xbb\xbf"
_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


class EditError(ValueError):
    """The text is not one JSON object pkgmgr can edit (the message says why)."""


@dataclass
class Node:
    """A JSON value's span `[start, end)` in the text; an object's members in file order."""

    start: int
    end: int
    members: list[Member] | None = None  # None: not an object


@dataclass
class Member:
    key: str
    start: int  # the key's opening quote
    value: Node = field(default_factory=lambda: Node(0, 0))


def _scan(text: str, at: int) -> Node:
    """The value starting at `at` (no space before it)."""
    char = text[at]
    if char == "{":
        members: list[Member] = []
        position = _skip(text, at + 1)
        if text[position] == "}":
            return Node(at, position + 1, members)
        while True:
            key_match = _STRING.match(text, position)
            assert key_match is not None
            member = Member(json.loads(key_match.group(0)), position)
            position = _skip(text, key_match.end())
            assert text[position] == ":"
            member.value = _scan(text, _skip(text, position + 1))
            members.append(member)
            position = _skip(text, member.value.end)
            if text[position] == "}":
                return Node(at, position + 1, members)
            assert text[position] == ","
            position = _skip(text, position + 1)
    if char == "[":
        position = _skip(text, at + 1)
        if text[position] == "]":
            return Node(at, position + 1)
        while True:
            item = _scan(text, position)
            position = _skip(text, item.end)
            if text[position] == "]":
                return Node(at, position + 1)
            position = _skip(text, position + 1)
    match = (_STRING if char == '"' else _SCALAR).match(text, at)
    assert match is not None
    return Node(at, match.end())


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None
    return match.end()


@dataclass
class Document:
    """A JSON object file's text, its parsed value, and where its members are."""

    text: str
    bom: bool
    value: dict[str, Any]
    root: Node

    @classmethod
    def parse(cls, raw: bytes, *, max_bytes: int) -> Document:
        """`raw` (a byte order mark first is kept apart). Raises EditError for anything that is
        not one JSON object by pkgmgr's strict rules; empty or blank text is an empty object
        that is written anew."""
        bom = raw.startswith(BOM)
        body = raw[len(BOM):] if bom else raw
        if not body.strip(b" \t\r\n"):
            return cls("", bom, {}, Node(0, 0, []))
        try:
            value = decode_json(body, max_bytes=max_bytes)
        except DocumentError as exc:
            raise EditError(str(exc)) from None
        if not isinstance(value, dict):
            raise EditError("is not a JSON object")
        text = body.decode("utf-8")
        start = _skip(text, 0)
        return cls(text, bom, value, _scan(text, start))

    def bytes(self) -> bytes:
        return (BOM if self.bom else b"") + self.text.encode("utf-8")

    def get(self, path: tuple[str, ...]) -> Any:
        value: Any = self.value
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return value

    # --- edits ---------------------------------------------------------------------------------

    def set(self, path: tuple[str, ...], value: Any, *, final_newline: bool = True) -> None:
        """Set the member at `path` (keys of nested objects, created when missing) to `value`.
        Raises EditError when a key on the way holds something that is not an object."""
        if not path:
            raise EditError("no member named")
        if not self.text:
            self.text = _fresh(path, value, "  ") + ("\n" if final_newline else "")
            self._reparse()
            return
        node = self.root
        member: Member | None = None
        for depth, key in enumerate(path):
            if node.members is None:
                raise EditError(f"{_shown(path[:depth])} is not an object")
            member = next((m for m in reversed(node.members) if m.key == key), None)
            if member is None:
                self._insert(node, path[depth:], value)
                return
            node = member.value
        assert member is not None
        indent = _line_indent(self.text, member.start)
        serialised = self._serialise(value, indent if indent is not None else self._unit() * len(path))
        if self.text[node.start:node.end] != serialised:
            self.text = self.text[:node.start] + serialised + self.text[node.end:]
            self._reparse()

    def remove(self, path: tuple[str, ...]) -> bool:
        """Remove the member at `path` and its comma; an object left empty becomes `{}`. False
        when there is no such member."""
        node = self.root
        parent: Node | None = None
        member: Member | None = None
        for key in path:
            if node.members is None:
                return False
            member = next((m for m in reversed(node.members) if m.key == key), None)
            if member is None:
                return False
            parent, node = node, member.value
        assert parent is not None and parent.members is not None and member is not None
        index = parent.members.index(member)
        if len(parent.members) == 1:
            start, end = parent.start, parent.end
            replacement = "{}"
        elif index == len(parent.members) - 1:  # the comma before it goes with it
            previous = parent.members[index - 1]
            start, end, replacement = previous.value.end, member.value.end, ""
        else:  # from its own start to the next member's
            start, end, replacement = member.start, parent.members[index + 1].start, ""
        self.text = self.text[:start] + replacement + self.text[end:]
        self._reparse()
        return True

    # --- what an edit writes -------------------------------------------------------------------

    def _insert(self, node: Node, path: tuple[str, ...], value: Any) -> None:
        """A new member `path[0]` (holding `path[1:]` down to `value`) at the end of `node`."""
        assert node.members is not None
        for key in reversed(path[1:]):
            value = {key: value}
        key = json.dumps(path[0], ensure_ascii=False)
        if node.members:
            last = node.members[-1]
            indent = _line_indent(self.text, last.start)
            if indent is None:  # members on one line: the new one follows on it
                insert = f", {key}: {json.dumps(value, ensure_ascii=False)}"
            else:
                insert = f",\n{indent}{key}: {self._serialise(value, indent)}"
            self.text = self.text[:last.value.end] + insert + self.text[last.value.end:]
        else:
            outer = _line_indent(self.text, node.start, opening=True) or ""
            inner = outer + self._unit()
            member = f"{key}: {self._serialise(value, inner)}"
            self.text = self.text[:node.start] + "{\n" + inner + member + "\n" + outer + "}" + self.text[node.end:]
        self._reparse()

    def _serialise(self, value: Any, indent: str) -> str:
        """`value` as JSON.stringify(value, null, unit) writes it for a member whose line starts
        with `indent`."""
        return json.dumps(value, indent=self._unit(), ensure_ascii=False).replace("\n", "\n" + indent)

    def _unit(self) -> str:
        """The file's indentation step: the first indented member's indentation, else two spaces."""
        for member in self.root.members or []:
            indent = _line_indent(self.text, member.start)
            if indent:
                return indent
        return "  "

    def _reparse(self) -> None:
        self.value = json.loads(self.text)
        self.root = _scan(self.text, _skip(self.text, 0))


def _fresh(path: tuple[str, ...], value: Any, unit: str) -> str:
    """`{path[0]: {path[1]: ... value}}` as JSON.stringify(…, null, unit) writes it."""
    for key in reversed(path):
        value = {key: value}
    return json.dumps(value, indent=unit, ensure_ascii=False)


def _line_indent(text: str, at: int, *, opening: bool = False) -> str | None:
    """The blanks between the start of the line holding `at` and the first thing on it, when
    `at` is the first thing on its line (or, `opening`, the indentation of the line whatever
    starts it); None otherwise."""
    line_start = text.rfind("\n", 0, at) + 1
    head = text[line_start:at]
    if not head.strip(" \t"):
        return head
    if opening:
        return head[:len(head) - len(head.lstrip(" \t"))]
    return None


def _shown(path: tuple[str, ...]) -> str:
    return ".".join(path) or "the document"


def read_raw(path: Path, *, max_bytes: int, refuse: Callable[[str], Exception], follow_symlinks: bool = False) -> bytes:
    """A host's file pkgmgr edits, through the one bounded read (regular files only): b"" when
    there is none; `refuse(why)` raised for one that is not a regular file or cannot be read;
    `io_error` for what SPEC 11 calls local storage failing (permission denied, a device that
    fails: `errors.io_error`)."""
    from pkgmgr.fsutil import NotRegularFile, read_regular

    try:
        return read_regular(path, limit=max_bytes, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        return b""
    except NotRegularFile as exc:
        raise refuse(f"is {exc.kind}") from None
    except OSError as exc:
        from pkgmgr.errors import io_error

        disk = io_error(exc, path)  # permission denied, the device failing: not the file's content
        if disk is not None:
            raise disk from None
        raise refuse(f"cannot be read ({exc.strerror or exc})") from None
