"""Gemini CLI (google-gemini/gemini-cli): `gemini-extension.json` at the root of a folder of
`$GEMINI_CLI_HOME/.gemini/extensions/` (HOME when the variable is unset or empty), judged as
Gemini CLI 0.61's `extensions validate` and `extensions install` judge it.

Sources (read in the 0.61.0 npm bundle and at google-gemini/gemini-cli fad16266, docs/hosts.md):
`packages/cli/src/config/extension-manager.ts` (`loadExtensionConfig`, `validateName`,
`validateContextFilePath`, `installOrUpdateExtension`, `_buildExtension`, `loadExtensions`),
`packages/cli/src/commands/extensions/validate.ts` (`validateExtension`), `config/extensions/
consent.ts` (`extensionConsentString`), `config/extensions/variables.ts` (`hydrateString`) and
`packages/core/src/utils/paths.ts` (`homedir`). The verdicts of the real CLI on every input of
`tests/hosts/gemini/` are recorded beside it.

What this module decides is pure: bytes (or a decoded document) in, a `GeminiManifest` or
problems out; `Gemini.judge` adds what only the folder can say (context files).
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
from pkgmgr.hosts.jsdoc import js_trim, js_truthy, kind

MANIFEST = "gemini-extension.json"
INSTALL_RECORD = ".gemini-extension-install.json"  # Gemini's own install record in an installed folder
MANIFEST_MAX_BYTES = 1024 * 1024  # pkgmgr's bound: Gemini CLI reads any size
DEFAULT_CONTEXT = "GEMINI.md"
_NAME = re.compile(r"[a-zA-Z0-9-]+")  # validateName: /^[a-zA-Z0-9-]+$/ (ASCII only; `$` is the end of input)
# semver 7 `valid` (strict): an optional `v`, MAJOR.MINOR.PATCH without leading zeros, prerelease, build
_NUMERIC = r"(?:0|[1-9]\d*)"
_PRE_ID = r"(?:0|[1-9]\d*|\d*[a-zA-Z-][a-zA-Z0-9-]*)"
_SEMVER = re.compile(rf"v?{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(?:-{_PRE_ID}(?:\.{_PRE_ID})*)?"
                     r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?", re.ASCII)
_MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class GeminiManifest:
    """`gemini-extension.json` as Gemini CLI takes it (and as pkgmgr allows it)."""

    name: str
    version: str
    description: str = ""
    context_files: tuple[str, ...] = ()  # as written; empty: Gemini loads GEMINI.md when it exists
    mcp_servers: tuple[str, ...] = ()  # server names
    exclude_tools: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()  # the environment variables it asks for
    themes: int = 0
    warnings: tuple[str, ...] = ()
    document: dict[str, Any] = field(default_factory=dict)


# --- where ----------------------------------------------------------------------------------------


def gemini_home(environ: Mapping[str, str] | None = None) -> Path:
    """paths.ts `homedir`: $GEMINI_CLI_HOME when set and not empty (as written: a relative value
    is relative to the working directory), else the user's home."""
    environ = os.environ if environ is None else environ
    value = environ.get("GEMINI_CLI_HOME", "")
    return Path(value) if value else Path(os.path.expanduser("~"))


def extensions_folder(environ: Mapping[str, str] | None = None) -> Path:
    """`Storage.getExtensionsDir`: the one folder Gemini CLI loads extensions from (it has no
    project folder: a workspace only turns an extension on or off, in extension-enablement.json)."""
    return gemini_home(environ) / ".gemini" / "extensions"


# --- the rules ------------------------------------------------------------------------------------


def semver_valid(value: Any) -> bool:
    """semver 7 `valid(value)` (what `extensions validate` warns about): a string of at most 256
    characters that, trimmed, is a strict semantic version whose numbers fit a safe integer."""
    if not isinstance(value, str) or len(value) > 256:
        return False
    text = js_trim(value)
    if not _SEMVER.fullmatch(text):
        return False
    core = text.removeprefix("v").split("-", 1)[0].split("+", 1)[0]
    return all(int(part) <= _MAX_SAFE_INTEGER for part in core.split("."))


def _decode_uri_component(text: str) -> str | None:
    """JavaScript's decodeURIComponent, None where it throws (a `%` without two hex digits, or
    escapes that are not UTF-8)."""
    if "%" not in text:
        return text
    out = bytearray()
    index = 0
    while index < len(text):
        char = text[index]
        if char != "%":
            out += char.encode("utf-8", "surrogatepass")
            index += 1
            continue
        pair = text[index + 1:index + 3]
        if len(pair) != 2 or not all(c in "0123456789abcdefABCDEF" for c in pair):
            return None
        out.append(int(pair, 16))
        index += 3
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _win32_absolute(text: str) -> bool:
    """path.win32.isAbsolute: a leading separator, or a drive letter, a colon and a separator."""
    if text[:1] in ("/", "\\"):
        return True
    return len(text) > 2 and text[0].isascii() and text[0].isalpha() and text[1] == ":" and text[2] in "/\\"


def context_file_problem(value: Any) -> tuple[str, str] | None:
    """extension-manager.ts `validateContextFilePath` on one entry of `contextFileName`, without
    the folder: (code, why) when Gemini CLI refuses it, else None."""
    if not isinstance(value, str) or not js_trim(value):
        return Code.INVALID_MANIFEST, "must be a non-empty string"
    if "\x00" in value:
        return Code.INVALID_MANIFEST, "holds a NUL character"
    if value.startswith("/") or _win32_absolute(value):
        return Code.PATH_ESCAPES_ROOT, f"{value!r} is an absolute path: name a file inside the extension"
    decoded = _decode_uri_component(value)
    if ".." in value or (decoded is not None and ".." in decoded):
        return Code.PATH_ESCAPES_ROOT, (f"{value!r} holds '..' (Gemini CLI refuses any '..' in it, even inside a "
                                        "file name or %-encoded)")
    return None


def context_entries(value: Any) -> list[Any]:
    """`getContextFileNames` for validate: the entries of a truthy `contextFileName`."""
    if not js_truthy(value):
        return []
    return list(value) if isinstance(value, list) else [value]


# --- the manifest -----------------------------------------------------------------------------------


def decode_manifest(raw: bytes, problems: ProblemSink) -> dict[str, Any] | None:
    """The manifest's bytes through pkgmgr's strict bounded decoder (one JSON object, UTF-8
    without a byte order mark, as Node's JSON.parse refuses one). None (with problems) when it is
    not one."""
    return jsdoc.decode_object(raw, problems, max_bytes=MANIFEST_MAX_BYTES, bom=False,
                               why=" (Gemini CLI reads its name and version from one)")


def parse_manifest(raw: bytes) -> GeminiManifest:
    """`gemini-extension.json`'s bytes to the manifest Gemini CLI installs. Raises
    `ValidationFailed` (invalid_manifest, path_escapes_root) with every problem found."""
    problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
    document = decode_manifest(raw, problems)
    problems.raise_if_any()
    assert document is not None
    return check_manifest(document, problems)


def check_manifest(document: dict[str, Any], problems: ProblemSink) -> GeminiManifest:
    """The rules on a decoded manifest (Gemini CLI's, and pkgmgr's where it says so). Raises
    `ValidationFailed` with every problem found."""
    name = document.get("name")
    version = document.get("version")
    if not js_truthy(name):
        problems.add("name", "is required (Gemini CLI refuses a manifest without a name)")
    elif not isinstance(name, str):
        problems.add("name", f"must be a string, not {kind(name)} (Gemini CLI's install uses it as a folder name)")
    elif not _NAME.fullmatch(name):
        problems.add("name", f"{name!r} is not a Gemini extension name: only letters (a-z, A-Z), digits and "
                             "dashes are allowed")
    elif len(name) > 255:
        problems.add("name", "is longer than 255 characters: it cannot name a folder (Gemini CLI's install fails)")
    if not js_truthy(version):
        problems.add("version", "is required (Gemini CLI refuses a manifest without a version)")
    elif not isinstance(version, str):
        problems.add("version", f"must be a string, not {kind(version)} (pkgmgr's rule)")
    elif any(ord(c) < 0x20 or ord(c) == 0x7F for c in version):
        problems.add("version", "holds control characters (pkgmgr's rule)")
    context = document.get("contextFileName")
    for index, entry in enumerate(context_entries(context)):
        key = f"contextFileName[{index}]" if isinstance(context, list) else "contextFileName"
        found = context_file_problem(entry)
        if found:
            problems.add(key, found[1], code=found[0])
    servers = _mcp_servers(document.get("mcpServers"), problems)
    exclude = tuple(jsdoc.string_list(document, "excludeTools", problems, null_ok=True, rule=" (pkgmgr's rule)"))
    settings = _settings(document.get("settings"), problems)
    for key in ("description", "migratedTo"):
        if key in document and document[key] is not None and not isinstance(document[key], str):
            problems.add(key, f"must be a string, not {kind(document[key])} (pkgmgr's rule)")
    themes = document.get("themes")
    if themes is not None and not (isinstance(themes, list) and all(isinstance(t, dict) for t in themes)):
        problems.add("themes", "must be a list of objects (pkgmgr's rule)")
    plan = document.get("plan")
    if plan is not None and not isinstance(plan, dict):
        problems.add("plan", f"must be an object, not {kind(plan)} (pkgmgr's rule)")
    problems.raise_if_any()
    assert isinstance(name, str) and isinstance(version, str)
    warnings = () if semver_valid(version) else (
        f"version {version!r} is not a semantic version (Gemini CLI's validate warns; its updates compare "
        "versions as strings)",)
    return GeminiManifest(
        name=name, version=version, description=str(document.get("description") or ""),
        context_files=tuple(str(c) for c in context_entries(context)), mcp_servers=servers, exclude_tools=exclude,
        settings=settings, themes=len(themes) if isinstance(themes, list) else 0, warnings=warnings,
        document=document)


def _mcp_servers(value: Any, problems: ProblemSink) -> tuple[str, ...]:
    """`mcpServers`: Gemini's install prints each server (`server.command`, `server.args.join`),
    so a server that is not an object, or args that are not a list, fail its install; pkgmgr
    asks for an object of objects with string commands, URLs and args."""
    if value is None:
        return ()
    if not isinstance(value, dict):
        problems.add("mcpServers", f"must be an object of servers, not {kind(value)} (pkgmgr's rule)")
        return ()
    for server, config in value.items():
        key = f"mcpServers.{server}"
        if not isinstance(config, dict):
            problems.add(key, f"must be an object, not {kind(config)} (Gemini CLI's install fails on it)")
            continue
        args = config.get("args")
        if args is not None and not isinstance(args, list):
            problems.add(f"{key}.args", f"must be a list, not {kind(args)} (Gemini CLI's install fails on it)")
        elif isinstance(args, list):
            for index, arg in enumerate(args):
                if not isinstance(arg, str):
                    problems.add(f"{key}.args[{index}]", "must be a string (pkgmgr's rule)")
        for field_name in ("command", "httpUrl", "url", "cwd"):
            if config.get(field_name) is not None and not isinstance(config[field_name], str):
                problems.add(f"{key}.{field_name}", "must be a string (pkgmgr's rule)")
    return tuple(value)


def _settings(value: Any, problems: ProblemSink) -> tuple[str, ...]:
    """`settings`: what the extension asks the user for, each naming the environment variable
    Gemini stores its value in (extensionSettings.ts)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.add("settings", f"must be a list of objects, not {kind(value)} (pkgmgr's rule)")
        return ()
    names = []
    for index, item in enumerate(value):
        key = f"settings[{index}]"
        if not isinstance(item, dict):
            why = "Gemini CLI's install fails on it" if item is None else "pkgmgr's rule"
            problems.add(key, f"must be an object, not {kind(item)} ({why})")
            continue
        env = item.get("envVar")
        if not isinstance(env, str) or not env:
            problems.add(f"{key}.envVar", "is required: the environment variable the setting is stored in "
                                          "(pkgmgr's rule)")
        else:
            names.append(env)
        for field_name in ("name", "description"):
            if item.get(field_name) is not None and not isinstance(item[field_name], str):
                problems.add(f"{key}.{field_name}", "must be a string (pkgmgr's rule)")
    return tuple(names)


# --- the folder --------------------------------------------------------------------------------------


def read_manifest(root: Path) -> bytes:
    """The manifest's bytes through the bounded reader. Raises `ValidationFailed` when there is
    none to read."""
    return jsdoc.read_file(root / MANIFEST, file=MANIFEST, limit=MANIFEST_MAX_BYTES,
                           what="a Gemini extension carries it at its root")


def check_context_files(root: Path, manifest: GeminiManifest, problems: ProblemSink) -> None:
    """`extensions validate`: every named context file exists in the folder; pkgmgr's rule on top:
    it is a file, and inside the folder once links are followed."""
    base = os.path.realpath(root)
    for index, rel in enumerate(manifest.context_files):
        key = f"contextFileName[{index}]" if isinstance(manifest.document.get("contextFileName"), list) \
            else "contextFileName"
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            problems.add(key, f"{rel!r} is missing from the extension")
            continue
        resolved = os.path.realpath(path)
        if resolved != base and not resolved.startswith(base + os.sep):
            problems.add(key, f"{rel!r} resolves outside the extension (pkgmgr's rule)", code=Code.PATH_ESCAPES_ROOT)
        elif not os.path.isfile(resolved):
            problems.add(key, f"{rel!r} is not a file (pkgmgr's rule)")


def capabilities(manifest: GeminiManifest, root: Path) -> tuple[str, ...]:
    """What the extension brings into Gemini CLI, as its install consent shows it (consent.ts):
    MCP servers it runs, hooks, agent skills, excluded tools, context; and what it asks for."""
    found = []
    if manifest.mcp_servers:
        found.append("mcp-servers")
    if (root / "hooks" / "hooks.json").exists():
        found.append("hooks")
    if (root / "skills").is_dir():
        found.append("skills")
    if (root / "agents").is_dir():
        found.append("agents")
    if (root / "policies").is_dir():
        found.append("policies")
    if (root / "commands").is_dir():
        found.append("commands")
    if manifest.exclude_tools:
        found.append("exclude-tools")
    if manifest.context_files or (root / DEFAULT_CONTEXT).exists():
        found.append("context")
    if manifest.settings:
        found.append("settings")
    return tuple(found)


class Gemini(HostRules):
    name = "gemini"
    manifest_files = (MANIFEST,)

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
        document = decode_manifest(read_manifest(root), problems)
        problems.raise_if_any()
        assert document is not None
        manifest = check_manifest(document, problems)
        check_context_files(root, manifest, problems)
        problems.raise_if_any()
        details = {"mcp_servers": list(manifest.mcp_servers), "exclude_tools": list(manifest.exclude_tools),
                   "context_files": list(manifest.context_files) or [DEFAULT_CONTEXT],
                   "settings": list(manifest.settings), "themes": manifest.themes}
        return Judged(host=self.name, name=manifest.name, version=manifest.version, layout="directory",
                      kind="extension", capabilities=capabilities(manifest, root),
                      description=manifest.description, warnings=manifest.warnings, document=manifest.document,
                      details=details)
