"""schemas: every shipped schema is valid draft 2020-12; schema_problems renders key paths."""

from __future__ import annotations

import json
import re
from importlib import import_module
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.errors import Problem
from pkgmgr.resources_data import schemas_dir
from pkgmgr.schemas import fast_validator, load_schema, schema_problems, validator, validator_class, whole_value_pattern

NAMES = sorted(p.name.removesuffix(".schema.json") for p in schemas_dir().glob("*.schema.json"))


def keys(instance: object, name: str = "config", **kw: str) -> list[tuple[str, str]]:
    return [(p.key, p.message) for p in schema_problems(instance, name, file="f.toml", code="invalid_config", **kw)]


def test_the_expected_schemas_ship() -> None:
    assert {"extension", "bundle", "config", "window_layout", "index", "registry", "registry_entry"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_draft_2020_12(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert validator(name) is validator(name)  # compiled once
    json.dumps(schema)


def test_valid_instance_has_no_problems() -> None:
    assert schema_problems({"host": {"version": "1.0.0"}}, "config", file="f", code="invalid_config") == []


def test_problems_carry_file_and_code() -> None:
    [problem] = schema_problems({"x": 1}, "config", file="/etc/config.toml", code="invalid_config")
    assert problem == Problem("invalid_config", "/etc/config.toml", "x", "unknown key")


def test_unknown_keys_are_named_one_by_one() -> None:
    assert keys({"host": {"b": 1, "a": 2}, "zz": 3}) == [  # shallower paths first, then sorted
        ("zz", "unknown key"), ("host.a", "unknown key"), ("host.b", "unknown key")]


def test_nested_key_paths() -> None:
    assert keys({"registries": {"acme": {"source": 1, "extra": True}}, "limits": {"max_entries": "x"}}) == [
        ("limits.max_entries", "must be of type integer"),
        ("registries.acme.extra", "unknown key"),
        ("registries.acme.source", "must be of type string"),
    ]


def test_list_indices_in_key_paths() -> None:
    assert keys({"host": {"reserved_agent_names": ["ok", 5, ""]}}) == [
        ("host.reserved_agent_names[1]", "must be of type string"),
        ("host.reserved_agent_names[2]", "'' should be non-empty"),
    ]
    found = schema_problems({"name": "x", "version": "1", "min_compozy_version": "1",
                             "resources": {"hooks": [{"name": 1, "bogus": 2}]}},
                            "extension", file="extension.toml", code="invalid_manifest")
    # unknown keys are judged in code, per Compozy generation (pkgmgr.manifest.validate)
    assert not [p for p in found if p.key == "resources.hooks[0].bogus"]
    assert ("resources.hooks[0].name", "must be of type string") in [(p.key, p.message) for p in found]


def test_required_enum_and_root_type_messages() -> None:
    assert keys({"registries": {"acme": {}}}) == [("registries.acme", "'source' is required")]
    assert keys({"policy": {"confirm": "never"}}) == [("policy.confirm", 'must be one of "on_change", "always"')]
    assert keys(["not", "an", "object"]) == [("", "must be of type object (a table with the keys host, policy, limits, network, registries)")]  # the expected shape


def test_prefix_is_prepended() -> None:
    assert keys({"host": {"x": 1}}, prefix="config") == [("config.host.x", "unknown key")]
    assert keys([], prefix="config") == [("config", "must be of type object (a table with the keys host, policy, limits, network, registries)")]


def test_long_instances_are_shortened_in_messages() -> None:
    [(key, message)] = keys({"registries": {"Bad " + "x" * 200: {"source": "s"}}})
    assert key == "registries" and len(message) < 200 and "..." in message


def test_problems_are_not_repeated() -> None:
    found = keys({"host": {"x": 1}, "policy": {"x": 1}})
    assert len(found) == len(set(found))


def test_every_shipped_schema_is_a_valid_draft_2020_12_schema() -> None:
    """pkgmgr does not re-check its own schemas at run time (start-up cost); this test does."""
    from jsonschema import Draft202012Validator

    from pkgmgr.resources_data import schemas_dir
    from pkgmgr.schemas import load_schema

    names = sorted(p.name.removesuffix(".schema.json") for p in schemas_dir().glob("*.schema.json"))
    assert {"extension", "bundle", "window_layout", "config", "registry", "registry_entry", "index",
            "workspace"} <= set(names)
    for name in names:
        schema = load_schema(name)
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", name


# --- patterns match whole values --------------------------------------------------------------------


def _patterns(node: object, path: str = "") -> list[tuple[str, str]]:
    """(where, pattern) of every `pattern` keyword in a schema (not a property named "pattern")."""
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            found.append((path, node["pattern"]))
        for key, child in node.items():
            if key in ("properties", "patternProperties", "$defs"):
                for name, sub in child.items():
                    found += _patterns(sub, f"{path}/{key}/{name}")
            elif key not in ("pattern", "enum", "const", "default", "examples"):
                found += _patterns(child, f"{path}/{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _patterns(child, f"{path}[{index}]")
    return found


PATTERNS = [(name, where, pattern) for name in NAMES for where, pattern in _patterns(load_schema(name))]


def test_the_schemas_have_patterns_to_check() -> None:
    assert len(PATTERNS) >= 8 and {"registry_entry", "index", "config"} <= {name for name, _, _ in PATTERNS}


@pytest.mark.parametrize(("name", "where", "pattern"), PATTERNS, ids=[f"{n}{w}" for n, w, _ in PATTERNS])
@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_each_pattern_refuses_a_valid_value_with_a_trailing_newline(name: str, where: str, pattern: str,
                                                                    data: st.DataObject) -> None:
    """Python's `$` also matches before a final newline: `sha256 = "<hex>\\n"` passed `registry
    validate` and made every client exit 70. Both validators must refuse it: jsonschema's, and the
    generated one's regex (`REGEX_PATTERNS[pattern].search`, what its code runs for `pattern`)."""
    value = data.draw(st.from_regex(whole_value_pattern(pattern), fullmatch=True))
    fast = import_module(fast_validator(name).__module__).REGEX_PATTERNS[pattern]
    strict = validator_class()({"pattern": pattern})
    assert fast.search(value) and strict.is_valid(value), value
    for suffix in ("\n", "\r\n", " "):
        assert not strict.is_valid(value + suffix), (pattern, value)
        assert not fast.search(value + suffix), (pattern, value)


def test_a_hash_with_a_trailing_newline_is_a_schema_problem() -> None:
    entry = {"name": "demo-ext", "versions": [{"version": "1.0.0", "sha256": "a" * 64 + "\n"}]}
    problems = schema_problems(entry, "registry_entry", file="e.toml", code="invalid_index")
    assert any(p.key == "versions[0].sha256" and "does not match" in p.message for p in problems), problems


def _unguarded_nesting(pattern: str) -> list[str]:
    """The unbounded repetitions of `pattern` that hold another one without a literal to start
    each round (`(a+)+`, `(a*b?)*`): the shape that makes a backtracking engine take exponential
    time. `(\\.a+)*` is fine: each round must begin with a `.`, so there is one way to split."""
    from re import _constants as c
    from re import _parser as parser

    def items(node: Any) -> list[Any]:
        return list(node.data) if hasattr(node, "data") else list(node)

    def unbounded(node: Any) -> bool:
        for op, av in items(node):
            if op in (c.MAX_REPEAT, c.MIN_REPEAT) and (av[1] == c.MAXREPEAT or unbounded(av[2])):
                return True
            if op is c.SUBPATTERN and unbounded(av[3]) or op is c.BRANCH and any(unbounded(b) for b in av[1]):
                return True
        return False

    def starts_with_literal(node: Any) -> bool:
        first = items(node)[:1]
        if not first:
            return False
        op, av = first[0]
        return op is c.LITERAL or op is c.SUBPATTERN and starts_with_literal(av[3])

    found: list[str] = []

    def walk(node: Any) -> None:
        for op, av in items(node):
            if op in (c.MAX_REPEAT, c.MIN_REPEAT):
                if av[1] == c.MAXREPEAT and unbounded(av[2]) and not starts_with_literal(av[2]):
                    found.append(str(av[2]))
                walk(av[2])
            elif op is c.SUBPATTERN:
                walk(av[3])
            elif op is c.BRANCH:
                for branch in av[1]:
                    walk(branch)

    walk(parser.parse(pattern))
    return found


def test_the_nesting_check_would_notice_a_catastrophic_pattern() -> None:
    assert _unguarded_nesting(r"^(a+)+$") and _unguarded_nesting(r"^([a-z]*-?)*$")
    assert not _unguarded_nesting(r"^(\*|[a-z][a-z0-9_-]*)(\.(\*|[a-z][a-z0-9_-]*))*$")


@pytest.mark.parametrize(("name", "where", "pattern"), PATTERNS, ids=[f"{n}{w}" for n, w, _ in PATTERNS])
def test_no_pattern_can_take_super_linear_time(name: str, where: str, pattern: str) -> None:
    assert _unguarded_nesting(pattern) == [], pattern


def _node(schema: Any, where: str) -> dict[str, Any]:
    node = schema
    for key, index in re.findall(r"/([^/\[]+)|\[(\d+)\]", where):
        node = node[key] if key else node[int(index)]
    return node


@pytest.mark.parametrize(("name", "where", "pattern"), PATTERNS, ids=[f"{n}{w}" for n, w, _ in PATTERNS])
def test_every_pattern_sees_a_bounded_value(name: str, where: str, pattern: str) -> None:
    """A pattern either matches a bounded length itself or sits beside a `maxLength` (which the
    generated validators check first: tests/test_schemas_codegen.py)."""
    from re import _constants as c
    from re import _parser as parser

    bounded = parser.parse(pattern).getwidth()[1] < c.MAXREPEAT
    assert bounded or "maxLength" in _node(load_schema(name), where), pattern
