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

from pkgmgr.gokeys import Tables, fold_keys

_SCHEDULE = ("mode", "expr", "interval", "time", "catch_up_policy", "misfire_grace_seconds")
_RETRY = ("strategy", "max_retries", "base_delay")
_FIRE_LIMIT = ("max", "window")
_BUNDLE = ("name", "description", "profiles")
_PROFILE = ("name", "description", "channels", "agents", "layouts", "jobs", "triggers", "bridges")
_JOB = ("name", "agent", "prompt", "schedule", "task", "enabled", "retry", "fire_limit")
_TRIGGER = ("name", "agent", "prompt", "event", "filter", "enabled", "retry", "fire_limit", "endpoint_slug")
_BRIDGE = ("name", "extension_name", "platform", "display_name", "routing_policy", "delivery_defaults", "secret_slots")

# each kind of table: its fields, and the kind of those that hold a table or a list of tables
_TABLES: Tables = {
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


def fold_bundle_keys(document: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the document as Compozy reads it — each key renamed to the field it fills, the keys
    that fill none left out, so nothing Compozy ignores is judged or projected — and a warning
    for each key left out). A variant of a field the table also names exactly is left out too:
    Compozy's decoders read both into the field (BurntSushi in no fixed order, encoding/json the
    last); pkgmgr keeps the exact one and warns that it is ambiguous."""
    ignored: list[str] = []

    def unknown(path: str, field: str | None) -> None:
        ignored.append(f"{path}: unknown key, ignored by Compozy" if field is None else
                       f"{path}: another spelling of {field!r}, which this table also sets; write one")

    return fold_keys(document, "document", _TABLES, unknown), ignored
