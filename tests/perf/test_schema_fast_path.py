"""The jsonschema-free fast path (the validators fastjsonschema generated into
`pkgmgr/_schemas_generated/`) is sound: whenever it calls a document valid, jsonschema agrees.
And it is the same judge: on documents mutated from valid ones and on every fixture and corpus
file, it says "valid" exactly when jsonschema does, once jsonschema checks `date-time` as strictly
as the generated code (`STRICT_DATES`; without `rfc3339-validator` jsonschema does not check the
format at all, and the fast path leaves an odd date to it). Plus the edge cases where Python and
JSON Schema disagree about types."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.registry.index_format import _jsonable
from pkgmgr.resources_data import schemas_dir
from pkgmgr.schemas import fast_validator, load_schema, schema_problems, surely_valid, validator, validator_class
from pkgmgr.schemas_codegen import DATE_TIME
from tests.hosts.compozy.corpus import load_cases

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
    assert all(callable(fast_validator(name)) for name in SCHEMAS)


def strict_dates(name: str) -> Any:
    """jsonschema with `date-time` checked by the generated code's rule: the fast path's twin."""
    from jsonschema import FormatChecker

    checker = FormatChecker(())
    checker.checks("date-time")(lambda value: not isinstance(value, str) or re.match(DATE_TIME, value) is not None)
    return validator_class()(load_schema(name), format_checker=checker)


STRICT_DATES = {name: strict_dates(name) for name in SCHEMAS}


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


def assert_same_verdict(document: Any, name: str) -> None:
    """The fast path says "valid" exactly when jsonschema, checking date-time as strictly, does;
    and never where the validator pkgmgr runs (whatever formats it checks) finds a problem."""
    fast = surely_valid(document, name)
    assert fast == STRICT_DATES[name].is_valid(document), document
    if fast:
        assert validator(name).is_valid(document), document
        assert schema_problems(document, name, file="x", code="invalid_index") == []


@pytest.mark.parametrize("name", SCHEMAS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_path_and_jsonschema_agree(name: str, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(SEEDS[name]))
    assert_same_verdict(mutate(seed, data.draw(st.lists(OPS, min_size=0, max_size=4))), name)


def corpus() -> list[tuple[str, str, Any]]:
    """(where, schema, document) of every fixture and corpus file a schema judges: the fixtures,
    the shipped registry, the layout suites and the Compozy conformance corpus (files that do not
    even decode are left out: no schema sees them)."""
    files: list[tuple[str, str, str]] = []
    for pattern in ("fixtures/*/extension.*", "fixtures/*/bundles/*", "fixtures/*/layouts/*"):
        for path in sorted(REPO.glob(pattern)):
            rel = path.name if path.name.startswith("extension.") else f"{path.parent.name}/{path.name}"
            files.append((str(path.relative_to(REPO)), rel, path.read_text(encoding="utf-8")))
    for path in sorted((REPO / "tests" / "bundles" / "layouts").glob("*/*.json")):
        files.append((str(path.relative_to(REPO)), f"layouts/{path.name}", path.read_text(encoding="utf-8")))
    for case in load_cases():
        files += [(f"{case.id}:{rel}", rel, text.lstrip("\n")) for rel, text in case.files.items()]
    index = REPO / "registry_index"
    found = [("registry_index/index.json", "index", json.loads((index / "index.json").read_text())),
             ("registry_index/registry.toml", "registry", toml(index / "registry.toml"))]
    found += [(str(p.relative_to(REPO)), "registry_entry", toml(p)) for p in sorted(index.glob("extensions/*/*.toml"))]
    for where, rel, text in files:
        schema = ("extension" if rel in ("extension.toml", "extension.json") else
                  "bundle" if re.fullmatch(r"bundles/[^/]+\.toml", rel) else
                  "window_layout" if re.fullmatch(r"layouts/[^/]+\.json", rel) else None)
        if schema is None:
            continue
        try:
            document = json.loads(text) if rel.endswith(".json") else _jsonable(tomllib.loads(text), (), {})
        except (ValueError, RecursionError):  # JSONDecodeError, TOMLDecodeError; a corpus case nested 512 deep
            continue
        found.append((where, schema, document))
    return found


CORPUS = corpus()


def test_the_corpus_has_documents_of_every_kind() -> None:
    kinds = {schema for _, schema, _ in CORPUS}
    assert {"extension", "bundle", "window_layout", "index", "registry", "registry_entry"} <= kinds
    assert len(CORPUS) > 150
    assert any(not validator(schema).is_valid(doc) for _, schema, doc in CORPUS)  # invalid ones too


@pytest.mark.parametrize(("where", "name", "document"), CORPUS, ids=[where for where, _, _ in CORPUS])
def test_the_fast_path_and_jsonschema_agree_on_the_corpus(where: str, name: str, document: Any) -> None:
    assert_same_verdict(document, name)


@pytest.mark.parametrize("odd", [(1, 2), Decimal("-1"), Decimal("1"), {1, 2}, b"x", object()])
def test_values_no_decoder_makes_are_left_to_jsonschema(odd: Any) -> None:
    """A tuple is no JSON array to jsonschema (fastjsonschema would take one; the generator makes
    it refuse); other Python values: the fast path says "not sure" or agrees, and never crashes."""
    for name, document in (("registry_entry", {"name": "demo-ext", "tier": "community", "versions": odd}),
                           ("registry", {"registry": {"format": 1, "name": "r", "serial": odd}}),
                           ("extension", {"name": "demo-ext", "version": "1.0.0", "min_compozy_version": "0.5.0",
                                          "requires_env": odd})):
        if surely_valid(document, name):
            assert validator(name).is_valid(document), (name, odd)
    assert not surely_valid({"name": "demo-ext", "tier": "community", "versions": ()}, "registry_entry")


@pytest.mark.parametrize("value", [True, 1.0, 2.5, float("nan"), "1"])
def test_integer_fields_are_not_fooled_by_python_types(value: Any) -> None:
    document = {"registry": {"format": 1, "name": "r", "serial": value}}
    if surely_valid(document, "registry"):
        assert validator("registry").is_valid(document)
    assert surely_valid(document, "registry") == (value == 1 and type(value) is not bool)  # 1.0 is an integer


def test_dates_the_fast_path_leaves_to_jsonschema() -> None:
    base = {"registry": {"format": 1, "name": "r", "serial": 1}}
    for good in ("2027-01-01T00:00:00+00:00", "2028-02-29T23:59:59.123456789z", "2000-02-29t00:00:00-12:30"):
        doc = copy.deepcopy(base)
        doc["registry"]["expires"] = good
        assert surely_valid(doc, "registry"), good
    for odd in ("2027-02-30T00:00:00Z", "2027-01-01 00:00:00Z", "2027-01-01", "2027-01-01T00:00:60Z",
                "2100-02-29T00:00:00Z", "0000-01-01T00:00:00Z", "0000-02-29T00:00:00Z", "2027-01-01T00:00:00+0000",
                "2027-01-01T00:00:00Z\n", "\u0662\u0660\u0662\u0667-01-01T00:00:00Z"):
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
