"""A Compozy document (manifest, bundle file, capability catalog) read as Compozy's Go decoders
read it, then through pkgmgr's one strict decoder (`pkgmgr.documents`).

- JSON (`encoding/json`): each broken UTF-8 byte and each escaped lone surrogate is U+FFFD
  (`pkgmgr.gokeys`); Python's decoder would refuse the first and keep the second.
- TOML (BurntSushi v1.6.0, Compozy's at 8eeb8a381, cff6dae48 and 96a771efa, which reads TOML
  1.1 by default): an inline table may span lines, hold comments and end in a comma; a basic
  string may say `\\e` and `\\xHH`; a time may leave out its seconds. `toml_1_0` rewrites those
  into the TOML 1.0 that tomllib reads (lines kept, so errors point at the author's line); an
  integer outside 64 bits is refused, as Go refuses it. Unicode bare keys, also TOML 1.1, are
  refused by BurntSushi v1.6.0 and by tomllib alike.

Recorded against the decoders running: tests/hosts/compozy/manifest_cases.toml (`recorded-*`).
"""

from __future__ import annotations

import re
from typing import Any

from pkgmgr.gokeys import go_json_text, go_utf8

INT64 = 2 ** 63
_LOCAL_DATETIME = re.compile(r"(\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2})(?![:\d])")
_LOCAL_TIME = re.compile(r"(?<![\d:.+-])(\d{2}:\d{2})(?![:\d])")
_HEX_ESCAPE = re.compile(r"[0-9a-fA-F]{2}")


def load_go_document(raw: bytes, *, kind: str, max_bytes: int) -> tuple[Any, list[tuple[str, str]]]:
    """`pkgmgr.documents.load_document` of `raw` as Go reads it (see the module's doc)."""
    from pkgmgr.documents import UTF8_BOM, load_document

    limit = max_bytes
    if len(raw) <= max_bytes:  # a larger one is refused by its size, unread
        if kind == "json":
            raw = go_json_text(go_utf8(raw)).encode("utf-8")
        else:
            try:
                text = raw.removeprefix(UTF8_BOM).decode("utf-8")
            except UnicodeDecodeError:
                pass  # BurntSushi refuses invalid UTF-8 too: the decoder below says where
            else:
                raw = toml_1_0(text).encode("utf-8")
        limit = max(max_bytes, len(raw))  # the rewriting may lengthen what was within the bound
    value, issues = load_document(raw, kind=kind, max_bytes=limit)
    if kind == "toml":
        issues = sorted(issues + int64_issues(value))
    return value, issues


def int64_issues(value: Any) -> list[tuple[str, str]]:
    """(key, message) of each integer of `value` outside 64 bits."""
    from pkgmgr.jsonutil import key_path

    issues = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, path + (k,)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, path + (i,)) for i, v in enumerate(item))
        elif isinstance(item, int) and not isinstance(item, bool) and not -INT64 <= item < INT64:
            issues.append((key_path(path), "is out of range for a 64-bit integer (Compozy's TOML decoder refuses it)"))
    return sorted(issues)


def toml_1_0(text: str) -> str:
    """TOML 1.1 text as the TOML 1.0 that means the same; anything else left as it is."""
    if "{" not in text and "\\" not in text and ":" not in text:
        return text
    out: list[str] = []
    brackets: list[str] = []  # "[" (an array value) or "{" (an inline table) we are inside
    held = 0  # newlines taken out of inline tables, given back when the outermost one closes
    at_line_start = True
    i, end = 0, len(text)
    plain_from = 0  # where the current run of text outside strings and comments began

    def flush_plain(upto: int) -> None:
        nonlocal plain_from
        segment = _LOCAL_TIME.sub(r"\1:00", _LOCAL_DATETIME.sub(r"\1:00", text[plain_from:upto]))
        out.append(segment)
        plain_from = upto

    while i < end:
        char = text[i]
        if char in "\"'":
            flush_plain(i)
            triple = text.startswith(char * 3, i)
            i = _string(text, i, char, triple, out)
            plain_from = i
            at_line_start = False
            continue
        if char == "#":
            flush_plain(i)
            stop = text.find("\n", i)
            stop = end if stop < 0 else stop
            if not (brackets and brackets[-1] == "{"):
                out.append(text[i:stop])  # a comment in an inline table goes (TOML 1.0 has none there)
            i = plain_from = stop
            continue
        if char == "\n":
            if brackets and brackets[-1] == "{":
                flush_plain(i)
                out.append(" ")
                held += 1
                i += 1
                plain_from = i
                continue
            at_line_start = True
            i += 1
            continue
        if char in " \t\r":
            i += 1
            continue
        if char == "[" and at_line_start and not brackets:
            at_line_start = False  # a table header: its brackets are no value
            i += 1
            continue
        at_line_start = False
        if char in "[{":
            brackets.append(char)
        elif char in "]}" and brackets:
            opened = brackets.pop()
            if char == "}" and opened == "{":
                flush_plain(i)
                _drop_trailing_comma(out)
                out.append("}")
                i += 1
                plain_from = i
                if held and not any(b == "{" for b in brackets):
                    out.append("\n" * held)  # the line count kept
                    held = 0
                continue
        i += 1
    flush_plain(end)
    return "".join(out)


def _drop_trailing_comma(out: list[str]) -> None:
    """Take the comma out of `..., }` (TOML 1.1 allows it in an inline table)."""
    for index in range(len(out) - 1, -1, -1):
        stripped = out[index].rstrip(" \t\r\n")
        if stripped:
            if stripped.endswith(","):
                out[index] = stripped[:-1] + out[index][len(stripped):]
            return


def _string(text: str, start: int, quote: str, triple: bool, out: list[str]) -> int:
    """Copy the string at `start` to `out` (basic strings' TOML 1.1 escapes rewritten); return
    where it ends. An unterminated string is copied whole: the decoder reports it."""
    delimiter = quote * 3 if triple else quote
    i = start + len(delimiter)
    end = len(text)
    piece = [delimiter]
    while i < end:
        if text.startswith(delimiter, i):
            if triple:  # up to two more quotes may close a multi-line string (""""" ends in "")
                extra = 0
                while extra < 2 and text.startswith(quote, i + 3 + extra):
                    extra += 1
                piece.append(text[i:i + 3 + extra])
                i += 3 + extra
            else:
                piece.append(delimiter)
                i += 1
            out.append("".join(piece))
            return i
        char = text[i]
        if not triple and char == "\n":
            break  # unterminated: the decoder says so
        if quote == '"' and char == "\\" and i + 1 < end:
            follower = text[i + 1]
            if follower == "e":
                piece.append("\\u001B")
                i += 2
                continue
            if follower == "x" and _HEX_ESCAPE.fullmatch(text[i + 2:i + 4]):
                piece.append("\\u00" + text[i + 2:i + 4])
                i += 4
                continue
            piece.append(text[i:i + 2])
            i += 2
            continue
        piece.append(char)
        i += 1
    out.append("".join(piece))  # unterminated: copied as it is, the decoder says so
    return i
