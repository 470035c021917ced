"""Compozy generations (SPEC 2.1): what each one's manifest loader accepts beyond the rules
they share. Facts read from Compozy's `internal/extension` at the commit named per
generation; `docs/compatibility.md` names the function behind each.

- `v0.2` (8eeb8a381): `[actions]` + `[security]`, `resources.bundles`; unknown keys are ignored
  (BurntSushi `toml.Decode` and `json.Unmarshal` without strictness).
- `v0.3-beta.3` (cff6dae48): `[permissions]` replaces `[actions]`/`[security]`, which are
  refused (`rejectLegacyManifestTOML`/`rejectLegacyManifestJSON`); `permissions.requires` and
  `capabilities.provides` must name known Host API methods and provide surfaces.
- `v0.3` (96a771efa): as v0.3-beta.3, and `resources.automation`/`resources.layouts` replace
  `resources.bundles`; any key under `[resources]` the loader does not know is refused
  (`rejectUnsupportedManifestTOML`, `rejectUnknownManifestResourcesJSON`).
"""

from __future__ import annotations

V02 = "v0.2"
V03_BETA3 = "v0.3-beta.3"
V03 = "v0.3"
GENERATIONS = (V02, V03_BETA3, V03)
AUTO = "auto"
CHOICES = (AUTO, *GENERATIONS)
COMMITS = {V02: "8eeb8a381", V03_BETA3: "cff6dae48", V03: "96a771efa"}

#: generations whose manifests carry bundles (activation needs one of them)
WITH_BUNDLES = frozenset({V02, V03_BETA3})
#: generations with `[permissions]` instead of `[actions]`/`[security]`
WITH_PERMISSIONS = frozenset({V03_BETA3, V03})

_TOP_V02 = frozenset({"extension", "name", "version", "description", "min_compozy_version", "requires_env",
                      "network_participation", "resources", "capabilities", "actions", "subprocess", "security",
                      "bridge"})
TOP_LEVEL = {
    V02: _TOP_V02,
    V03_BETA3: _TOP_V02 - {"actions", "security"} | {"permissions"},
    V03: _TOP_V02 - {"actions", "security"} | {"permissions"},
}

RESOURCE_KEYS = {
    V02: frozenset({"skills", "loops", "agents", "bundles", "hooks", "tools", "mcp_servers", "publish"}),
    V03_BETA3: frozenset({"skills", "loops", "agents", "bundles", "hooks", "tools", "command_groups",
                          "mcp_servers", "publish"}),
    V03: frozenset({"skills", "loops", "agents", "automation", "layouts", "hooks", "tools", "command_groups",
                    "cmd_palette", "mcp_servers", "publish"}),
}

#: `extensionprotocol.ProvideCapabilities()`, the keys of `capabilityServiceMethods` (checked from
#: v0.3-beta.3 on: `validateProvideCapabilities`)
PROVIDES = {
    V03_BETA3: frozenset({"memory.backend", "bridge.adapter", "tool.provider", "model.source", "loop.watch_source"}),
    V03: frozenset({"memory.backend", "bridge.adapter", "tool.provider", "model.source", "loop.watch_source",
                    "connectivity.provider", "forge.provider", "view.provider"}),
}

#: Host API method -> the consent grant it needs (`contract.consentByHostAPIMethod`, 96a771efa);
#: the methods `validatePermissionMethods` accepts.
PERMISSION_GRANTS = {
    "agents/heartbeat/delete": "heartbeat.write",
    "agents/heartbeat/get": "heartbeat.read",
    "agents/heartbeat/history": "heartbeat.read",
    "agents/heartbeat/put": "heartbeat.write",
    "agents/heartbeat/rollback": "heartbeat.write",
    "agents/heartbeat/status": "heartbeat.read",
    "agents/heartbeat/validate": "heartbeat.read",
    "agents/heartbeat/wake": "heartbeat.write",
    "agents/soul/delete": "soul.write",
    "agents/soul/get": "soul.read",
    "agents/soul/history": "soul.read",
    "agents/soul/put": "soul.write",
    "agents/soul/rollback": "soul.write",
    "agents/soul/validate": "soul.read",
    "automation/jobs": "automation.read",
    "automation/jobs/create": "automation.write",
    "automation/jobs/delete": "automation.write",
    "automation/jobs/get": "automation.read",
    "automation/jobs/runs": "automation.read",
    "automation/jobs/trigger": "automation.write",
    "automation/jobs/update": "automation.write",
    "automation/runs": "automation.read",
    "automation/triggers": "automation.read",
    "automation/triggers/create": "automation.write",
    "automation/triggers/delete": "automation.write",
    "automation/triggers/fire": "automation.write",
    "automation/triggers/get": "automation.read",
    "automation/triggers/runs": "automation.read",
    "automation/triggers/update": "automation.write",
    "bridges/instances/get": "bridge.read",
    "bridges/instances/list": "bridge.read",
    "bridges/instances/report_state": "bridge.write",
    "bridges/messages/ingest": "bridge.write",
    "clarify/ask": "clarify.ask",
    "logs/list": "logs.read",
    "memory/forget": "memory.write",
    "memory/recall": "memory.read",
    "memory/store": "memory.write",
    "models/list": "model.read",
    "models/refresh": "model.write",
    "models/status": "model.read",
    "network/channels": "network.read",
    "network/direct/messages": "network.read",
    "network/direct/resolve": "network.write",
    "network/directs": "network.read",
    "network/peers": "network.read",
    "network/send": "network.write",
    "network/status": "network.read",
    "network/thread/get": "network.read",
    "network/thread/messages": "network.read",
    "network/threads": "network.read",
    "network/usage": "network.read",
    "network/work/get": "network.read",
    "observe/health": "observe.read",
    "resources/get": "resources.read",
    "resources/list": "resources.read",
    "resources/snapshot": "resources.write",
    "sandbox/exec": "sandbox.exec",
    "sandbox/info": "sandbox.read",
    "sandbox/list": "sandbox.read",
    "sessions/archive": "session.write",
    "sessions/create": "session.write",
    "sessions/events": "session.read",
    "sessions/health/get": "session.read",
    "sessions/inputs/cancel": "session.write",
    "sessions/inputs/list": "session.read",
    "sessions/inputs/promote": "session.write",
    "sessions/inputs/replace": "session.write",
    "sessions/list": "session.read",
    "sessions/prompt": "session.write",
    "sessions/runtime/clear": "session.write",
    "sessions/runtime/set": "session.write",
    "sessions/soul/refresh": "soul.write",
    "sessions/status": "session.read",
    "sessions/status/get": "session.read",
    "sessions/stop": "session.write",
    "sessions/unarchive": "session.write",
    "skills/list": "skills.read",
    "tasks": "task.read",
    "tasks/cancel": "task.write",
    "tasks/create": "task.write",
    "tasks/dashboard": "task.read",
    "tasks/get": "task.read",
    "tasks/inbox": "task.read",
    "tasks/runs": "task.read",
    "tasks/runs/attach_session": "task.write",
    "tasks/runs/cancel": "task.write",
    "tasks/runs/complete": "task.write",
    "tasks/runs/enqueue": "task.write",
    "tasks/runs/fail": "task.write",
    "tasks/runs/get": "task.read",
    "tasks/runs/start": "task.write",
    "tasks/timeline": "task.read",
    "tasks/tree": "task.read",
    "tasks/update": "task.write",
    "view/patch": "view.write",}
_ADDED_IN_V03 = frozenset({"sessions/archive", "sessions/inputs/cancel", "sessions/inputs/list",
                           "sessions/inputs/promote", "sessions/inputs/replace", "sessions/runtime/clear",
                           "sessions/runtime/set", "sessions/unarchive", "view/patch"})
PERMISSION_METHODS = {
    V03_BETA3: frozenset(PERMISSION_GRANTS) - _ADDED_IN_V03,
    V03: frozenset(PERMISSION_GRANTS),
}


#: hook events of Compozy's taxonomy (internal/hooks `HookEvent` constants, checked by
#: `HookEvent.Validate` when the manager loads an extension's hooks: manager_resource_loading.go)
_EVENTS_V02 = frozenset({
    "agent.crashed", "agent.heartbeat.policy.resolved", "agent.heartbeat.wake.after",
    "agent.heartbeat.wake.before", "agent.pre_start", "agent.soul.mutation.after", "agent.soul.snapshot.resolved",
    "agent.spawned", "agent.stopped", "automation.job.post_fire", "automation.job.pre_fire",
    "automation.run.completed", "automation.run.failed", "automation.trigger.post_fire",
    "automation.trigger.pre_fire", "context.post_compact", "context.pre_compact", "coordinator.decision",
    "coordinator.failed", "coordinator.pre_spawn", "coordinator.spawned", "coordinator.stopped",
    "event.post_record", "event.pre_record", "input.pre_submit", "loop.gate.post", "loop.gate.pre",
    "loop.generation.post", "loop.generation.pre", "loop.node.terminal", "loop.started", "loop.terminal",
    "message.delta", "message.end", "message.start", "network.direct_room.opened", "network.message.persisted",
    "network.participation.pre_resolve", "network.participation.resolved", "network.peer.joined",
    "network.peer.left", "network.thread.opened", "network.work.closed", "network.work.opened",
    "network.work.transitioned", "permission.denied", "permission.request", "permission.resolved",
    "prompt.post_assemble", "sandbox.prepare", "sandbox.ready", "sandbox.stop", "sandbox.sync.after",
    "sandbox.sync.before", "session.health.update.after", "session.message_persisted", "session.post_create",
    "session.post_resume", "session.post_stop", "session.pre_create", "session.pre_resume", "session.pre_stop",
    "spawn.created", "spawn.parent_stopped", "spawn.pre_create", "spawn.reaped", "spawn.ttl_expired",
    "task.blocked", "task.needs_attention", "task.recovered", "task.run.completed", "task.run.enqueued",
    "task.run.failed", "task.run.lease_expired", "task.run.lease_extended", "task.run.lease_recovered",
    "task.run.post_claim", "task.run.pre_claim", "task.run.released", "task.status_changed", "task.unblocked",
    "tool.post_call", "tool.post_error", "tool.pre_call", "turn.end", "turn.start",
    "window_manager.desktop.created", "window_manager.desktop.deleted", "window_manager.layout.applied",
    "window_manager.window.moved",
})
_EVENTS_BETA3 = _EVENTS_V02 | frozenset({
    "window_manager.stack.activated", "window_manager.stack.grouped", "window_manager.stack.ungrouped",
    "window_manager.window.closed", "window_manager.window.opened",
})
HOOK_EVENTS = {
    V02: _EVENTS_V02,
    V03_BETA3: _EVENTS_BETA3,
    V03: _EVENTS_BETA3 | frozenset({
        "session.attention.changed", "session.runtime_recovery.exhausted", "session.runtime_recovery.started",
        "session.runtime_recovery.succeeded", "worktree.adopted", "worktree.created", "worktree.pre_create",
        "worktree.pre_remove", "worktree.removed",
    }),
}

#: the events that accept sync hooks (`hookEventSpec.syncEligible`, `HookEvent.SyncEligible`)
_SYNC_V02 = frozenset({
    "agent.crashed", "agent.heartbeat.wake.before", "agent.pre_start", "agent.spawned", "agent.stopped",
    "automation.job.pre_fire", "automation.trigger.pre_fire", "context.post_compact", "context.pre_compact",
    "coordinator.decision", "coordinator.failed", "coordinator.pre_spawn", "coordinator.spawned",
    "coordinator.stopped", "input.pre_submit", "loop.gate.pre", "loop.generation.pre", "message.end",
    "message.start", "network.participation.pre_resolve", "permission.request", "prompt.post_assemble",
    "sandbox.prepare", "sandbox.stop", "sandbox.sync.before", "session.post_create", "session.post_resume",
    "session.post_stop", "session.pre_create", "session.pre_resume", "session.pre_stop", "spawn.created",
    "spawn.parent_stopped", "spawn.pre_create", "spawn.reaped", "spawn.ttl_expired", "task.blocked",
    "task.needs_attention", "task.recovered", "task.run.completed", "task.run.enqueued", "task.run.failed",
    "task.run.lease_expired", "task.run.lease_extended", "task.run.lease_recovered", "task.run.post_claim",
    "task.run.pre_claim", "task.run.released", "task.unblocked", "tool.post_call", "tool.post_error",
    "tool.pre_call", "turn.end", "turn.start",
})
SYNC_HOOK_EVENTS = {
    V02: _SYNC_V02,
    V03_BETA3: _SYNC_V02,
    V03: _SYNC_V02 | frozenset({"worktree.pre_create", "worktree.pre_remove"}),
}


def hook_mode_problem(event: object, mode: str, required: object, generation: str) -> tuple[str, str] | None:
    """Compozy's `sanitizedHookDecl` on a hook's mode (blank: async, `defaultHookMode`): (the
    field at fault, why) when a required hook is not sync, or a sync hook's event accepts only
    async hooks in `generation`; None otherwise."""
    if required is True and mode != "sync":
        return "required", 'a required hook must run in sync mode (set mode = "sync"); Compozy refuses a required async hook'
    if mode == "sync" and isinstance(event, str) and event in HOOK_EVENTS[generation] and (
            event not in SYNC_HOOK_EVENTS[generation]):
        return "mode", f"{event!r} accepts only async hooks (Compozy {generation})"
    return None


def has_bundles(generation: str) -> bool:
    return generation in WITH_BUNDLES
