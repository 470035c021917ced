"""Job schedules, retry and fire limits (SPEC 8): the rules the bundle schema cannot say.

`cron` expressions are checked by croniter (a maintained cron library) and must have exactly
the five standard fields, without croniter's extensions (L, W, #, R, H) that a standard parser
rejects; `every` intervals and retry/fire-limit durations are Go-style
durations (the manifest's parser); `at` times are RFC 3339, implemented here because
`datetime.fromisoformat` accepts forms RFC 3339 forbids and rejects some it allows.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

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


_CRON_NAMES = re.compile(r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat", re.IGNORECASE)
_CRON_FIELD = re.compile(r"[0-9*?,/-]+", re.ASCII)
_CRON_NUMBERS = {  # month names are 1-12, weekday names 0-6 (Sunday first)
    **{name: str(n) for n, name in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)},
    **{name: str(n) for n, name in enumerate("sun mon tue wed thu fri sat".split())},
}
_CRON_RANGE = re.compile(r"(\d+)-(\d+)", re.ASCII)


def cron_problem(expr: str) -> str | None:
    """Why `expr` is not a standard five-field cron expression, or None."""
    fields = expr.split()
    if len(fields) != 5:
        return (f"{expr[:80]!r} has {len(fields)} field(s); a cron expression has exactly 5 "
                "(minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\"")
    if len(expr) > MAX_CRON_LENGTH:
        return f"cron expression is longer than {MAX_CRON_LENGTH} characters"
    from croniter import croniter

    try:
        valid = croniter.is_valid(expr)
    except Exception:  # noqa: BLE001 - a third-party parser must not turn bad input into a traceback
        valid = False
    if not valid:
        return f"{expr!r} is not a valid cron expression"
    for index, field in enumerate(fields):
        # month and weekday names as their numbers
        text = _CRON_NAMES.sub(lambda m: _CRON_NUMBERS[m.group().lower()], field) if index >= 3 else field
        if not _CRON_FIELD.fullmatch(text):
            return (f"{expr!r}: field {field!r} uses a non-standard cron extension (L, W, #, R, H); "
                    "standard fields hold numbers, names of months and weekdays, and * , - / ?")
        for low, high in _CRON_RANGE.findall(text):
            if int(low) > int(high):  # croniter wraps it round; a standard parser refuses it
                return f"{expr!r}: field {field!r} has a range whose start is after its end"
    return None


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


def check_schedule(sink: ProblemSink, schedule: Any, key: str) -> None:
    """Mode-specific rules of a job's `schedule` table (types are the schema's job)."""
    if not isinstance(schedule, Mapping):
        return
    mode = schedule.get("mode")
    if not isinstance(mode, str) or mode not in MODE_FIELDS:
        return
    own = MODE_FIELDS[mode]
    for other, name in MODE_FIELDS.items():
        if other != mode and name in schedule:
            sink.add(f"{key}.{name}", f"belongs to schedule mode {other!r}, not {mode!r}")
    value = schedule.get(own)
    if value is None:
        sink.add(f"{key}.{own}", f"schedule mode {mode!r} needs {own!r}")
    elif isinstance(value, str):
        problem = _VALUE_RULES[mode](value)
        if problem:
            sink.add(f"{key}.{own}", problem)


def _duration_value(value: Any) -> str | None:
    return duration_problem(value) if isinstance(value, str) else None  # other types: the schema's


RETRY_RULES: dict[str, Callable[[Any], str | None]] = {"max_retries": integer_problem, "base_delay": _duration_value}
FIRE_LIMIT_RULES: dict[str, Callable[[Any], str | None]] = {"max": integer_problem, "window": _duration_value}


def check_fields(sink: ProblemSink, table: Any, key: str, rules: Mapping[str, Callable[[Any], str | None]]) -> None:
    """Apply `rules` (field -> problem or None) to the fields present in `table`, e.g. a job's
    `retry` with RETRY_RULES or its `fire_limit` with FIRE_LIMIT_RULES."""
    if not isinstance(table, Mapping):
        return
    for name, rule in rules.items():
        problem = rule(table[name]) if name in table else None
        if problem:
            sink.add(f"{key}.{name}", problem)
