"""`[resources.tools.<name>]`: the rules of Compozy's `validateToolConfigs` and
`resolveManifestToolDescriptor` (internal/extension manifest_tool_config.go,
resource_publication.go; internal/tools id.go, tool.go) that decide whether a manifest tool
loads. Pure: `(key path, message)` problems out, never raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pkgmgr.manifest.network import go_trim_space
from pkgmgr.manifest.templates import is_env_name

RISKS = ("read", "mutating", "open_world", "destructive")
VISIBILITIES = ("internal", "operator", "session", "model")
BACKENDS = ("extension_host", "mcp")
RESERVED_NAMESPACE = "compozy__"
_SEGMENT = re.compile(r"[a-z][a-z0-9_]*")
_CAPABILITY = re.compile(r"[a-z][a-z0-9_-]*(?:\.[a-z][a-z0-9_-]*)+")  # validateDottedIdentifiers


def segmented_id_problem(text: str) -> str | None:
    """`tools.validateSegmentedID`: at most 64 characters, `__`-separated segments that start
    with a-z, hold a-z, 0-9 and `_`, and neither start nor end with `_`; no `___`."""
    if not text:
        return "is required"
    if len(text) > 64:
        return f"{text!r} is longer than 64 characters"
    if "___" in text:
        return f"{text!r}: '___' is an ambiguous separator"
    for segment in text.split("__"):
        if not segment or segment.startswith("_") or segment.endswith("_") or not _SEGMENT.fullmatch(segment):
            return f"{text!r}: each __-separated segment starts with a-z and holds a-z, 0-9 and _"
    return None


def canonical_segment(raw: str) -> str:
    """`tools.CanonicalIDSegment`: lower-cased, every run of other characters one `_`."""
    out: list[str] = []
    for char in go_trim_space(raw.lower()):
        if "a" <= char <= "z" or "0" <= char <= "9":
            out.append(char)
        elif out and out[-1] != "_":
            out.append("_")
    return "".join(out).strip("_")


def tool_problems(extension: str, tools: Any, *, mcp_backend: bool = True) -> Iterator[tuple[str, str]]:
    """Problems of the `[resources.tools]` table of extension `extension`; `mcp_backend`: whether
    the judging generation loads a tool with an mcp backend (v0.3 does, the earlier ones do not)."""
    if not isinstance(tools, dict):
        return
    namespace = f"ext__{canonical_segment(extension)}__"
    seen: dict[str, str] = {}
    for raw_name in sorted(tools):
        name, tool = go_trim_space(raw_name), tools[raw_name]
        if not name or not isinstance(tool, dict):
            continue  # blank names are dropped (normalizeTools); other shapes are the schema's
        key = f"resources.tools.{name}"
        explicit = tool.get("id")
        tool_id = go_trim_space(explicit) if isinstance(explicit, str) and go_trim_space(explicit) else (
            namespace + canonical_segment(name))
        problem = segmented_id_problem(tool_id)
        if problem:
            yield f"{key}.id", problem
        elif tool_id.startswith(RESERVED_NAMESPACE):
            yield f"{key}.id", f"{tool_id!r}: extension tools cannot claim the {RESERVED_NAMESPACE} namespace"
        elif not tool_id.startswith(namespace):
            yield f"{key}.id", f"{tool_id!r}: extension tools stay under the {namespace!r} namespace"
        elif tool_id in seen:
            yield f"{key}.id", f"duplicate tool id {tool_id!r}, also declared by resources.tools.{seen[tool_id]}"
        seen.setdefault(tool_id, name)
        yield from _backend(key, tool, mcp_backend)
        for field in ("input_schema", "output_schema"):  # toolspkg: a schema is a JSON object
            if field in tool and tool[field] is not None and not isinstance(tool[field], dict):
                yield f"{key}.{field}", "must be a JSON Schema object"
        for field, choices in (("risk", RISKS), ("visibility", VISIBILITIES)):
            value = tool.get(field)
            if isinstance(value, str) and go_trim_space(value) and go_trim_space(value) not in choices:
                yield f"{key}.{field}", f"{value!r} must be one of {', '.join(choices)}"
        requires_env = tool.get("requires_env")
        for index, env in enumerate(requires_env if isinstance(requires_env, list) else []):
            if isinstance(env, str) and go_trim_space(env) and not is_env_name(go_trim_space(env)):
                yield f"{key}.requires_env[{index}]", f"{env!r} is not an environment variable name"
        capabilities = tool.get("required_capabilities")
        for index, capability in enumerate(capabilities if isinstance(capabilities, list) else []):
            if isinstance(capability, str) and go_trim_space(capability) and not _CAPABILITY.fullmatch(
                    go_trim_space(capability)):
                yield f"{key}.required_capabilities[{index}]", f"{capability!r} is not a capability identifier"
        toolsets = tool.get("toolsets")
        for index, toolset in enumerate(toolsets if isinstance(toolsets, list) else []):
            if isinstance(toolset, str) and (problem := segmented_id_problem(go_trim_space(toolset))):
                yield f"{key}.toolsets[{index}]", problem
        yield from _descriptor(key, tool)


# the flag an explicit risk class needs (`manifestToolRisk`)
_RISK_FLAGS = {"read": "read_only", "open_world": "open_world", "destructive": "destructive"}
_PREVIEW_HINTS = ("", "auto", "none", "command", "path", "delegate", "query")  # toolmeta normalizePreviewHint
_PREVIEW_ARGUMENT = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
MAX_PRESENTATION_RUNES = 80  # toolmeta maxDescriptorPresentationRunes


def _one_line(text: str) -> str:
    """toolmeta `oneLine`: Go's strings.Fields joined by one space."""
    return " ".join(text.split())


def _descriptor(key: str, tool: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """`manifestToolRisk`, `tools.Descriptor.Validate` and `toolmeta.ValidateDescriptorMetadata`
    (checked again by the runtime descriptor): an explicit risk needs its flag, a read-only tool
    is neither destructive nor open-world, `max_result_bytes` is not negative, `friendly_verb`
    is one short line and `preview` a declarative hint."""
    flags = {name: tool.get(name) is True for name in ("read_only", "open_world", "destructive")}
    risk = tool.get("risk")
    risk = go_trim_space(risk) if isinstance(risk, str) else ""
    if risk in _RISK_FLAGS and not flags[_RISK_FLAGS[risk]]:
        yield f"{key}.risk", f"{risk!r} risk requires {_RISK_FLAGS[risk]} = true"
    if flags["read_only"] and (flags["destructive"] or flags["open_world"]):
        yield f"{key}.read_only", "a read-only tool cannot be destructive or open-world"
    size = tool.get("max_result_bytes")
    if isinstance(size, int) and not isinstance(size, bool) and size < 0:
        yield f"{key}.max_result_bytes", "must be greater than or equal to zero"
    verb = tool.get("friendly_verb")
    verb = go_trim_space(verb) if isinstance(verb, str) else ""
    if verb and _one_line(verb) != verb:
        yield f"{key}.friendly_verb", "must be one line"
    elif len(verb) > MAX_PRESENTATION_RUNES:
        yield f"{key}.friendly_verb", f"is longer than {MAX_PRESENTATION_RUNES} characters"
    elif any(char < " " or char == "\x7f" for char in verb):
        yield f"{key}.friendly_verb", "contains control characters"
    preview = tool.get("preview")
    hint = _one_line(go_trim_space(preview)) if isinstance(preview, str) else ""
    if hint.lower() not in _PREVIEW_HINTS and not (
            hint.lower().startswith("arg:") and _PREVIEW_ARGUMENT.fullmatch(hint[len("arg:"):])):
        yield f"{key}.preview", (f"{hint!r} is not a preview hint: auto, none, command, path, delegate, query or "
                                 "arg:<input field>")


def _backend(key: str, tool: dict[str, Any], mcp_backend: bool) -> Iterator[tuple[str, str]]:
    """`manifestToolBackend` and `manifestToolHandler`."""
    found = tool.get("backend")
    backend: dict[str, Any] = found if isinstance(found, dict) else {}

    def text(table: dict[str, Any], field: str) -> str:
        value = table.get(field)
        return go_trim_space(value) if isinstance(value, str) else ""

    kind = text(backend, "kind")
    if not kind:
        yield f"{key}.backend.kind", "is required (extension_host or mcp)"
    elif kind not in BACKENDS:
        yield f"{key}.backend.kind", f"{kind!r}: extension manifest tools support extension_host or mcp backends"
    elif kind == "mcp":
        missing = [field for field in ("server", "tool") if not text(backend, field)]
        for field in missing:
            yield f"{key}.backend.{field}", "is required for an mcp backend"
        if not missing and not mcp_backend:
            # recorded running at 8eeb8a381 and cff6dae48: the mcp BackendRef carries no handler, and
            # manifestRuntimeDescriptor's ExtensionToolRuntimeDescriptor.Validate requires one (96a771efa loads it)
            yield f"{key}.backend.kind", ("Compozy before v0.3 refuses a manifest tool with an mcp backend (its "
                                          "runtime descriptor needs a handler, which an mcp backend does not "
                                          "carry): use backend.kind = \"extension_host\" with a handler, or "
                                          "target Compozy v0.3")
    else:
        nested, top = text(backend, "handler"), text(tool, "handler")
        if top and nested and top != nested:
            yield f"{key}.handler", "handler and backend.handler conflict"
        handler = top or nested
        if not handler:
            yield f"{key}.handler", "an extension_host backend needs a handler"
        elif any(char <= " " or char in "/\\{}" for char in handler):
            yield f"{key}.handler", f"{handler!r} contains unsupported characters"
