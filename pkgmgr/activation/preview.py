"""`bundle preview`: what activating a target would create (SPEC 9), computed and checked but
never written — the activation it would be (or the one that exists), its projected resources,
the profile's inventory, the conflicts that would refuse it and whether it needs confirming."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

    from pkgmgr.activation.lifecycle import Resolved
    from pkgmgr.bundles import Profile
    from pkgmgr.config import Config
    from pkgmgr.errors import Problem
    from pkgmgr.store.scope import Scope


@dataclass(frozen=True)
class Preview:
    """`document` is the command's JSON; the rest is what its human text shows besides."""

    document: dict[str, Any]
    resolved: Resolved
    existing: sqlite3.Row | None  # the activation's row when it exists
    findings: list[Problem]

    @property
    def needs_confirmation(self) -> bool:
        return bool(self.document["confirmation_required"])


def preview_activation(scope: Scope, target: str, *, config: Config) -> Preview:
    """Resolve `target` (EXTENSION[:BUNDLE[/PROFILE]]) in `scope` and compute its activation.
    Raises what `lifecycle.resolve` raises (not_found, usage). Reads only: never creates state.db."""
    from pkgmgr.activation.lifecycle import (
        ACTIVE,
        AWAITING,
        Target,
        activation_json,
        findings_for,
        get_activation,
        new_activation,
        resolve,
    )
    resolved = resolve(scope, Target.parse(target), config=config)
    projection = resolved.projection
    conn = scope.reader()  # never creates state.db: a preview writes nothing
    existing = get_activation(conn, projection.activation_id)
    findings = findings_for(conn, scope, resolved.bundle, resolved.profile, activation=projection.activation_id)
    needs_confirmation = projection.network_digest != ""
    if existing is not None:
        activation = activation_json(existing)
        needs_confirmation = existing["status"] == AWAITING  # a confirmed one needs nothing more
    else:
        activation = new_activation(resolved, scope, AWAITING if needs_confirmation else ACTIVE)
    document = {
        "activation": activation,
        "exists": existing is not None,
        "inventory": inventory(resolved.profile),
        "resources": [{"id": r.id, "kind": r.kind, "name": r.name, "digest": r.sha256, "source_path": r.source_path}
                      for r in projection.resources],
        "conflicts": [f.to_json() for f in findings],
        "confirmation_required": needs_confirmation,
        "network_requirement": network_requirement(resolved.installed),
    }
    return Preview(document, resolved, existing, findings)


def inventory(profile: Profile) -> dict[str, Any]:
    """A profile's agents, channels, jobs, triggers and layouts, as plain JSON."""
    return {
        "agents": [{"name": a.name, "path": a.path, "model": a.front_matter.get("model"),
                    "provider": a.front_matter.get("provider"), "soul": a.soul is not None,
                    "heartbeat": a.heartbeat is not None} for a in profile.agents],
        "channels": profile.channels.record(),
        "jobs": [{"name": j.name, "agent": j.agent, "enabled": j.enabled, "schedule": j.schedule}
                 for j in profile.jobs],
        "triggers": [{"name": t.name, "agent": t.agent, "event": t.event} for t in profile.triggers],
        "layouts": [{"id": lay.id, "display_name": lay.display_name, "path": lay.path} for lay in profile.layouts],
    }


def network_requirement(installed: Any) -> dict[str, Any] | None:
    """The network requirement (`{"required","mode","channel_scopes"}`, normalised) the installed
    extension declares; None when it declares none."""
    from pkgmgr.manifest.network import declared_requirement

    return declared_requirement(installed.manifest)


def review(scope: Scope, activation: dict[str, Any]) -> dict[str, Any]:
    """What an operator reviews before confirming `activation` (`bundle show`): the network
    requirement of the installed version it projects, and how its digest compares with what was
    confirmed. `confirmation` is one of `not_needed` (no requirement), `confirmed` (the confirmed
    digest is the current one; `since_version` when it was confirmed at an earlier activation
    version and carried over), `never_confirmed` (awaiting at version 1: all of it is new) or
    `changed` (awaiting at a later version: the update that made it changed the requirement, or
    the activation was never confirmed; the earlier confirmation is not kept, SPEC 9.3)."""
    from pkgmgr.activation.lifecycle import ACTIVE
    from pkgmgr.store.switch import get_installed

    installed = get_installed(scope, activation["extension"])
    requirement = network_requirement(installed) if installed is not None else None
    digest = activation.get("network_digest") or ""
    if not digest:
        state: dict[str, Any] = {"state": "not_needed"}
    elif activation.get("confirmed_digest") == digest and activation.get("status") == ACTIVE:
        state = {"state": "confirmed", "confirmed_digest": digest, "confirmed_version": activation["confirmed_version"]}
        if activation["confirmed_version"] != activation["version"]:
            state["carried_over"] = True  # confirmed at an earlier version, whose requirement was the same
    elif activation.get("version") == 1:
        state = {"state": "never_confirmed"}
    else:
        state = {"state": "changed", "changed_at_version": activation["version"],
                 "extension_version": activation.get("extension_version")}
        before = _confirmed_before(scope, activation["id"])
        if before is not None:
            state["since_confirmed"] = requirement_change(before, requirement)
    return {"network_requirement": requirement, "confirmation": state}


def _confirmed_before(scope: Scope, act_id: str) -> dict[str, Any] | None:
    """The network requirement last confirmed for the activation (None: never, or not kept)."""
    from pkgmgr.store.checks import json_value

    conn = scope.reader()
    if conn is None:
        return None
    row = conn.execute("SELECT confirmed_requirement FROM activations WHERE id = ?", (act_id,)).fetchone()
    value = json_value(row[0], dict) if row is not None and row[0] is not None else None
    if value is None or not isinstance(value.get("channel_scopes", []), list):
        return None
    return value


def requirement_change(before: dict[str, Any], now: dict[str, Any] | None) -> dict[str, Any]:
    """What changed in a network requirement since it was confirmed: the channel scopes added and
    removed, and the mode (with the one confirmed) when it changed."""
    old_scopes = [str(s) for s in before.get("channel_scopes") or []]
    new_scopes = [str(s) for s in (now or {}).get("channel_scopes") or []]
    change: dict[str, Any] = {"scopes_added": [s for s in new_scopes if s not in old_scopes],
                              "scopes_removed": [s for s in old_scopes if s not in new_scopes]}
    old_mode, new_mode = before.get("mode"), (now or {}).get("mode")
    if old_mode != new_mode:
        change["mode"] = {"confirmed": old_mode, "now": new_mode}
    return change
