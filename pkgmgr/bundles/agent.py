"""Agent folders (SPEC 8): AGENT.md front matter and prompt, mcp.json, capabilities,
SOUL.md and HEARTBEAT.md.

The front matter is YAML read with a strict safe loader: no duplicate keys, no anchors or
aliases (so no alias bombs), bounded depth and size (`frontmatter.MAX_FRONT_MATTER_BYTES`); a YAML error is
a problem with its line, never a traceback. Plain scalars are typed by the YAML 1.2 core schema,
as Compozy's goccy/go-yaml types them: `yes`/`no`/`on`/`off`, `1:30` (base 60, quadratic in
PyYAML) and dates are strings; only `true`/`false`, `null`/`~`, decimal, `0o` and `0x`
integers and floats are typed. Only the fields SPEC 8 lists are allowed.
"""

from __future__ import annotations

from typing import Any, Callable, Collection

from pkgmgr.bundles.bundle import AgentSpec
from pkgmgr.bundles.capabilities import load_capabilities
from pkgmgr.bundles.files import PackageTree, TreeError, child, normalize
from pkgmgr.bundles.names import agent_key, agent_name_problem
from pkgmgr.documents import MIB, DocumentError, decode_text
from pkgmgr.errors import Code, Problem, ProblemSink
from pkgmgr.frontmatter import load_front_matter
from pkgmgr.jsonutil import join_key
from pkgmgr.manifest.generations import V03_BETA3
from pkgmgr.manifest.hookdecl import (
    executor_env_problem,
    hook_executor_kind_problem,
    hook_matcher_problem,
    hook_timing_problem,
)
from pkgmgr.manifest.network import go_trim_space
from pkgmgr.manifest.tools import segmented_id_problem

CODE = Code.INVALID_BUNDLE
BUNDLE_GENERATION = V03_BETA3  # unless told: the latest generation with bundles
MAX_AGENT_MD_BYTES = 1 * MIB
MAX_COMPANION_BYTES = 1 * MIB  # mcp.json and capabilities documents
MAX_AUTHORED_BYTES = 32 * 1024  # SOUL.md, HEARTBEAT.md: Compozy's agents.soul/heartbeat.max_body_bytes
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
PERMISSIONS = ("deny-all", "approve-reads", "approve-all")
MCP_KEYS = ("mcpServers", "mcp_servers")
# the fields of the structs the front matter decodes into (internal/config mcp_server.go MCPServer,
# hooks.go parsedHookDeclaration, parsedHookExecutor, parsedHookMatcher), all generations alike
MCP_SERVER_FIELDS = ("name", "transport", "command", "args", "env", "secret_env", "url", "auth", "catalog_entry",
                     "catalog_version")
HOOK_EXECUTOR_FIELDS = ("kind", "command", "args", "env", "secret_env")
HOOK_FIELDS = ("name", "event", "mode", "enabled", "required", "priority", "timeout", "matcher", *HOOK_EXECUTOR_FIELDS[1:],
               "metadata", "executor")
HOOK_MATCHER_FIELDS = (
    "agent_name", "agent_type", "workspace_id", "workspace_root", "session_type", "sandbox_id", "sandbox_backend",
    "sandbox_profile", "sync_direction", "input_class", "acp_event_type", "turn_id", "tool_id", "tool_name",
    "tool_read_only", "decision_class", "message_role", "message_delta_type", "channel", "surface", "kind",
    "direction", "work_state", "compaction_reason", "compaction_strategy", "task_id", "run_id", "workflow_id",
    "participation_channel", "coordinator_session_id", "parent_session_id", "root_session_id", "child_session_id",
    "spawn_role", "release_reason",
)


# The rules of Compozy's agent loader (internal/config: ParseAgentDef, AgentDef.Validate,
# tool_grammar.go, mcp_server_validation.go), applied to the value as written: strings are
# trimmed first, as ParseAgentDef trims them.
MCP_TRANSPORTS = ("stdio", "http", "sse")


def _trim(value: Any) -> Any:
    return go_trim_space(value) if isinstance(value, str) else value


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _required_string(value: Any) -> str | None:
    return None if isinstance(value, str) and go_trim_space(value) else "must be a non-empty string"


def _choice(*choices: str, exact: bool = False) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        text = value if exact or not isinstance(value, str) else go_trim_space(value)
        if isinstance(value, str) and not exact and not text:
            return None  # blank means unset
        return None if isinstance(text, str) and text in choices else "must be one of " + ", ".join(choices)

    return check


def _string_list(value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return "must be a list of strings"
    return None


def tool_id_problem(text: str) -> str | None:
    """`tools.ToolID.Validate` plus the canonical `namespace__name` form (`validateAgentToolIDAtom`)."""
    if "__" not in text and len(text) <= 64:
        return f"{text!r} is not a canonical tool id: write namespace__name (e.g. linear__search_issues)"
    return segmented_id_problem(text)


def _tool_patterns(value: Any) -> str | None:
    """`validateAgentToolPatterns`: exact tool ids, or a namespace prefix ending in _ or __ then *."""
    problem = _string_list(value)
    if problem:
        return problem
    for item in value:
        text = go_trim_space(item)
        if not text:
            return "lists a blank tool"
        if "*" in text:
            prefix = text[:-1]
            if text.count("*") != 1 or not text.endswith("*") or not prefix.endswith("_"):
                return f"{text!r} must be a tool id or a namespace-prefix wildcard such as linear__*"
            text = prefix + "x"
        if problem := tool_id_problem(text):
            return problem
    return None


def _toolsets(value: Any) -> str | None:
    problem = _string_list(value)
    if problem:
        return problem
    for item in value:
        text = go_trim_space(item)
        if not text:
            return "lists a blank toolset"
        if problem := tool_id_problem(text):
            return problem.replace("tool id", "toolset id")
    return None


def _skills(value: Any) -> str | None:
    """`AgentSkillsConfig`: a table whose `disabled` lists skill names."""
    if not isinstance(value, dict):
        return "must be a table: skills: {disabled: [skill, ...]}"
    unknown = [key for key in value if key != "disabled"]
    if unknown:
        return f"unknown field {unknown[0]!r}; skills holds disabled"
    return _string_list(value.get("disabled", []))


def _category_path(value: Any) -> str | None:
    """`validateAgentCategoryPath`: a list of segments, none blank, '.', '..' or holding / or \\."""
    problem = _string_list(value)
    if problem:
        return problem + " (one per category level)"
    for segment in (go_trim_space(item) for item in value):
        if not segment or segment in (".", "..") or "/" in segment or "\\" in segment:
            return f"{segment!r} is not a category segment (not blank, '.', '..', and no '/' or '\\')"
    return None


def _unknown_field(table: dict[str, Any], known: tuple[str, ...], where: str) -> str | None:
    """The strict decoder's refusal (goccy `yaml.Strict`, TOML `meta.Undecoded`) of a key no field names."""
    unknown = [key for key in table if key not in known]
    return f"{where}: unknown field {unknown[0]!r}; it holds " + ", ".join(known) if unknown else None


def _mcp_servers(value: Any) -> str | None:
    """`MCPServer.Validate` on each entry of a list of server tables."""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        return "must be a list of server tables (name, command or url, ...)"
    for index, server in enumerate(value):
        if problem := _unknown_field(server, MCP_SERVER_FIELDS, f"[{index}]"):
            return problem
        name = _trim(server.get("name"))
        transport = _trim(server.get("transport")) or "stdio"
        if not isinstance(name, str) or not name or "\x00" in name or "/" in name:
            return f"[{index}].name is required (no '/')"
        if transport not in MCP_TRANSPORTS:
            return f"[{index}].transport must be one of " + ", ".join(MCP_TRANSPORTS)
        command, url = _trim(server.get("command")) or "", _trim(server.get("url")) or ""
        if transport == "stdio" and not command:
            return f"[{index}].command is required"
        if transport == "stdio" and url:
            return f"[{index}].url requires a remote transport"
        if transport != "stdio" and not url:
            return f"[{index}].url is required for {transport} transport"
        if transport != "stdio" and (command or server.get("args") or server.get("env") or server.get("secret_env")):
            return f"[{index}]: command, args, env and secret_env are only valid for stdio transport"
        if problem := executor_env_problem(server, "mcp"):
            return f"[{index}].{problem}"
    return None


def _hooks(value: Any, generation: str = BUNDLE_GENERATION) -> str | None:
    """`parsedHookDeclaration` entries, as `ParseAgentDef` converts them (`toHookDecl`) and
    `AgentDef.Validate` judges them (`hookspkg.ValidateHookDecl`, `sanitizedHookDecl`): a list of
    tables with only the declaration's fields, a name, an event of `generation`'s hook taxonomy
    (internal/hooks at its commit), a mode sync|async (default async), a required hook sync, a
    sync hook on an event that takes one, the executor fields at the top level or under
    `executor`, not both."""
    from pkgmgr.manifest.generations import HOOK_EVENTS, hook_mode_problem

    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        return "must be a list of hook tables (name, event, command, ...)"
    events = HOOK_EVENTS[generation]
    for index, hook in enumerate(value):
        where = f"[{index}]"
        # a null table decodes as the zero value, as Go's decoders read it
        executor, matcher = ({} if hook.get(name) is None else hook[name] for name in ("executor", "matcher"))
        problem = (_unknown_field(hook, HOOK_FIELDS, where)
                   or (_unknown_field(executor, HOOK_EXECUTOR_FIELDS, where + ".executor") if isinstance(executor, dict)
                       else f"{where}.executor must be a table")
                   or (_unknown_field(matcher, HOOK_MATCHER_FIELDS, where + ".matcher") if isinstance(matcher, dict)
                       else f"{where}.matcher must be a table"))
        if problem:
            return problem
        name, event, mode = (_trim(hook.get(field)) for field in ("name", "event", "mode"))
        if not isinstance(name, str) or not name:
            return f"{where}.name is required"
        if not isinstance(event, str) or event not in events:
            return f"{where}.event: {event!r} is not a hook event of Compozy {generation}"
        mode = mode or "async"
        if mode not in ("sync", "async"):
            return f"{where}.mode must be sync or async"
        if (mode_problem := hook_mode_problem(event, mode, hook.get("required"), generation)) is not None:
            return f"{where}.{mode_problem[0]}: {mode_problem[1]}"
        if any(hook.get(field) for field in HOOK_EXECUTOR_FIELDS[1:]) and any(
                executor.get(field) for field in HOOK_EXECUTOR_FIELDS[1:]):
            return f"{where}: executor fields at the top level and under executor; keep them in one place"
        if isinstance(hook.get("timeout"), int) and not isinstance(hook.get("timeout"), bool):
            # recorded running: goccy does not decode an integer into the duration (nor does the
            # TOML fallback read the YAML), 0 included
            return f"{where}.timeout must be a Go duration string such as \"5s\", not a number"
        if problem := (hook_timing_problem(hook) or hook_executor_kind_problem(hook, executor)
                       or executor_env_problem(executor if any(executor.get(f) for f in ("env", "secret_env")) else hook,
                                               "hooks")):
            return f"{where}.{problem}"
    return None


def _hook_agent(hooks: list[dict[str, Any]], agent: str, generation: str = BUNDLE_GENERATION) -> str | None:
    """`toHookMatcher`: an agent's hook matches that agent — a matcher naming another is refused, and
    the matcher always carries the agent's name, which `ValidateMatcherForEvent` then judges with
    the other fields (recorded running at cff6dae48: a `window_manager.*` event takes no agent_name)."""
    for index, hook in enumerate(hooks):
        matcher = hook.get("matcher")
        named = _trim(matcher.get("agent_name")) if isinstance(matcher, dict) else None
        if named and named != agent:
            return f"[{index}].matcher.agent_name must be this agent's name {agent!r} (or be left out)"
        filled = {**(matcher if isinstance(matcher, dict) else {}), "agent_name": agent}
        if (problem := hook_matcher_problem(_trim(hook.get("event")), filled, generation)) is not None:
            if not named and "agent_name" in problem.split(" cannot match", 1)[0]:
                problem += (" (an agent's hook always matches on the agent's name; declare this hook in the "
                            "extension manifest's [[resources.hooks]] instead)")
            return f"[{index}].{problem}"
    return None


FIELDS: dict[str, Callable[[Any], str | None]] = {
    "name": _required_string,
    "provider": _string,
    "command": _string,
    "model": _string,
    "reasoning_effort": _choice(*REASONING_EFFORTS),
    "tools": _tool_patterns,
    "toolsets": _toolsets,
    "deny_tools": _tool_patterns,
    "permissions": _choice(*PERMISSIONS),
    "skills": _skills,
    "category_path": _category_path,
    "mcp_servers": _mcp_servers,
    "hooks": _hooks,
}


def parse_agent_md(
    text: str, *, file: str, reserved_agent_names: Collection[str] = (), generation: str = BUNDLE_GENERATION
) -> tuple[dict[str, Any], str, list[Problem]]:
    """Split AGENT.md into its front matter (a dict) and body (the prompt, stripped).

    Returns (front_matter, body, problems); problems (code `invalid_bundle`, filed under `file`)
    cover the `---` delimiters, YAML errors, unknown or mistyped fields, the agent name
    (`reserved_agent_names` lower-cased) and an empty body; hooks are judged by the Compozy
    `generation`'s taxonomy. Never raises for bad input.
    """
    sink = ProblemSink(file, CODE)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        sink.add("", f"contains a lone surrogate at character {exc.start}; it is not valid Unicode")
        return {}, "", sink.problems
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        sink.add("", "AGENT.md must start with a '---' line that opens the YAML front matter", line=1)
        return {}, "", sink.problems
    close = next((index for index in range(1, len(lines)) if lines[index].rstrip() == "---"), None)
    if close is None:
        sink.add("", "the front matter opened on line 1 is not closed by a '---' line", line=1)
        return {}, "", sink.problems
    front, issues = load_front_matter(sink, "\n".join(lines[1:close]))
    if front is not None:
        _check_fields(sink, front, reserved_agent_names, generation)
        reported = {problem.key for problem in sink.problems}
        for key, message in issues:  # values JSON cannot carry, where no field rule spoke already
            if key.split(".")[0].split("[")[0] not in reported:
                sink.add(key, message)
    body = "\n".join(lines[close + 1:]).strip()
    if not body:
        sink.add("body", "the body after the front matter (the agent's prompt) is empty", line=close + 2)
    return front or {}, body, sink.problems


def _check_fields(sink: ProblemSink, front: dict[str, Any], reserved: Collection[str], generation: str) -> None:
    if "name" not in front:
        sink.add("name", "is required")
    for key, value in front.items():
        if not isinstance(key, str):
            continue  # reported by plain_issues
        rule = FIELDS.get(key)
        if rule is None:
            sink.add(key, "unknown field; AGENT.md front matter allows " + ", ".join(FIELDS))
            continue
        message = _hooks(value, generation) if rule is _hooks else rule(value)
        if message is None and key == "name":
            message = agent_name_problem(go_trim_space(value), reserved)
        if message is None and key == "hooks" and isinstance(front.get("name"), str):
            message = _hook_agent(value, go_trim_space(front["name"]), generation)
        if message:
            sink.add(key, message)


# The YAML 1.2 core schema's plain scalars (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
def load_agent(tree: PackageTree, rel_dir: str, *, reserved_agent_names: Collection[str],
               generation: str = BUNDLE_GENERATION) -> tuple[AgentSpec | None, list[Problem]]:
    """Load the agent folder `rel_dir` of `tree`, judged by the Compozy `generation`.

    Raises TreeError when `rel_dir` is not a folder holding AGENT.md inside the root (the
    caller files it under the bundle key that named it). Returns the AgentSpec, or None and
    the problems found in the folder's files (each filed under that file). An agent named
    after one of `reserved_agent_names` loads, marked `reserved`: activation refuses it.
    """
    path = normalize(rel_dir)
    if not tree.resolve(path).is_dir():
        raise TreeError(CODE, f"{path} is not a directory (an agent path names a folder holding AGENT.md)")
    present = tree.names(path)
    agent_md = child(path, "AGENT.md")
    if "AGENT.md" not in present:
        raise TreeError(CODE, f"{path} has no AGENT.md")
    try:
        text = decode_text(tree.read(agent_md, limit=MAX_AGENT_MD_BYTES))
    except TreeError as exc:
        return None, [Problem(exc.code, agent_md, "", exc.message)]
    except DocumentError as exc:
        return None, [Problem(CODE, agent_md, "", exc.message)]
    # a reserved name is judged at activation (agent_conflict), as Compozy does: no problem here
    front, body, problems = parse_agent_md(text, file=agent_md, generation=generation)
    mcp = _mcp(tree, path, problems) if "mcp.json" in present else None
    capabilities = load_capabilities(tree, path, present, MAX_COMPANION_BYTES, problems)
    soul = _authored(tree, path, "SOUL.md", problems) if "SOUL.md" in present else None
    heartbeat = _authored(tree, path, "HEARTBEAT.md", problems) if "HEARTBEAT.md" in present else None
    if problems:
        return None, problems
    return (
        AgentSpec(
            name=go_trim_space(front["name"]),
            path=path,
            # by the confusable-safe key (issue 13 item 13): a look-alike of a reserved name is reserved
            reserved=agent_key(go_trim_space(front["name"])) in {agent_key(name) for name in reserved_agent_names},
            front_matter=front,
            body=body,
            soul=soul,
            heartbeat=heartbeat,
            mcp=mcp,
            capabilities=capabilities,
        ),
        [],
    )


def _mcp(tree: PackageTree, folder: str, problems: list[Problem]) -> dict[str, Any] | None:
    """The server map of mcp.json, as Compozy's `ParseMCPServersJSON` reads it: one JSON object
    whose other keys are ignored; `mcpServers` and `mcp_servers` (either, or both: a server of
    the second replaces the first's of the same name) map a server name to a server, decoded
    strictly (`decodeStrictMCPJSONCollection`) and judged by `MCPServer.Validate`; names are
    trimmed and unique. None when the file has problems."""
    rel = child(folder, "mcp.json")
    value, read_problems = tree.read_document(rel, kind="json", limit=MAX_COMPANION_BYTES, code=CODE)
    problems.extend(read_problems)
    if read_problems:
        return None
    sink = ProblemSink(rel, CODE)
    if value is not None and not isinstance(value, dict):
        sink.add("", "mcp.json must be a JSON object holding an mcpServers map")
        problems.extend(sink.problems)
        return None
    merged: dict[str, Any] = {}
    for key in MCP_KEYS:
        servers = (value or {}).get(key)
        if servers is None:
            continue
        if not isinstance(servers, dict):
            sink.add(key, "must be a map of server name to server definition")
            continue
        seen: set[str] = set()
        for name, server in servers.items():
            trimmed = go_trim_space(name)
            entry_key = join_key(key, name)
            if not isinstance(server, dict):
                sink.add(entry_key, "must be an object (command, args, env, ...)")
                continue
            if trimmed in seen:
                sink.add(entry_key, f"duplicate server name {trimmed!r} once trimmed")
                continue
            seen.add(trimmed)
            problem = _unknown_field(server, MCP_SERVER_FIELDS[1:], "") or _mcp_servers([{**server, "name": trimmed}])
            if problem:
                sink.add(entry_key, problem.removeprefix("[0]").lstrip(":. ") or problem)
            merged[trimmed] = server
    problems.extend(sink.problems)
    return None if sink else merged


def _authored(tree: PackageTree, folder: str, name: str, problems: list[Problem]) -> bytes | None:
    """SOUL.md / HEARTBEAT.md: non-empty UTF-8 of at most 64 KiB, kept as bytes."""
    rel = child(folder, name)
    try:
        data = tree.read(rel, limit=MAX_AUTHORED_BYTES, code=CODE)
        text = decode_text(data)
    except TreeError as exc:
        problems.append(Problem(exc.code, rel, "", exc.message))
        return None
    except DocumentError as exc:
        problems.append(Problem(CODE, rel, "", exc.message))
        return None
    if not text.strip():
        problems.append(Problem(CODE, rel, "", f"{name} is empty; write its content or remove the file"))
        return None
    if text.lstrip("\ufeff").replace("\r\n", "\n").startswith("---\n"):
        # Compozy's soul/heartbeat parsers accept only their own front matter keys; a packaged
        # default carries none (SPEC 8)
        problems.append(Problem(CODE, rel, "", f"{name} starts with front matter; a packaged {name} is plain "
                                               "markdown (remove the --- block)", 1))
        return None
    return data
