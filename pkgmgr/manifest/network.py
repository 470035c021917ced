"""`[network_participation]`: normalisation and the network requirement digest (SPEC 2, 9.2).

The digest is byte-compatible with Compozy's: trimming follows Go's `strings.TrimSpace`,
sorting compares code points (= Go's byte order on UTF-8) and the JSON is Go's
`json.Marshal` output (`jsonutil.go_json`).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from pkgmgr.jsonutil import go_json, sha256_hex

SECTION = "network_participation"
LIVE = "live"

# Go's unicode.IsSpace (what strings.TrimSpace strips); Python's str.strip() would also strip
# U+001C..U+001F, which Go keeps.
_GO_SPACE = "\t\n\v\f\r \u0085\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u2028\u2029\u202f\u205f\u3000")


def go_trim_space(text: str) -> str:
    return text.strip(_GO_SPACE)


def go_lower(text: str) -> str:
    """Go's `strings.ToLower`: each code point's simple lower-case mapping. Python's
    `str.lower()` applies the full mapping (U+0130 becomes "i" + U+0307) and lower-cases a
    final sigma by context; Go does neither."""
    return "".join("i" if char == "\u0130" else char.lower()[:1] if char.lower() else char for char in text)


def normalize_network(block: Any) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    """Normalise a `[network_participation]` block as written in a manifest.

    Returns `(normalised, problems)`: `normalised` is `{"required", "mode", "channel_scopes"}`
    (mode trimmed and lower-cased; scopes trimmed, empty ones dropped, de-duplicated, sorted),
    or None when the block is absent or invalid; `problems` lists `(key path, message)`. Never
    raises, whatever `block` is.
    """
    if block is None:
        return None, []
    if not isinstance(block, Mapping):
        return None, [(SECTION, "must be a table")]
    # Compozy's decoder ignores unknown keys and reads a JSON null as the zero value
    unknown: list[tuple[str, str]] = []
    problems: list[tuple[str, str]] = []
    required = block.get("required")
    if required is None:
        required = False
    if not isinstance(required, bool):
        problems.append((f"{SECTION}.required", "must be a boolean"))
    mode = block.get("mode")
    if mode is None:
        mode = ""
    if isinstance(mode, str):
        mode = go_lower(go_trim_space(mode))
    else:
        problems.append((f"{SECTION}.mode", "must be a string"))
    raw_scopes = block.get("channel_scopes")
    if raw_scopes is None:
        raw_scopes = []
    scopes: list[str] = []
    if isinstance(raw_scopes, (list, tuple)):
        for index, scope in enumerate(raw_scopes):
            if isinstance(scope, str):
                scopes.append(go_trim_space(scope))
            else:
                problems.append((f"{SECTION}.channel_scopes[{index}]", "must be a string"))
    else:
        problems.append((f"{SECTION}.channel_scopes", "must be a list of strings"))
    if problems:
        return None, unknown + problems
    scopes = sorted({scope for scope in scopes if scope})
    if not required:
        if mode or scopes:
            problems.append((
                f"{SECTION}.required",
                "required = false with a mode or channel_scopes: set required = true or drop them",
            ))
    elif mode != LIVE:
        got = json.dumps(mode, ensure_ascii=False)
        problems.append((f"{SECTION}.mode", f'required = true needs mode "live", got {got}'))
    problems = unknown + problems
    if problems:
        return None, problems
    return {"required": required, "mode": mode, "channel_scopes": scopes}, []


def network_digest(block: Any) -> str:
    """The network requirement digest of a block (as written or already normalised).

    `""` when the block is absent or not required; otherwise the sha256 of Go-style compact
    JSON `{"required":true,"mode":"live","channel_scopes":[...]}`. Raises ValueError when the
    block is invalid.
    """
    return digest_of_normalised(_valid(block))


def network_json(block: Any) -> str | None:
    """The exact JSON text the digest hashes; None when no confirmation is needed. Raises
    ValueError when the block is invalid."""
    return _payload(_valid(block))


def _valid(block: Any) -> dict[str, Any] | None:
    normalised, problems = normalize_network(block)
    if problems:
        raise ValueError("; ".join(f"{key}: {message}" for key, message in problems))
    return normalised


def _payload(normalised: Mapping[str, Any] | None) -> str | None:
    if normalised is None or not normalised["required"]:
        return None
    return go_json({"required": True, "mode": normalised["mode"], "channel_scopes": list(normalised["channel_scopes"])})


def digest_of_normalised(normalised: Mapping[str, Any] | None) -> str:
    payload = _payload(normalised)
    return "" if payload is None else sha256_hex(payload)


def declared_requirement(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The network requirement (`{"required","mode","channel_scopes"}`, normalised) a recorded
    manifest declares; None when it declares none."""
    from pkgmgr.manifest.keys import as_read

    network, _ = normalize_network(as_read(manifest).get("network_participation"))
    return network if network and network.get("required") else None
