"""The jsonschema-free fast path (`pkgmgr.fastschema`) is sound: whenever it calls a document
valid, jsonschema agrees. Checked on every shipped schema with documents mutated from valid
ones, plus the edge cases where Python and JSON Schema disagree about types."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.registry.index_format import _jsonable
from pkgmgr.resources_data import schemas_dir
from pkgmgr.schemas import fast_check, schema_problems, surely_valid, validator

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
SCHEMAS = sorted(p.name.removesuffix(".schema.json") for p in schemas_dir().glob("*.schema.json"))


def toml(path: Path) -> dict[str, Any]:
    return _jsonable(tomllib.loads(path.read_text(encoding="utf-8")), (), {})


def seeds() -> dict[str, list[Any]]:
    """Valid documents of each schema, from the fixtures and the shipped registry."""
    index = REPO / "registry_index"
    layouts = sorted((REPO / "tests" / "bundles" / "layouts" / "valid").glob("*.json"))
    return {
        "extension": [toml(p) for p in sorted(FIXTURES.glob("*/extension.toml"))],
        "bundle": [toml(p) for p in sorted(FIXTURES.glob("*/bundles/*.toml"))],
        "window_layout": [json.loads(p.read_text()) for p in [*FIXTURES.glob("*/layouts/*.json"), *layouts]],
        "registry": [toml(index / "registry.toml")],
        "registry_entry": [toml(p) for p in sorted(index.glob("extensions/*/*.toml"))],
        "index": [json.loads((index / "index.json").read_text())],
        "config": [{"host": {"version": "1.2.0", "reserved_agent_names": ["a", "b"]},
                    "policy": {"allow_unverified": False, "confirm": "always"},
                    "limits": {"max_archive_bytes": 1024, "max_ratio": 10.5},
                    "network": {"retries": 2, "parallel": 4, "connect_timeout": 1.5},
                    "registries": {"team": {"source": "https://example.org/r/", "priority": 5, "insecure": False}}}],
        "workspace": [{"registries": {"team": "https://example.org/r/",
                                      "other": {"source": "/srv/r", "priority": 3, "insecure": True}},
                       "extensions": {"a-b": ">=1.0", "c-d": {"version": "1.2.3", "registry": "team"},
                                      "e-f": {"path": "tools/e"}},
                       "activations": [{"extension": "a-b", "profile": "default"}]}],
    }


SEEDS = seeds()


def test_every_shipped_schema_has_a_fast_path() -> None:
    assert set(SCHEMAS) == set(SEEDS)
    assert [name for name in SCHEMAS if fast_check(name) is None] == []


@pytest.mark.parametrize("name", SCHEMAS)
def test_valid_documents_take_the_fast_path(name: str) -> None:
    assert SEEDS[name], name
    for document in SEEDS[name]:
        assert validator(name).is_valid(document), (name, document)
        assert surely_valid(document, name), (name, document)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


SCALARS = (st.none() | st.booleans() | st.integers(-3, 2**63) | st.floats(allow_nan=True) | st.just(1.0)
           | st.text(max_size=8) | st.sampled_from(["", "1.0.0", "v1.0.0", "default", "a" * 70, "2026-02-30T00:00:00Z",
                                                    "2026-11-29T00:00:00Z", "2026-11-29 00:00:00Z", "official",
                                                    "session.read", "0" * 64, "archives/x.tar.gz", "1.5"]))
OPS = st.tuples(st.integers(0, 10_000), st.sampled_from(["set", "delete", "add", "wrap", "dup"]), SCALARS)


def mutate(document: Any, ops: list[tuple[int, str, Any]]) -> Any:
    doc = copy.deepcopy(document)
    for choice, op, scalar in ops:
        targets = paths(doc)
        path = targets[choice % len(targets)]
        if not path:
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if op == "set":
            parent[key] = scalar
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][str(scalar)[:10] or "extra"] = scalar
        elif op == "wrap":
            parent[key] = [parent[key]]
        elif op == "dup" and isinstance(parent[key], list) and parent[key]:
            parent[key].append(copy.deepcopy(parent[key][0]))
    return doc


@pytest.mark.parametrize("name", SCHEMAS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_path_never_accepts_what_jsonschema_refuses(name: str, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(SEEDS[name]))
    document = mutate(seed, data.draw(st.lists(OPS, min_size=1, max_size=4)))
    if surely_valid(document, name):
        assert validator(name).is_valid(document), document
        assert schema_problems(document, name, file="x", code="invalid_index") == []


@pytest.mark.parametrize("value", [True, 1.0, 2.5, float("nan"), "1"])
def test_integer_fields_are_not_fooled_by_python_types(value: Any) -> None:
    document = {"registry": {"format": 1, "name": "r", "serial": value}}
    if surely_valid(document, "registry"):
        assert validator("registry").is_valid(document)
    assert not surely_valid(document, "registry") or type(value) is int


def test_dates_the_fast_path_leaves_to_jsonschema() -> None:
    base = {"registry": {"format": 1, "name": "r", "serial": 1}}
    good = copy.deepcopy(base)
    good["registry"]["expires"] = "2027-01-01T00:00:00+00:00"
    assert surely_valid(good, "registry")
    for odd in ("2027-02-30T00:00:00Z", "2027-01-01 00:00:00Z", "2027-01-01", "2027-01-01T00:00:60Z"):
        doc = copy.deepcopy(base)
        doc["registry"]["expires"] = odd
        assert not surely_valid(doc, "registry"), odd


def test_deeply_nested_documents_fall_back() -> None:
    """A split node nested past the recursion limit: the fast path gives up (RecursionError),
    it does not crash; jsonschema decides as before."""
    layout = copy.deepcopy(SEEDS["window_layout"][0])
    node: dict[str, Any] = {"id": "leaf", "kind": "leaf", "window_id": "w"}
    for depth in range(3000):
        node = {"id": f"n{depth}", "kind": "split", "axis": "vertical", "children": [node], "weights": [1]}
    layout["document"]["desktops"][0]["groups"][0]["root"] = node
    assert surely_valid(layout, "window_layout") is False
