"""The parsed manifest: frozen values built by the codec once every rule has passed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pkgmgr.manifest.templates import env_state, resolve_template

Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Command:
    """An executable as declared: kept verbatim, templates (`{{config_dir}}`, `{{env:NAME}}`)
    unexpanded. `env` and `secret_env` are (name, value) pairs in declaration order;
    `secret_env` values are `env:NAME` references, never secrets."""

    command: str
    args: tuple[str, ...] = ()
    env: Pairs = ()
    secret_env: Pairs = ()

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, "args": list(self.args), "env": dict(self.env),
                "secret_env": dict(self.secret_env)}

    def resolved(self, config_dir: Path | str, environ: Mapping[str, str]) -> dict[str, Any]:
        """The command as `ext status --resolved` shows it: `{{config_dir}}` expanded, every
        environment reference only as `<NAME:set>`/`<NAME:unset>` (never a value)."""
        def show(text: str) -> str:
            return resolve_template(text, config_dir, environ)

        return {
            "command": show(self.command),
            "args": [show(arg) for arg in self.args],
            "env": {name: show(value) for name, value in self.env},
            "secret_env": {name: env_state(ref.removeprefix("env:"), environ) for name, ref in self.secret_env},
        }


@dataclass(frozen=True)
class Hook:
    """One `[[resources.hooks]]` entry; `executor` merges the top-level executor fields or the
    `executor` table (whichever was used); `timeout` is in seconds."""

    name: str
    event: str
    executor: Command
    mode: str = "sync"
    required: bool = False
    priority: int = 0
    timeout: float | None = None
    matcher: tuple[tuple[str, Any], ...] = ()
    executor_kind: str | None = None


@dataclass(frozen=True)
class Subprocess:
    """`[subprocess]`; durations in seconds."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Pairs = ()
    secret_env: Pairs = ()
    health_check_interval: float | None = None
    shutdown_timeout: float | None = None

    @property
    def executor(self) -> Command | None:
        if self.command is None:
            return None
        return Command(self.command, self.args, self.env, self.secret_env)


@dataclass(frozen=True)
class Bridge:
    platform: str | None = None
    display_name: str | None = None
    secret_slots: tuple[str, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """A valid extension manifest. `document` is the decoded file, unchanged."""

    name: str
    version: str
    min_compozy_version: str
    file: str
    description: str = ""
    requires_env: tuple[str, ...] = ()
    network: dict[str, Any] | None = field(default=None, hash=False)
    network_digest: str = ""
    skills: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    bundles: tuple[str, ...] = ()
    loops: tuple[str, ...] = ()
    automation: tuple[str, ...] = ()
    layouts: tuple[str, ...] = ()
    hooks: tuple[Hook, ...] = ()
    mcp_servers: tuple[tuple[str, Command], ...] = ()
    publish_families: tuple[str, ...] = ()
    publish_max_scope: str | None = None
    capabilities: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    grants: tuple[str, ...] = ()
    subprocess: Subprocess | None = None
    bridge: Bridge | None = None
    warnings: tuple[str, ...] = ()
    #: the Compozy generations that load this manifest (SPEC 2.1)
    generations: tuple[str, ...] = ()
    document: dict[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)

    @property
    def needs_subprocess(self) -> bool:
        """SPEC 2: `subprocess.command`, `capabilities.provides` or `actions.requires`."""
        has_command = self.subprocess is not None and self.subprocess.command is not None
        return has_command or bool(self.capabilities) or bool(self.actions)

    @property
    def kind(self) -> str:
        return "subprocess" if self.needs_subprocess else "resource"

    def commands(self) -> list[tuple[str, Command]]:
        """Every command the manifest declares, with its key path, in document order."""
        found = [(f"resources.hooks[{index}]", hook.executor) for index, hook in enumerate(self.hooks)]
        found += [(f"resources.mcp_servers.{name}", command) for name, command in self.mcp_servers]
        if self.subprocess is not None and self.subprocess.executor is not None:
            found.append(("subprocess", self.subprocess.executor))
        return found
