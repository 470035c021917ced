"""What an activation projects, and its activation digest (SPEC 9.2).

The projection of a profile is a list of resources (agent, agent.soul, agent.heartbeat,
channel, job, trigger, window_layout), each with the sha256 of its content: canonical JSON of
the record for structured resources, the file bytes for SOUL.md and HEARTBEAT.md. The
activation digest hashes only that list plus the names, the network digest and the primary
channel, so an update that projects the same thing keeps the same digest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pkgmgr.activation.ids import activation_id, resource_id
from pkgmgr.jsonutil import canonical_json

if TYPE_CHECKING:
    from pkgmgr.bundles.bundle import Bundle, Profile


@dataclass(frozen=True)
class Resource:
    """One projected resource; `stored` is the canonical JSON of `record`, the text kept in the
    catalog (for structured resources `sha256` is its digest)."""

    id: str
    kind: str
    name: str
    sha256: str
    source_path: str
    record: dict[str, Any]
    stored: str


@dataclass(frozen=True)
class Projection:
    activation_id: str
    extension: str
    bundle: str
    profile: str
    network_digest: str
    primary_channel: str | None
    resources: tuple[Resource, ...]
    activation_digest: str


def _structured(kind: str, act: str, name: str, record: dict[str, Any], source_path: str) -> Resource:
    text = canonical_json(record)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Resource(resource_id(kind, act, name), kind, name, digest, source_path, record, text)


def _file(kind: str, act: str, agent: str, content: bytes, source_path: str) -> Resource:
    """SOUL.md / HEARTBEAT.md: the digest is over the file bytes (SPEC 9.2)."""
    record = {"agent": agent, "content": content.decode("utf-8")}
    return Resource(resource_id(kind, act, agent), kind, agent, hashlib.sha256(content).hexdigest(), source_path,
                    record, canonical_json(record))


def project(*, extension: str, bundle: Bundle, profile: Profile, network_digest: str, scope_kind: str,
            scope_root: str, workspace_path: str) -> Projection:
    """Compute the projection of `profile` of `bundle` of `extension` into a scope (pure)."""
    act = activation_id(extension, bundle.name, profile.name, scope_kind, workspace_path)
    resources: list[Resource] = []
    for agent in profile.agents:
        resources.append(_structured("agent", act, agent.name, agent.record(), f"{extension}:{agent.path}/AGENT.md"))
        synthetic = f"{scope_root}/bundles/{act}/agents/{agent.name}"
        if agent.soul is not None:
            resources.append(_file("agent.soul", act, agent.name, agent.soul, f"{synthetic}/SOUL.md"))
        if agent.heartbeat is not None:
            resources.append(_file("agent.heartbeat", act, agent.name, agent.heartbeat, f"{synthetic}/HEARTBEAT.md"))
    for channel in profile.channels.items:
        resources.append(_structured("channel", act, channel.name, channel.record(), f"{extension}:{bundle.file}"))
    for job in profile.jobs:
        resources.append(_structured("job", act, job.name, job.record(), f"{extension}:{bundle.file}"))
    for trigger in profile.triggers:
        resources.append(_structured("trigger", act, trigger.name, trigger.record(), f"{extension}:{bundle.file}"))
    for layout in profile.layouts:
        resources.append(_structured("window_layout", act, layout.id, layout.record(), f"{extension}:{layout.path}"))
    resources.sort(key=lambda r: (r.kind, r.name))
    primary = profile.channels.primary
    digest = activation_digest(extension, bundle.name, profile.name, network_digest, primary, resources)
    return Projection(act, extension, bundle.name, profile.name, network_digest, primary, tuple(resources), digest)


def activation_digest(extension: str, bundle: str, profile: str, network_digest: str,
                      primary_channel: str | None, resources: list[Resource]) -> str:
    document = {
        "extension": extension.lower(),
        "bundle": bundle.lower(),
        "profile": profile.lower(),
        "network_digest": network_digest,
        "primary_channel": primary_channel,
        "resources": [{"kind": r.kind, "name": r.name, "sha256": r.sha256}
                      for r in sorted(resources, key=lambda r: (r.kind, r.name))],
    }
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()
