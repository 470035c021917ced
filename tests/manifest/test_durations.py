from __future__ import annotations

import pytest

from pkgmgr.manifest.durations import parse_go_duration, parse_go_duration_ns


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("300ms", 0.3),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("0", 0.0),
        ("-0", 0.0),
        ("+5s", 5.0),
        ("-1.5h", -5400.0),
        (".5s", 0.5),
        ("5.s", 5.0),
        ("1h1m1s", 3661.0),
        ("2us", 2e-6),
        ("2\u00b5s", 2e-6),
        ("2\u03bcs", 2e-6),
        ("10ns", 1e-8),
        ("1.000000001s", 1.000000001),
    ],
)
def test_valid_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


def test_nanoseconds_are_exact_at_the_limits() -> None:
    assert parse_go_duration_ns("9223372036854775807ns") == 2**63 - 1
    assert parse_go_duration_ns("-9223372036854775808ns") == -(2**63)
    assert parse_go_duration_ns("1h1m1s1ms1us1ns") == 3_661_001_001_001


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "is not a duration"),
        ("30", "missing unit"),
        ("1.5", "missing unit"),
        ("0.0", "missing unit"),
        ("s", "is not a duration"),
        (".s", "is not a duration"),
        ("1x", 'unknown unit "x"'),
        ("1e3s", 'unknown unit "e"'),
        ("1 s", 'unknown unit " s"'),
        ("--1s", "is not a duration"),
        ("-", "is not a duration"),
        ("\u0661s", "is not a duration"),  # ARABIC-INDIC DIGIT ONE is not a digit to Go
        ("9223372036854775808ns", "out of range"),
        ("3000000h", "out of range"),
    ],
)
def test_invalid_durations(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_go_duration(text)


def test_non_string_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_go_duration(30)  # type: ignore[arg-type]
