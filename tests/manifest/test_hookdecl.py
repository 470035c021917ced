"""Hook declarations as Compozy's `internal/hooks` judges them (pkgmgr.manifest.hookdecl): the
matcher fields an event takes, Go's `path.Match` pattern syntax, priorities and executor kinds.
The verdicts are Compozy's, recorded running (tests/hosts/compozy/manifest_cases.toml)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.errors import ValidationFailed
from pkgmgr.manifest import parse_manifest
from pkgmgr.manifest.generations import GENERATIONS, HOOK_EVENTS
from pkgmgr.manifest.hookdecl import executor_env_problem, go_glob_problem, hook_matcher_problem
from pkgmgr.manifest.matchers import MATCHER_FIELDS, MATCHER_KEYS
from tests.manifest.helpers import minimal

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "go_path_match.json"


def hook_problems(generation: str, **fields: Any) -> list[tuple[str, str]]:
    hook = {"name": "h1", "event": "session.post_create", "command": "/usr/bin/true", **fields}
    try:
        parse_manifest(minimal(resources={"hooks": [hook]}), file="extension.toml", root=None, generation=generation)
    except ValidationFailed as exc:
        return [(problem.key, problem.message) for problem in exc.problems]
    return []


@pytest.mark.parametrize("pattern", ["Bash*", "[ab]x", "[^a]", "B?sh", "\\*", "[a-c]", "[\\]]", "x]"])
def test_patterns_path_match_accepts(pattern: str) -> None:
    assert go_glob_problem(pattern) is None


@pytest.mark.parametrize("pattern", ["[ab", "[]", "[a-]", "a\\", "[-a]", "[^]", "[a-\\", "["])
def test_patterns_path_match_refuses(pattern: str) -> None:
    assert go_glob_problem(pattern) is not None


def test_patterns_as_go_judges_them() -> None:
    """600 patterns of the pattern alphabet, each with Go's `path.Match` verdict (tests/vectors)."""
    vectors = json.loads(VECTORS.read_text(encoding="utf-8"))["patterns"]
    assert len(vectors) == 600
    assert {pattern: go_glob_problem(pattern) is None for pattern in vectors} == vectors


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_gets_a_verdict_not_an_exception(pattern: str) -> None:
    problem = go_glob_problem(pattern)
    assert problem is None or problem.startswith(("ends in", "has a"))


def test_every_known_event_has_its_matcher_fields() -> None:
    for generation in GENERATIONS:
        assert set(MATCHER_FIELDS[generation]) == set(HOOK_EVENTS[generation]), generation
        assert all(fields <= MATCHER_KEYS for fields in MATCHER_FIELDS[generation].values())


def test_a_field_the_event_does_not_take_is_refused_and_nothing_else_moves() -> None:
    assert hook_problems("v0.3", matcher={"session_type": "chat"}) == []
    found = hook_problems("v0.3", matcher={"session_type": "chat", "tool_name": "Bash"})
    assert [key for key, _ in found] == ["resources.hooks[0].matcher"]
    assert "tool_name cannot match event 'session.post_create'" in found[0][1]


def test_tool_read_only_counts_when_given_even_false() -> None:
    assert hook_matcher_problem("network.message.persisted", {"tool_read_only": False}, "v0.2") is not None
    assert hook_matcher_problem("network.message.persisted", {"tool_read_only": None}, "v0.2") is None
    assert hook_matcher_problem("network.message.persisted", {"channel": " "}, "v0.2") is None


def test_bad_pattern_names_the_field() -> None:
    found = hook_problems("v0.2", event="permission.request", matcher={"tool_name": "[ab"})
    assert [key for key, _ in found] == ["resources.hooks[0].matcher.tool_name"]


@pytest.mark.parametrize(("priority", "refused"), [(2**31 - 1, False), (-(2**31), False), (2**31, True), (-(2**31) - 1, True)])
def test_priority_fits_an_int32(priority: int, refused: bool) -> None:
    found = hook_problems("v0.3", priority=priority)
    assert bool(found) == refused
    assert all(key == "resources.hooks[0].priority" for key, _ in found)


@pytest.mark.parametrize(("executor", "key"), [
    ({"kind": "wasm"}, None),
    ({"kind": "wasm", "command": "/usr/bin/true"}, "resources.hooks[0].executor.kind"),
    ({"kind": "native"}, "resources.hooks[0].executor.kind"),
    ({"kind": "Subprocess", "command": "/usr/bin/true"}, "resources.hooks[0].executor.kind"),
    ({"kind": "docker", "command": "/usr/bin/true"}, "resources.hooks[0].executor.kind"),
])
def test_executor_kinds(executor: dict[str, Any], key: str | None) -> None:
    found = hook_problems("v0.3", command=None, executor=executor)
    found = [item for item in found if item[0] != "resources.hooks[0].command"]
    assert [k for k, _ in found] == ([key] if key else [])


def test_blank_name_and_event_are_refused() -> None:
    assert [key for key, _ in hook_problems("v0.3", name="")] == ["resources.hooks[0].name"]
    assert [key for key, _ in hook_problems("v0.3", event="")] == ["resources.hooks[0].event"]


@pytest.mark.parametrize(("table", "namespace", "problem"), [
    ({"env": {"LEVEL": "x"}, "secret_env": {"K": "env:SRC"}}, "hooks", None),
    ({"env": {"TOKEN_URL": "x"}}, "mcp", None),
    ({"env": {"GH_TOKEN": "x"}}, "mcp", "env.GH_TOKEN looks like a secret"),
    ({"secret_env": {"K": "vault:hooks/x"}}, "hooks", None),
    ({"secret_env": {"K": "vault:extensions/x"}}, "hooks", "secret_env.K: a vault reference here must use vault:hooks/"),
    ({"secret_env": {"K": "hunter2"}}, "mcp", "secret_env.K must be an env:NAME reference"),
])
def test_executor_env(table: dict[str, Any], namespace: str, problem: str | None) -> None:
    found = executor_env_problem(table, namespace)
    assert (found is None) if problem is None else (found is not None and found.startswith(problem))
    assert "hunter2" not in (found or "")
