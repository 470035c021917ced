from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.bundles.names import (
    UniqueNames,
    agent_key,
    agent_name_problem,
    name_problem,
)


@pytest.mark.parametrize("value", ["default", "Daily Sync", "équipe", "a"])
def test_valid_names(value):
    assert name_problem(value, "job name") is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("", "must not be empty"), ("   ", "must not be empty"), (" x", "whitespace"), ("x\n", "whitespace"),
     ("a\x07b", "control character")],
)
def test_invalid_names(value, fragment):
    assert fragment in name_problem(value, "job name")


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("a/b", "must not contain '/'"),
        ("a\\b", "must not contain '/'"),
        (".", "is not allowed"),
        ("..", "is not allowed"),
        ("coordinator", "reserved"),
        ("Dreaming-Curator", "reserved"),
        ("", "must not be empty"),
    ],
)
def test_invalid_agent_names(value, fragment):
    assert fragment in agent_name_problem(value, {"coordinator", "dreaming-curator"})


def test_valid_agent_names():
    assert agent_name_problem("campaign-planner", {"coordinator"}) is None
    assert agent_name_problem("...", set()) is None
    assert agent_name_problem("coordinator", set()) is None


def test_unique_names_are_case_insensitive():
    names = UniqueNames()
    assert names.claim("Daily", "jobs[0]") is None
    assert names.claim("daily", "jobs[1]") == "jobs[0]"
    assert names.claim("DAILY", "jobs[2]") == "jobs[0]"
    assert names.claim("weekly", "jobs[3]") is None


# --- look-alike agent names (confusable-safe key) --------------------------------------------------


RESERVED = {"coordinator", "dreaming-curator"}
LOOKALIKES = {"a": "аα", "c": "сϲ", "e": "е", "i": "іι", "o": "оο", "p": "рρ", "x": "хχ", "y": "уү", "s": "ѕ",
              "j": "ј", "h": "һ", "d": "ԁ", "k": "κ", "v": "ν", "-": "\u2010\u2011\u2012\u2013\u2212"}
IGNORABLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f", "\ufe0f", "\u180e", "\U000e0041"]
MARKS = ["\u0301", "\u0308", "\u0327", "\u20dd", "\u0489"]


@pytest.mark.parametrize("spelling", [
    "co\u200bordinator",          # zero-width space
    "ｃｏｏｒｄｉｎａｔｏｒ",          # fullwidth letters
    "co\u043erdinator",           # Cyrillic о
    "coo\u0301rdinator",          # combining acute accent
    "\u0421OORDINATOR",           # Cyrillic С, upper case
    "dreaming\u2011curator",      # a non-breaking hyphen (NFKC: -)
])
def test_look_alikes_of_a_reserved_name_are_reserved(spelling: str) -> None:
    assert "reserved" in agent_name_problem(spelling, RESERVED)


@st.composite
def look_alike(draw: st.DrawFn) -> tuple[str, str]:
    """A Latin agent name, and a spelling of it that renders the same (or nearly)."""
    name = draw(st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True))
    out = []
    for char in name:
        choice = draw(st.sampled_from(["same", "upper", "fullwidth", "lookalike", "mark"]))
        if choice == "upper":
            char = char.upper()
        elif choice == "fullwidth":
            char = chr(ord(char) + 0xFEE0)
        elif choice == "lookalike" and char in LOOKALIKES:
            char = draw(st.sampled_from(LOOKALIKES[char]))
        elif choice == "mark" and char.isalpha():
            char += draw(st.sampled_from(MARKS))
        if draw(st.booleans()):
            char += draw(st.sampled_from(IGNORABLE))
        out.append(char)
    return name, "".join(out)


@given(look_alike())
def test_every_look_alike_of_a_latin_name_has_its_key(pair: tuple[str, str]) -> None:
    name, spelling = pair
    assert agent_key(spelling) == agent_key(name) == name


@given(st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True), st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True))
def test_different_latin_names_keep_different_keys(first: str, second: str) -> None:
    assert (agent_key(first) == agent_key(second)) == (first == second)


def test_agent_names_are_unique_by_their_key_within_a_profile() -> None:
    names = UniqueNames(agent_key)
    assert names.claim("planner", "agents[0]") is None
    assert names.claim("pl\u0430nner", "agents[1]") == "agents[0]"  # Cyrillic а
    assert UniqueNames().claim("pl\u0430nner", "jobs[0]") is None  # other names keep their rule
