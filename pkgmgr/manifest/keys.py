"""The keys of `extension.toml`/`extension.json` as Compozy's manifest loader reads them.

Compozy decodes the manifest into `manifestDocument` (internal/extension `manifest.go`) with
BurntSushi `toml.Decode` or `json.Unmarshal` (`manifest_load.go` `loadManifestTOML`,
`loadManifestJSON`), the same decoders at the three commits of SPEC 2.1: a key names a field
exactly or but for case (`Name`, `[Extension]`, `"Resources"` are read as `name`, `extension`,
`resources`), and a key naming no field is not read. What each generation then refuses is
looked up by the key *as written*:

- from v0.3-beta.3 on, a top-level key spelt exactly `actions` or `security`
  (`rejectLegacyManifestTOML` on `meta.Undecoded()`, `rejectLegacyManifestJSON` on the root
  object's keys): `[Actions]` names no field there and is ignored;
- at v0.3, a key no field names under a top-level key spelt exactly `resources`
  (`rejectUnsupportedManifestTOML`: undecoded keys whose first part is `resources`;
  `rejectUnknownManifestResourcesJSON`: the root's `resources` value decoded with
  `DisallowUnknownFields`, which still folds case): under `[Resources]` it is ignored.

pkgmgr's own rule: a key naming no core field in `[extension]` is refused (SPEC 2.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pkgmgr.manifest.generations as gen
from pkgmgr.gokeys import Tables, field_for, fold_keys

CORE_FIELDS = ("name", "version", "min_compozy_version", "description", "requires_env")
EXECUTOR = ("command", "args", "env", "secret_env")
_MATCHER = ("agent_name", "agent_type", "workspace_id", "workspace_root", "session_type", "input_class",
            "acp_event_type", "turn_id", "tool_id", "tool_name", "tool_read_only", "decision_class", "message_role",
            "message_delta_type", "channel", "surface", "kind", "direction", "work_state", "compaction_reason",
            "compaction_strategy")  # HookMatcherConfig
_TOOL = ("id", "display_title", "friendly_verb", "preview", "description", "handler", "backend", "input_schema",
         "output_schema", "risk", "read_only", "destructive", "open_world", "requires_interaction",
         "concurrency_safe", "max_result_bytes", "toolsets", "tags", "search_hints", "requires_env",
         "required_capabilities", "visibility")  # ToolConfig at 8eeb8a381; `command` from cff6dae48 on


def _tables(generation: str) -> Tables:
    """`manifestDocument` and the structs below it, as `generation`'s commit declares them.
    Maps of names (`tools`, `mcp_servers`, env maps) keep their keys; values Compozy decodes
    into free-form types (`input_schema`, a tool's `command`, `command_groups`, `cmd_palette`)
    are left as written."""
    tool = _TOOL + (("command",) if generation in gen.WITH_PERMISSIONS else ())
    return {
        "document": (gen.TOP_LEVEL[generation], {
            "extension": ("table", "core"), "network_participation": ("table", "network"),
            "resources": ("table", "resources"), "capabilities": ("table", "capabilities"),
            "actions": ("table", "requires"), "permissions": ("table", "requires"),
            "security": ("table", "security"), "subprocess": ("table", "subprocess"), "bridge": ("table", "bridge")}),
        "core": (CORE_FIELDS, {}),
        "network": (("required", "mode", "channel_scopes"), {}),
        "resources": (gen.RESOURCE_KEYS[generation], {
            "hooks": ("list", "hook"), "tools": ("map", "tool"), "mcp_servers": ("map", "mcp_server"),
            "publish": ("table", "publish")}),
        "hook": (("name", "event", "mode", "required", "priority", "timeout", "matcher", *EXECUTOR, "executor"),
                 {"matcher": ("table", "matcher"), "executor": ("table", "executor")}),
        "matcher": (_MATCHER, {}),
        "executor": (("kind", *EXECUTOR), {}),
        "mcp_server": (EXECUTOR, {}),
        "tool": (tool, {"backend": ("table", "backend")}),
        "backend": (("kind", "handler", "server", "tool"), {}),
        "publish": (("families", "max_scope"), {}),
        "capabilities": (("provides",), {}),
        "requires": (("requires",), {}),
        "security": (("capabilities",), {}),
        "subprocess": ((*EXECUTOR, "health_check_interval", "shutdown_timeout"), {}),
        "bridge": (("platform", "display_name", "secret_slots", "config_schema"),
                   {"secret_slots": ("list", "secret_slot"), "config_schema": ("table", "config_schema")}),
        "secret_slot": (("name", "description", "required"), {}),  # bridges.BridgeSecretSlot
        "config_schema": (("schema", "version"), {}),  # bridges.BridgeProviderConfigSchema
    }


_TABLES = {generation: _tables(generation) for generation in gen.GENERATIONS}
LEGACY = ("actions", "security")


@dataclass
class ReadKeys:
    """A manifest document as one generation's decoder reads it (`document`), the keys it
    ignores (`ignored`: warnings) and those it refuses (`refused`: (key path, message))."""

    document: dict[str, Any]
    ignored: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def read_keys(document: dict[str, Any], generation: str) -> ReadKeys:
    tables = _TABLES[generation]
    read = ReadKeys({})
    top_fields, nested = tables["document"]
    for key, value in document.items():
        name = field_for(key, top_fields)
        if name is None:
            if key in LEGACY and generation in gen.WITH_PERMISSIONS:
                read.refused.append((key, f"[{key}] was removed; use [permissions] (Compozy {generation})"))
            else:
                read.ignored.append(f"{key}: unknown top-level key, ignored by Compozy {generation}")
            continue
        if value is None:
            continue  # encoding/json: a JSON null sets nothing (TOML has no null)
        if name != key and name in document:
            read.ignored.append(f"{key}: another spelling of {name!r}, which the manifest also sets; write one")
            continue
        shape, kind = nested.get(name, ("", ""))
        if shape == "table" and isinstance(value, dict):
            strict = name == "extension" or (generation == gen.V03 and key == "resources")

            def unknown(path: str, spelt: str | None, *, strict: bool = strict, section: str = name) -> None:
                if spelt is not None:
                    read.ignored.append(f"{path}: another spelling of {spelt!r}, which this table also sets; write one")
                elif not strict:
                    read.ignored.append(f"{path}: unknown key, ignored by Compozy {generation}")
                elif section == "extension":
                    read.refused.append((path, "unknown key (pkgmgr's rule: [extension] holds only the core fields "
                                               + ", ".join(CORE_FIELDS) + ")"))
                else:
                    read.refused.append((path, f"unknown manifest field \"{path}\" (Compozy {gen.V03} refuses "
                                               "unknown keys under [resources])"))

            value = fold_keys(value, kind, tables, unknown, name)
        read.document[name] = value
    return read


def as_read(document: Any, generation: str = gen.V02) -> dict[str, Any]:
    """A recorded manifest document (kept as written) with its keys as `generation`'s decoder
    reads them, for the readers of one section (bundle paths, the network requirement)."""
    return read_keys(document, generation).document if isinstance(document, dict) else {}
