from __future__ import annotations

import pytest

from pkgmgr.bundles.schedule import (
    check_fire_limit,
    check_retry,
    check_schedule,
    check_trigger_filter,
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


# robfig/cron v3's standard parser decides (Compozy's ScheduleSpec.validateCron)
@pytest.mark.parametrize("expr", ["0 9 * * 1-5", "*/15 * * * *", "0 0 1 1 *", "0 9 * * MON-FRI", "  0 9 * * *  ",
                                  "0 9 * JAN-MAR *", "0 9 * * Mon", "0 9 ? * 1", "0 0 1-15/2 * *",
                                  "CRON_TZ=Europe/Paris 0 9 * * *", "TZ=UTC 0 9 * * *", "? ? ? ? ?", "5/10 * * * *",
                                  "0 0 31 2 *"])
def test_cron_valid(expr):
    assert cron_problem(expr) is None


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("@daily", "descriptors"),
        ("* * * * * *", "has 6 field(s)"),
        ("0 9 * *", "has 4 field(s)"),
        ("61 * * * *", "beyond the maximum 59"),
        ("0 25 * * *", "beyond the maximum 23"),
        ("*/0 * * * *", "a step must be a positive number"),
        ("a b c d e", "is not a number"),
        ("1,2,,3 * * * *", "is not a number"),
        ("", "has 0 field(s)"),
        ("1" * 300 + " * * * *", "longer than"),
        ("0 9 * * 7", "beyond the maximum 6"),  # day-of-week 7: robfig refuses it (croniter would not)
        ("CRON_TZ=Mars/Olympus 0 9 * * *", "not a time zone"),
        ("R * * * *", "is not a number"),
        ("0 9 L * *", "is not a number"),
        ("0 9 1W * *", "is not a number"),
        ("0 9 * * 1#2", "is not a number"),
        ("5-1 * * * *", "starts (5) after it ends (1)"),
        ("0 9 * * FRI-MON", "after it ends"),
        ("0 9 * DEC-JAN *", "after it ends"),
        ("0 0 0 * *", "below the minimum 1"),
        ("1-2-3 * * * *", "too many hyphens"),
        ("*/2/3 * * * *", "too many slashes"),
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
        # Compozy trims and only refuses another mode's field when it is not blank
        ({"mode": "every", "interval": " 1h ", "expr": " "}, []),
        ({"mode": "cron", "expr": " "}, [("s.expr", "needs 'expr'")]),
        ({"mode": "at", "time": "2026-01-05T09:00:00Z", "catch_up_policy": "replay", "misfire_grace_seconds": 5},
         [("s.catch_up_policy", 'must be empty when schedule.mode is "at"'),
          ("s.misfire_grace_seconds", 'must be zero when schedule.mode is "at"')]),
        ({"mode": "cron", "expr": "0 9 * * *", "catch_up_policy": "coalesce", "misfire_grace_seconds": 30}, []),
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


@pytest.mark.parametrize(
    ("retry", "expected"),
    [
        ({"strategy": "none"}, []),
        ({"strategy": "none", "max_retries": 0, "base_delay": " "}, []),
        ({"strategy": "backoff", "max_retries": 3, "base_delay": "30s"}, []),
        ({"strategy": "none", "max_retries": 2}, [("retry.max_retries", "must be zero")]),
        ({"strategy": "none", "base_delay": "1s"}, [("retry.base_delay", "must be empty")]),
        ({"strategy": "backoff", "base_delay": "1s"}, [("retry.max_retries", "must be positive")]),
        ({"strategy": "backoff", "max_retries": 2}, [("retry.base_delay", "is required")]),
        ({"strategy": "backoff", "max_retries": 2, "base_delay": "0s"}, [("retry.base_delay", "positive duration")]),
    ],
)
def test_retry_cross_field_rules(retry, expected):
    # Compozy's RetryConfig.Validate
    sink = _sink()
    check_retry(sink, retry, "retry")
    assert [(p.key, fragment in p.message) for p, (_, fragment) in zip(sink.problems, expected)] == [
        (key, True) for key, _ in expected]
    assert len(sink.problems) == len(expected)


def test_fire_limit_rules():
    # Compozy's FireLimitConfig.Validate
    sink = _sink()
    check_fire_limit(sink, {"max": 1, "window": "1h"}, "ok")
    check_fire_limit(sink, {"max": 0, "window": "1h"}, "zero")
    check_fire_limit(sink, {"max": 3.0, "window": "1h"}, "float")
    check_fire_limit(sink, {"max": 2}, "nowindow")
    check_fire_limit(sink, {"max": 2, "window": "0s"}, "zerowindow")
    check_fire_limit(sink, None, "x")
    assert [(p.key, p.message) for p in sink.problems] == [
        ("zero.max", "must be positive"),
        ("float.max", "must be an integer (write 3, not 3.0)"),
        ("nowindow.window", "is required"),
        ("zerowindow.window", "'0s' must be a positive duration"),
    ]


def test_trigger_filter_paths():
    # Compozy's ValidateTriggerFilter
    sink = _sink()
    check_trigger_filter(sink, {"kind": "linear.issue", "data.team.key": "MKT", " source ": "package"}, "ok")
    check_trigger_filter(sink, {"team": "MKT"}, "bare")
    check_trigger_filter(sink, {"data.": "x"}, "blank")
    check_trigger_filter(sink, {"scope": " "}, "empty")
    check_trigger_filter(sink, {" ": "x"}, "nokey")
    assert [(p.key, p.message.split(":")[0]) for p in sink.problems] == [
        ("bare.team", "unsupported filter path 'team'"),
        ("blank.data.", "unsupported filter path 'data.'"),
        ("empty.scope", "must not be empty"),
        ("nokey", "contains an empty field path"),
    ]
