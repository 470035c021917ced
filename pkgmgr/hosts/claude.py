"""Claude Code plugins: `.claude-plugin/plugin.json` in a plugin folder, judged as Claude Code
2.1's `claude plugin validate` and its install and load judge it.

Claude Code is closed source: every rule here was observed from the real CLI (npm
`@anthropic-ai/claude-code`), and its verdicts on every input of `tests/hosts/claude/` are
recorded beside it; its plugin reference pages (the manifest reference, the components page,
the hooks reference) name the fields. A plugin is loaded only through a marketplace Claude Code
knows (docs/hosts.md): this module knows the plugin, not the marketplace.

What this module decides is pure: bytes (or a decoded document) in, a `ClaudeManifest` or
problems out; `Claude.judge` adds what only the folder can say (component paths and files).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pkgmgr.errors import Code, ProblemSink
from pkgmgr.hosts import jsdoc
from pkgmgr.hosts.base import HostRules, Judged
from pkgmgr.hosts.jsdoc import kind

MANIFEST = ".claude-plugin/plugin.json"
MANIFEST_MAX_BYTES = 1024 * 1024  # pkgmgr's bound on plugin.json and on the JSON files it names
FRONT_MATTER_MAX_BYTES = 64 * 1024  # pkgmgr's bound on a component's front matter

HOOK_EVENTS = frozenset({"PreToolUse", "PostToolUse", "Notification", "UserPromptSubmit", "Stop", "SubagentStop",
                         "PreCompact", "SessionStart", "SessionEnd"})
HOOK_TYPES = frozenset({"command", "prompt"})
USER_CONFIG_TYPES = frozenset({"string", "number", "boolean", "directory", "file"})
METADATA = frozenset({"name", "version", "description", "author", "homepage", "repository", "license", "keywords",
                      "icon", "$schema"})
COMPONENT_PATHS = ("commands", "agents", "skills", "outputStyles")
OTHER_FIELDS = frozenset({"hooks", "mcpServers", "lspServers", "userConfig", "dependencies", "channels", "monitors",
                          "themes", "workflows", "bin", "modules"})
KNOWN = METADATA | frozenset(COMPONENT_PATHS) | OTHER_FIELDS
RESERVED_WORDS = ("claude", "anthropic")
_KEBAB = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_SPECIAL_SCHEMES = ("http", "https", "ftp", "ws", "wss", "file")


@dataclass(frozen=True)
class ClaudeManifest:
    """`plugin.json` as Claude Code takes it (and as pkgmgr allows it)."""

    name: str
    version: str = ""  # "" when the manifest has none (Claude warns; the registry's version is recorded)
    description: str = ""
    author: str = ""
    components: dict[str, tuple[str, ...]] = field(default_factory=dict)  # field -> the paths it names
    hooks: dict[str, Any] | None = None  # the inline hooks, by event
    mcp_servers: tuple[str, ...] = ()
    user_config: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    document: dict[str, Any] = field(default_factory=dict)


def claude_config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where Claude Code keeps settings.json and plugins/: $CLAUDE_CONFIG_DIR when set and not
    empty, else ~/.claude (observed: the variable moves .claude.json into it too)."""
    environ = os.environ if environ is None else environ
    value = environ.get("CLAUDE_CONFIG_DIR", "")
    return Path(value) if value else Path(os.path.expanduser("~")) / ".claude"


# --- names ----------------------------------------------------------------------------------------


def name_problems(name: str) -> tuple[list[str], list[str]]:
    """(refusals, warnings) of a plugin name. Claude's: whitespace; a name that passes for one of
    Anthropic's own (its letters and digits are `claude` or `anthropic`, or its first word is);
    a warning when another word is one, and when it is not kebab-case. pkgmgr's (the name is a
    folder of pkgmgr's marketplace and half of the id `name@marketplace`): no path separators,
    `.`/`..`, `@`, control characters, and at most 255 bytes."""
    refusals, warnings = [], []
    if jsdoc.has_js_space(name):
        refusals.append(f"{name!r} holds whitespace: Claude Code refuses it (use kebab-case, e.g. my-plugin)")
    words = [w for w in re.split(r"[^0-9A-Za-z]+", name.lower()) if w]
    joined = "".join(words)
    if joined in RESERVED_WORDS or (words and words[0] in RESERVED_WORDS):
        refusals.append(f"{name!r} is reserved: Claude Code refuses names that pass for Anthropic's own")
    elif any(w in RESERVED_WORDS for w in words[1:]):
        warnings.append(f"{name!r} reads as one of Anthropic's own (Claude Code warns)")
    if name in (".", "..") or "/" in name or "\\" in name:
        refusals.append(f"{name!r} must be a plain folder name (pkgmgr's rule: the plugin's folder in pkgmgr's "
                        "marketplace)")
    if "@" in name:
        refusals.append(f"{name!r} holds '@', which separates a plugin from its marketplace (pkgmgr's rule)")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        refusals.append(f"{name!r} holds control characters (pkgmgr's rule)")
    if len(name.encode("utf-8", "surrogatepass")) > 255:
        refusals.append("is longer than 255 bytes (pkgmgr's rule: it names a folder)")
    if not refusals and not _KEBAB.fullmatch(name):
        warnings.append(f"{name!r} is not kebab-case (Claude Code warns: the Claude.ai marketplace expects it)")
    return refusals, warnings


def url_ok(text: str) -> bool:
    """An absolute URL as the WHATWG parser takes one, for what Claude checks (`homepage`): a
    scheme, and a host after `//` for the special schemes."""
    match = _SCHEME.match(text)
    if match is None or any(c in text for c in " \t\n\r"):
        return False
    scheme = match.group(0)[:-1].lower()
    if scheme in _SPECIAL_SCHEMES and scheme != "file":
        rest = text[match.end():].lstrip("/\\")
        return bool(rest) and rest[0] not in "?#"
    return True


# --- the manifest -----------------------------------------------------------------------------------


def decode_json(raw: bytes, problems: ProblemSink) -> Any:
    """A JSON document of the plugin through pkgmgr's strict bounded decoder; a UTF-8 byte order
    mark first is skipped, as Claude Code skips it. None (with a problem) when it cannot be read."""
    return jsdoc.decode(raw, problems, max_bytes=MANIFEST_MAX_BYTES, bom=True)


def parse_manifest(raw: bytes) -> ClaudeManifest:
    """plugin.json's bytes to the manifest Claude Code loads. Raises `ValidationFailed`
    (invalid_manifest, path_escapes_root) with every problem found."""
    problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
    document = jsdoc.decode_object(raw, problems, max_bytes=MANIFEST_MAX_BYTES, bom=True)
    problems.raise_if_any()
    assert document is not None
    return check_manifest(document, problems)


def check_manifest(document: dict[str, Any], problems: ProblemSink) -> ClaudeManifest:
    """The rules on a decoded plugin.json (Claude Code's as observed, and pkgmgr's where it says
    so). Raises `ValidationFailed` with every problem found."""
    warnings: list[str] = []
    name = document.get("name")
    if not isinstance(name, str) or not name:
        problems.add("name", "is required: a non-empty string" if name in (None, "") else
                     f"must be a string, not {kind(name)}")
    else:
        refusals, name_warnings = name_problems(name)
        for message in refusals:
            problems.add("name", message)
        warnings += [f"name: {w}" for w in name_warnings]
    version = _text(document, "version", problems, warnings)
    if isinstance(version, str) and (version in (".", "..") or "/" in version or "\\" in version
                                     or any(ord(c) < 0x20 or ord(c) == 0x7F for c in version)):
        problems.add("version", f"{version!r} cannot name a folder (pkgmgr's rule: Claude Code keeps a plugin "
                                "under a folder named after its version)")
    description = _text(document, "description", problems, warnings)
    author = _author(document, problems, warnings)
    homepage = document.get("homepage")
    if "homepage" in document and not (isinstance(homepage, str) and url_ok(homepage)):
        problems.add("homepage", "must be a URL" if isinstance(homepage, str) else
                     f"must be a URL string, not {kind(homepage)}")
    for key in ("repository", "license", "icon", "$schema"):
        if key in document and not isinstance(document[key], str):
            problems.add(key, f"must be a string, not {kind(document[key])}")
    jsdoc.string_list(document, "keywords", problems, null_ok=False)
    components = {key: paths for key in COMPONENT_PATHS
                  if (paths := _component_paths(document, key, problems)) is not None}
    hooks = _hooks_field(document, problems, warnings, components)
    servers = _mcp_field(document, problems, components)
    if "lspServers" in document and not isinstance(document["lspServers"], dict):
        problems.add("lspServers", f"must be an object of servers, not {kind(document['lspServers'])}")
    user_config = _user_config(document, problems)
    dependencies = jsdoc.string_list(document, "dependencies", problems, null_ok=False)
    if dependencies:
        problems.add("dependencies", "names other plugins: Claude Code fails to load a plugin whose dependencies "
                                     "its marketplace does not carry, and pkgmgr's marketplace carries none")
    for key in document:
        if key not in KNOWN:
            warnings.append(f"{key}: unknown field (Claude Code ignores it)")
    problems.raise_if_any()
    assert isinstance(name, str)
    return ClaudeManifest(name=name, version=version or "", description=description or "", author=author,
                          components=components, hooks=hooks, mcp_servers=servers, user_config=user_config,
                          warnings=tuple(warnings), document=document)


def _text(document: dict[str, Any], key: str, problems: ProblemSink, warnings: list[str]) -> str | None:
    value = document.get(key)
    if key not in document or value == "":
        warnings.append(f"{key}: none given (Claude Code warns)")
        return None
    if not isinstance(value, str):
        problems.add(key, f"must be a string, not {kind(value)}")
        return None
    return value


def _author(document: dict[str, Any], problems: ProblemSink, warnings: list[str]) -> str:
    if "author" not in document:
        warnings.append("author: none given (Claude Code warns)")
        return ""
    author = document["author"]
    if not isinstance(author, dict):
        problems.add("author", f"must be an object with a name, not {kind(author)}")
        return ""
    name = author.get("name")
    if not isinstance(name, str) or not name:
        problems.add("author.name", "is required: a non-empty string" if not isinstance(name, (int, float, bool))
                     else f"must be a string, not {kind(name)}")
    for key in ("email", "url"):
        if key in author and not isinstance(author[key], str):
            problems.add(f"author.{key}", f"must be a string, not {kind(author[key])}")
    return name if isinstance(name, str) else ""


def path_problem(value: str) -> tuple[str, str] | None:
    """A component path: relative to the plugin root, written with `./` first, and not leaving
    the plugin (Claude Code refuses the first two at validate and fails to load the third)."""
    if not value.startswith("./"):
        return Code.INVALID_MANIFEST, f"{value!r} must start with './' (a path inside the plugin)"
    parts = [p for p in value[2:].replace("\\", "/").split("/") if p not in ("", ".")]
    depth = 0
    for part in parts:
        depth += -1 if part == ".." else 1
        if depth < 0:
            return Code.PATH_ESCAPES_ROOT, f"{value!r} leaves the plugin"
    return None


def _component_paths(document: dict[str, Any], key: str, problems: ProblemSink) -> tuple[str, ...] | None:
    """`commands`, `agents`, `skills`, `outputStyles`: a path or a list of paths (`commands`
    also an object of named commands, each with a `source` path)."""
    if key not in document:
        return None
    value = document[key]
    if isinstance(value, str):
        entries = [(key, value)]
    elif isinstance(value, list):
        entries = [(f"{key}[{i}]", v) for i, v in enumerate(value)]
    elif key == "commands" and isinstance(value, dict):
        entries = []
        for command, spec in value.items():
            if not isinstance(spec, dict) or not isinstance(spec.get("source", ""), str):
                problems.add(f"{key}.{command}", "must be an object whose source is a path")
            elif "source" in spec:
                entries.append((f"{key}.{command}.source", spec["source"]))
    else:
        problems.add(key, f"must be a path or a list of paths, not {kind(value)}")
        return ()
    paths = []
    for where, path in entries:
        if not isinstance(path, str):
            problems.add(where, f"must be a path, not {kind(path)}")
            continue
        found = path_problem(path)
        if found:
            problems.add(where, found[1], code=found[0])
        else:
            paths.append(path)
    return tuple(paths)


def check_hooks(value: Any, key: str, problems: ProblemSink, warnings: list[str]) -> dict[str, Any] | None:
    """Hooks by event: each event a list of matchers `{matcher?, hooks: [{type, ...}]}`; a
    `command` hook has a non-empty command, a `prompt` hook a prompt. An event Claude Code does
    not know is only a warning."""
    if not isinstance(value, dict):
        problems.add(key, f"must be an object of hook events, not {kind(value)}")
        return None
    for event, matchers in value.items():
        where = f"{key}.{event}"
        if event not in HOOK_EVENTS:
            warnings.append(f"{where}: Claude Code knows no hook event {event!r} (it warns and never runs it)")
        if not isinstance(matchers, list):
            problems.add(where, f"must be a list of matchers, not {kind(matchers)}")
            continue
        for index, matcher in enumerate(matchers):
            at = f"{where}[{index}]"
            if not isinstance(matcher, dict) or not isinstance(matcher.get("hooks", []), list):
                problems.add(at, "must be an object with a list of hooks")
                continue
            if "matcher" in matcher and not isinstance(matcher["matcher"], str):
                warnings.append(f"{at}.matcher: not a string (Claude Code warns)")
            for number, hook in enumerate(matcher.get("hooks", [])):
                _hook(hook, f"{at}.hooks[{number}]", problems)
    return value


def _hook(hook: Any, where: str, problems: ProblemSink) -> None:
    if not isinstance(hook, dict):
        problems.add(where, f"must be an object, not {kind(hook)}")
        return
    hook_type = hook.get("type")
    if hook_type not in HOOK_TYPES:
        problems.add(f"{where}.type", f"{hook_type!r} is not a hook type Claude Code runs ({', '.join(sorted(HOOK_TYPES))})")
    elif hook_type == "command" and not (isinstance(hook.get("command"), str) and hook["command"]):
        problems.add(f"{where}.command", "is required for a command hook")
    elif hook_type == "prompt" and not (isinstance(hook.get("prompt"), str) and hook["prompt"]):
        problems.add(f"{where}.prompt", "is required for a prompt hook")


def _hooks_field(document: dict[str, Any], problems: ProblemSink, warnings: list[str],
                 components: dict[str, tuple[str, ...]]) -> dict[str, Any] | None:
    """`hooks`: inline hooks, or a path (or list of paths) to hooks files."""
    if "hooks" not in document:
        return None
    value = document["hooks"]
    if isinstance(value, dict):
        return check_hooks(value, "hooks", problems, warnings)
    paths = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if paths is None:
        problems.add("hooks", f"must be hooks, a path or a list of paths, not {kind(value)}")
        return None
    found = []
    for index, path in enumerate(paths):
        where = "hooks" if isinstance(value, str) else f"hooks[{index}]"
        problem = path_problem(path) if isinstance(path, str) else (Code.INVALID_MANIFEST, "must be a path")
        if problem:
            problems.add(where, problem[1], code=problem[0])
        else:
            found.append(path)
    components["hooks"] = tuple(found)
    return None


def _mcp_field(document: dict[str, Any], problems: ProblemSink, components: dict[str, tuple[str, ...]]
               ) -> tuple[str, ...]:
    """`mcpServers`: servers by name, or a path to a JSON file of them."""
    if "mcpServers" not in document:
        return ()
    value = document["mcpServers"]
    if isinstance(value, str):
        problem = path_problem(value)
        if problem:
            problems.add("mcpServers", problem[1], code=problem[0])
        else:
            components["mcpServers"] = (value,)
        return ()
    if not isinstance(value, dict):
        problems.add("mcpServers", f"must be an object of servers or a path, not {kind(value)}")
        return ()
    for server, config in value.items():
        mcp_server_problems(config, f"mcpServers.{server}", problems)
    return tuple(value)


def mcp_server_problems(config: Any, where: str, problems: ProblemSink) -> None:
    """One MCP server: a local one has a non-empty `command` (and string `args`), a remote one a
    `type` (http, sse) and a `url`."""
    if not isinstance(config, dict):
        problems.add(where, f"must be an object, not {kind(config)}")
        return
    if "command" in config:
        if not isinstance(config["command"], str) or not config["command"]:
            problems.add(f"{where}.command", "must be a non-empty string")
        args = config.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            problems.add(f"{where}.args", "must be a list of strings")
        env = config.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            problems.add(f"{where}.env", "must be an object of strings")
    elif config.get("type") in ("http", "sse"):
        if not isinstance(config.get("url"), str) or not config["url"]:
            problems.add(f"{where}.url", "is required for a remote server")
    else:
        problems.add(where, "needs a command (a local server) or a type http or sse and a url (a remote one)")


def _user_config(document: dict[str, Any], problems: ProblemSink) -> tuple[str, ...]:
    if "userConfig" not in document:
        return ()
    value = document["userConfig"]
    if not isinstance(value, dict):
        problems.add("userConfig", f"must be an object of options, not {kind(value)}")
        return ()
    for option, spec in value.items():
        if not isinstance(spec, dict):
            problems.add(f"userConfig.{option}", f"must be an object, not {kind(spec)}")
        elif spec.get("type") not in USER_CONFIG_TYPES:
            problems.add(f"userConfig.{option}.type", f"must be one of {', '.join(sorted(USER_CONFIG_TYPES))}")
    return tuple(value)


# --- the folder --------------------------------------------------------------------------------------


def _read(root: Path, rel: str, limit: int = MANIFEST_MAX_BYTES) -> bytes:
    return jsdoc.read_file(root / rel, file=rel.removeprefix("./"), limit=limit,
                           what="a Claude plugin carries .claude-plugin/plugin.json (pkgmgr's rule: it is how "
                                "pkgmgr tells the host and names the plugin)")


def _inside(root: Path, rel: str) -> Path | None:
    """`root/rel` when it exists and, links followed, stays inside `root`."""
    path = root / rel
    if not os.path.exists(path):
        return None
    base = os.path.realpath(root)
    resolved = os.path.realpath(path)
    return Path(resolved) if resolved == base or resolved.startswith(base + os.sep) else None


def check_folder(root: Path, manifest: ClaudeManifest, problems: ProblemSink, warnings: list[str]) -> None:
    """What the manifest names exists inside the plugin (agents are files), and the component
    files Claude Code reads (hooks/hooks.json, .mcp.json, the front matter of commands, agents
    and skills) can be read."""
    for key, paths in manifest.components.items():
        for index, rel in enumerate(paths):
            where = key if len(paths) == 1 and isinstance(manifest.document.get(key), str) else f"{key}[{index}]"
            path = _inside(root, rel)
            if path is None and os.path.exists(root / rel):
                problems.add(where, f"{rel!r} resolves outside the plugin (pkgmgr's rule: a link may not lead out)",
                             code=Code.PATH_ESCAPES_ROOT)
            elif path is None:
                problems.add(where, f"{rel!r} is not in the plugin (Claude Code fails to load it)")
            elif key == "agents" and not path.is_file():
                problems.add(where, f"{rel!r} must name an agent file, not a folder")
            elif key in ("hooks", "mcpServers"):
                _json_file(root, rel, problems, warnings, key)
    if "hooks" not in manifest.document and (root / "hooks" / "hooks.json").exists():
        _json_file(root, "hooks/hooks.json", problems, warnings, "hooks")
    if "mcpServers" not in manifest.document and (root / ".mcp.json").exists():
        _json_file(root, ".mcp.json", problems, warnings, "mcpServers")
    for pattern in ("commands/**/*.md", "agents/*.md", "skills/*/SKILL.md"):
        for path in sorted(root.glob(pattern)):
            _front_matter(root, path, problems, warnings)


def _json_file(root: Path, rel: str, problems: ProblemSink, warnings: list[str], component: str) -> None:
    file_problems = ProblemSink(rel.removeprefix("./"), Code.INVALID_MANIFEST)
    value = decode_json(_read(root, rel), file_problems)
    if not file_problems:
        if not isinstance(value, dict):
            file_problems.add("", f"must be a JSON object, not {kind(value)}")
        elif component == "hooks":
            check_hooks(value.get("hooks", {}), "hooks", file_problems, warnings)
        elif isinstance(value.get("mcpServers"), dict):
            for server, config in value["mcpServers"].items():
                mcp_server_problems(config, f"mcpServers.{server}", file_problems)
    problems.extend(file_problems.problems)


def _front_matter(root: Path, path: Path, problems: ProblemSink, warnings: list[str]) -> None:
    """A component's YAML front matter (`---` lines around it): missing is a warning, unreadable
    a problem; an agent without a description is a warning (Claude Code's)."""
    rel = path.relative_to(root).as_posix()
    sink = ProblemSink(rel, Code.INVALID_MANIFEST)
    _read_front_matter(path, rel, sink, warnings)
    problems.extend(sink.problems)


def _read_front_matter(path: Path, rel: str, problems: ProblemSink, warnings: list[str]) -> None:
    import yaml

    raw = jsdoc.read_file(path, file=rel, limit=FRONT_MATTER_MAX_BYTES * 16, what="")
    text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    match = re.match(r"---[ \t]*\r?\n(.*?)(?:\r?\n)?---[ \t]*(?:\r?\n|$)", text, re.DOTALL)
    if match is None:
        warnings.append(f"{rel}: no front matter (Claude Code warns)")
        return
    block = match.group(1)
    if len(block.encode("utf-8")) > FRONT_MATTER_MAX_BYTES:
        problems.add("", "front matter larger than 64 KiB (pkgmgr's bound)")
        return
    try:
        value = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - safe
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        problems.add("", f"front matter is not valid YAML ({type(exc).__name__})")
        return
    if value is not None and not isinstance(value, dict):
        problems.add("", "front matter must be a mapping of fields")
    elif rel.startswith("agents/") and not (value or {}).get("description"):
        warnings.append(f"{rel}: an agent without a description (Claude Code warns)")


def capabilities(manifest: ClaudeManifest, root: Path) -> tuple[str, ...]:
    """What the plugin brings into Claude Code: hooks and MCP servers run commands."""
    found = []
    if manifest.hooks or "hooks" in manifest.components or (root / "hooks" / "hooks.json").exists():
        found.append("hooks")
    if manifest.mcp_servers or "mcpServers" in manifest.components or (root / ".mcp.json").exists():
        found.append("mcp-servers")
    for key, folder in (("commands", "commands"), ("agents", "agents"), ("skills", "skills"),
                        ("outputStyles", "output-styles")):
        if key in manifest.components or (root / key).is_dir():
            found.append(folder)
    if "lspServers" in manifest.document:
        found.append("lsp-servers")
    if manifest.user_config:
        found.append("user-config")
    if (root / "bin").is_dir():
        found.append("bin")
    return tuple(found)


class Claude(HostRules):
    name = "claude"
    manifest_files = (MANIFEST,)

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
        document = jsdoc.decode_object(_read(root, MANIFEST), problems, max_bytes=MANIFEST_MAX_BYTES, bom=True)
        problems.raise_if_any()
        assert document is not None
        manifest = check_manifest(document, problems)
        warnings = list(manifest.warnings)
        check_folder(root, manifest, problems, warnings)
        problems.raise_if_any()
        details = {"author": manifest.author, "components": {k: list(v) for k, v in manifest.components.items()},
                   "hooks": sorted(manifest.hooks or {}), "mcp_servers": list(manifest.mcp_servers),
                   "user_config": list(manifest.user_config)}
        return Judged(host=self.name, name=manifest.name, version=manifest.version, layout="directory",
                      kind="plugin", capabilities=capabilities(manifest, root), description=manifest.description,
                      warnings=tuple(warnings), document=manifest.document, details=details)
