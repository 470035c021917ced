"""Job schedules, retry and fire limits (SPEC 8): the rules the bundle schema cannot say.

`cron` expressions are checked by croniter (a maintained cron library) and must have exactly
the five standard fields, without croniter's extensions (L, W, #, R, H) that a standard parser
rejects; `every` intervals and retry/fire-limit durations are Go-style
durations (the manifest's parser); `at` times are RFC 3339, implemented here because
`datetime.fromisoformat` accepts forms RFC 3339 forbids and rejects some it allows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pkgmgr.documents import integer_problem
from pkgmgr.errors import ProblemSink

MODE_FIELDS = {"cron": "expr", "every": "interval", "at": "time"}
MAX_CRON_LENGTH = 256

_RFC3339 = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    r"T(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})(?:\.\d+)?"
    r"(?:Z|[+-](?P<off_hour>\d{2}):(?P<off_minute>\d{2}))",
    re.ASCII,
)


def rfc3339_problem(text: str) -> str | None:
    """Why `text` is not an RFC 3339 date-time (`2026-01-05T09:00:00Z`,
    `2026-01-05T09:00:00.5+02:00`), or None.

    Upper-case `T` and `Z` only and no leap second (60), as the host's Go parser requires.
    """
    hint = f"{text!r} is not an RFC 3339 date-time such as \"2026-01-05T09:00:00Z\" or \"2026-01-05T09:00:00+02:00\""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return hint
    parts = {name: int(value) for name, value in match.groupdict(default="0").items()}
    if not 1 <= parts["month"] <= 12:
        return f"{text!r}: month {parts['month']} is out of range"
    if not 1 <= parts["day"] <= _days_in_month(parts["year"], parts["month"]):
        return f"{text!r}: day {parts['day']} does not exist in that month"
    if parts["hour"] > 23 or parts["minute"] > 59 or parts["second"] > 59:
        return f"{text!r}: time of day is out of range"
    if parts["off_hour"] > 23 or parts["off_minute"] > 59:
        return f"{text!r}: UTC offset is out of range"
    return None


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


# robfig/cron v3's standard parser (Minute | Hour | Dom | Month | Dow), which Compozy's
# ScheduleSpec.validateCron uses: its grammar, bounds and names, field by field.
_CRON_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_CRON_FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
_MONTHS = {name: n for n, name in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
_WEEKDAYS = {name: n for n, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_CRON_NAMES: tuple[dict[str, int] | None, ...] = (None, None, None, _MONTHS, _WEEKDAYS)
_DIGITS = re.compile(r"[+]?[0-9]+", re.ASCII)
_TZ_PREFIXES = ("TZ=", "CRON_TZ=")


def cron_problem(expr: str) -> str | None:
    """Why robfig/cron v3's standard parser refuses `expr`, or None: an optional `CRON_TZ=`/
    `TZ=` zone prefix, then exactly five fields of `*`, `?`, numbers or names, ranges `a-b`,
    steps `/n` and lists; day-of-week 0-6 (7 is out of range); no `@` descriptors."""
    if len(expr) > MAX_CRON_LENGTH:
        return f"cron expression is longer than {MAX_CRON_LENGTH} characters"
    spec = expr.strip()
    if spec.startswith(_TZ_PREFIXES):
        zone, sep, rest = spec.partition(" ")
        name = zone.split("=", 1)[1]
        if not sep or not _known_zone(name):
            return f"{expr[:80]!r}: {name!r} is not a time zone the host knows"
        spec = rest.strip()
    if spec.startswith("@"):
        return f"{expr[:80]!r}: descriptors such as @daily are not accepted; write the five fields"
    fields = spec.split()
    if len(fields) != 5:
        return (f"{expr[:80]!r} has {len(fields)} field(s); a cron expression has exactly 5 "
                "(minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\"")
    for field, (low, high), label, names in zip(fields, _CRON_BOUNDS, _CRON_FIELD_NAMES, _CRON_NAMES):
        for part in field.split(","):
            problem = _cron_range(part, low, high, names)
            if problem:
                return f"{expr[:80]!r}: {label} field {field!r}: {problem}"
    return None


def _known_zone(name: str) -> bool:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if name in ("", "UTC", "Local"):  # Go's time.LoadLocation: "" and "UTC" are UTC, "Local" the host's zone
        return True
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def _cron_range(part: str, low: int, high: int, names: dict[str, int] | None) -> str | None:
    """robfig's getRange for one comma-separated part."""
    range_and_step = part.split("/")
    if len(range_and_step) > 2:
        return f"too many slashes in {part!r}"
    bounds = range_and_step[0].split("-")
    if len(bounds) > 2:
        return f"too many hyphens in {part!r}"
    if bounds[0] in ("*", "?"):
        if len(bounds) > 1:
            return f"{part!r}: a range cannot start with {bounds[0]!r}"
        start, end = low, high
    else:
        values = []
        for text in bounds:
            value = _cron_value(text, names)
            if value is None:
                return f"{text!r} is not a number{' or a name' if names else ''}"
            values.append(value)
        start, end = values[0], values[-1]
    if len(range_and_step) == 2:
        step = _cron_value(range_and_step[1], None)
        if step is None:
            return f"{range_and_step[1]!r} is not a number"
        if step == 0:
            return "a step must be a positive number"
        if len(bounds) == 1 and bounds[0] not in ("*", "?"):
            end = high  # "5/10" runs from 5 to the field's maximum
    if start < low:
        return f"{start} is below the minimum {low}"
    if end > high:
        return f"{end} is beyond the maximum {high}"
    if start > end:
        return f"the range starts ({start}) after it ends ({end})"
    return None


def _cron_value(text: str, names: dict[str, int] | None) -> int | None:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    return int(text) if _DIGITS.fullmatch(text) else None


def duration_problem(text: str) -> str | None:
    """Why `text` is not a positive Go-style duration (`30s`, `24h`, `1h30m`), or None."""
    from pkgmgr.manifest.durations import parse_go_duration

    try:
        seconds = parse_go_duration(text)
    except ValueError as exc:
        return str(exc)
    if seconds <= 0:
        return f"{text!r} must be a positive duration"
    return None


_VALUE_RULES: dict[str, Callable[[str], str | None]] = {
    "cron": cron_problem,
    "every": duration_problem,
    "at": rfc3339_problem,
}


CATCH_UP_POLICIES = ("skip_missed", "coalesce", "replay", "run_once_on_catchup")


def _trimmed(table: Mapping[str, Any], field: str) -> str:
    from pkgmgr.manifest.network import go_trim_space

    value = table.get(field)
    return go_trim_space(value) if isinstance(value, str) else ""


def check_schedule(sink: ProblemSink, schedule: Any, key: str) -> None:
    """Compozy's `ScheduleSpec.Validate`: the mode's own field required, another mode's field
    empty (blank counts as empty), the value judged as the host parses it, and in mode `at`
    no catch-up policy and no misfire grace (types are the schema's job)."""
    if not isinstance(schedule, Mapping):
        return
    mode = schedule.get("mode")
    if not isinstance(mode, str) or mode not in MODE_FIELDS:
        return
    if mode == "at":
        if _trimmed(schedule, "catch_up_policy"):
            sink.add(f"{key}.catch_up_policy", 'must be empty when schedule.mode is "at"')
        if schedule.get("misfire_grace_seconds") not in (None, 0):
            sink.add(f"{key}.misfire_grace_seconds", 'must be zero when schedule.mode is "at"')
    own = MODE_FIELDS[mode]
    for other, name in MODE_FIELDS.items():
        if other != mode and _trimmed(schedule, name):
            sink.add(f"{key}.{name}", f"belongs to schedule mode {other!r}, not {mode!r}")
    value = _trimmed(schedule, own)
    if not value:
        if not isinstance(schedule.get(own), (str, type(None))):
            return  # the schema reports the type
        sink.add(f"{key}.{own}", f"schedule mode {mode!r} needs {own!r}")
        return
    problem = _VALUE_RULES[mode](value)
    if problem:
        sink.add(f"{key}.{own}", problem)


def check_retry(sink: ProblemSink, retry: Any, key: str) -> None:
    """Compozy's `RetryConfig.Validate`: strategy `none` has no max_retries and no base_delay;
    `backoff` needs max_retries > 0 and a positive base_delay. Required for every bundled job
    and trigger (a missing table is the schema's to report)."""
    if not isinstance(retry, Mapping):
        return
    strategy = retry.get("strategy")
    retries = retry.get("max_retries", 0)
    delay = _trimmed(retry, "base_delay")
    problem = integer_problem(retries) if "max_retries" in retry else None
    if problem:
        sink.add(f"{key}.max_retries", problem)
        return
    if strategy == "none":
        if retries != 0:
            sink.add(f"{key}.max_retries", 'must be zero when retry.strategy is "none"')
        if delay:
            sink.add(f"{key}.base_delay", 'must be empty when retry.strategy is "none"')
    elif strategy == "backoff":
        if isinstance(retries, int) and retries <= 0:
            sink.add(f"{key}.max_retries", 'must be positive when retry.strategy is "backoff"')
        if not delay:
            sink.add(f"{key}.base_delay", 'is required when retry.strategy is "backoff"')
        elif problem := duration_problem(delay):
            sink.add(f"{key}.base_delay", problem)


def check_fire_limit(sink: ProblemSink, fire_limit: Any, key: str) -> None:
    """Compozy's `FireLimitConfig.Validate`: max > 0 and a positive window, both required."""
    if not isinstance(fire_limit, Mapping):
        return
    maximum = fire_limit.get("max", 0)
    problem = integer_problem(maximum) if "max" in fire_limit else None
    if problem:
        sink.add(f"{key}.max", problem)
    elif isinstance(maximum, int) and maximum <= 0:
        sink.add(f"{key}.max", "must be positive")
    window = _trimmed(fire_limit, "window")
    if not window:
        sink.add(f"{key}.window", "is required")
    elif problem := duration_problem(window):
        sink.add(f"{key}.window", problem)


_FILTER_FIELDS = ("kind", "scope", "workspace_id", "source")


def check_trigger_filter(sink: ProblemSink, condition: Any, key: str) -> None:
    """Compozy's `ValidateTriggerFilter`: each key (trimmed) is an activation-envelope field
    (`kind`, `scope`, `workspace_id`, `source`) or `data.<path>` with no blank segment, and
    each value is a non-blank string."""
    from pkgmgr.manifest.network import go_trim_space

    if not isinstance(condition, Mapping):
        return
    for raw_key, raw_value in condition.items():
        field = go_trim_space(raw_key)
        entry = f"{key}.{raw_key}"
        if not field:
            sink.add(key, "contains an empty field path")
            continue
        if isinstance(raw_value, str) and not go_trim_space(raw_value):
            sink.add(entry, "must not be empty")
        data = field.removeprefix("data.")
        if field not in _FILTER_FIELDS and (data == field or any(not go_trim_space(seg) for seg in data.split("."))):
            sink.add(entry, f"unsupported filter path {field!r}: use kind, scope, workspace_id, source or data.<field>")
