"""How Go's decoders (Compozy's, and any host written in Go) read a document: the text, and the keys
matched to the fields of their structs.

Text: Go's `encoding/json` replaces each byte that is not valid UTF-8 inside a string with
U+FFFD (`utf8.DecodeRune` gives up one byte at a time, where Python's "replace" takes a whole
broken sequence), and an escaped surrogate that is not one half of a pair (`"\ud800"`) with
U+FFFD too (`unquote`, `utf16.DecodeRune`), and loads the document: `go_utf8` and
`go_json_text` give Python's decoder that text.

Keys:

BurntSushi `toml.Decode` (`unifyStruct`) and `encoding/json` fill a field with the key that
names it exactly or, failing that, with a key that names it but for case (`strings.EqualFold`,
encoding/json's fold); a key that names no field is not read. `fold_keys` gives a document as
such a decoder reads it, described by a table of struct kinds: each key renamed to the field it
fills, the keys that fill none left out and reported to the caller.
"""

from __future__ import annotations

import codecs
import re
from typing import Any, Callable

#: a struct kind: its fields, and for the fields holding structs, (shape, kind), the shape being
#: "table" (one struct), "list" (a list of them) or "map" (a map of names to them)
Tables = dict[str, tuple[tuple[str, ...] | frozenset[str], dict[str, tuple[str, str]]]]
#: told of a key no field names: (its path, None) — or (its path, the field it spells otherwise)
#: when the table also names that field exactly (the key is left out: pkgmgr keeps the exact one)
Unknown = Callable[[str, "str | None"], None]

# the characters outside ASCII that Go's simple case folding maps onto an ASCII letter
_GO_FOLDS = {"\u212a": "k", "\u017f": "s"}


def _one_byte(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error("pkgmgr-go-utf8", _one_byte)

# a surrogate pair, a lone surrogate, or any other escape (consumed whole, so `\\ud800` stays text)
_ESCAPES = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\(u[dD][89a-fA-F][0-9a-fA-F]{2})|\\.",
                      re.DOTALL)


def go_utf8(raw: bytes) -> str:
    """`raw` as Go reads UTF-8: each byte of a broken sequence is one U+FFFD."""
    return raw.decode("utf-8", "pkgmgr-go-utf8")


def go_json_text(text: str) -> str:
    """JSON text whose escaped lone surrogates are escaped U+FFFD instead: what Go's decoder
    makes of them (a pair stays a pair)."""
    if "\\u" not in text:
        return text
    return _ESCAPES.sub(lambda match: "\\ufffd" if match.group(1) else match.group(0), text)


def go_fold(key: str) -> str:
    """`key` as Go's EqualFold compares it with an ASCII field name."""
    return "".join(_GO_FOLDS.get(char, char.lower() if char.isascii() else char) for char in key)


def field_for(key: object, fields: tuple[str, ...] | frozenset[str]) -> str | None:
    """The field a Go decoder fills with `key`: the one it names exactly, else the one it names
    but for case (Go's EqualFold); None when it names none."""
    if not isinstance(key, str):
        return None
    return key if key in fields else next((field for field in fields if go_fold(key) == field), None)


def fold_keys(table: dict[str, Any], kind: str, tables: Tables, unknown: Unknown, prefix: str = "") -> dict[str, Any]:
    """`table` (a struct of `kind`) as the decoder reads it: keys renamed to their fields, the
    keys that name none left out, each told to `unknown`; a variant of a field the table also
    names exactly is left out too (BurntSushi fills the field with both, in no fixed order;
    encoding/json with the last); a key whose value is JSON null left out silently (it sets
    nothing)."""
    fields, nested = tables[kind]
    result: dict[str, Any] = {}
    for key, value in table.items():
        if value is None:
            continue  # encoding/json: a JSON null leaves a struct field as it is (TOML has no null)
        field = field_for(key, fields)
        path = f"{prefix}.{key}" if prefix else str(key)
        if field is None:
            unknown(path, None)
            continue
        if field != key and (field in table or field in result):
            unknown(path, field)
            continue
        shape, inner = nested.get(field, ("", ""))
        path = f"{prefix}.{field}" if prefix else field
        if shape == "table" and isinstance(value, dict):
            value = fold_keys(value, inner, tables, unknown, path)
        elif shape == "list" and isinstance(value, list):
            value = [fold_keys(item, inner, tables, unknown, f"{path}[{index}]") if isinstance(item, dict) else item
                     for index, item in enumerate(value)]
        elif shape == "map" and isinstance(value, dict):
            value = {name: fold_keys(item, inner, tables, unknown, f"{path}.{name}") if isinstance(item, dict)
                     else item for name, item in value.items()}
        result[field] = value
    return result
