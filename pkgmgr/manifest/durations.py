"""Go-style durations (`30s`, `1h30m`, `1.5h`, `300ms`), parsed the way Go's
`time.ParseDuration` does, so a manifest means the same thing to pkgmgr and to the host."""

from __future__ import annotations

import json

_NANOS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # MICRO SIGN
    "\u03bcs": 1_000,  # GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX_NANOS = (1 << 63) - 1
HINT = "e.g. 30s, 1h30m, 1.5h, 300ms"


def _digits(text: str) -> str:
    end = 0
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    return text[:end]


def parse_go_duration_ns(text: str) -> int:
    """The duration in integer nanoseconds. Raises ValueError naming the text and the rule."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a duration ({HINT})")
    rest = text
    negative = False
    if rest[:1] in ("+", "-"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f"{_quote(text)} is not a duration ({HINT})")
    total = 0
    while rest:
        whole = _digits(rest)
        rest = rest[len(whole):]
        fraction = ""
        if rest.startswith("."):
            fraction = _digits(rest[1:])
            rest = rest[1 + len(fraction):]
        if not whole and not fraction:
            raise ValueError(f"{_quote(text)} is not a duration ({HINT})")
        unit_end = 0
        while unit_end < len(rest) and rest[unit_end] != "." and not "0" <= rest[unit_end] <= "9":
            unit_end += 1
        unit, rest = rest[:unit_end], rest[unit_end:]
        if not unit:
            raise ValueError(f"{_quote(text)} is not a duration: missing unit ({HINT})")
        scale = _NANOS.get(unit)
        if scale is None:
            raise ValueError(f"{_quote(text)} is not a duration: unknown unit {_quote(unit)} ({HINT})")
        total += int(whole or "0") * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > _MAX_NANOS + (1 if negative else 0):
            raise ValueError(f"{_quote(text)} is not a duration: out of range")
    return -total if negative else total


def parse_go_duration(text: str) -> float:
    """The duration in seconds (`"1h30m"` -> 5400.0). Raises ValueError naming the text."""
    return parse_go_duration_ns(text) / 1e9


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
