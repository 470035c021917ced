"""Claude Code plugins: `.claude-plugin/plugin.json` in a plugin folder, judged as Claude Code
2.1's `claude plugin validate` and its install and load judge it.

Claude Code is closed source: every rule here was observed from the real CLI (npm
`@anthropic-ai/claude-code`), and its verdicts on every input of `tests/hosts/claude/` are
recorded beside it; its plugin reference pages (the manifest reference, the components page,
the hooks reference) name the fields. A plugin is loaded only through a marketplace Claude Code
knows (docs/hosts.md): this module knows the plugin, not the marketplace.

The rules are pure: bytes (or a decoded document) in, a `ClaudeManifest` or problems out;
`Claude.judge` adds what only the folder can say (component paths and files). The host (`Claude`,
a `FolderHost`) keeps one directory marketplace of pkgmgr's own per scope (`<scope root>/claude/`,
its plugins in `plugins/<name>/`, read in place by Claude) and writes Claude's records as Claude
writes them: the marketplace in `known_marketplaces.json` (and the user settings'
`extraKnownMarketplaces`), each install in `installed_plugins.json`, its enabled state in the
settings file of its Claude scope (`enabledPlugins`); a settings file is edited member by member,
every other byte kept (`hosts.jsonedit`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError, ProblemSink, io_error
from pkgmgr.hosts import jsdoc
from pkgmgr.hosts.base import FolderHost, Found, Judged
from pkgmgr.hosts.jsdoc import kind
from pkgmgr.hosts.port import Claim

if TYPE_CHECKING:
    from pkgmgr.hosts.jsonedit import Document
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

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


# --- where: pkgmgr's directory marketplace of a scope, and Claude's records -----------------------------

MARKET_FOLDER = "claude"  # in a pkgmgr scope's root: the marketplace of that scope
MARKET_FILE = ".claude-plugin/marketplace.json"
GLOBAL_MARKET = "pkgmgr"  # the marketplace name of the global scope (a workspace's: pkgmgr-<id>)
RUNTIME = (".in_use", ".in_use-links", ".orphaned_at")  # what Claude Code writes in a plugin folder while it runs
RECORDS_MAX_BYTES = 16 * 1024 * 1024  # pkgmgr's bound on Claude's records and settings files
OWNER = {"name": "pkgmgr"}


@dataclass(frozen=True)
class Place:
    """Where one pkgmgr scope's plugins are for Claude Code: pkgmgr's marketplace folder and its
    name, the Claude scope its installs are recorded at (`user`; a workspace's `local`) and, for
    `local`, the project."""

    market: Path
    name: str
    scope: str
    project: Path | None = None

    @property
    def plugins(self) -> Path:
        return self.market / "plugins"

    def plugin_id(self, plugin: str) -> str:
        return f"{plugin}@{self.name}"

    def settings(self, config: Path) -> Path:
        """The settings file holding this scope's `enabledPlugins`."""
        if self.project is None:
            return config / "settings.json"
        return self.project / ".claude" / "settings.local.json"

    def entry_matches(self, entry: Any) -> bool:
        """An `installed_plugins.json` entry of this scope (and project)."""
        if not isinstance(entry, dict) or entry.get("scope") != self.scope:
            return False
        return self.project is None or entry.get("projectPath") == str(self.project)


def place_of(scope: Scope) -> Place:
    """The place of pkgmgr's plugins for `scope`: `<root>/claude/`, marketplace `pkgmgr` (global)
    or `pkgmgr-<first 8 hex of the workspace's store id>` at Claude's `local` scope."""
    market = Path(os.path.abspath(scope.root / MARKET_FOLDER))
    if scope.kind == "workspace":
        assert scope.workspace is not None
        return Place(market, f"{GLOBAL_MARKET}-{scope.root.name[:8]}", "local", Path(os.path.abspath(scope.workspace)))
    return Place(market, GLOBAL_MARKET, "user")


def iso_now() -> str:
    """A timestamp as Claude writes one (`new Date().toISOString()`)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _records_error(path: Path, why: str) -> PkgmgrError:
    return PkgmgrError(f"{path}: Claude Code's file {why}; pkgmgr does not write over a file it cannot read",
                       code=Code.INVALID_CONFIG, path=str(path), hint="repair or move the file (Claude Code refuses it "
                                                                      "too), then run the command again")


def read_document(path: Path) -> Document:
    """A JSON object file of Claude's (its records, a settings file), bounded; a link followed (a
    settings file kept in a dotfiles repository), an empty document when there is none. Raises
    `invalid_config` for one that is not a regular file or not one JSON object, `io_error` for one
    that cannot be read (permission denied, a failing device: SPEC 11)."""
    from pkgmgr.hosts.jsonedit import Document, EditError, read_raw

    raw = read_raw(path, max_bytes=RECORDS_MAX_BYTES, refuse=lambda why: _records_error(path, why),
                   follow_symlinks=True)
    try:
        return Document.parse(raw, max_bytes=RECORDS_MAX_BYTES)
    except EditError as exc:
        raise _records_error(path, str(exc)) from None


def write_document(path: Path, document: Document, before: bytes | None = None) -> None:
    """`document` written through a temporary file and a rename (to the file a link names), its
    mode kept (0644 for a new one); nothing when its bytes are `before`."""
    from pkgmgr.fsutil import atomic_write_bytes

    data = document.bytes()
    if data == before:
        return
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    real.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(real, data, mode=mode)


def _edit(path: Path, change: Any, *, final_newline: bool = True) -> None:
    """Read `path`, apply `change(document)` (raising EditError where a member on the way is not
    an object), write it when it changed."""
    from pkgmgr.hosts.jsonedit import EditError

    document = read_document(path)
    before = document.bytes()
    fresh = not before
    try:
        change(document)
    except EditError as exc:
        raise _records_error(path, str(exc)) from None
    if fresh and not final_newline:
        document.text = document.text.rstrip("\n")
    write_document(path, document, before)


class Records:
    """Claude Code's records of pkgmgr's plugins in one place (`config`: $CLAUDE_CONFIG_DIR)."""

    def __init__(self, place: Place, config: Path | None = None) -> None:
        self.place = place
        self.config = config if config is not None else claude_config_dir()

    @property
    def known(self) -> Path:
        return self.config / "plugins" / "known_marketplaces.json"

    @property
    def installed(self) -> Path:
        return self.config / "plugins" / "installed_plugins.json"

    @property
    def settings(self) -> Path:
        return self.place.settings(self.config)

    # --- the marketplace --------------------------------------------------------------------------

    def market_plugins(self) -> list[dict[str, Any]]:
        """The plugins pkgmgr's marketplace.json lists (none when it has none, or when it is not
        JSON: `write_market` rewrites it whole). Raises `io_error` for one that cannot be read
        (permission denied, a failing device): never rewritten without the plugins it lists."""
        import json

        from pkgmgr.fsutil import read_regular

        path = self.place.market / MARKET_FILE
        try:
            value = json.loads(read_regular(path, limit=RECORDS_MAX_BYTES))
        except OSError as exc:
            disk = io_error(exc, path)
            if disk is not None:
                raise disk from None
            return []
        except ValueError:
            return []
        plugins = value.get("plugins") if isinstance(value, dict) else None
        return [p for p in plugins if isinstance(p, dict) and isinstance(p.get("name"), str)] \
            if isinstance(plugins, list) else []

    def write_market(self, plugins: dict[str, dict[str, Any]]) -> None:
        """pkgmgr's own marketplace.json, written whole: its name, owner and plugins by name."""
        import json

        from pkgmgr.fsutil import atomic_write_bytes

        document = {"name": self.place.name, "owner": OWNER, "description": "Plugins installed by pkgmgr",
                    "plugins": [plugins[name] for name in sorted(plugins)]}
        (self.place.market / ".claude-plugin").mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.place.market / MARKET_FILE,
                           (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))

    def list_plugin(self, name: str, description: str) -> None:
        plugins = {p["name"]: p for p in self.market_plugins()}
        entry: dict[str, Any] = {"name": name, "source": f"./plugins/{name}"}
        if description:
            entry["description"] = description
        if plugins.get(name) != entry or not os.path.isfile(self.place.market / MARKET_FILE):
            self.write_market(plugins | {name: entry})

    def unlist_plugin(self, name: str) -> None:
        plugins = {p["name"]: p for p in self.market_plugins()}
        if name in plugins:
            del plugins[name]
            self.write_market(plugins)

    def register(self) -> None:
        """The marketplace known to Claude, as `claude plugin marketplace add DIR` records it:
        `known_marketplaces.json` (and, for the user scope, the user settings'
        `extraKnownMarketplaces`); an entry that already says so is left as it is."""
        source = {"source": "directory", "path": str(self.place.market)}

        def known(document: Document) -> None:
            entry = document.value.get(self.place.name)
            if not (isinstance(entry, dict) and entry.get("source") == source
                    and entry.get("installLocation") == str(self.place.market)):
                document.set((self.place.name,), {"source": source, "installLocation": str(self.place.market),
                                                   "lastUpdated": iso_now()})

        _edit(self.known, known, final_newline=False)
        if self.place.project is None:
            def extra(document: Document) -> None:
                if document.get(("extraKnownMarketplaces", self.place.name)) != {"source": source}:
                    document.set(("extraKnownMarketplaces", self.place.name), {"source": source})

            _edit(self.config / "settings.json", extra)

    # --- installed_plugins.json ---------------------------------------------------------------------

    def _installed_document(self) -> Document:
        document = read_document(self.installed)
        if document.value and (document.value.get("version") != 2 or not isinstance(document.value.get("plugins"),
                                                                                     dict)):
            raise _records_error(self.installed, "is not the version 2 format this pkgmgr writes")
        return document

    def entries(self, plugin: str) -> list[Any]:
        value = self._installed_document().get(("plugins", self.place.plugin_id(plugin)))
        return value if isinstance(value, list) else []

    def entry(self, plugin: str) -> dict[str, Any] | None:
        return next((e for e in self.entries(plugin) if self.place.entry_matches(e)), None)

    def record(self, plugin: str, version: str, *, keep_installed_at: bool) -> None:
        """The install's entry (this scope's, and project's) added or replaced; on an update the
        first install's `installedAt` is kept."""
        document = self._installed_document()
        before = document.bytes()
        plugin_id = self.place.plugin_id(plugin)
        entries = document.get(("plugins", plugin_id))
        entries = list(entries) if isinstance(entries, list) else []
        old = next((e for e in entries if self.place.entry_matches(e)), None)
        now = iso_now()
        entry: dict[str, Any] = {"scope": self.place.scope, "installPath": str(self.place.plugins / plugin),
                                 "version": version or "unknown",
                                 "installedAt": old.get("installedAt", now) if old and keep_installed_at else now,
                                 "lastUpdated": now}
        if self.place.project is not None:
            entry["projectPath"] = str(self.place.project)
        if old is not None and {k: v for k, v in old.items() if k != "lastUpdated"} == \
                {k: v for k, v in entry.items() if k != "lastUpdated"}:
            return
        entries = [entry if e is old else e for e in entries] if old is not None else [*entries, entry]
        if not document.value:
            document.set(("version",), 2, final_newline=False)
            document.text = document.text.rstrip("\n")
        if not isinstance(document.get(("plugins",)), dict):
            document.set(("plugins",), {})
        document.set(("plugins", plugin_id), entries)
        write_document(self.installed, document, before)

    def unrecord(self, plugin: str) -> None:
        document = self._installed_document()
        before = document.bytes()
        plugin_id = self.place.plugin_id(plugin)
        entries = document.get(("plugins", plugin_id))
        if not isinstance(entries, list):
            return
        kept = [e for e in entries if not self.place.entry_matches(e)]
        if kept:
            document.set(("plugins", plugin_id), kept)
        else:
            document.remove(("plugins", plugin_id))
        write_document(self.installed, document, before)

    # --- enabledPlugins ---------------------------------------------------------------------------------

    def enabled(self, plugin: str) -> bool | None:
        value = read_document(self.settings).get(("enabledPlugins", self.place.plugin_id(plugin)))
        return value if isinstance(value, bool) else None

    def set_enabled(self, plugin: str, enabled: bool | None) -> None:
        """`enabledPlugins["P@M"]` of this scope's settings file set (None: removed)."""
        plugin_id = self.place.plugin_id(plugin)
        if enabled is None:
            _edit(self.settings, lambda document: document.remove(("enabledPlugins", plugin_id)))
        else:
            _edit(self.settings, lambda document: document.set(("enabledPlugins", plugin_id), enabled))

    # --- all of them -----------------------------------------------------------------------------------

    def check(self) -> None:
        """Every file `put` and `drop` edit can be read and edited (`invalid_config` naming the
        first that cannot), before anything is written."""
        self._installed_document()
        for path, members in ((self.known, ()), (self.config / "settings.json", ("extraKnownMarketplaces",)),
                              (self.settings, ("enabledPlugins",))):
            document = read_document(path)
            for member in members:
                if member in document.value and not isinstance(document.value[member], dict):
                    raise _records_error(path, f"has a {member} that is not an object")

    def put(self, plugin: str, version: str, description: str, *, enabled: bool | None, update: bool) -> None:
        """Every record of an install, in the order that never shows Claude an enabled plugin it
        cannot load: the marketplace known and listing it, the install's entry, then its enabled
        state (`enabled` None: left as it is)."""
        self.check()
        self.register()
        self.list_plugin(plugin, description)
        self.record(plugin, version, keep_installed_at=update)
        if enabled is not None:
            self.set_enabled(plugin, enabled)

    def drop(self, plugin: str) -> None:
        """What Claude's uninstall drops (its enabled state, its entry), then pkgmgr's listing."""
        self.check()
        self.set_enabled(plugin, None)
        self.unrecord(plugin)
        self.unlist_plugin(plugin)


# --- the host ---------------------------------------------------------------------------------------


class Claude(FolderHost):
    """Claude Code: each pkgmgr scope's plugins in pkgmgr's own directory marketplace, read in
    place by Claude (no cache copy), recorded in Claude's files at its `user` scope (global) or
    `local` scope (a workspace: the project's `.claude/settings.local.json`, which Claude keeps out
    of git)."""

    name = "claude"
    title = "Claude Code"
    manifest_files = (MANIFEST,)
    templates = ("plugin",)
    entry_label = "brings"
    runtime_files = RUNTIME
    forgets_first = True  # its uninstall drops the records and leaves the folder: never a record of a missing one
    link_records = True  # a plugin pkgmgr's marketplace does not list, with no install entry, is not loaded

    def __init__(self) -> None:
        self._places: dict[Path, Place] = {}

    # --- where -------------------------------------------------------------------------------------

    def home(self) -> Path:
        return claude_config_dir()

    def folder_of(self, scope: Scope) -> Path:
        place = place_of(scope)
        self._places[place.plugins] = place
        return place.plugins

    def folder(self, scope: str, project: Path | None) -> Path:
        raise RuntimeError("Claude Code's folder is a pkgmgr scope's marketplace: ask folder_of(scope)")

    def place(self, folder: Path) -> Place:
        """The place whose plugins folder is `folder` (`folder_of` named it first)."""
        return self._places[folder]

    def place_of_record(self, record: Installed) -> Place:
        """The place of an install, from its record: its marketplace folder, and for a workspace
        the project Claude's entry of it names."""
        plugins = Path(record.path).parent
        if plugins in self._places:
            return self._places[plugins]
        market = plugins.parent
        if record.scope != "workspace":
            return Place(market, GLOBAL_MARKET, "user")
        name = f"{GLOBAL_MARKET}-{market.parent.name[:8]}"
        probe = Records(Place(market, name, "local"))
        try:
            entries = probe.entries(record.name)
        except PkgmgrError:
            entries = []
        project = next((e.get("projectPath") for e in entries
                        if isinstance(e, dict) and e.get("scope") == "local" and isinstance(e.get("projectPath"), str)),
                       None)
        return Place(market, name, "local", Path(project) if project else None)

    def homes(self, global_root: Path, workspace_root: Path | None, project: Path | None) -> dict[str, Path | None]:
        return {"global": Path(os.path.abspath(global_root / MARKET_FOLDER / "plugins")),
                "project": Path(os.path.abspath(workspace_root / MARKET_FOLDER / "plugins"))
                if workspace_root is not None and project is not None else None}

    def claim(self, level: Path, files: frozenset[str]) -> Claim | None:
        return Claim(MANIFEST) if MANIFEST in files else None

    def scan(self, folder: Path) -> list[Found]:
        """The plugins of pkgmgr's marketplace folder: each directory holding a plugin.json."""
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [Found(e.name, Path(e.path), "directory") for e in entries
                if e.is_dir(follow_symlinks=False) and os.path.exists(os.path.join(e.path, MANIFEST))]

    # --- what -----------------------------------------------------------------------------------------

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
        found = capabilities(manifest, root)
        return Judged(host=self.name, name=manifest.name, version=manifest.version, layout="directory",
                      kind="plugin", entry=", ".join(found), capabilities=found, description=manifest.description,
                      warnings=tuple(warnings), document=manifest.document, details=details)

    def kind_of(self, record: Installed) -> str:
        return "plugin"

    def checksum(self, path: Path) -> tuple[str, dict[str, str]]:
        """The tree without what Claude Code writes into a plugin folder while it runs."""
        from pkgmgr.hosts.mechanics import tree_checksum

        return tree_checksum(path, leave_out=self.runtime_files)

    # --- Claude's records ------------------------------------------------------------------------------

    def claimed_by_records(self, folder: Path, name: str) -> Path | None:
        """Claude records an install of `name` from pkgmgr's marketplace at this scope that pkgmgr
        has no row of: `claude plugin install` of a plugin pkgmgr once listed."""
        records = Records(self.place(folder))
        return records.installed if records.entry(name) is not None else None

    def record_install(self, folder: Path, judged: Judged, source: str, staged: Path, *, enabled: bool,
                       replacing: bool) -> None:
        """Before the tree is in place, only what Claude does not load by itself: every file checked
        editable, the marketplace known and listing the plugin (a listed plugin without an install
        entry is not loaded)."""
        records = Records(self.place(folder))
        records.check()
        records.register()
        records.list_plugin(judged.name, judged.description)

    def record_switched(self, folder: Path, judged: Judged, *, enabled: bool, replacing: bool) -> None:
        """Once the tree is in place: the install's entry, then its enabled state (an update
        leaves that as Claude has it), so Claude never lists an enabled plugin it cannot load."""
        Records(self.place(folder)).put(judged.name, judged.version, judged.description,
                                        enabled=None if replacing else enabled, update=replacing)

    def forget(self, folder: Path, name: str) -> None:
        Records(self.place(folder)).drop(name)

    def settle(self, folder: Path, record: Installed | None, name: str, host_records: dict[str, Any] | None = None,
               ) -> None:
        records = Records(self.place(folder))
        if record is None:
            if not os.path.lexists(folder / name):
                records.drop(name)
            return
        records.put(name, record.version, str(record.manifest.get("description") or ""), enabled=record.enabled,
                    update=True)

    def observed(self, record: Installed) -> Installed:
        """Claude's own `disable`, `enable` and `uninstall` change its records: enabled is what
        Claude would load (an entry of the install, and `enabledPlugins` true)."""
        try:
            records = Records(self.place_of_record(record))
            enabled = records.entry(record.name) is not None and records.enabled(record.name) is True
        except PkgmgrError:
            return record
        return record if enabled == record.enabled else record.with_changes(enabled=enabled)

    def adopt(self, scope: Scope, names: list[str], *, force: bool = False) -> list[Installed]:
        """Plugins of pkgmgr's own marketplace folder with no row (only a crash leaves one); another
        marketplace's plugin is Claude's: pkgmgr cannot take it without changing its id."""
        from pkgmgr.hosts.folder import adopt

        folder = self.folder_of(scope)
        present = {found.name for found in self.scan(folder)}
        for name in names:
            if name not in present:
                _refuse_foreign(name)
        return adopt(scope, self, names, force=force)

    def scaffold(self, name: str, template: str) -> dict[str, str]:
        """A plugin.json and one slash command (`/<name>:hello`)."""
        import json

        refusals, warnings = name_problems(name)
        if refusals or warnings:
            raise PkgmgrError(f"{name!r} cannot name a Claude Code plugin: {(refusals or warnings)[0]}",
                              code=Code.USAGE)
        manifest = {"name": name, "version": "0.1.0", "description": f"The {name} plugin",
                    "author": {"name": "Your Name"}}
        command = ("---\ndescription: Say hello\n---\n\n"
                   f"Greet the user on behalf of the {name} plugin.\n")
        return {MANIFEST: json.dumps(manifest, indent=2) + "\n", "commands/hello.md": command,
                "README.md": f"# {name}\n\nA Claude Code plugin: 'claude plugin list' shows it once installed.\n"}


def _refuse_foreign(name: str) -> None:
    """`name` installed by Claude from another marketplace: say so (usage), else nothing."""
    try:
        document = read_document(claude_config_dir() / "plugins" / "installed_plugins.json")
    except PkgmgrError:
        return
    plugins = document.get(("plugins",))
    ids = sorted(i for i in plugins if i.rpartition("@")[0] == name) if isinstance(plugins, dict) else []
    if ids:
        raise PkgmgrError(f"{ids[0]} is Claude Code's install from its marketplace {ids[0].rpartition('@')[2]}: pkgmgr "
                          "keeps plugins in a marketplace of its own, and cannot take another's without changing "
                          "its id", code=Code.USAGE,
                          hint=f"'claude plugin uninstall {ids[0]}' removes Claude's install; then install the plugin "
                               "with pkgmgr from its source")
