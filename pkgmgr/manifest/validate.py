"""`parse_manifest`: the rules of SPEC 2 on a decoded manifest document.

The JSON Schema (`schemas/extension.schema.json`) is the first gate; the code rules then run
on whatever it let through, checking every value's type before using it, so a document the
schema rejected still gets all its other problems reported and never crashes the codec.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from pkgmgr.errors import Problem, ProblemSink, ValidationFailed
from pkgmgr.manifest.durations import parse_go_duration
from pkgmgr.manifest.model import Bridge, Command, Hook, Manifest, Pairs, Subprocess
from pkgmgr.manifest.network import SECTION as NETWORK
from pkgmgr.manifest.network import digest_of_normalised, normalize_network
from pkgmgr.manifest.paths import command_path_problem, relative_path_problem
from pkgmgr.manifest.templates import (
    ENV_REFERENCE,
    is_env_name,
    looks_secret,
    template_problems,
)
from pkgmgr.versions import parse_semver, strip_v

INVALID = "invalid_manifest"
CORE_FIELDS = ("name", "version", "min_compozy_version", "description", "requires_env")
RESERVED_NAMES = frozenset({"marketplace"})
MAX_DEPTH = 64

NAME = re.compile(r"[a-z][a-z0-9-]{1,63}")
ITEM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_SEGMENT = r"[a-z][a-z0-9_-]*"
CAPABILITY = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})+")
ACTION = re.compile(rf"{_SEGMENT}(?:/{_SEGMENT})*")
GRANT = re.compile(rf"(?:\*|{_SEGMENT})(?:\.(?:\*|{_SEGMENT}))*")


IDENTIFIER_LISTS: dict[tuple[str, str], tuple[re.Pattern[str], str]] = {
    ("capabilities", "provides"): (
        CAPABILITY, "is not a capability identifier (two or more dot-separated segments of [a-z][a-z0-9_-]*)"),
    ("actions", "requires"): (
        ACTION, "is not a Host API method (segments of [a-z][a-z0-9_-]* separated by /, e.g. sessions/list)"),
    ("security", "capabilities"): (
        GRANT, "is not a grant (dot-separated segments of [a-z][a-z0-9_-]* or *, e.g. session.read)"),
}
RESOURCE_LISTS = ("skills", "agents", "bundles", "loops")
EXECUTOR_FIELDS = ("command", "args", "env", "secret_env")
BRIDGE_ADAPTER = "bridge.adapter"
NOT_ENV_NAME = "is not an environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)"


def parse_manifest(data: Any, *, file: str, root: Path | None) -> Manifest:
    """Validate a decoded manifest document and build its `Manifest`.

    `file` names the manifest in problems (`extension.toml`); `root` is the extension root for
    the path rules (None skips every filesystem check). Raises `ValidationFailed` with every
    problem of the document (`invalid_manifest`, `path_escapes_root`).
    """
    if not isinstance(data, dict):
        raise ValidationFailed([Problem(INVALID, file, "", "the manifest must be a table (a JSON object)")])
    fatal, issues = _document_problems(data)
    if fatal is not None:
        raise ValidationFailed([Problem(INVALID, file, key, message) for key, message in fatal])
    try:
        return _Parser(data, file, root).parse(issues)
    except RecursionError:
        raise ValidationFailed([Problem(INVALID, file, "", "nested too deeply")]) from None


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


class _Parser:
    def __init__(self, data: dict[str, Any], file: str, root: Path | None) -> None:
        self.data = data
        self.root = root
        self.sink = ProblemSink(file, INVALID)
        self.schema_keys: set[str] = set()
        self.warnings: list[str] = []

    def add(self, key: str, message: str, *, code: str | None = None) -> None:
        self.sink.add(key, message, code=code)

    def add_new(self, key: str, message: str) -> None:
        """Add a problem unless the schema already reported one at this key."""
        if key not in self.schema_keys:
            self.add(key, message)

    def parse(self, value_issues: list[tuple[str, str]]) -> Manifest:
        from pkgmgr.schemas import schema_problems

        schema = schema_problems(self.data, "extension", file=self.sink.file, code=INVALID)
        self.sink.extend(schema)
        self.schema_keys = {problem.key for problem in schema}
        for key, message in value_issues:
            self.add_new(key, message)

        core = self._core()
        normalised, problems = normalize_network(self.data.get(NETWORK))
        for key, message in problems:
            self.add_new(key, message)
        resources = _table(self.data.get("resources"))
        paths = {kind: self._paths(resources.get(kind), f"resources.{kind}") for kind in RESOURCE_LISTS}
        hooks = self._hooks(resources.get("hooks"))
        servers = self._mcp_servers(resources.get("mcp_servers"))
        families, max_scope = self._publish(resources.get("publish"))
        provides, actions, grants = (self._identifiers(section, field) for section, field in IDENTIFIER_LISTS)
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
            document=self.data,
        )

    # -- core fields ------------------------------------------------------------------------

    def _core(self) -> dict[str, Any]:
        """Core fields from the root or `[extension]`; problems are keyed `extension.<field>`."""
        inner = _table(self.data.get("extension"))
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
                                           "(^[a-z][a-z0-9-]{1,63}$: 2-64 lower-case letters, digits and -)")
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
            self.add(key, str(exc).replace(repr(value), _q(value), 1))
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
                problem = relative_path_problem(self.root, rel)
                if problem is not None:
                    self.add(f"{key}[{index}]", problem[1], code=problem[0])
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
            top_level = [field for field in EXECUTOR_FIELDS if field in hook]
            executor = hook.get("executor")
            command: Command | None = None
            if top_level and "executor" in hook:
                self.add(key, f"executor fields ({', '.join(top_level)}) both at the hook's top level and "
                              "under executor: keep them in one place")
            elif "executor" in hook:
                if isinstance(executor, dict):
                    command = self._command(executor, f"{key}.executor")
            else:
                command = self._command(hook, key)
            timeout = self._duration(hook.get("timeout"), f"{key}.timeout")
            if command is None:
                continue
            kind = executor.get("kind") if isinstance(executor, dict) else None
            hooks.append(Hook(
                name=name,
                event=hook.get("event"),
                executor=command,
                mode=hook.get("mode", "sync"),
                required=hook.get("required", False),
                priority=_integer(hook.get("priority", 0)),
                timeout=timeout,
                matcher=hook.get("matcher"),
                executor_kind=kind if isinstance(kind, str) else None,
            ))
        return tuple(hooks)

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
        families = tuple(family for _, family in _strings(publish.get("families")))
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
        if command is None and required:
            self.add(f"{key}.command", "is required")
        if not isinstance(command, str) or not command:
            command = None
        else:
            self._templates(command, f"{key}.command")
            if self.root is not None:
                problem = command_path_problem(self.root, command)
                if problem is not None:
                    self.add(f"{key}.command", problem[1], code=problem[0])
        args = []
        for index, arg in _strings(table.get("args")):
            self._templates(arg, f"{key}.args[{index}]")
            args.append(arg)
        return command, tuple(args), self._env(table.get("env"), f"{key}.env"), self._secret_env(
            table.get("secret_env"), f"{key}.secret_env")

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

    def _secret_env(self, value: Any, key: str) -> Pairs:
        pairs = []
        for name, ref in _table(value).items():
            if not is_env_name(name):
                self.add(f"{key}.{name}", f"{_q(name)} {NOT_ENV_NAME}")
            if isinstance(ref, str):
                # never echo the value: a literal secret written here must not reach logs
                if ENV_REFERENCE.fullmatch(ref) is None:
                    self.add(f"{key}.{name}", "must be an env:NAME reference to the variable holding the secret, "
                                              "not the secret itself")
                pairs.append((name, ref))
        return tuple(pairs)

    def _duration(self, value: Any, key: str) -> float | None:
        if not isinstance(value, str):
            return None
        try:
            seconds = parse_go_duration(value)
        except ValueError as exc:
            self.add(key, str(exc))
            return None
        if seconds <= 0:
            self.add(key, f"{_q(value)} must be a positive duration")
            return None
        return seconds

    # -- capabilities, bridge, subprocess ---------------------------------------------------

    def _identifiers(self, section: str, field: str) -> tuple[str, ...]:
        pattern, rule = IDENTIFIER_LISTS[section, field]
        found = []
        for index, item in _strings(_table(self.data.get(section)).get(field)):
            if pattern.fullmatch(item) is None:
                self.add(f"{section}.{field}[{index}]", f"{_q(item)} {rule}")
            found.append(item)
        return tuple(found)

    def _bridge(self, adapter: bool) -> Bridge | None:
        table = self.data.get("bridge")
        if adapter:
            if table is None:
                self.add("bridge", f"providing {BRIDGE_ADAPTER} requires [bridge] with platform and display_name")
            for field in ("platform", "display_name"):
                if isinstance(table, dict) and field not in table:
                    self.add(f"bridge.{field}", f"is required when capabilities.provides includes {BRIDGE_ADAPTER}")
        if not isinstance(table, dict):
            return None
        platform, display_name = table.get("platform"), table.get("display_name")
        return Bridge(
            platform=platform if isinstance(platform, str) else None,
            display_name=display_name if isinstance(display_name, str) else None,
            secret_slots=tuple(slot for _, slot in _strings(table.get("secret_slots"))),
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


def _integer(value: Any) -> int:
    """TOML/JSON integers; the schema lets `1.0` through as an integer (and rejects `inf`)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
