"""The JSON the three hosts read and write, byte for byte where pkgmgr writes their files.

- `decode`: JSON text as Go's `encoding/json` and JavaScript's `JSON.parse` both read it (last
  duplicate key wins, no NaN/Infinity literals, a BOM is an error); numbers are floats, as both
  hosts hold them. Invalid UTF-8 is replaced by U+FFFD, as both do.
- `go_marshal_indent`: what Go's `json.MarshalIndent(v, "", "  ")` writes for a value decoded
  into `map[string]any` (terva's `ext enable/disable`): keys sorted, HTML characters and
  U+2028/U+2029 escaped, floats formatted as Go formats a float64.
- `js_stringify`: `JSON.stringify(v, null, 2)` (Vera's records): key order kept.
- `erlang_format`: `:json.format/1` of OTP (Eva's trust.json): keys sorted, two-space indent.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 512  # deeper documents are refused (pkgmgr's bound; both hosts would parse them)


class JsonError(ValueError):
    """Not JSON a host would parse; the message says why."""


def _reject_constant(name: str) -> Any:
    raise JsonError(f"{name} is not valid JSON")


def _float(text: str) -> float:
    return float(text)


def decode(raw: bytes, *, pairs: bool = False) -> Any:
    """Parse `raw` (UTF-8 JSON). With `pairs`, objects are lists of (key, value) pairs in file
    order (Go maps a key to a struct field by folding it, so the order matters). Raises JsonError."""
    from pkgmgr.documents import DocumentError, parse_json  # the one bounded JSON decoder

    text = raw.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        raise JsonError("starts with a byte order mark, which JSON does not allow")
    try:
        value = parse_json(text, max_depth=MAX_DEPTH, parse_constant=_reject_constant, parse_int=_float,
                           parse_float=_float, object_pairs_hook=(lambda items: _Pairs(items)) if pairs else None)
    except DocumentError as exc:
        if exc.message.startswith("nested deeper"):
            raise JsonError(f"nested deeper than {MAX_DEPTH} levels (pkgmgr's bound)") from None
        where = f" (line {exc.line})" if exc.line is not None else ""
        raise JsonError(f"{exc.message.removeprefix('not valid JSON: ')}{where}") from None
    return value


class _Pairs(list):
    """An object as its (key, value) pairs, in file order (duplicates kept)."""


def is_object(value: Any) -> bool:
    return isinstance(value, (dict, _Pairs))


def last_values(obj: Any) -> dict[str, Any]:
    """A decoded object as a dict, the last of duplicate keys winning (JSON.parse, Go maps)."""
    if isinstance(obj, _Pairs):
        return {k: plain(v) for k, v in obj}
    return obj


def plain(value: Any) -> Any:
    """`_Pairs` objects anywhere in `value` turned into dicts (last duplicate wins, in the
    position of the first). Iterative: MAX_DEPTH levels never meet Python's recursion limit."""
    root: list[Any] = [value]
    stack: list[tuple[list[Any] | dict[str, Any], int | str]] = [(root, 0)]
    while stack:
        target, slot = stack.pop()
        source = target[slot]  # type: ignore[index]
        if not isinstance(source, list):  # _Pairs is a list too
            continue
        made: list[Any] | dict[str, Any] = dict(source) if isinstance(source, _Pairs) else list(source)
        target[slot] = made  # type: ignore[index]
        stack.extend((made, k) for k in (made if isinstance(made, dict) else range(len(made))))
    return root[0]


def depth(value: Any) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, _Pairs):
            stack.extend((v, level + 1) for _, v in item)
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


# --- writers -----------------------------------------------------------------------------------

_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _go_string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    for char, escaped in _GO_ESCAPES.items():
        encoded = encoded.replace(char, escaped)
    return encoded


def go_float(value: float) -> str:
    """A float64 as Go's encoding/json writes it: the shortest digits that round-trip, in plain
    notation unless its magnitude is below 1e-6 or at least 1e21 (then `1e+21`, `1.5e-7`).
    Raises JsonError for NaN and infinities (Go's UnsupportedValueError)."""
    if math.isnan(value) or math.isinf(value):
        raise JsonError(f"{value} cannot be written as JSON")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    from decimal import Decimal  # here: _decimal is a large module, and installs never write a float

    digits = Decimal(repr(value))
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        sign, mantissa, exponent = digits.as_tuple()
        assert isinstance(exponent, int)  # a finite value (NaN and infinities were refused above)
        text = "".join(str(d) for d in mantissa).rstrip("0") or "0"
        power = exponent + len(mantissa) - 1
        head = text[0] + ("." + text[1:] if len(text) > 1 else "")
        exp = f"{abs(power):02d}"
        if power < 0 and len(exp) == 2 and exp[0] == "0":  # Go's cleanup: e-07 -> e-7
            exp = exp[1:]
        return ("-" if sign else "") + head + ("e+" if power >= 0 else "e-") + exp
    text = format(digits, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def go_marshal_indent(value: Any) -> str:
    """`json.MarshalIndent(value, "", "  ")` of a value decoded into Go's `any` (map keys sorted)."""
    return _go_value(value, "")


def _go_value(value: Any, indent: str) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, (int, float)):
        return go_float(float(value))
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{_go_string(k)}: {_go_value(value[k], inner)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(inner + _go_value(v, inner) for v in value) + "\n" + indent + "]"
    raise TypeError(f"cannot encode {type(value).__name__}")


def js_stringify(value: Any) -> str:
    """`JSON.stringify(value, null, 2)` for strings, booleans, null, integers and nested
    objects/arrays (what Vera's records hold): the same escapes and layout as Python's encoder,
    and an unpaired surrogate written as its escape (`"\\ud800"`), as JavaScript's well-formed
    `JSON.stringify` writes it (a decoded document pairs every pair)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def erlang_format(value: Any) -> str:
    """OTP's `json:format/1` of a map of maps and strings (Eva's trust.json): keys sorted, each
    member on its own line indented by two spaces, a final newline."""
    return _erlang_value(value, "") + "\n"


def _erlang_value(value: Any, indent: str) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_erlang_value(value[k], inner)}"
                 for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        return "[" + ",".join(_erlang_value(v, indent) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
