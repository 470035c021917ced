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

The rules are pure: bytes (or a decoded document) in, a `GeminiManifest` or problems out;
`Gemini.judge` adds what only the folder can say (context files). The host (`Gemini`, a
`FolderHost`) installs into Gemini's one extensions folder and writes Gemini's own records as
Gemini writes them (`extensions/extension-enablement.json`, `extensionEnablement.ts`, and each
folder's `.gemini-extension-install.json`), never its signed `extension_integrity.json`.
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
from pkgmgr.hosts.jsdoc import js_trim, js_truthy, kind
from pkgmgr.hosts.port import Change, Changed, Claim

if TYPE_CHECKING:
    from pkgmgr.archive import TreeRecord
    from pkgmgr.config import Config
    from pkgmgr.hosts.jsonedit import Document
    from pkgmgr.hosts.port import Options, Prepared, Source
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

MANIFEST = "gemini-extension.json"
INSTALL_RECORD = ".gemini-extension-install.json"  # Gemini's own install record in an installed folder
MANIFEST_MAX_BYTES = 1024 * 1024  # pkgmgr's bound: Gemini CLI reads any size
DEFAULT_CONTEXT = "GEMINI.md"
ENABLEMENT = "extension-enablement.json"  # in the extensions folder: extensionEnablement.ts
ENABLEMENT_MAX_BYTES = 4 * 1024 * 1024  # pkgmgr's bound on Gemini's enablement file
SETTINGS_VALUES = ".env"  # an installed extension's settings values (extensionSettings.ts): runtime
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


def home_text(environ: Mapping[str, str] | None = None) -> str:
    """paths.ts `homedir` as Gemini CLI has it: $GEMINI_CLI_HOME when set and not empty, as
    written, else the user's home (`os.homedir()`: $HOME). Its user-scope enablement rules are
    written with this text."""
    environ = os.environ if environ is None else environ
    return environ.get("GEMINI_CLI_HOME", "") or os.path.expanduser("~")


def gemini_home(environ: Mapping[str, str] | None = None) -> Path:
    """`homedir()` as a path (a relative $GEMINI_CLI_HOME is relative to the working directory)."""
    return Path(home_text(environ))


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


# --- enablement: extensionEnablement.ts, ported rule by rule ----------------------------------------

_JS_DOT = "[^\n\r\u2028\u2029]"  # what JavaScript's `.` matches (no `s` flag)


def _slashes(path: str) -> str:
    """`ensureLeadingAndTrailingSlash`: backslashes made forward, one `/` first and last."""
    result = path.replace("\\", "/")
    if not result.startswith("/"):
        result = "/" + result
    if not result.endswith("/"):
        result += "/"
    return result


def glob_to_regex(glob: str) -> re.Pattern[str]:
    """`globToRegex`: the regex characters escaped, then each `*` (and the `/` before it) made an
    optional group of anything; matched against the whole text."""
    escaped = re.sub(r"[.+?^${}()|\[\]\\]", lambda m: "\\" + m.group(0), glob)
    return re.compile(re.sub(r"(/?)\*", lambda m: f"({m.group(1)}{_JS_DOT}*)?", escaped))


@dataclass(frozen=True)
class Override:
    """One rule of an extension's `overrides`: a base path, enable or disable, with subfolders."""

    base: str
    disable: bool
    subdirs: bool

    @classmethod
    def from_input(cls, rule: str, subdirs: bool) -> Override:
        disable = rule.startswith("!")
        return cls(_slashes(rule[1:] if disable else rule), disable, subdirs)

    @classmethod
    def from_file_rule(cls, rule: str) -> Override:
        disable = rule.startswith("!")
        base = rule[1:] if disable else rule
        subdirs = base.endswith("*")
        return cls(base[:-1] if subdirs else base, disable, subdirs)

    def conflicts_with(self, other: Override) -> bool:
        return self.base == other.base and (self.subdirs != other.subdirs or self.disable != other.disable)

    def regex(self) -> re.Pattern[str]:
        return glob_to_regex(self.base + ("*" if self.subdirs else ""))

    def is_child_of(self, parent: Override) -> bool:
        return parent.subdirs and parent.regex().fullmatch(self.base) is not None

    def output(self) -> str:
        return ("!" if self.disable else "") + self.base + ("*" if self.subdirs else "")

    def matches(self, path: str) -> bool:
        return self.regex().fullmatch(path) is not None


def toggled(rules: list[str], scope_path: str, *, enabled: bool) -> list[str]:
    """ExtensionEnablementManager `enable`/`disable(name, true, scopePath)` on one extension's
    rules: the rules for the same base path, equal ones and the new rule's children dropped, the
    new rule appended."""
    new = Override.from_input(scope_path if enabled else "!" + scope_path, True)
    kept = []
    for rule in rules:
        old = Override.from_file_rule(rule)
        if old.conflicts_with(new) or old == new or old.is_child_of(new):
            continue
        kept.append(rule)
    return [*kept, new.output()]


def is_enabled(rules: list[str], current_path: str) -> bool:
    """`isEnabled(name, currentPath)`: enabled unless the last rule matching the path disables it."""
    enabled = True
    path = _slashes(current_path)
    for rule in rules:
        override = Override.from_file_rule(rule)
        if override.matches(path):
            enabled = not override.disable
    return enabled


def _enablement_error(path: Path, why: str) -> PkgmgrError:
    return PkgmgrError(f"{path}: Gemini CLI's extension enablement file {why}; pkgmgr does not write over a file it "
                       "cannot read (Gemini CLI would ignore it and write it anew, losing every extension's rules)",
                       code=Code.INVALID_CONFIG, path=str(path),
                       hint="repair or move the file, then run the command again")


def read_enablement(folder: Path) -> Document:
    """`extension-enablement.json` of the extensions folder `folder`: an empty document when there
    is none. Raises `invalid_config` for a file Gemini CLI could not read (not JSON, not an object
    of `{"overrides": [strings]}`) or that is not a regular file."""
    from pkgmgr.hosts.jsonedit import Document, EditError, read_raw

    path = folder / ENABLEMENT
    raw = read_raw(path, max_bytes=ENABLEMENT_MAX_BYTES, refuse=lambda why: _enablement_error(path, why))
    if raw.startswith(jsdoc.UTF8_BOM):
        raise _enablement_error(path, "starts with a byte order mark (Node's JSON.parse refuses it)")
    try:
        document = Document.parse(raw, max_bytes=ENABLEMENT_MAX_BYTES)
    except EditError as exc:
        raise _enablement_error(path, str(exc)) from None
    for name, entry in document.value.items():
        rules = entry.get("overrides") if isinstance(entry, dict) else None
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise _enablement_error(path, f"has an entry {name!r} that is not {{\"overrides\": [rules]}}")
    return document


def rules_of(document: Document, name: str) -> list[str]:
    entry = document.value.get(name)
    return list(entry["overrides"]) if isinstance(entry, dict) else []


def write_enablement(folder: Path, document: Document) -> None:
    """The file written whole through a temporary file and a rename (Gemini writes it in place),
    its mode kept (0644 for a new one, as Gemini's writeFileSync leaves it)."""
    from pkgmgr.fsutil import atomic_write_bytes

    path = folder / ENABLEMENT
    try:
        mode = os.stat(path, follow_symlinks=False).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, document.bytes(), mode=mode)


def set_rules(folder: Path, name: str, *, enabled: bool | None, scope_path: str) -> None:
    """Gemini's `enable`/`disable` of `name` for `scope_path` (None: `remove`, its uninstall),
    written when it changes the file; every other entry keeps its bytes."""
    document = read_enablement(folder)
    if enabled is None:
        if document.remove((name,)):
            write_enablement(folder, document)
        return
    rules = toggled(rules_of(document, name), scope_path, enabled=enabled)
    before = document.bytes()
    if name in document.value:
        document.set((name, "overrides"), rules)
    else:
        document.set((name,), {"overrides": rules}, final_newline=False)
    if document.bytes() != before:
        write_enablement(folder, document)


# --- the install record ---------------------------------------------------------------------------------


def install_record(target: Path) -> bytes:
    """`.gemini-extension-install.json` as pkgmgr writes it into `target`: Gemini's local install
    record (`JSON.stringify(installMetadata, null, 2)`, no final newline) whose source is the
    installed folder itself, so Gemini's `extensions update` finds it up to date and its
    settings keep one extension id across pkgmgr's updates."""
    import json

    return json.dumps({"source": str(target), "type": "local"}, indent=2, ensure_ascii=False).encode("utf-8")


def link_record(source: Path) -> bytes:
    """`.gemini-extension-install.json` as `gemini extensions link PATH` writes it: the absolute
    path of the working folder and the type `link` (`JSON.stringify(installMetadata, null, 2)`)."""
    import json

    return json.dumps({"source": str(source), "type": "link"}, indent=2, ensure_ascii=False).encode("utf-8")


def linked_source(folder: Path) -> str | None:
    """The working folder a folder of the extensions folder links to (its install record of type
    `link`), None when it is no link."""
    import json

    raw = _install_record(folder)
    try:
        record = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    if isinstance(record, dict) and record.get("type") == "link" and isinstance(record.get("source"), str):
        return str(record["source"])
    return None


def _is_own_record(folder: Path) -> bool:
    return _install_record(folder) == install_record(folder)


def _install_record(folder: Path) -> bytes | None:
    """The bytes of the install record in `folder` (bounded), None when there is none or it is no
    regular file. Raises the OSError of one that cannot be read (permission denied, a failing
    device: `io_error`, SPEC 11, where it is caught), never taken for a record that is not there."""
    from pkgmgr.fsutil import read_regular

    try:
        return read_regular(folder / INSTALL_RECORD, limit=64 * 1024)
    except OSError as exc:
        if io_error(exc) is not None:
            raise  # io_error where it is caught (a writer names its scope, not a staging path)
        return None


def _refuse_link(found: Found) -> None:
    """A linked extension (`gemini extensions link`) has no tree of its own to take."""
    source = linked_source(found.path)
    if source is not None:
        raise PkgmgrError(f"{found.path} is a link Gemini CLI made to {source}: pkgmgr cannot own a tree that lives "
                          "elsewhere", code=Code.USAGE,
                          hint=f"'gemini extensions uninstall {found.name}', then "
                               f"'pkgmgr ext install {source} --allow-unverified' installs a copy pkgmgr manages")


def manifest_name(folder: Path) -> str | None:
    """The name the manifest of `folder` gives, None when it has no readable one."""
    try:
        problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
        document = decode_manifest(read_manifest(folder), problems)
    except PkgmgrError:
        return None
    name = (document or {}).get("name")
    return name if isinstance(name, str) else None


# --- Gemini's own trust: its allow-list of extension sources (its signed integrity records: docs/hosts.md) ---

SETTINGS = "settings.json"
SETTINGS_MAX_BYTES = 4 * 1024 * 1024  # pkgmgr's bound on Gemini's settings files


def _strip_json_comments(text: str) -> str:
    """strip-json-comments (what Gemini CLI's settings loader runs before JSON.parse): `//` and
    `/* */` comments outside strings replaced by spaces."""
    out, index, size = [], 0, len(text)
    while index < size:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < size and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index:end + 1])
            index = end + 1
        elif text.startswith("//", index):
            end = text.find("\n", index)
            end = size if end < 0 else end
            out.append(" " * (end - index))
            index = end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            end = size if end < 0 else end + 2
            out.append(re.sub(r"[^\r\n]", " ", text[index:end]))
            index = end
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _json_file(path: Path, *, comments: bool = False) -> Any:
    """A JSON file of Gemini's, bounded; None when it is missing or cannot be read as JSON (Gemini
    reports such a file and goes on without it)."""
    from pkgmgr.documents import MAX_DEPTH, DocumentError, parse_json
    from pkgmgr.fsutil import read_regular

    try:
        text = read_regular(path, limit=SETTINGS_MAX_BYTES, follow_symlinks=True).decode("utf-8")  # as Gemini reads it
        return parse_json(_strip_json_comments(text) if comments else text, max_depth=MAX_DEPTH)
    except (OSError, ValueError, DocumentError):
        return None


def settings_paths(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Gemini CLI's settings files that can set a security setting, the one that wins first
    (settings.ts `mergeSettings`: system settings over the user's over the system defaults; a
    workspace's own settings, read only in the folder Gemini runs in, left out)."""
    environ = os.environ if environ is None else environ
    system = Path(environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or "/etc/gemini-cli/settings.json")
    defaults = Path(environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or system.parent / "system-defaults.json")
    return [system, gemini_home(environ) / ".gemini" / SETTINGS, defaults]


def allowed_extensions(environ: Mapping[str, str] | None = None) -> tuple[list[str], Path] | None:
    """`security.allowedExtensions` as Gemini CLI merges it (a list replaces the one below it) and
    the file that sets it; None when no file does."""
    for path in settings_paths(environ):
        document = _json_file(path, comments=True)
        security = document.get("security") if isinstance(document, dict) else None
        if isinstance(security, dict) and isinstance(security.get("allowedExtensions"), list):
            return [p for p in security["allowedExtensions"] if isinstance(p, str)], path
    return None


def check_allowed(name: str, source: Path, environ: Mapping[str, str] | None = None) -> None:
    """Refuse an install Gemini CLI would not load: with a non-empty `security.allowedExtensions`,
    Gemini loads an extension only when one pattern (a regular expression) matches the real path of
    its install record's `source` — for pkgmgr's installs the installed folder itself, for a link
    the working folder (extension-manager.ts `_buildExtension`). A pattern Python cannot read as a
    regular expression is not judged (JavaScript's syntax differs)."""
    found = allowed_extensions(environ)
    if found is None or not found[0]:
        return
    patterns, path = found
    real = os.path.realpath(source)
    for pattern in patterns:
        try:
            if re.search(pattern, real):
                return
        except re.error:
            return  # not a pattern pkgmgr can judge: Gemini decides
    raise PkgmgrError(f"Gemini CLI would not load {name} from {real}: the security setting allowedExtensions in {path} "
                      f"allows only extensions whose source matches {', '.join(repr(p) for p in patterns)}; add a "
                      f"pattern matching {real} there (or ask whoever manages that file) and run the command again",
                      code=Code.INCOMPATIBLE_HOST, path=str(path), key="security.allowedExtensions")


# --- the host -----------------------------------------------------------------------------------------


class Gemini(FolderHost):
    """Gemini CLI: one extensions folder (no project folder: `--scope workspace` is refused), each
    install recorded as Gemini records its local installs, its enabled state Gemini's own user-scope
    enablement rule."""

    name = "gemini"
    title = "Gemini CLI"
    manifest_files = (MANIFEST,)
    templates = ("extension",)
    entry_label = "context"
    runtime_files = (SETTINGS_VALUES, INSTALL_RECORD)
    enables_per_folder = True  # `gemini extensions enable|disable --scope workspace`

    def home(self) -> Path:
        return Path(os.path.abspath(gemini_home() / ".gemini"))

    def claim(self, level: Path, files: frozenset[str]) -> Claim | None:
        return Claim(MANIFEST) if MANIFEST in files else None

    def scan(self, folder: Path) -> list[Found]:
        """`loadExtensions`: every entry of the folder that is a directory (links followed) with a
        manifest, or with the install record of a link (`gemini extensions link`), by name."""
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                continue
            if is_dir and (os.path.exists(os.path.join(entry.path, MANIFEST))
                           or os.path.exists(os.path.join(entry.path, INSTALL_RECORD))):  # a link: only its record
                found.append(Found(entry.name, Path(entry.path), "directory"))
        return found

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
        document = decode_manifest(read_manifest(root), problems)
        problems.raise_if_any()
        assert document is not None
        manifest = check_manifest(document, problems)
        check_context_files(root, manifest, problems)
        problems.raise_if_any()
        contexts = list(manifest.context_files) or ([DEFAULT_CONTEXT] if (root / DEFAULT_CONTEXT).exists() else [])
        details = {"mcp_servers": list(manifest.mcp_servers), "exclude_tools": list(manifest.exclude_tools),
                   "context_files": contexts, "settings": list(manifest.settings), "themes": manifest.themes}
        return Judged(host=self.name, name=manifest.name, version=manifest.version, layout="directory",
                      kind="extension", entry=", ".join(contexts), capabilities=capabilities(manifest, root),
                      description=manifest.description, warnings=manifest.warnings, document=manifest.document,
                      details=details)

    def prepare(self, fetched: Source, root: Path | None, staging: Path, *, config: Config, options: Options,
                record: TreeRecord | None = None) -> Prepared[Any]:
        prepared = super().prepare(fetched, root, staging, config=config, options=options, record=record)
        linked = options.link and fetched.directory is not None  # `ext link`: Gemini reads the working folder
        check_allowed(prepared.name, Path(os.path.abspath(fetched.directory)) if linked and fetched.directory
                      else Path(os.path.abspath(self.folder("global", None) / prepared.name)))
        if os.path.lexists(prepared.root / INSTALL_RECORD):
            raise PkgmgrError(f"{prepared.name} carries {INSTALL_RECORD}, the record Gemini CLI writes into an "
                              "installed extension: it is not part of an extension", code=Code.INVALID_ARCHIVE,
                              hint=f"install from the extension's source, or remove {INSTALL_RECORD} from it")
        return prepared

    def make_link(self, source: Path, dest: Path) -> None:
        """`gemini extensions link PATH`: a folder of the extensions folder holding only Gemini's
        install record of type `link`, naming the working folder, which Gemini loads in its place
        (`_buildExtension`: `effectiveExtensionPath = installMetadata.source`). Nothing is copied,
        nothing written into the working folder."""
        os.mkdir(dest, 0o755)
        (dest / INSTALL_RECORD).write_bytes(link_record(source))
        os.chmod(dest / INSTALL_RECORD, 0o644)

    def link_source(self, place: Path) -> str | None:
        if os.path.islink(place) or not os.path.isdir(place):
            return super().link_source(place)
        return linked_source(place)

    def checksum(self, path: Path) -> tuple[str, dict[str, str]]:
        """The tree without what Gemini writes into an installed folder: its settings values
        (`.env`) and the install record when it is pkgmgr's for this very folder (any other is
        counted: a record pointing elsewhere changes what Gemini loads)."""
        from pkgmgr.hosts.mechanics import tree_checksum

        leave_out = [SETTINGS_VALUES]
        if _is_own_record(path):
            leave_out.append(INSTALL_RECORD)
        return tree_checksum(path, leave_out=leave_out)

    def check_neighbours(self, folder: Path, judged: Judged, own: set[Path], scope: str) -> None:
        """Gemini CLI loads no extension at all when two folders carry one name: another folder of
        the extensions folder whose manifest names `judged.name` is refused, --force or not."""
        target = folder / judged.name
        clashing = [found.path for found in self.scan(folder)
                    if found.path not in own and found.path != target and manifest_name(found.path) == judged.name]
        if clashing:
            listed = ", ".join(str(p) for p in clashing)
            raise PkgmgrError(f"{listed} already carries the Gemini CLI extension name {judged.name}: with two folders "
                              "of one name Gemini CLI loads no extension at all", code=Code.SOURCE_CONFLICT,
                              details={"paths": [str(p) for p in clashing]},
                              hint=f"remove {clashing[0]} (or 'gemini extensions uninstall {judged.name}'), then "
                                   "install again")

    # --- Gemini's records: the install record in the tree, the enablement rule ------------------------

    def prepare_staged(self, staged: Path, judged: Judged, *, enabled: bool) -> None:
        """The install record Gemini writes, naming the folder the tree is switched to; on an
        update, the settings values of the installed folder carried over (Gemini keeps them)."""
        import shutil

        target = Path(os.path.abspath(self.folder("global", None) / judged.name))
        (staged / INSTALL_RECORD).write_bytes(install_record(target))
        os.chmod(staged / INSTALL_RECORD, 0o644)
        values = target / SETTINGS_VALUES
        if os.path.isfile(values) and not os.path.islink(values) and not os.path.lexists(staged / SETTINGS_VALUES):
            shutil.copy2(values, staged / SETTINGS_VALUES)

    def record_install(self, folder: Path, judged: Judged, source: str, staged: Path, *, enabled: bool,
                       replacing: bool) -> None:
        """A first install applies Gemini's own `enable` (or `disable`) for the user scope, as its
        install does; an update leaves the rules as they are (they may hold workspace rules)."""
        if not replacing:
            set_rules(folder, judged.name, enabled=enabled, scope_path=home_text())

    def forget(self, folder: Path, name: str) -> None:
        set_rules(folder, name, enabled=None, scope_path=home_text())

    def check_records(self, folder: Path) -> None:
        """The enablement file `settle` rewrites, read first: one Gemini CLI would refuse
        (`invalid_config`) or pkgmgr cannot read (`io_error`) fails before anything changes."""
        read_enablement(folder)

    def settle(self, folder: Path, record: Installed | None, name: str, records: dict[str, Any] | None = None,
               ) -> None:
        if record is None:
            if not os.path.lexists(folder / name):
                set_rules(folder, name, enabled=None, scope_path=home_text())
            return
        rules = rules_of(read_enablement(folder), name)
        if not rules or is_enabled(rules, home_text()) != record.enabled:  # as its install writes them
            set_rules(folder, name, enabled=record.enabled, scope_path=home_text())

    def set_enabled_in(self, scope: Scope, record: Installed, enabled: bool, folder: Path, change: Change) -> Changed:
        """`gemini extensions enable|disable NAME --scope workspace` run in `folder`: the rule for
        `<folder>/*` appended (conflicting and child rules dropped), every other entry kept byte for
        byte; one atomic write of the enablement file (nothing else changes, so nothing to recover).
        The install's user-scope state, its row's, stays."""
        path = str(Path(os.path.abspath(folder)))
        extensions = self.folder_of(scope)
        set_rules(extensions, record.name, enabled=enabled, scope_path=path)
        state = "enabled" if enabled else "disabled"
        elsewhere = "enabled" if self.observed(record).enabled else "disabled"
        note = (f"{state} for {path} and the folders below it only (Gemini CLI's workspace scope, in "
                f"{extensions / ENABLEMENT}); elsewhere it stays {elsewhere}")
        return Changed(record.with_changes(enabled=is_enabled(rules_of(read_enablement(extensions), record.name), path),
                                           notes=(note,)))

    def observed(self, record: Installed) -> Installed:
        """`gemini extensions enable|disable` change the rules: what they say for the user scope wins."""
        try:
            rules = rules_of(read_enablement(record.place.parent), record.name)
        except PkgmgrError:
            return record
        enabled = is_enabled(rules, home_text())
        return record if enabled == record.enabled else record.with_changes(enabled=enabled)

    def adopt(self, scope: Scope, names: list[str], *, force: bool = False) -> list[Installed]:
        """Adopted as they are, with the enabled state Gemini's rules give them; a linked
        extension (`gemini extensions link`: its tree lives elsewhere) is refused first."""
        from pkgmgr.hosts.folder import adopt
        from pkgmgr.store import records

        for found in self.scan(self.folder_of(scope)):
            if not names or found.name in names:
                _refuse_link(found)
        adopted = []
        for row in adopt(scope, self, names, force=force):
            seen = self.observed(row)
            if seen.enabled != row.enabled:
                records.save(scope, seen)
            adopted.append(seen)
        return adopted

    def scaffold(self, name: str, template: str) -> dict[str, str]:
        """A manifest naming its context file, the context file, and one custom command."""
        import json

        if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > 255:
            raise PkgmgrError(f"{name!r} cannot name a Gemini CLI extension: only letters, digits and dashes",
                              code=Code.USAGE)
        manifest = {"name": name, "version": "0.1.0", "description": f"The {name} extension",
                    "contextFileName": DEFAULT_CONTEXT}
        command = (f'description = "Say hello from {name}"\n'
                   f'prompt = """Greet the user on behalf of the {name} extension."""\n')
        return {MANIFEST: json.dumps(manifest, indent=2) + "\n",
                DEFAULT_CONTEXT: f"# {name}\n\nWhat Gemini CLI should know when the {name} extension is active.\n",
                f"commands/{name}.toml": command,
                "README.md": f"# {name}\n\nA Gemini CLI extension: 'gemini extensions list' shows it once installed.\n"}
