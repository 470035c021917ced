"""A bundled job's `task` (direct task materialisation) as Compozy decodes and validates it.

Compozy decodes `task` into `JobTaskConfig` (`internal/automation/model/types.go`): `title`,
`description`, `owner` (`task.Ownership`: `kind`, `ref`) and `network_participation`
(`participation.Request`: `mode`, `channel_strategy`, `channel_id`, `bounds`), each key matched
to its field as Go matches them (case folded, unknown keys ignored, JSON null read as absent), a
value of the wrong type a decode error. `BundleJob.Validate` (`internal/extension/bundle_job.go`)
then runs `JobTaskConfig.Validate`: the request normalised by `NormalizeDirectTaskParticipation`
(`participation.NormalizeIntent`: strings trimmed, `local` by default and bare, `live` with a
strategy, `named` with a channel id of `^[a-z0-9][a-z0-9_-]{0,63}$`, partial bounds positive and
within their ceilings; no `loop_run` for a direct task) and the owner's kind and ref; and a
`named` channel must be one the profile declares (`TestBundleJobValidateUsesNormalizedParticipation`).
The same code at `8eeb8a381` and `cff6dae48`; recorded against it in
tests/hosts/compozy/job_cases.toml.
"""

from __future__ import annotations

import re
from typing import Any

from pkgmgr.errors import ProblemSink
from pkgmgr.gokeys import field_for
from pkgmgr.manifest.durations import parse_go_duration_ns
from pkgmgr.manifest.network import go_lower, go_trim_space

REQUEST = ("mode", "channel_strategy", "channel_id", "bounds")
BOUNDS_INTS = ("max_wakes", "max_input_tokens", "max_output_tokens", "max_wake_depth")  # the order Go checks
BOUNDS_DURATIONS = ("max_wake_wall_time", "max_total_wall_time", "coalesce_window")
OWNER_KINDS = ("human", "agent_session", "automation", "extension", "network_peer", "pool")
STRATEGIES = ("named", "run", "loop_run")
CHANNEL = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
JS_SAFE_INTEGER = 2 ** 53 - 1
INT64 = 2 ** 63
# time.Duration's largest value less a millisecond's worth (participation's maxMillisecondCeilingDuration)
DURATION_CEILING_NS = (2 ** 63 - 1) - (1_000_000 - 1)


def _fields(value: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """An object as Go decodes it into a struct of `names`: each key onto the field it names
    (exactly, else folded), the last one winning, null read as absent, other keys ignored."""
    found: dict[str, Any] = {}
    for key, item in value.items():
        field = field_for(key, names)
        if field is not None:
            if item is None:
                found.pop(field, None)
            else:
                found[field] = item
    return found


def _go_type_problem(value: Any, kind: str) -> str | None:
    """Why Go cannot decode `value` into a field of `kind` (string, int, int64, object)."""
    if kind == "string":
        ok = isinstance(value, str)
    elif kind == "object":
        ok = isinstance(value, dict)
    else:
        ok = isinstance(value, int) and not isinstance(value, bool) and -INT64 <= value < INT64
    if ok:
        return None
    what = {bool: "a boolean", str: "a string", dict: "an object", list: "an array"}.get(type(value), "a number")
    return f"is {what}; Compozy decodes it as {'an integer' if kind in ('int', 'int64') else 'a ' + kind}"


def check_task(sink: ProblemSink, task: dict[str, Any], key: str, channels: set[str]) -> None:
    """Every problem Compozy finds in a job's `task` (decode, then validation), under `key`."""
    fields = _fields(task, ("title", "description", "owner", "network_participation"))
    for name in ("title", "description"):
        if name in fields and (why := _go_type_problem(fields[name], "string")):
            sink.add(f"{key}.{name}", why)
    if "owner" in fields:
        _owner(sink, fields["owner"], f"{key}.owner")
    if "network_participation" in fields:
        _participation(sink, fields["network_participation"], f"{key}.network_participation", channels)


def _owner(sink: ProblemSink, owner: Any, key: str) -> None:
    if (why := _go_type_problem(owner, "object")) is not None:
        sink.add(key, why)
        return
    fields = _fields(owner, ("kind", "ref"))
    for name in ("kind", "ref"):
        if name in fields and (why := _go_type_problem(fields[name], "string")):
            sink.add(f"{key}.{name}", why)
            return
    kind = go_lower(go_trim_space(fields.get("kind", "")))
    if not kind:
        sink.add(f"{key}.kind", "is required (one of " + ", ".join(OWNER_KINDS) + ")")
    elif kind not in OWNER_KINDS:
        sink.add(f"{key}.kind", f"{fields['kind']!r} is not an owner kind (one of {', '.join(OWNER_KINDS)})")
    elif not go_trim_space(fields.get("ref", "")):
        sink.add(f"{key}.ref", "is required")


def _participation(sink: ProblemSink, request: Any, key: str, channels: set[str]) -> None:
    """`participation.NormalizeIntent`, `NormalizeDirectTaskParticipation`, then the channel
    `BundleJob.Validate` wants declared. Stops at the first problem, as Compozy does."""
    if (why := _go_type_problem(request, "object")) is not None:
        sink.add(key, why)
        return
    fields = _fields(request, REQUEST)
    for name in ("mode", "channel_strategy", "channel_id"):
        if name in fields and (why := _go_type_problem(fields[name], "string")):
            sink.add(f"{key}.{name}", why)
            return
    bounds = fields.get("bounds")
    if bounds is not None:
        if (why := _go_type_problem(bounds, "object")) is not None:
            sink.add(f"{key}.bounds", why)
            return
        bounds = _fields(bounds, BOUNDS_INTS + BOUNDS_DURATIONS)
        for name, value in bounds.items():
            if (why := _go_type_problem(value, "string" if name in BOUNDS_DURATIONS else "int")) is not None:
                sink.add(f"{key}.bounds.{name}", why)
                return
    if not fields:
        return  # the zero request: no participation
    mode = go_trim_space(fields.get("mode", "local"))
    strategy = go_trim_space(fields["channel_strategy"]) if "channel_strategy" in fields else None
    channel = go_trim_space(fields["channel_id"]) if "channel_id" in fields else None
    if mode not in ("local", "live"):
        sink.add(f"{key}.mode", f"{mode!r} is not a mode (local or live; Compozy compares it as written, trimmed)")
        return
    if mode == "local":
        if strategy is not None or channel is not None or bounds is not None:
            sink.add(f"{key}.mode", "local participation takes no channel_strategy, channel_id or bounds "
                                    "(a missing mode means local)")
        return
    if strategy is None:
        sink.add(f"{key}.channel_strategy", "is required with mode live (named, run)")
        return
    if strategy not in STRATEGIES:
        sink.add(f"{key}.channel_strategy", f"{strategy!r} is not a strategy (named, run or loop_run)")
        return
    if strategy == "named":
        if not channel:
            sink.add(f"{key}.channel_id", "is required with channel_strategy named")
            return
        if not CHANNEL.fullmatch(channel):
            sink.add(f"{key}.channel_id", f"{channel!r} must match ^[a-z0-9][a-z0-9_-]{{0,63}}$")
            return
    elif channel is not None:
        sink.add(f"{key}.channel_id", f"channel_strategy {strategy!r} derives its channel: drop channel_id")
        return
    if bounds is not None and (problem := _bounds_problem(bounds)):
        sink.add(f"{key}.bounds.{problem[0]}", problem[1])
        return
    if strategy == "loop_run":
        sink.add(f"{key}.channel_strategy", "a job's task cannot derive a Loop run channel (loop_run)")
    elif strategy == "named" and channel not in channels:
        declared = ", ".join(sorted(channels)) or "none"
        sink.add(f"{key}.channel_id", f"names undeclared channel {channel!r} (the profile declares: {declared})")


def _bounds_problem(bounds: dict[str, Any]) -> tuple[str, str] | None:
    """`validatePartialBounds`: (the field, why) of the first problem, None when there is none."""
    for name in BOUNDS_INTS:
        if name in bounds and bounds[name] <= 0:
            return name, "must be positive"
    for name in ("max_input_tokens", "max_output_tokens"):
        if name in bounds and bounds[name] > JS_SAFE_INTEGER:
            return name, f"exceeds {JS_SAFE_INTEGER} (the largest integer JavaScript holds exactly)"
    parsed: dict[str, int] = {}
    for name in BOUNDS_DURATIONS:
        if name not in bounds:
            continue
        text = go_trim_space(bounds[name])
        if not text:
            return name, "is required (a Go duration such as 30s)"
        try:
            nanoseconds = parse_go_duration_ns(text)
        except ValueError as exc:
            return name, str(exc)
        if nanoseconds <= 0:
            return name, f"{text!r} must be positive"
        if nanoseconds > DURATION_CEILING_NS:
            return name, f"{text!r} exceeds the largest duration Compozy keeps in milliseconds"
        parsed[name] = nanoseconds
    if parsed.get("max_wake_wall_time", 0) > parsed.get("max_total_wall_time", INT64):
        return "max_wake_wall_time", "exceeds max_total_wall_time"
    return None
