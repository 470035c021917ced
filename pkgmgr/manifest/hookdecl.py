"""A hook declaration as Compozy's `internal/hooks` judges it (`sanitizedHookDecl`,
`resolveHookExecutorKind`, `PriorityFromInt`), shared by the manifest's `[[resources.hooks]]` and
an agent's `hooks` (the same `ValidateHookDecl` decides both)."""

from __future__ import annotations

from typing import Any

from pkgmgr.manifest.durations import parse_go_duration
from pkgmgr.manifest.network import go_trim_space
from pkgmgr.manifest.templates import ENV_REFERENCE, VAULT_REFERENCE, looks_secret

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


def go_glob_problem(pattern: str) -> str | None:
    """Why Go's `path.Match` refuses `pattern` (ErrBadPattern), or None: a `[` class closed by `]`,
    holding at least one character or range, none of them a bare `-` or `]`, and no `\\` at the end."""
    i, n = 0, len(pattern)

    def char(at: int) -> int | None:  # `getEsc`: one class character, escaped or not; its end
        if at >= n or pattern[at] in "-]":
            return None
        if pattern[at] == "\\":
            at += 1
            if at >= n:
                return None
        return at + 1

    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= n:
                return "ends in an escaping backslash"
            i += 2
        elif ch == "[":
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            ranges = 0
            while True:
                if i < n and pattern[i] == "]" and ranges:
                    i += 1
                    break
                end = char(i)
                if end is None:
                    return "has a character class that is empty, unclosed or holds a bare - or ]"
                i = end
                if i < n and pattern[i] == "-":
                    end = char(i + 1)
                    if end is None:
                        return "has a character range without its end"
                    i = end
                ranges += 1
        else:
            i += 1
    return None


def hook_matcher_problem(event: Any, matcher: Any, generation: str) -> str | None:
    """`ValidateMatcherForEvent`: the fields a matcher sets (a non-blank string, or `tool_read_only`
    given) must be ones the event takes (`pkgmgr.manifest.matchers`, recorded at each generation's
    commit), and a field holding `*`, `?`, `[` or `]` is a `path.Match` pattern (`validateMatcherPattern`)."""
    from pkgmgr.manifest.matchers import MATCHER_FIELDS, MATCHER_KEYS

    table = MATCHER_FIELDS.get(generation, {})
    allowed = table.get(event) if isinstance(event, str) else None
    if allowed is None or not isinstance(matcher, dict):
        return None  # the event's own rule speaks, or the matcher's type
    present = sorted(field for field, value in matcher.items() if field in MATCHER_KEYS and (
        isinstance(value, bool) if field == "tool_read_only" else isinstance(value, str) and _trim(value)))
    invalid = [field for field in present if field not in allowed]
    if invalid:
        takes = ", ".join(sorted(allowed)) or "no matcher fields"
        return (f"matcher: {', '.join(invalid)} cannot match event {event!r} in Compozy {generation}; "
                f"it takes {takes}")
    for field in present:
        value = matcher[field]
        if isinstance(value, str) and any(ch in value for ch in "*?[]"):
            if (why := go_glob_problem(_trim(value))) is not None:
                return f"matcher.{field}: the pattern {value!r} {why} (Go's path.Match)"
    return None


def executor_env_problem(table: dict[str, Any], namespace: str) -> str | None:
    """`vault.ValidateNonSecretEnvMap` and `ValidateSecretEnvMap` on an executor's `env` and
    `secret_env` (an agent's hook: namespace `hooks`, from `validateHookEnv`; an agent's MCP server:
    `mcp`): no secret-like env key, and each secret an `env:NAME` or a `vault:<namespace>/<path>`
    reference. Values are never echoed."""
    env, secret_env = table.get("env"), table.get("secret_env")
    for key in env if isinstance(env, dict) else {}:
        if isinstance(key, str) and looks_secret(_trim(key)):
            return f"env.{key} looks like a secret: move secret-like values to secret_env (NAME: env:VARIABLE)"
    for key, ref in (secret_env if isinstance(secret_env, dict) else {}).items():
        if not isinstance(ref, str):
            continue
        ref = _trim(ref)
        vault = VAULT_REFERENCE.fullmatch(ref)
        if vault is not None and vault.group(1) != namespace:
            return f"secret_env.{key}: a vault reference here must use vault:{namespace}/<path>"
        if vault is None and ENV_REFERENCE.fullmatch(ref) is None:
            return (f"secret_env.{key} must be an env:NAME reference to the variable holding the secret "
                    f"(or vault:{namespace}/<path>), not the secret itself")
    return None
