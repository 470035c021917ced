"""Fuzzing the documents of a bundle: bundle files (loaded from an extension on disk, with their
agents and layouts), AGENT.md files, and window layouts. The parsers that return problems
(`parse_agent_md`, `parse_layout`) never raise; `load_bundles` returns bundles or raises a
PkgmgrError with a bundle code. 1,000 examples per target (tests/fuzz/strategies.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.bundles import load_bundles, parse_agent_md, parse_layout
from pkgmgr.errors import PkgmgrError, Problem
from tests.bundles.test_fuzz import LIGHT_BUNDLE, VALID_AGENT, VALID_LAYOUT, json_values, mutations
from tests.fuzz.conftest import replace_bundle
from tests.fuzz.strategies import FUZZ, as_toml, edited, encoded, ran

pytestmark = pytest.mark.slow

BUNDLE_CODES = {"invalid_bundle", "invalid_layout", "path_escapes_root"}


# --- bundle files -------------------------------------------------------------------------------


@FUZZ
@given(case=st.one_of(
    mutations(LIGHT_BUNDLE).map(lambda d: ("main.json", json.dumps(d).encode())),
    mutations(LIGHT_BUNDLE).map(lambda d: ("main.toml", as_toml(d))),
    encoded(edited(json.dumps(LIGHT_BUNDLE, indent=1))).map(lambda raw: ("main.json", raw)),
    encoded(edited(as_toml(LIGHT_BUNDLE).decode())).map(lambda raw: ("main.toml", raw)),
    st.tuples(st.sampled_from(["main.json", "main.toml", "notes.txt"]), st.binary(max_size=300)),
))
def test_bundle_files(extension: Path, case: tuple[str, bytes]) -> None:
    name, raw = case
    replace_bundle(extension, name, raw)
    try:
        bundles = load_bundles(extension, ["bundles"], reserved_agent_names=["coordinator"])
    except PkgmgrError as error:
        assert error.code in BUNDLE_CODES and {p.code for p in error.problems} <= BUNDLE_CODES, error
        ran("bundle", error.code)
        return
    assert all(b.name for b in bundles)
    ran("bundle", True)


# --- AGENT.md -----------------------------------------------------------------------------------

YAML_TRICKS = ["key: &a [1, 2]\nother: *a", "a: !!python/object:os.system ls", "a: !!binary aGVsbG8=",
               "? [complex, key]\n: value", "a: {b: {c: {d: [1, [2, [3]]]}}}", "name: x\nname: y", "%YAML 1.1\n---",
               "a: 1e999", "a: .nan", "a: 2001-12-14t21:59:43.10-05:00", "tools: [a, b", "'unclosed", "- list root"]


@FUZZ
@given(st.one_of(
    edited(VALID_AGENT),
    st.sampled_from(YAML_TRICKS).map(lambda front: f"---\n{front}\n---\n\nPrompt.\n"),
    st.lists(st.sampled_from(YAML_TRICKS + ["name: planner", "model: x", "---", "", "body"]), max_size=8).map(
        "\n".join),
    st.text(max_size=300),
))
def test_agent_md(text: str) -> None:
    front, body, problems = parse_agent_md(text, file="agents/planner/AGENT.md", reserved_agent_names={"coordinator"})
    assert isinstance(front, dict) and isinstance(body, str)
    assert all(isinstance(p, Problem) and p.code == "invalid_bundle" for p in problems)
    if not problems:
        json.dumps(front, allow_nan=False)
    ran("AGENT.md", problems[0].code if problems else True)


# --- window layouts -----------------------------------------------------------------------------


@FUZZ
@given(st.one_of(
    mutations(VALID_LAYOUT).map(lambda d: json.dumps(d).encode()),
    encoded(edited(json.dumps(VALID_LAYOUT, indent=1))),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=300),
))
def test_window_layouts(raw: bytes) -> None:
    layout, problems = parse_layout(raw, file="layouts/main.json")
    assert all(isinstance(p, Problem) and p.code == "invalid_layout" for p in problems)
    assert (layout is None) == bool(problems)
    if layout is not None:
        json.dumps(layout, allow_nan=False)
    ran("window layout", problems[0].code if problems else True)

