"""The matcher fields each hook event takes, per generation: recorded by running Compozy's
`internal/hooks` `ValidateMatcherForEvent` (`allowedMatcherFieldsByEvent`, `allowedMatcherFieldsByFamily`,
through `hookConfigToDecl` and `ValidateHookDecl`) at 8eeb8a381 (v0.2), cff6dae48 (v0.3-beta.3) and
96a771efa (v0.3) on one manifest per event and `HookMatcherConfig` field (each field alone, on every
event). Each generation is written as the events it adds or changes over the one before."""

from __future__ import annotations

from pkgmgr.manifest.generations import V02, V03, V03_BETA3

_F0 = frozenset({'agent_name', 'workspace_id', 'workspace_root'})
_F1 = frozenset({'agent_name', 'workspace_id'})
_F2 = frozenset({'compaction_reason', 'compaction_strategy'})
_F3 = frozenset({'acp_event_type', 'agent_name', 'turn_id'})
_F4 = frozenset({'agent_name', 'input_class', 'workspace_id', 'workspace_root'})
_F5 = frozenset({'message_delta_type', 'message_role'})
_F6 = frozenset({'channel', 'direction', 'kind', 'surface', 'work_state'})
_F7 = frozenset({'channel', 'workspace_id'})
_F8 = frozenset({'agent_name', 'decision_class', 'tool_name', 'workspace_id', 'workspace_root'})
_F9 = frozenset({'agent_name', 'session_type', 'workspace_id', 'workspace_root'})
_F10 = frozenset({'agent_name', 'tool_id', 'tool_read_only', 'workspace_id', 'workspace_root'})
_F11 = frozenset({'workspace_id'})
_F12 = frozenset({'workspace_id', 'workspace_root'})

#: the HookMatcherConfig fields probed
MATCHER_KEYS = frozenset({'acp_event_type', 'agent_name', 'agent_type', 'channel', 'compaction_reason', 'compaction_strategy', 'decision_class', 'direction', 'input_class', 'kind', 'message_delta_type', 'message_role', 'session_type', 'surface', 'tool_id', 'tool_name', 'tool_read_only', 'turn_id', 'work_state', 'workspace_id', 'workspace_root'})

_V02: dict[str, frozenset[str]] = {
    "agent.crashed": _F0,
    "agent.heartbeat.policy.resolved": _F1,
    "agent.heartbeat.wake.after": _F0,
    "agent.heartbeat.wake.before": _F0,
    "agent.pre_start": _F0,
    "agent.soul.mutation.after": _F1,
    "agent.soul.snapshot.resolved": _F1,
    "agent.spawned": _F0,
    "agent.stopped": _F0,
    "automation.job.post_fire": _F1,
    "automation.job.pre_fire": _F1,
    "automation.run.completed": _F1,
    "automation.run.failed": _F1,
    "automation.trigger.post_fire": _F1,
    "automation.trigger.pre_fire": _F1,
    "context.post_compact": _F2,
    "context.pre_compact": _F2,
    "coordinator.decision": _F0,
    "coordinator.failed": _F0,
    "coordinator.pre_spawn": _F0,
    "coordinator.spawned": _F0,
    "coordinator.stopped": _F0,
    "event.post_record": _F3,
    "event.pre_record": _F3,
    "input.pre_submit": _F4,
    "loop.gate.post": _F1,
    "loop.gate.pre": _F1,
    "loop.generation.post": _F1,
    "loop.generation.pre": _F1,
    "loop.node.terminal": _F1,
    "loop.started": _F1,
    "loop.terminal": _F1,
    "message.delta": _F5,
    "message.end": _F5,
    "message.start": _F5,
    "network.direct_room.opened": _F6,
    "network.message.persisted": _F6,
    "network.participation.pre_resolve": _F7,
    "network.participation.resolved": _F7,
    "network.peer.joined": _F6,
    "network.peer.left": _F6,
    "network.thread.opened": _F6,
    "network.work.closed": _F6,
    "network.work.opened": _F6,
    "network.work.transitioned": _F6,
    "permission.denied": _F8,
    "permission.request": _F8,
    "permission.resolved": _F8,
    "prompt.post_assemble": _F4,
    "sandbox.prepare": _F0,
    "sandbox.ready": _F0,
    "sandbox.stop": _F0,
    "sandbox.sync.after": _F0,
    "sandbox.sync.before": _F0,
    "session.health.update.after": _F9,
    "session.message_persisted": _F9,
    "session.post_create": _F9,
    "session.post_resume": _F9,
    "session.post_stop": _F9,
    "session.pre_create": _F9,
    "session.pre_resume": _F9,
    "session.pre_stop": _F9,
    "spawn.created": _F0,
    "spawn.parent_stopped": _F0,
    "spawn.pre_create": _F0,
    "spawn.reaped": _F0,
    "spawn.ttl_expired": _F0,
    "task.blocked": _F1,
    "task.needs_attention": _F1,
    "task.recovered": _F1,
    "task.run.completed": _F1,
    "task.run.enqueued": _F1,
    "task.run.failed": _F1,
    "task.run.lease_expired": _F1,
    "task.run.lease_extended": _F1,
    "task.run.lease_recovered": _F1,
    "task.run.post_claim": _F1,
    "task.run.pre_claim": _F1,
    "task.run.released": _F1,
    "task.status_changed": _F1,
    "task.unblocked": _F1,
    "tool.post_call": _F10,
    "tool.post_error": _F10,
    "tool.pre_call": _F10,
    "turn.end": _F4,
    "turn.start": _F4,
    "window_manager.desktop.created": _F11,
    "window_manager.desktop.deleted": _F11,
    "window_manager.layout.applied": _F11,
    "window_manager.window.moved": _F11,
}
_V03_BETA3: dict[str, frozenset[str]] = {**_V02,
    "window_manager.stack.activated": _F11,
    "window_manager.stack.grouped": _F11,
    "window_manager.stack.ungrouped": _F11,
    "window_manager.window.closed": _F11,
    "window_manager.window.opened": _F11,
}
_V03: dict[str, frozenset[str]] = {**_V03_BETA3,
    "session.attention.changed": _F9,
    "session.runtime_recovery.exhausted": _F9,
    "session.runtime_recovery.started": _F9,
    "session.runtime_recovery.succeeded": _F9,
    "worktree.adopted": _F12,
    "worktree.created": _F12,
    "worktree.pre_create": _F12,
    "worktree.pre_remove": _F12,
    "worktree.removed": _F12,
}

#: generation -> hook event -> the matcher fields it takes
MATCHER_FIELDS: dict[str, dict[str, frozenset[str]]] = {V02: _V02, V03_BETA3: _V03_BETA3, V03: _V03}
