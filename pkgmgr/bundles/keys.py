"""The keys of a bundle file as Compozy's decoders read them (v0.2 and v0.3-beta.3 alike).

Compozy decodes a bundle file into Go structs with BurntSushi `toml.Decode` or `json.Unmarshal`
(`internal/extension/bundle_decode.go` `loadBundleTOML`, `loadBundleJSON`; the structs of
`bundle.go` and `internal/automation/model/types.go`). Neither is strict: a key no struct field
names is ignored. Both match a key to a field case-insensitively when no key names the field
exactly (BurntSushi's `strings.EqualFold`, encoding/json's fold), so `Name` is read as `name`.

`fold_bundle_keys` gives the document as Compozy reads it: such keys renamed to the field they
fill, the keys Compozy ignores left out (pkgmgr warns about each). Free-form values (a trigger's `filter`, a
task's `owner` and `network_participation`, a bridge's `routing_policy` and
`delivery_defaults`) are left as written: the rules that judge them speak of their keys.
"""

from __future__ import annotations

from typing import Any

_SCHEDULE = ("mode", "expr", "interval", "time", "catch_up_policy", "misfire_grace_seconds")
_RETRY = ("strategy", "max_retries", "base_delay")
_FIRE_LIMIT = ("max", "window")
_BUNDLE = ("name", "description", "profiles")
_PROFILE = ("name", "description", "channels", "agents", "layouts", "jobs", "triggers", "bridges")
_JOB = ("name", "agent", "prompt", "schedule", "task", "enabled", "retry", "fire_limit")
_TRIGGER = ("name", "agent", "prompt", "event", "filter", "enabled", "retry", "fire_limit", "endpoint_slug")
_BRIDGE = ("name", "extension_name", "platform", "display_name", "routing_policy", "delivery_defaults", "secret_slots")

# each kind of table: its fields, and the kind of those that hold a table or a list of tables
_TABLES: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, str]]]] = {
    "document": (("bundle", *_BUNDLE), {"bundle": ("table", "bundle"), "profiles": ("list", "profile")}),
    "bundle": (_BUNDLE, {"profiles": ("list", "profile")}),
    "profile": (_PROFILE, {"channels": ("table", "channels"), "agents": ("list", "path"), "layouts": ("list", "path"),
                           "jobs": ("list", "job"), "triggers": ("list", "trigger"), "bridges": ("list", "bridge")}),
    "channels": (("primary", "items"), {"items": ("list", "channel")}),
    "channel": (("name", "description"), {}),
    "path": (("path",), {}),
    "job": (_JOB, {"schedule": ("table", "schedule"), "task": ("table", "task"), "retry": ("table", "retry"),
                   "fire_limit": ("table", "fire_limit")}),
    "trigger": (_TRIGGER, {"retry": ("table", "retry"), "fire_limit": ("table", "fire_limit")}),
    "bridge": (_BRIDGE, {"secret_slots": ("list", "secret_slot")}),
    "secret_slot": (("name", "kind", "description"), {}),
    "schedule": (_SCHEDULE, {}),
    "task": (("title", "description", "owner", "network_participation"), {}),
    "retry": (_RETRY, {}),
    "fire_limit": (_FIRE_LIMIT, {}),
}
# the characters outside ASCII that Go's simple case folding maps onto an ASCII letter
_GO_FOLDS = {"\u212a": "k", "\u017f": "s"}


def go_fold(key: str) -> str:
    """`key` as Go's EqualFold compares it with an ASCII field name."""
    return "".join(_GO_FOLDS.get(char, char.lower() if char.isascii() else char) for char in key)


def field_for(key: object, fields: tuple[str, ...]) -> str | None:
    """The field a Go decoder fills with `key`: the one it names exactly, else the one it names
    but for case (Go's EqualFold); None when it names none."""
    if not isinstance(key, str):
        return None
    return key if key in fields else next((field for field in fields if go_fold(key) == field), None)


def fold_bundle_keys(document: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the document as Compozy reads it — each key renamed to the field it fills, the keys
    that fill none left out, so nothing Compozy ignores is judged or projected — and a warning
    for each key left out). A variant of a field the table also names exactly is left out too:
    Compozy's TOML decoder ignores it, its JSON decoder reads whichever comes last (pkgmgr
    warns that it is ambiguous)."""
    ignored: list[str] = []
    return _fold(document, "document", "", ignored), ignored


def _fold(table: dict[str, Any], kind: str, prefix: str, ignored: list[str]) -> dict[str, Any]:
    fields, nested = _TABLES[kind]
    result: dict[str, Any] = {}
    for key, value in table.items():
        field = field_for(key, fields)
        path = f"{prefix}.{key}" if prefix else str(key)
        if field is None:
            ignored.append(f"{path}: unknown key, ignored by Compozy")
            continue
        if field != key and (field in table or field in result):
            ignored.append(f"{path}: another spelling of {field!r}, which this table also sets; write one")
            continue
        shape, inner = nested.get(field, ("", ""))
        path = f"{prefix}.{field}" if prefix else field
        if shape == "table" and isinstance(value, dict):
            value = _fold(value, inner, path, ignored)
        elif shape == "list" and isinstance(value, list):
            value = [_fold(item, inner, f"{path}[{index}]", ignored) if isinstance(item, dict) else item
                     for index, item in enumerate(value)]
        result[field] = value
    return result
