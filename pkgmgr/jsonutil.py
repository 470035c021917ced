"""Deterministic JSON encodings shared by digests, locks and generated index files."""

from __future__ import annotations

import hashlib
import json
from typing import Any

_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def canonical_json(value: Any) -> str:
    """Keys sorted, no spaces, non-ASCII kept as UTF-8 (SPEC 9.2 activation digest)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def go_json(value: Any) -> str:
    """Compact JSON the way Go's `json.Marshal` writes it: key order kept, HTML characters and
    U+2028/U+2029 escaped, other non-ASCII as UTF-8."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for char, escaped in _GO_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def key_path(parts: Any) -> str:
    """Render a JSON path (`["resources", "hooks", 0, "command"]`) as `resources.hooks[0].command`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def join_key(prefix: str, *parts: Any) -> str:
    """Extend a rendered key path with more parts."""
    tail = key_path(parts)
    if not prefix:
        return tail
    if not tail:
        return prefix
    return prefix + tail if tail.startswith("[") else f"{prefix}.{tail}"
