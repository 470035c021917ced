"""Property tests: whatever the input, the codecs return problems or raise PkgmgrError, never
anything else (no RecursionError, TypeError, UnicodeError...)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.bundles import load_bundles, parse_agent_md, parse_layout
from pkgmgr.errors import PkgmgrError, Problem

from .helpers import agent_md, bundle, job, layout_doc, profile, trigger, write_bundle_ext

FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)
interesting = st.sampled_from([
    True, False, 0, -1, 1, 0.5, 2, 1e308, -0.0, "", " ", "x", "webhook", "floating", "split", "leaf", "stack",
    "w1", "d1", "n1", "g1", "0 9 * * *", "24h", "0s", "2026-01-05T09:00:00Z", "../escape", "agents/planner",
    [], {}, None, ["w1", "w2"], {"x": 0, "y": 0, "width": 1, "height": 1},
])


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, prefix + (index,))


@st.composite
def mutations(draw: st.DrawFn, base: Any) -> Any:
    """`base` with one to three random edits: replace a value, delete one, or add a key."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(document))))
        value = copy.deepcopy(draw(interesting | json_values))  # `interesting` holds shared lists and dicts
        if not path:
            document = value
            continue
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        operation = draw(st.sampled_from(["replace", "delete", "add"]))
        if operation == "replace":
            parent[path[-1]] = value
        elif operation == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = value
        else:
            parent.insert(path[-1], value)
    return document


def _check_layout_result(result: Any) -> None:
    layout, problems = result
    assert isinstance(problems, list) and all(isinstance(p, Problem) for p in problems)
    assert (layout is None) == bool(problems)
    if layout is not None:
        json.dumps(layout, allow_nan=False)


VALID_LAYOUT = json.loads((Path(__file__).parent / "layouts" / "valid" / "rich.json").read_text())


@FUZZ
@given(json_values)
def test_layout_arbitrary_json(value):
    _check_layout_result(parse_layout(json.dumps(value).encode(), file="x.json"))


@FUZZ
@given(st.binary(max_size=200))
def test_layout_arbitrary_bytes(data):
    _check_layout_result(parse_layout(data, file="x.json"))


@FUZZ
@given(mutations(VALID_LAYOUT))
def test_layout_mutations(document):
    _check_layout_result(parse_layout(json.dumps(document).encode(), file="x.json"))


@FUZZ
@given(mutations(layout_doc()))
def test_shared_vector_mutations(document):
    _check_layout_result(parse_layout(json.dumps(document).encode(), file="x.json"))


VALID_AGENT = agent_md("planner", model="sonnet", tools=["ns__a", "ns__b"], hooks=[{"name": "audit", "event": "tool.pre_call", "command": "./audit.sh"}],
                       reasoning_effort="low")


@FUZZ
@given(st.text(st.characters(codec=None), max_size=300) | st.text(st.characters(categories=["Cs", "Cc", "Zs", "Po"]), max_size=40))
def test_agent_md_arbitrary_text(text):
    front, body, problems = parse_agent_md(text, file="AGENT.md")
    assert isinstance(front, dict) and isinstance(body, str) and all(isinstance(p, Problem) for p in problems)


@FUZZ
@given(st.integers(0, len(VALID_AGENT)), st.integers(0, 20), st.text(max_size=20))
def test_agent_md_mutations(position, cut, insert):
    text = VALID_AGENT[:position] + insert + VALID_AGENT[position + cut:]
    front, body, problems = parse_agent_md(text, file="AGENT.md", reserved_agent_names={"coordinator"})
    assert isinstance(front, dict) and isinstance(body, str)
    if not problems:
        json.dumps(front, allow_nan=False)


VALID_BUNDLE = bundle(profiles=[profile(
    channels={"primary": "ops", "items": [{"name": "ops"}]},
    layouts=[{"path": "layouts/two-up.json"}],
    jobs=[job(retry={"strategy": "backoff", "max_retries": 2, "base_delay": "1s"}, fire_limit={"max": 1, "window": "1h"}),
          job("cron", schedule={"mode": "cron", "expr": "0 9 * * *"})],
    triggers=[trigger(filter={"team": "MKT"})],
)])


LIGHT_BUNDLE = bundle(profiles=[profile(jobs=[job()], triggers=[trigger()])])  # no layout: cheaper examples


@pytest.fixture(scope="module")
def extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "ext"
    write_bundle_ext(root, VALID_BUNDLE, fmt="json", files={"layouts/two-up.json": json.dumps(layout_doc())})
    return root


@pytest.fixture(scope="module")
def light_extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-light") / "ext"
    write_bundle_ext(root, LIGHT_BUNDLE, fmt="json")
    return root


def _load(root: Path) -> None:
    try:
        load_bundles(root, ["bundles"], reserved_agent_names=["coordinator"])
    except PkgmgrError as exc:
        assert exc.code in {"invalid_bundle", "invalid_layout", "path_escapes_root"}


@FUZZ
@given(document=mutations(VALID_BUNDLE))
def test_bundle_mutations(extension, document):
    (extension / "bundles" / "main.json").write_text(json.dumps(document), encoding="utf-8")
    _load(extension)


@FUZZ
@given(position=st.integers(0, 300), cut=st.integers(0, 10), insert=st.text(max_size=10))
def test_bundle_toml_text_mutations(light_extension, position, cut, insert):
    import tomlkit

    text = tomlkit.dumps(LIGHT_BUNDLE)
    bundle_json = light_extension / "bundles" / "main.json"
    bundle_toml = light_extension / "bundles" / "main.toml"
    bundle_json.unlink(missing_ok=True)
    bundle_toml.write_text(text[:position] + insert + text[position + cut:], encoding="utf-8")
    try:
        _load(light_extension)
    finally:
        bundle_toml.unlink()
        bundle_json.write_text(json.dumps(LIGHT_BUNDLE), encoding="utf-8")


@FUZZ
@given(text=st.text(max_size=200))
def test_agent_folder_arbitrary_agent_md(light_extension, text):
    agent = light_extension / "agents" / "planner" / "AGENT.md"
    original = agent.read_bytes()
    agent.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        _load(light_extension)
    finally:
        agent.write_bytes(original)


@FUZZ
@given(paths=st.lists(st.text(st.characters(codec=None), max_size=12) | st.sampled_from(
    ["bundles", "bundles/main.json", "..", "/", ".", "bundles/../bundles", "agents/planner/AGENT.md"]), max_size=3))
def test_arbitrary_bundle_paths(light_extension, paths):
    try:
        load_bundles(light_extension, paths, reserved_agent_names=[])
    except PkgmgrError as exc:
        assert exc.code in {"invalid_bundle", "invalid_layout", "path_escapes_root"}


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deeply_nested_bundle_and_layout(tmp_path, depth):
    nested = "[" * depth + "]" * depth
    root = tmp_path / "ext"
    write_bundle_ext(root, '{"name": "x", "profiles": ' + nested + "}", fmt="json")
    with pytest.raises(PkgmgrError) as info:
        load_bundles(root, ["bundles"], reserved_agent_names=[])
    assert info.value.code == "invalid_bundle"
    _check_layout_result(parse_layout(('{"document": ' + nested + "}").encode(), file="x.json"))
    shutil.rmtree(root)
