"""Bytes to plain JSON-like values, strictly: the one decoder of the documents an extension
carries (manifests, bundles, layouts, agent files), and of every other JSON document pkgmgr
reads from outside (`decode_json`: OCI token replies and manifests, GitHub API bodies, Docker's
config, lock and record files, the trusted TUF metadata it keeps; `parse_json` with other
hooks: the hosts' own files through `pkgmgr.hosts.jsonfmt`). `read_json_file` reads such a file
through the bounded primitive (`fsutil.read_regular`: a FIFO, device or socket refused without
blocking, a size cap, no final link followed unless asked).

A *plain* value is what canonical JSON can encode and hash: dicts with string keys, lists,
strings without lone surrogates, finite numbers, booleans and null. JSON is decoded with
duplicate keys, NaN/Infinity, overflowing numbers and trailing data rejected; TOML through
`tomllib`. Every decoded document is bounded in size, depth and number of values, so a hostile
file yields a `DocumentError` (or a list of issues), never a RecursionError or a traceback.

`decode_toml` is the one TOML reader of every document pkgmgr reads from untrusted input
(extension documents, registry files, `pkgmgr.toml`, `pkgmgr.lock`, `config.toml`): tomllib
spends time quadratic in a dotted key's depth (`a.a.a….b = 1`: an 80 KB file took a minute),
so the text is first scanned in linear time and a key or table header of more than
`MAX_KEY_DEPTH` parts is refused before tomllib sees it. JSON is likewise scanned for its depth
(`check_json_depth`, linear) before `json.loads` recurses into it: 200,000 `[` is a
`DocumentError`, and a `RecursionError` never escapes. A UTF-8 byte order mark is accepted
at the start of a TOML document (Compozy's TOML decoder, BurntSushi/toml, skips it) and refused
in an extension's JSON documents (Go's encoding/json refuses it).
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from typing import Any

from pkgmgr.jsonutil import key_path

MIB = 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 200_000
MAX_KEY_DEPTH = 32  # parts of one TOML dotted key or table header (a.b.c has 3)
UTF8_BOM = b"\xef\xbb\xbf"


class DocumentError(ValueError):
    """A document that cannot be decoded at all; `key` and `line` say where, when known."""

    def __init__(self, message: str, *, key: str = "", line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key
        self.line = line


def decode_text(data: bytes) -> str:
    """UTF-8 without a byte order mark. Raises DocumentError."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not valid UTF-8 (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise DocumentError("starts with a byte order mark; save it as UTF-8 without BOM")
    return text


def load_document(data: bytes, *, kind: str, max_bytes: int) -> tuple[Any, list[tuple[str, str]]]:
    """Decode a `json` or `toml` document of at most `max_bytes`.

    Returns the value and the (key, message) issues of values JSON cannot carry (TOML dates,
    lone surrogates); raises DocumentError when the document is unreadable, too large, too
    deep or has too many values.
    """
    if kind == "toml":
        value = decode_toml(data, max_bytes=max_bytes)
    else:
        _check_size(data, max_bytes)
        value = _decode_json(decode_text(data))
    return value, plain_issues(value)


def decode_json(data: bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON bytes (UTF-8 without a byte order mark; duplicate keys, NaN/Infinity and
    trailing data refused) of at most `max_bytes`, nested at most `max_depth`, to a value.
    Raises DocumentError, never another exception: the caller maps it to the code of what it
    read (`auth_required` for a token reply, `invalid_archive` for an OCI manifest, ...)."""
    _check_size(data, max_bytes)
    return parse_json(decode_text(data), max_depth=max_depth, **_STRICT)


def read_json_file(path: str | os.PathLike[str], *, max_bytes: int, max_depth: int = MAX_DEPTH,
                   follow_symlinks: bool = False) -> Any:
    """`decode_json` of the regular file `path`, read through `fsutil.read_regular` (never
    blocking on a FIFO, at most `max_bytes` + 1 bytes read, a final link refused unless
    `follow_symlinks`). Raises the OSError of the read (`fsutil.NotRegularFile` for a FIFO, a
    device, a socket, a link or a directory) and DocumentError."""
    from pkgmgr.fsutil import read_regular

    return decode_json(read_regular(path, limit=max_bytes, follow_symlinks=follow_symlinks), max_bytes=max_bytes,
                       max_depth=max_depth)


# `check_json_depth`: strings (whose brackets do not count; one left open runs to the end of the
# text) are removed, then everything but brackets, and the running depth is summed in C
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def check_json_depth(text: str, max_depth: int) -> None:
    """Refuse (DocumentError) JSON text nested deeper than `max_depth` before anything parses it,
    in time linear in its length (json.loads recurses once per level)."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    from itertools import accumulate

    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0) > max_depth:
        raise DocumentError(f"nested deeper than {max_depth} levels")


def parse_json(text: str, *, max_depth: int, **hooks: Any) -> Any:
    """`json.loads(text, **hooks)` once `check_json_depth` passed. Raises DocumentError (with the
    line) for text that is not JSON, too deep, or refused by a hook (a hook raises ValueError)."""
    check_json_depth(text, max_depth)
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        message = "trailing data after the JSON value (exactly one value allowed)" if exc.msg == "Extra data" else exc.msg
        raise DocumentError(f"not valid JSON: {message}", line=exc.lineno) from None
    except RecursionError:  # cannot happen after the scan; kept so that it can never escape
        raise DocumentError(f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # raised by the hooks, or by int() on a huge literal
        raise DocumentError(f"not valid JSON: {exc}") from None


def decode_toml(data: bytes, *, max_bytes: int) -> dict[str, Any]:
    """TOML bytes (UTF-8, a leading byte order mark allowed) of at most `max_bytes` to a dict,
    in time linear in the size (`check_toml_keys` first). Raises DocumentError (with the line
    when known) for anything tomllib or the bounds refuse, never another exception."""
    _check_size(data, max_bytes)
    text = decode_text(data.removeprefix(UTF8_BOM))
    check_toml_keys(text)
    try:
        return _decode_toml(text)
    except RecursionError:
        raise DocumentError(f"nested deeper than {MAX_DEPTH} levels") from None


def _check_size(data: bytes, max_bytes: int) -> None:
    if len(data) > max_bytes:
        raise DocumentError(f"larger than {size_text(max_bytes)} ({len(data)} bytes)")


# The scanner of `check_toml_keys` skips runs of bare-key characters and blanks, jumps over
# strings and comments, counts the dots of a dotted key, and starts counting again at anything
# else (`=`, brackets, braces, commas, newlines). The string patterns are TOML's own.
_BARE = re.compile(r"[A-Za-z0-9_\- \t]*")
_DOTS = operator.methodcaller("count", ".")
_STRINGS = {
    '"""': re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""(?:""?)?', re.DOTALL),
    "'''": re.compile(r"'''(?:[^']|'(?!''))*'''(?:''?)?"),
    '"': re.compile(r'"(?:[^"\\\n]|\\.)*"'),
    "'": re.compile(r"'[^'\n]*'"),
}


def check_toml_keys(text: str) -> None:
    """Refuse (DocumentError with the line) a TOML key or table header of more than
    `MAX_KEY_DEPTH` parts; linear in `len(text)`. It stops quietly where the text stops being
    TOML (an unterminated string): tomllib refuses the document there, reading no further."""
    if text.count(".") < MAX_KEY_DEPTH or max(map(_DOTS, text.split("\n"))) < MAX_KEY_DEPTH:
        return  # a key never spans lines: no line with that many dots, no key that deep
    pos, dots, end = 0, 0, len(text)
    while True:
        pos = _BARE.match(text, pos).end()  # type: ignore[union-attr]  # it matches the empty string
        if pos >= end:
            return
        char = text[pos]
        if char == ".":
            dots += 1
            if dots >= MAX_KEY_DEPTH:
                raise DocumentError(f"not valid TOML: a key or table name has more than {MAX_KEY_DEPTH} dotted parts "
                                    "(pkgmgr's limit)", line=text.count("\n", 0, pos) + 1)
            pos += 1
        elif char in "\"'":
            string = _STRINGS[char * 3 if text.startswith(char * 3, pos) else char].match(text, pos)
            if string is None:
                return
            pos = string.end()
        elif char == "#":
            pos = text.find("\n", pos)
            if pos < 0:
                return
        else:
            pos, dots = pos + 1, 0


def _decode_json(text: str) -> Any:
    return parse_json(text, max_depth=MAX_DEPTH, **_STRICT)


def _decode_toml(text: str) -> Any:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"at line (\d+)", str(exc))
        raise DocumentError(f"not valid TOML: {exc}", line=int(match.group(1)) if match else None) from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise DocumentError(f"not valid TOML: {exc}") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {json.dumps(key, ensure_ascii=True)} (pkgmgr's rule: Go keeps the last "
                             "value, other readers the first; keep one)")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text[:40]} is out of range")
    return number


_STRICT: dict[str, Any] = {"object_pairs_hook": _unique_keys, "parse_constant": _reject_constant,
                           "parse_float": _finite_float}


class Fatal(str):
    """The message of an issue that stops validation outright (a key that is not a string, text
    that is not Unicode): callers test `isinstance(message, Fatal)`, never the wording."""

    __slots__ = ()


def plain_issues(value: Any, *, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> list[tuple[str, str]]:
    """(key, message) for every value canonical JSON cannot encode, sorted by key; the message
    of an issue no validation can go past is a `Fatal`.

    Raises DocumentError when the value is nested deeper than `max_depth` or holds more than
    `max_values` values (a YAML alias bomb expands here, so it is bounded too).
    """
    issues: list[tuple[str, str]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    count = 0
    while stack:
        item, path = stack.pop()
        count += 1
        if count > max_values:
            raise DocumentError(f"holds more than {max_values} values")
        if len(path) >= max_depth:  # the top-level value is level 1
            raise DocumentError(f"nested deeper than {max_depth} levels (under {key_path(path[:4]) or 'the top level'})")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    issues.append((key_path(path), Fatal(f"key {key!r} is not a string")))
                elif not _encodable(key):
                    issues.append((key_path(path), Fatal(f"key {key!r} is not valid Unicode (lone surrogate)")))
                else:
                    stack.append((child, path + (key,)))
        elif isinstance(item, list):
            stack.extend((child, path + (index,)) for index, child in enumerate(item))
        elif isinstance(item, str):
            if not _encodable(item):
                issues.append((key_path(path), Fatal("contains a lone surrogate; it is not valid Unicode")))
        elif isinstance(item, float):
            if not math.isfinite(item):
                issues.append((key_path(path), f"{item} is not a finite number"))
        elif item is not None and not isinstance(item, (bool, int)):
            issues.append((key_path(path), f"a {type(item).__name__} value is not allowed here; write it as a string"))
    return sorted(issues)


def integer_problem(value: Any) -> str | None:
    """JSON Schema's `integer` admits 3.0; counts, orders and versions must be written 3."""
    if isinstance(value, float) and value.is_integer():
        return f"must be an integer (write {int(value)}, not {value})"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def size_text(limit: int) -> str:
    """`4 MiB`, `64 KiB`: how limits are written in messages."""
    if limit % MIB == 0:
        return f"{limit // MIB} MiB"
    if limit % 1024 == 0:
        return f"{limit // 1024} KiB"
    return f"{limit} bytes"
