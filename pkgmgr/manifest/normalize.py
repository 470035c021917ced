"""The normalisation Compozy's loader applies before it validates (`manifestDocument.toManifest`
and the `normalize*` helpers of internal/extension): strings trimmed with Go's
`strings.TrimSpace`, blank list entries dropped, map keys trimmed and blank ones dropped.

Pure and total: values of the wrong type are left as they are, for the schema to report.
"""

from __future__ import annotations

from typing import Any

from pkgmgr.manifest.network import go_trim_space

CORE_STRINGS = ("name", "version", "description", "min_compozy_version")
_STRING_LISTS = {
    "resources": ("skills", "loops", "agents", "bundles", "automation", "layouts"),
    "capabilities": ("provides",),
    "actions": ("requires",),
    "security": ("capabilities",),
    "permissions": ("requires",),
}
_EXECUTOR_STRINGS = ("command",)
_HOOK_STRINGS = ("name", "event", "mode")


def trim(value: Any) -> Any:
    return go_trim_space(value) if isinstance(value, str) else value


def strings(value: Any) -> Any:
    """`normalizeStrings`: each string trimmed, blank ones dropped (other items kept for the schema)."""
    if not isinstance(value, list):
        return value
    kept = [trim(item) for item in value]
    return [item for item in kept if item != ""]


def string_map(value: Any) -> Any:
    """`normalizeStringMap`: keys and string values trimmed, blank keys dropped; of keys equal
    once trimmed, the last in sorted order wins (as Go iterates `sortedMapKeys`)."""
    if not isinstance(value, dict):
        return value
    result: dict[str, Any] = {}
    for key in sorted(value):
        trimmed = go_trim_space(key)
        if trimmed:
            result[trimmed] = trim(value[key])
    return result


def _executor(table: dict[str, Any]) -> dict[str, Any]:
    out = dict(table)
    for key in _EXECUTOR_STRINGS:
        if key in out:
            out[key] = trim(out[key])
    for key, fix in (("args", strings), ("env", string_map), ("secret_env", string_map)):
        if key in out:
            out[key] = fix(out[key])
    return out


def _hook(hook: Any) -> Any:
    if not isinstance(hook, dict):
        return hook
    out = _executor(hook)
    for key in _HOOK_STRINGS:
        if key in out:
            out[key] = trim(out[key])
    if out.get("mode") == "":
        del out["mode"]  # a blank mode is the default (hookspkg sanitizedHookDecl)
    if isinstance(out.get("executor"), dict):
        out["executor"] = _executor(out["executor"])
        if "kind" in out["executor"]:
            out["executor"]["kind"] = trim(out["executor"]["kind"])
    if isinstance(out.get("matcher"), dict):
        out["matcher"] = {key: trim(value) for key, value in out["matcher"].items()}
    return out


def normalize_document(data: dict[str, Any]) -> dict[str, Any]:
    """A normalised copy of a decoded manifest document (the input is not changed)."""
    doc = dict(data)
    for key in CORE_STRINGS:
        if key in doc:
            doc[key] = trim(doc[key])
    if "requires_env" in doc:
        doc["requires_env"] = strings(doc["requires_env"])
    if isinstance(doc.get("extension"), dict):
        inner = dict(doc["extension"])
        for key in CORE_STRINGS:
            if key in inner:
                inner[key] = trim(inner[key])
        if "requires_env" in inner:
            inner["requires_env"] = strings(inner["requires_env"])
        doc["extension"] = inner
    for section, fields in _STRING_LISTS.items():
        if isinstance(doc.get(section), dict):
            table = dict(doc[section])
            for field in fields:
                if field in table:
                    table[field] = strings(table[field])
            doc[section] = table
    resources = doc.get("resources")
    if isinstance(resources, dict):
        resources = doc["resources"] = dict(resources)
        if isinstance(resources.get("hooks"), list):
            resources["hooks"] = [_hook(hook) for hook in resources["hooks"]]
        servers = resources.get("mcp_servers")
        if isinstance(servers, dict):
            normalised: dict[str, Any] = {}
            for name in sorted(servers):
                trimmed = go_trim_space(name)
                if trimmed:
                    server = servers[name]
                    normalised[trimmed] = _executor(server) if isinstance(server, dict) else server
            resources["mcp_servers"] = normalised
        publish = resources.get("publish")
        if isinstance(publish, dict):
            publish = dict(publish)
            if "families" in publish:
                publish["families"] = strings(publish["families"])
            if isinstance(publish.get("max_scope"), str):
                publish["max_scope"] = go_trim_space(publish["max_scope"]).lower()
                if not publish["max_scope"]:
                    del publish["max_scope"]
            resources["publish"] = publish
    if isinstance(doc.get("subprocess"), dict):
        doc["subprocess"] = _executor(doc["subprocess"])
    bridge = doc.get("bridge")
    if isinstance(bridge, dict):
        bridge = dict(bridge)
        for key in ("platform", "display_name"):
            if key in bridge:
                bridge[key] = trim(bridge[key])
        if isinstance(bridge.get("secret_slots"), list):
            bridge["secret_slots"] = [
                {key: trim(value) for key, value in slot.items()} if isinstance(slot, dict) else slot
                for slot in bridge["secret_slots"]]
        doc["bridge"] = bridge
    return doc
