"""`parse_manifest`: the rules of SPEC 2 on a decoded manifest document.

The JSON Schema (`schemas/extension.schema.json`) is the first gate; the code rules then run
on whatever it let through, checking every value's type before using it, so a document the
schema rejected still gets all its other problems reported and never crashes the codec.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pkgmgr.manifest.generations as gen
from pkgmgr.errors import Code, Problem, ProblemSink, ValidationFailed
from pkgmgr.manifest.durations import parse_go_duration
from pkgmgr.manifest.hookdecl import hook_executor_kind_problem, hook_matcher_problem, hook_priority_problem
from pkgmgr.manifest.keys import CORE_FIELDS, ReadKeys, read_keys
from pkgmgr.manifest.network import SECTION as NETWORK
from pkgmgr.manifest.network import digest_of_normalised, normalize_network
from pkgmgr.manifest.normalize import normalize_document
from pkgmgr.manifest.parsed import Bridge, Command, Hook, Manifest, Pairs, Subprocess
from pkgmgr.manifest.paths import command_path_problem, relative_path_problem
from pkgmgr.manifest.templates import (
    ENV_REFERENCE,
    VAULT_REFERENCE,
    is_env_name,
    looks_secret,
    template_problems,
)
from pkgmgr.versions import NotPep440, parse_semver, strip_v

INVALID = Code.INVALID_MANIFEST
RESERVED_NAMES = frozenset({"marketplace"})
MAX_DEPTH = 64

NAME = re.compile(r"[a-z][a-z0-9-]{1,63}")
ITEM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_SEGMENT = r"[a-z][a-z0-9_-]*"
# Compozy's validateSeparatedIdentifier: two or more segments; a grant may be "*" or use "*" segments
CAPABILITY = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})+")
ACTION = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})+")
GRANT = re.compile(rf"\*|(?:\*|{_SEGMENT})(?:\.(?:\*|{_SEGMENT}))+")


IDENTIFIER_LISTS: dict[tuple[str, str], tuple[re.Pattern[str], str]] = {
    ("capabilities", "provides"): (
        CAPABILITY, "is not a capability identifier (two or more dot-separated segments of [a-z][a-z0-9_-]*)"),
    ("actions", "requires"): (
        ACTION, ("is not a Host API method (two or more segments of [a-z][a-z0-9_-]* separated by /, "
                 "e.g. sessions/list)")),
    ("security", "capabilities"): (
        GRANT, ("is not a grant (* or two or more dot-separated segments of [a-z][a-z0-9_-]* or *, "
                "e.g. session.read)")),
    ("permissions", "requires"): (
        ACTION, ("is not a Host API method (two or more segments of [a-z][a-z0-9_-]* separated by /, "
                 "e.g. sessions/list)")),
}
RESOURCE_LISTS = ("skills", "agents", "bundles", "loops", "automation", "layouts")
EXECUTOR_FIELDS = ("command", "args", "env", "secret_env")
BRIDGE_ADAPTER = "bridge.adapter"
NOT_ENV_NAME = "is not an environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)"


def parse_manifest(data: Any, *, file: str, root: Path | None, generation: str = gen.AUTO) -> Manifest:
    """Validate a decoded manifest document and build its `Manifest`.

    `file` names the manifest in problems (`extension.toml`); `root` is the extension root for
    the path rules (None skips every filesystem check); `generation` is the Compozy generation
    that judges it (SPEC 2.1), or `auto`: the manifest is valid when at least one generation
    loads it, and `Manifest.generations` lists those that do. Raises `ValidationFailed` with
    every problem of the document (`invalid_manifest`, `path_escapes_root`); under `auto`, the
    problems of the generation that found the fewest.
    """
    if not isinstance(data, dict):
        raise ValidationFailed([Problem(INVALID, file, "", "the manifest must be a table (a JSON object)")])
    fatal, issues = _document_problems(data)
    if fatal is not None:
        raise ValidationFailed([Problem(INVALID, file, key, message) for key, message in fatal])
    from pkgmgr.schemas import schema_problems

    judged = gen.GENERATIONS if generation == gen.AUTO else (generation,)
    loaded: list[tuple[str, Manifest]] = []
    failures: list[ValidationFailed] = []
    checked: dict[tuple[str, str], Any] = {}  # filesystem answers, shared by the generations
    schemas: dict[str, list[Problem]] = {}  # the schema's problems, per document as read
    try:
        for name in judged:
            read = read_keys(data, name)
            # the schema judges the document as Compozy's loader reads it: keys in their fields'
            # spelling, the keys it ignores left out, values trimmed and blanks dropped
            normalised = normalize_document(read.document)
            seen = json.dumps(normalised, sort_keys=True, default=str)
            if seen not in schemas:
                schemas[seen] = schema_problems(normalised, "extension", file=file, code=INVALID)
            try:
                loaded.append((name, _Parser(data, read, file, root, name, checked).parse(schemas[seen], issues)))
            except ValidationFailed as exc:
                failures.append(exc)
    except RecursionError:
        raise ValidationFailed([Problem(INVALID, file, "", "nested too deeply")]) from None
    if not loaded:
        raise min(failures, key=lambda exc: len(exc.problems))
    return replace(loaded[0][1], generations=tuple(name for name, _ in loaded))


def _document_problems(data: Any) -> tuple[list[tuple[str, str]] | None, list[tuple[str, str]]]:
    """The problems that stop validation outright (nesting deeper than MAX_DEPTH, a non-string
    key, text that is not Unicode — a lone surrogate from a JSON escape, which no message may
    echo) or None, and the values JSON cannot carry (TOML dates, NaN, infinities) in places the
    schema does not type, such as `[resources.tools.<handler>]` tables."""
    from pkgmgr.documents import DocumentError, Fatal, plain_issues

    try:
        issues = plain_issues(data, max_depth=MAX_DEPTH + 1)
    except DocumentError as exc:
        return [("", exc.message)], []
    fatal = [i for i in issues if isinstance(i[1], Fatal)]
    return (fatal or None), issues


def _q(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _filled(value: Any) -> bool:
    return value is not None and value != "" and value != []


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> Iterator[tuple[int, str]]:
    """The string items of a list with their indexes (other items were the schema's to report)."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                yield index, item


GO_MAX_INT = str((1 << 63) - 1)  # strconv.Atoi's bound on Compozy's 64-bit builds


class _Parser:
    def __init__(self, data: dict[str, Any], read: ReadKeys, file: str, root: Path | None, generation: str,
                 checked: dict[tuple[str, str], Any] | None = None) -> None:
        self.checked = {} if checked is None else checked
        self.original = data
        self.read = read
        self.data = normalize_document(read.document)
        self.generation = generation
        self.root = root
        self.sink = ProblemSink(file, INVALID)
        self.schema_keys: set[str] = set()
        self.warnings: list[str] = []

    def _checked(self, kind: str, text: str, check: Any) -> Any:
        """`check(root, text)`, asked of the filesystem once per parse_manifest call."""
        if (kind, text) not in self.checked:
            self.checked[kind, text] = check(self.root, text)
        return self.checked[kind, text]

    def add(self, key: str, message: str, *, code: str | None = None) -> None:
        self.sink.add(key, message, code=code)

    def add_new(self, key: str, message: str) -> None:
        """Add a problem unless the schema already reported one at this key."""
        if key not in self.schema_keys:
            self.add(key, message)

    def parse(self, schema: list[Problem], value_issues: list[tuple[str, str]]) -> Manifest:
        self.sink.extend(schema)
        self.schema_keys = {problem.key for problem in schema}
        for key, message in value_issues:
            self.add_new(key, message)

        self._unknown_keys()
        core = self._core()
        normalised, problems = normalize_network(self.data.get(NETWORK))
        for key, message in problems:
            self.add_new(key, message)
        resources = _table(self.data.get("resources"))
        known = gen.RESOURCE_KEYS[self.generation]
        paths = {kind: self._paths(resources.get(kind), f"resources.{kind}") if kind in known else ()
                 for kind in RESOURCE_LISTS}
        hooks = self._hooks(resources.get("hooks"))
        servers = self._mcp_servers(resources.get("mcp_servers"))
        families, max_scope = self._publish(resources.get("publish"))
        provides, actions, grants = (self._identifiers(section, field) for section, field in list(IDENTIFIER_LISTS)[:3])
        from pkgmgr.manifest.tools import tool_problems

        for key, message in tool_problems(core["name"] if isinstance(core["name"], str) else "",
                                          resources.get("tools"), mcp_backend=self.generation == gen.V03):
            self.add(key, message)
        permissions = self._permissions()
        grants = grants + tuple(sorted({gen.PERMISSION_GRANTS[method] for method in permissions
                                        if gen.PERMISSION_GRANTS.get(method)} - set(grants)))
        actions = actions + tuple(method for method in permissions if method not in actions)
        bridge = self._bridge(BRIDGE_ADAPTER in provides)
        subprocess = self._subprocess()
        if (provides or actions) and (subprocess is None or subprocess.command is None):
            self.warnings.append("capabilities.provides or actions.requires need a subprocess, "
                                 "but [subprocess] declares no command")

        self.sink.raise_if_any()
        return Manifest(
            name=core["name"],
            version=core["version"],
            min_compozy_version=core["min_compozy_version"],
            description=core["description"],
            requires_env=core["requires_env"],
            file=self.sink.file,
            network=normalised,
            network_digest=digest_of_normalised(normalised),
            skills=paths["skills"],
            agents=paths["agents"],
            bundles=paths["bundles"],
            loops=paths["loops"],
            automation=paths["automation"],
            layouts=paths["layouts"],
            hooks=hooks,
            mcp_servers=servers,
            publish_families=families,
            publish_max_scope=max_scope,
            capabilities=provides,
            actions=actions,
            grants=grants,
            subprocess=subprocess,
            bridge=bridge,
            warnings=tuple(self.warnings),
            document=self.original,
            generations=(self.generation,),
        )

    # -- generations ------------------------------------------------------------------------

    def _unknown_keys(self) -> None:
        """Keys the generation's decoder does not read: ignored (a warning), or refused where
        the generation refuses them (`pkgmgr.manifest.keys`)."""
        for key, message in self.read.refused:
            self.add(key, message)
        self.warnings.extend(self.read.ignored)

    def _permissions(self) -> tuple[str, ...]:
        """`permissions.requires`: judged from v0.3-beta.3 on (slash identifiers naming known Host
        API methods); at v0.2 the section is unknown and ignored."""
        if self.generation not in gen.WITH_PERMISSIONS:
            return tuple(item for _, item in _strings(_table(self.data.get("permissions")).get("requires"))
                         if item in gen.PERMISSION_GRANTS)
        methods = self._identifiers("permissions", "requires")
        known = gen.PERMISSION_METHODS[self.generation]
        for index, method in enumerate(methods):
            if ACTION.fullmatch(method) and method not in known:
                self.add(f"permissions.requires[{index}]", f"{_q(method)}: unknown Host API permission "
                                                           f"(Compozy {self.generation})")
        return methods

    # -- core fields ------------------------------------------------------------------------

    def _core(self) -> dict[str, Any]:
        """Core fields from the root or `[extension]`; problems are keyed `extension.<field>`."""
        inner = _table(self.data.get("extension"))  # its unknown keys were refused (_unknown_keys)
        values: dict[str, Any] = {}
        for name in CORE_FIELDS:
            outer_value, inner_value = self.data.get(name), inner.get(name)
            if _filled(outer_value) and _filled(inner_value) and outer_value != inner_value:
                self.add(f"extension.{name}", f'field "{name}": conflicting root and [extension] values')
                values[name] = None
                continue
            values[name] = outer_value if _filled(outer_value) else inner_value if _filled(inner_value) else (
                outer_value if outer_value is not None else inner_value)
            if values[name] is None and name in ("name", "version", "min_compozy_version"):
                self.add(f"extension.{name}", "is required (at the document root or in [extension])")
        name = values["name"]
        if isinstance(name, str):
            if not NAME.fullmatch(name):
                self.add("extension.name", f"{_q(name)} is not a valid extension name "
                                           "(^[a-z][a-z0-9-]{1,63}$: 2-64 lower-case letters, digits and -; "
                                           "pkgmgr's rule: the name is the install directory)")
            elif name in RESERVED_NAMES:
                self.add("extension.name", f"{_q(name)} is reserved")
        for name in ("version", "min_compozy_version"):
            values[name] = self._semver(values[name], f"extension.{name}")
        values["description"] = values["description"] if isinstance(values["description"], str) else ""
        values["requires_env"] = self._env_names(values["requires_env"], "extension.requires_env")
        return values

    def _semver(self, value: Any, key: str) -> str | None:
        if not isinstance(value, str):
            return None
        try:
            parse_semver(value)
        except ValueError as exc:
            # versions.py quotes with repr(); SPEC's messages quote like JSON ("1.0").
            message = str(exc).replace(repr(value), _q(value), 1)
            self.add(key, message + (" (pkgmgr's rule)" if isinstance(exc, NotPep440) else ""))
            return None
        core = strip_v(value).split("+", 1)[0].split("-", 1)[0].split(".")
        if any((len(part), part) > (len(GO_MAX_INT), GO_MAX_INT) for part in core):  # no leading zeros: compare as text
            # semantic_version.go parseNumericVersionPart: strconv.Atoi, a 64-bit int
            self.add(key, f"{_q(value)} is not a semantic version Compozy reads: each of X.Y.Z is at most "
                          f"{GO_MAX_INT} (Go's int)")
            return None
        return strip_v(value)

    def _env_names(self, value: Any, key: str) -> tuple[str, ...]:
        names: list[str] = []
        for index, name in _strings(value):
            if not is_env_name(name):
                self.add(f"{key}[{index}]", f"{_q(name)} {NOT_ENV_NAME}")
            elif name in names:
                self.add(f"{key}[{index}]", f"duplicate {_q(name)}")
            names.append(name)
        return tuple(names)

    # -- resources --------------------------------------------------------------------------

    def _paths(self, value: Any, key: str) -> tuple[str, ...]:
        entries = []
        for index, rel in _strings(value):
            if self.root is not None:
                problem = self._checked("path", rel, relative_path_problem)
                if problem is not None:
                    # Compozy checks resource paths when it loads them; pkgmgr before installing
                    self.add(f"{key}[{index}]", f"{problem[1]} (pkgmgr's rule: resources are files inside the "
                                                "extension)", code=problem[0])
            entries.append(rel)
        return tuple(entries)

    def _hooks(self, value: Any) -> tuple[Hook, ...]:
        hooks: list[Hook] = []
        seen: set[str] = set()
        for index, hook in enumerate(value if isinstance(value, list) else []):
            if not isinstance(hook, dict):
                continue
            key = f"resources.hooks[{index}]"
            name = hook.get("name")
            if isinstance(name, str) and name:
                self._item_name(name, f"{key}.name", "hook")
                if name.lower() in seen:
                    self.add(f"{key}.name", f"duplicate hook name {_q(name)}")
                seen.add(name.lower())
            elif name == "":  # trimmed already: sanitizedHookDecl "hook name is required"
                self.add(f"{key}.name", "is required")
            top_level = [field for field in EXECUTOR_FIELDS if field in hook]
            executor = hook.get("executor")
            kind = executor.get("kind") if isinstance(executor, dict) else None
            command: Command | None = None
            if top_level and "executor" in hook:
                self.add(key, f"executor fields ({', '.join(top_level)}) both at the hook's top level and "
                              "under executor: keep them in one place")
            elif isinstance(kind, str) and kind not in ("", "subprocess"):
                # resolveHookExecutorKind: a wasm hook carries no command; other kinds are refused
                self._hook_problem(hook_executor_kind_problem(hook, executor if isinstance(executor, dict) else {}), key)
            elif "executor" in hook:
                if isinstance(executor, dict):
                    command = self._command(executor, f"{key}.executor")
            else:
                command = self._command(hook, key)
            self._hook_event(hook.get("event"), f"{key}.event")
            self._hook_mode(hook, key)
            self._hook_problem(hook_priority_problem(hook), key)
            self._hook_problem(hook_matcher_problem(hook.get("event"), hook.get("matcher"), self.generation), key)
            timeout = self._duration(hook.get("timeout"), f"{key}.timeout")
            if command is None:
                continue
            kind = executor.get("kind") if isinstance(executor, dict) else None
            event = hook.get("event")
            hooks.append(Hook(
                name=name if isinstance(name, str) else "",
                event=event if isinstance(event, str) else "",
                executor=command,
                mode=hook.get("mode", "async"),  # Compozy's defaultHookMode
                required=hook.get("required", False),
                priority=_integer(hook.get("priority", 0)),
                timeout=timeout,
                matcher=_matcher(hook.get("matcher")),
                executor_kind=kind if isinstance(kind, str) else None,
            ))
        return tuple(hooks)

    def _hook_problem(self, problem: str | None, key: str) -> None:
        """A problem of `pkgmgr.manifest.hookdecl` ("<field>: <message>" or "<field> <message>")."""
        if problem is not None:
            field, sep, message = problem.partition(": ")
            if not sep or " " in field:
                field, _, message = problem.partition(" ")
            self.add(f"{key}.{field}", message)

    def _hook_event(self, event: Any, key: str) -> None:
        """The event must be in the judging generation's hook taxonomy (Compozy's
        `HookEvent.Validate`, which refuses the extension's hooks when it loads them)."""
        known = gen.HOOK_EVENTS[self.generation]
        if event == "":  # trimmed already: HookEvent.Validate refuses the empty event
            self.add(key, "is required: name a hook event")
            return
        if not isinstance(event, str) or event in known:
            return
        import difflib

        close = difflib.get_close_matches(event, sorted(known), n=1)
        hint = f"; did you mean {_q(close[0])}?" if close else ""
        self.add(key, f"{_q(event)} is not a hook event of Compozy {self.generation}{hint}")

    def _hook_mode(self, hook: dict[str, Any], key: str) -> None:
        """`sanitizedHookDecl`: the mode defaults to async; a required hook must be sync; a sync
        hook needs an event that accepts sync hooks."""
        problem = gen.hook_mode_problem(hook.get("event"), hook.get("mode", "async"), hook.get("required"), self.generation)
        if problem is not None:
            self.add(f"{key}.{problem[0]}", problem[1])

    def _mcp_servers(self, value: Any) -> tuple[tuple[str, Command], ...]:
        servers = []
        for name, server in _table(value).items():
            key = f"resources.mcp_servers.{name}"
            self._item_name(name, key, "MCP server")
            if isinstance(server, dict):
                command = self._command(server, key)
                if command is not None:
                    servers.append((name, command))
        return tuple(servers)

    def _item_name(self, name: str, key: str, what: str) -> None:
        if not ITEM_NAME.fullmatch(name):
            self.add(key, f"{_q(name)} is not a valid {what} name (^[A-Za-z0-9][A-Za-z0-9_.-]*$)")

    def _publish(self, value: Any) -> tuple[tuple[str, ...], str | None]:
        publish = _table(value)
        # normalizeFamilies: trimmed, blanks dropped, de-duplicated
        families = tuple(dict.fromkeys(family for _, family in _strings(publish.get("families"))))
        if "bundles" in families and not gen.has_bundles(self.generation):
            # recorded running at 96a771efa: surfaces/registry.go has no bundles surface any more
            self.add("resources.publish.families", f"bundles is not a family Compozy {self.generation} publishes "
                                                   "(it has no bundles); leave it out")
        max_scope = publish.get("max_scope")
        if "max_scope" in publish and not families:
            self.add("resources.publish.max_scope", "max_scope without families: list the published families "
                                                    "or drop max_scope")
        if not families:
            return families, None
        return families, max_scope if isinstance(max_scope, str) else "global"

    # -- commands ---------------------------------------------------------------------------

    def _executor_fields(self, table: dict[str, Any], key: str, *,
                         required: bool) -> tuple[str | None, tuple[str, ...], Pairs, Pairs]:
        """The executor fields of `table` (a hook, its executor, an MCP server, [subprocess])."""
        command = table.get("command")
        if command in (None, "") and required:
            self.add(f"{key}.command", "is required")
        if not isinstance(command, str) or not command:
            command = None
        else:
            self._templates(command, f"{key}.command")
            if self.root is not None:
                problem = self._checked("command", command, command_path_problem)
                if problem is not None:
                    self.add(f"{key}.command", problem[1], code=problem[0])
        args = []
        for index, arg in _strings(table.get("args")):
            self._templates(arg, f"{key}.args[{index}]")
            args.append(arg)
        return command, tuple(args), self._env(table.get("env"), f"{key}.env"), self._secret_env(
            table.get("secret_env"), f"{key}.secret_env", _vault_namespace(key))

    def _command(self, table: dict[str, Any], key: str) -> Command | None:
        command, args, env, secret_env = self._executor_fields(table, key, required=True)
        return None if command is None else Command(command, args, env, secret_env)

    def _templates(self, text: str, key: str) -> None:
        for message in template_problems(text):
            self.add(key, message)

    def _env(self, value: Any, key: str) -> Pairs:
        pairs = []
        for name, text in _table(value).items():
            if not is_env_name(name):
                self.add(f"{key}.{name}", f"{_q(name)} {NOT_ENV_NAME}")
            elif looks_secret(name):
                self.add(f"{key}.{name}", f"{_q(name)} looks like a secret: move secret-like values to secret_env "
                                          "(NAME = \"env:VARIABLE\")")
            if isinstance(text, str):
                self._templates(text, f"{key}.{name}")
                pairs.append((name, text))
        return tuple(pairs)

    def _secret_env(self, value: Any, key: str, namespace: str) -> Pairs:
        """`vault.ValidateSecretEnvMap`: `env:NAME`, or `vault:<namespace>/<path>` in the
        namespace of the declaring section (subprocess: extensions, hooks: hooks, MCP: mcp)."""
        pairs = []
        for name, ref in _table(value).items():
            if not is_env_name(name):
                self.add(f"{key}.{name}", f"{_q(name)} {NOT_ENV_NAME}")
            if isinstance(ref, str):
                # never echo the value: a literal secret written here must not reach logs
                vault = VAULT_REFERENCE.fullmatch(ref)
                if vault is not None and vault.group(1) != namespace:
                    self.add(f"{key}.{name}", f"a vault reference here must use vault:{namespace}/<path>")
                elif vault is None and ENV_REFERENCE.fullmatch(ref) is None:
                    self.add(f"{key}.{name}", "must be an env:NAME reference to the variable holding the secret "
                                              f"(or vault:{namespace}/<path>), not the secret itself")
                pairs.append((name, ref))
        return tuple(pairs)

    def _duration(self, value: Any, key: str) -> float | None:
        """Compozy's `Duration`: a Go duration string (trimmed; blank means unset), or in JSON
        integer nanoseconds; zero means unset. A negative duration is refused (pkgmgr's rule)."""
        if isinstance(value, int) and not isinstance(value, bool):
            if self.sink.file.endswith(".toml") and value != 0:
                # BurntSushi hands the integer's text to time.ParseDuration, which needs a unit
                self.add(key, f"{value} is not a duration: write it with a unit (\"{value}s\")")
                return None
            seconds = value / 1e9
        elif isinstance(value, str):
            text = value.strip(" \t\n\r\v\f")
            if not text:
                return None
            try:
                seconds = parse_go_duration(text)
            except ValueError as exc:
                self.add(key, str(exc))
                return None
        else:
            return None
        if seconds < 0:
            self.add(key, f"{_q(value)} is negative (pkgmgr's rule: durations are zero or positive)")
            return None
        return seconds or None

    # -- capabilities, bridge, subprocess ---------------------------------------------------

    def _identifiers(self, section: str, field: str) -> tuple[str, ...]:
        pattern, rule = IDENTIFIER_LISTS[section, field]
        provides = gen.PROVIDES.get(self.generation) if (section, field) == ("capabilities", "provides") else None
        found = []
        for index, item in _strings(_table(self.data.get(section)).get(field)):
            if pattern.fullmatch(item) is None:
                self.add(f"{section}.{field}[{index}]", f"{_q(item)} {rule}")
            elif provides is not None and item not in provides:
                self.add(f"{section}.{field}[{index}]", f"{_q(item)}: unknown provide capability in Compozy "
                                                        f"{self.generation} (valid: {', '.join(sorted(provides))})")
            found.append(item)
        return tuple(found)

    def _bridge(self, adapter: bool) -> Bridge | None:
        table = self.data.get("bridge")
        if adapter:
            if table is None:
                self.add("bridge", f"providing {BRIDGE_ADAPTER} requires [bridge] with platform and display_name")
            for field in ("platform", "display_name"):
                if isinstance(table, dict) and table.get(field) in (None, ""):
                    self.add(f"bridge.{field}", f"is required when capabilities.provides includes {BRIDGE_ADAPTER}")
        if not isinstance(table, dict):
            return None
        platform, display_name = table.get("platform"), table.get("display_name")
        declared = table.get("secret_slots")
        slots = [slot for slot in declared if isinstance(slot, dict)] if isinstance(declared, list) else []
        names: list[str] = [name if isinstance(name := slot.get("name"), str) else "" for slot in slots]
        if adapter:  # Compozy checks [bridge] only for bridge adapters (validateBridgeAdapterCapability)
            seen: set[str] = set()
            for index, name in enumerate(names):
                if not name:
                    self.add(f"bridge.secret_slots[{index}].name", "is required")
                elif name in seen:
                    self.add(f"bridge.secret_slots[{index}].name", f"duplicate secret slot name {_q(name)}")
                seen.add(name)
        return Bridge(
            platform=platform if isinstance(platform, str) else None,
            display_name=display_name if isinstance(display_name, str) else None,
            secret_slots=tuple(name for name in names if name),
        )

    def _subprocess(self) -> Subprocess | None:
        table = self.data.get("subprocess")
        if not isinstance(table, dict):
            return None
        command, args, env, secret_env = self._executor_fields(table, "subprocess", required=False)
        return Subprocess(
            command=command,
            args=args,
            env=env,
            secret_env=secret_env,
            health_check_interval=self._duration(table.get("health_check_interval"),
                                                 "subprocess.health_check_interval"),
            shutdown_timeout=self._duration(table.get("shutdown_timeout"), "subprocess.shutdown_timeout"),
        )


def _matcher(value: Any) -> tuple[tuple[str, Any], ...]:
    """`HookMatcherConfig` as (field, value) pairs, blank fields left out."""
    if not isinstance(value, dict):
        return ()
    return tuple((key, item) for key, item in sorted(value.items()) if item not in ("", None))


def _vault_namespace(key: str) -> str:
    if key.startswith("resources.hooks"):
        return "hooks"
    if key.startswith("resources.mcp_servers"):
        return "mcp"
    return "extensions"


def _integer(value: Any) -> int:
    """TOML/JSON integers; the schema lets `1.0` through as an integer (and rejects `inf`)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
