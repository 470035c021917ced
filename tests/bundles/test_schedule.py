from __future__ import annotations

import pytest

from pkgmgr.bundles.schedule import (
    FIRE_LIMIT_RULES,
    RETRY_RULES,
    check_fields,
    check_schedule,
    cron_problem,
    duration_problem,
    rfc3339_problem,
)
from pkgmgr.errors import ProblemSink


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-05T09:00:00Z",
        "2026-01-05T09:00:00+02:00",
        "2026-01-05T09:00:00-00:00",
        "2026-01-05T23:59:59.123456789Z",
        "2024-02-29T00:00:00Z",
        "2000-02-29T12:00:00+14:00",
        "0000-02-29T00:00:00Z",
    ],
)
def test_rfc3339_valid(text):
    assert rfc3339_problem(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-05",  # date only
        "2026-01-05T09:00Z",  # no seconds
        "2026-01-05 09:00:00Z",  # space instead of T
        "2026-01-05t09:00:00z",  # lower case: the host's Go parser rejects it
        "2026-01-05T09:00:00",  # no offset
        "2026-01-05T09:00:00+0200",  # offset without colon
        "2026-01-05T09:00:00.Z",  # empty fraction
        "2026-01-05T09:00:00,5Z",  # comma fraction
        "2026-13-05T09:00:00Z",
        "2026-00-05T09:00:00Z",
        "2026-04-31T09:00:00Z",
        "2023-02-29T09:00:00Z",
        "1900-02-29T09:00:00Z",
        "2026-01-00T09:00:00Z",
        "2026-01-05T24:00:00Z",
        "2026-01-05T09:60:00Z",
        "2026-01-05T09:00:60Z",  # leap seconds are rejected, as by Go
        "2026-01-05T09:00:00+24:00",
        "2026-01-05T09:00:00+01:60",
        "２０２６-01-05T09:00:00Z",  # non-ASCII digits
        "+2026-01-05T09:00:00Z",
        "2026-01-05T09:00:00Z ",
        "",
    ],
)
def test_rfc3339_invalid(text):
    assert rfc3339_problem(text) is not None


@pytest.mark.parametrize("expr", ["0 9 * * 1-5", "*/15 * * * *", "0 0 1 1 *", "0 9 * * MON-FRI", "  0 9 * * *  ",
                                  "0 9 * JAN-MAR *", "0 9 * * Mon", "0 9 ? * 1", "0 0 1-15/2 * *"])
def test_cron_valid(expr):
    assert cron_problem(expr) is None


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("@daily", "has 1 field(s)"),
        ("* * * * * *", "has 6 field(s)"),
        ("0 9 * *", "has 4 field(s)"),
        ("61 * * * *", "is not a valid cron expression"),
        ("0 25 * * *", "is not a valid cron expression"),
        ("*/0 * * * *", "is not a valid cron expression"),
        ("a b c d e", "is not a valid cron expression"),
        ("1,2,,3 * * * *", "is not a valid cron expression"),
        ("", "has 0 field(s)"),
        ("1" * 300 + " * * * *", "longer than"),
        # croniter extensions a standard 5-field parser (the host's) rejects
        ("R * * * *", "non-standard"),
        ("0 9 L * *", "non-standard"),
        ("0 9 1W * *", "non-standard"),
        ("0 9 * * 1#2", "non-standard"),
        ("0 9 * * sun#1", "non-standard"),
        ("5-1 * * * *", "start is after its end"),
        ("0 9 * * FRI-MON", "start is after its end"),
        ("0 9 * DEC-JAN *", "start is after its end"),
    ],
)
def test_cron_invalid(expr, fragment):
    assert fragment in cron_problem(expr)


@pytest.mark.parametrize("text", ["24h", "30s", "1h30m", "1.5h", "300ms"])
def test_duration_valid(text):
    assert duration_problem(text) is None


@pytest.mark.parametrize("text", ["0", "0s", "-5m", "24", "1d", "", "h", "soon"])
def test_duration_invalid(text):
    assert duration_problem(text) is not None


def _sink() -> ProblemSink:
    return ProblemSink("bundles/b.toml", "invalid_bundle")


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        ({"mode": "cron", "expr": "0 9 * * 1-5"}, []),
        ({"mode": "every", "interval": "24h"}, []),
        ({"mode": "at", "time": "2026-01-05T09:00:00Z"}, []),
        ({"mode": "cron"}, [("s.expr", "schedule mode 'cron' needs 'expr'")]),
        ({"mode": "every"}, [("s.interval", "needs 'interval'")]),
        ({"mode": "at"}, [("s.time", "needs 'time'")]),
        ({"mode": "cron", "expr": "0 9 * * *", "interval": "1h"}, [("s.interval", "belongs to schedule mode 'every', not 'cron'")]),
        ({"mode": "every", "interval": "1h", "time": "x", "expr": "y"},
         [("s.expr", "belongs to schedule mode 'cron'"), ("s.time", "belongs to schedule mode 'at'")]),
        ({"mode": "every", "interval": "0s"}, [("s.interval", "must be a positive duration")]),
        ({"mode": "every", "interval": "forever"}, [("s.interval", "not a duration")]),
        ({"mode": "cron", "expr": "0 9 * *"}, [("s.expr", "has 4 field(s)")]),
        ({"mode": "at", "time": "tomorrow"}, [("s.time", "not an RFC 3339 date-time")]),
        # the schema reports these; the code rules stay quiet and do not crash
        ({"mode": "weekly"}, []),
        ({"mode": "every", "interval": 5}, []),
        ("every day", []),
    ],
)
def test_check_schedule(schedule, expected):
    sink = _sink()
    check_schedule(sink, schedule, "s")
    assert len(sink.problems) == len(expected)
    for (key, fragment), problem in zip(sorted(expected), sorted(sink.problems, key=lambda p: p.key)):
        assert problem.key == key and fragment in problem.message


def test_retry_and_fire_limit_rules():
    sink = _sink()
    check_fields(sink, {"strategy": "backoff", "base_delay": "0s", "max_retries": 2}, "retry", RETRY_RULES)
    check_fields(sink, {"max": 3.0, "window": "1h"}, "fire_limit", FIRE_LIMIT_RULES)
    check_fields(sink, {"max": 2.5, "window": 60}, "fire_limit", FIRE_LIMIT_RULES)  # types: the schema's
    check_fields(sink, None, "x", RETRY_RULES)
    check_fields(sink, [], "x", FIRE_LIMIT_RULES)
    assert [(p.key, p.message) for p in sink.problems] == [
        ("retry.base_delay", "'0s' must be a positive duration"),
        ("fire_limit.max", "must be an integer (write 3, not 3.0)"),
    ]
