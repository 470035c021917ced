from __future__ import annotations

import pytest

from pkgmgr.bundles.names import UniqueNames, agent_name_problem, name_problem


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
