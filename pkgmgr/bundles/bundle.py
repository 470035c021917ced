"""The validated bundle model: frozen values, each resource with the record it projects.

`record()` returns a fresh plain JSON dict (no tuples, bytes or dates), so the activation
digest (canonical JSON, SPEC 9.2) over records is deterministic and callers cannot mutate the
model through it. SOUL.md/HEARTBEAT.md are projected as their bytes, not as records.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Channel:
    name: str
    description: str = ""

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description}


@dataclass(frozen=True)
class Channels:
    """Declared channels (inventory only); `primary` is one of `items`, or None when empty."""

    primary: str | None = None
    items: tuple[Channel, ...] = ()

    def record(self) -> dict[str, Any]:
        return {"primary": self.primary, "items": [item.record() for item in self.items]}


@dataclass(frozen=True)
class AgentSpec:
    """One agent folder: AGENT.md front matter and body, plus its optional companion files.

    `path` is the folder relative to the extension root; `mcp` is the server map of mcp.json;
    `capabilities` maps each capabilities file (relative to the folder) to its document.
    """

    name: str
    path: str
    front_matter: dict[str, Any] = field(hash=False)
    body: str
    soul: bytes | None = None
    heartbeat: bytes | None = None
    mcp: dict[str, Any] | None = field(default=None, hash=False)
    capabilities: dict[str, Any] | None = field(default=None, hash=False)
    #: named after a host-reserved agent (config host.reserved_agent_names): Compozy refuses it
    #: at activation, not at load; not part of the record
    reserved: bool = field(default=False, compare=False)

    def record(self) -> dict[str, Any]:
        """`name`, the other front-matter fields, `prompt` (the body), `mcp`, `capabilities`
        and `source_path` (the folder)."""
        fields = {key: value for key, value in self.front_matter.items() if key != "name"}
        return copy.deepcopy(
            {
                "name": self.name,
                **fields,
                "prompt": self.body,
                "mcp": self.mcp,
                "capabilities": self.capabilities,
                "source_path": self.path,
            }
        )


@dataclass(frozen=True)
class LayoutSpec:
    """A window_layout resource: the whole validated layout document, read from `path`."""

    id: str
    display_name: str
    path: str
    document: dict[str, Any] = field(hash=False)

    def record(self) -> dict[str, Any]:
        return copy.deepcopy(self.document)


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    """An automation job; `schedule` holds `mode` and that mode's one field."""

    name: str
    agent: str
    prompt: str
    enabled: bool = True
    schedule: dict[str, Any] = field(hash=False)
    retry: dict[str, Any] | None = field(default=None, hash=False)
    fire_limit: dict[str, Any] | None = field(default=None, hash=False)
    task: dict[str, Any] | None = field(default=None, hash=False)

    def record(self) -> dict[str, Any]:
        record = {
            "name": self.name,
            "agent": self.agent,
            "prompt": self.prompt,
            "enabled": self.enabled,
            "schedule": self.schedule,
            "retry": self.retry,
            "fire_limit": self.fire_limit,
        }
        if self.task is not None:  # only then: a job without a task keeps its digest
            record["task"] = self.task
        return copy.deepcopy(record)


@dataclass(frozen=True)
class TriggerSpec:
    name: str
    agent: str
    prompt: str
    event: str
    filter: dict[str, Any] | None = field(default=None, hash=False)
    enabled: bool = True
    retry: dict[str, Any] | None = field(default=None, hash=False)
    fire_limit: dict[str, Any] | None = field(default=None, hash=False)

    def record(self) -> dict[str, Any]:
        return copy.deepcopy(
            {"name": self.name, "agent": self.agent, "prompt": self.prompt, "event": self.event, "filter": self.filter,
             "enabled": self.enabled, "retry": self.retry, "fire_limit": self.fire_limit}
        )


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    channels: Channels
    agents: tuple[AgentSpec, ...] = ()
    layouts: tuple[LayoutSpec, ...] = ()
    jobs: tuple[JobSpec, ...] = ()
    triggers: tuple[TriggerSpec, ...] = ()
    #: bridge presets as written (Compozy's BundleBridgePreset); inventory only
    bridges: tuple[dict[str, Any], ...] = field(default=(), hash=False)

    def agent_names(self) -> tuple[str, ...]:
        """Names of the agents this profile packages, in declaration order."""
        return tuple(agent.name for agent in self.agents)


@dataclass(frozen=True)
class Bundle:
    """One bundle file: `file` is its path relative to the extension root."""

    name: str
    description: str
    file: str
    profiles: tuple[Profile, ...]
    #: what Compozy's decoder ignores in the file (`pkgmgr.bundles.keys`); not part of any record
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def profile(self, name: str) -> Profile | None:
        """The profile called `name` (case-insensitive), or None."""
        folded = name.lower()
        return next((profile for profile in self.profiles if profile.name.lower() == folded), None)

    def profile_names(self) -> tuple[str, ...]:
        return tuple(profile.name for profile in self.profiles)
