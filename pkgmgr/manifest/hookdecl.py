"""A hook declaration as Compozy's `internal/hooks` judges it (`sanitizedHookDecl`,
`resolveHookExecutorKind`, `PriorityFromInt`), shared by the manifest's `[[resources.hooks]]` and
an agent's `hooks` (the same `ValidateHookDecl` decides both)."""

from __future__ import annotations

from typing import Any

from pkgmgr.manifest.durations import parse_go_duration
from pkgmgr.manifest.network import go_trim_space

HOOK_EXECUTOR_KINDS = ("native", "subprocess", "wasm")  # internal/hooks HookExecutorKind.Validate


def _trim(value: Any) -> Any:
    return go_trim_space(value) if isinstance(value, str) else value


def hook_priority_problem(hook: dict[str, Any]) -> str | None:
    """`PriorityFromInt` (hookConfigToDecl, toHookDecl): a priority fits an int32."""
    priority = hook.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool) and not -(1 << 31) <= priority < 1 << 31:
        return f"priority: {priority} is outside the int32 range"
    return None


def hook_timing_problem(hook: dict[str, Any]) -> str | None:
    """`PriorityFromInt` (toHookDecl): a priority fits an int32; `sanitizedHookDecl`: a timeout
    is non-negative (a string is read by `time.ParseDuration`, untrimmed)."""
    if problem := hook_priority_problem(hook):
        return problem
    timeout = hook.get("timeout")
    if isinstance(timeout, str):
        try:
            seconds = parse_go_duration(timeout)
        except ValueError as exc:
            return f"timeout: {exc}"
    elif isinstance(timeout, int) and not isinstance(timeout, bool):
        seconds = timeout
    else:
        return None
    return "timeout must be non-negative" if seconds < 0 else None


def hook_executor_kind_problem(hook: dict[str, Any], executor: dict[str, Any]) -> str | None:
    """`resolveExecutor` (an agent's hook) or `resolveHookConfigExecutorFields` (a manifest's), then
    `resolveHookExecutorKind` for a hook that is not a native source:
    the kind (trimmed) defaults to subprocess when there is a command, is one of native, subprocess
    or wasm, never native; subprocess needs a command, and only subprocess takes command, args,
    env or secret_env."""
    def shell_fields(table: dict[str, Any]) -> tuple[str, bool]:
        command = _trim(table.get("command"))
        command = command if isinstance(command, str) else ""
        return command, bool(command) or any(table.get(field) for field in ("args", "env", "secret_env"))

    command, shell = shell_fields(executor)
    if not shell:
        command, shell = shell_fields(hook)
    kind = _trim(executor.get("kind")) or ""
    if not isinstance(kind, str):
        return None  # the type rules speak
    if not kind:
        return None if command else "executor.kind is required when the hook has no command"
    if kind not in HOOK_EXECUTOR_KINDS:
        return f"executor.kind: {kind!r} is not one of " + ", ".join(HOOK_EXECUTOR_KINDS)
    if kind == "native":
        return "executor.kind: only hooks compiled into Compozy may use the native executor"
    if kind == "subprocess" and not command:
        return "executor.kind: a subprocess executor requires a command"
    if kind != "subprocess" and shell:
        return f"executor.kind: command, args, env and secret_env need a subprocess executor, not {kind}"
    return None
