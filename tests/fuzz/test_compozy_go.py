"""Fuzzing what Compozy's Go decoders read differently from Python's (pkgmgr.manifest.godoc,
pkgmgr.gokeys): TOML 1.1 text, JSON with broken UTF-8, lone surrogate escapes and nulls, a
bundled job's task, and version-3 window layouts. Whatever the input, the codecs return a
value or a PkgmgrError (or problems) with their own codes, writable as UTF-8 JSON: never
anything else, never exit 70. And the TOML 1.1 rewriting never changes a TOML 1.0 document.
"""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.bundles import load_bundles, parse_layout
from pkgmgr.errors import PkgmgrError, Problem
from pkgmgr.manifest import Manifest, load_manifest_bytes
from pkgmgr.manifest.godoc import toml_1_0
from tests.bundles.test_fuzz import LIGHT_BUNDLE, VALID_LAYOUT, json_values, mutations
from tests.fuzz.conftest import replace_bundle
from tests.fuzz.strategies import FUZZ, as_toml, edited, encoded, ran, toml_values
from tests.fuzz.test_documents import only

pytestmark = pytest.mark.slow

MANIFEST = 'name = "demo-ext"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\ndescription = "d"\n'
# the TOML 1.1 that BurntSushi v1.6.0 reads: multi-line inline tables with comments and a trailing
# comma, \e and \xHH escapes, times without seconds
TOML_11 = ["[x]\nt = { a = 1,\n  b = [1,\n 2], # c\n }\n", 'description = "a\\eb\\x41"\n', "[x]\nt = 07:32\n",
           "[x]\nt = 1979-05-27T07:32Z\n", "[x]\nt = { a = { b = 1, },\n}\n", "[x]\nt = 9223372036854775808\n",
           '[x]\nt = "\\xZZ"\n', "[x]\nt = { a = 1\n"]
GO_JSON = ['"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', "null", '"a\\u0000b"', '"\\\\ud800"']


@st.composite
def toml_11_manifests(draw: st.DrawFn) -> bytes:
    """The manifest with TOML 1.1 pieces put in, some of them edited."""
    text = MANIFEST
    for _ in range(draw(st.integers(1, 3))):
        piece = draw(st.sampled_from(TOML_11))
        text = text + (draw(edited(piece)) if draw(st.booleans()) else piece)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def go_json_manifests(draw: st.DrawFn) -> bytes:
    """A JSON manifest with Go-read values (lone surrogates, nulls, broken bytes) in its fields."""
    fields = {"name": '"demo-ext"', "version": '"0.1.0"', "min_compozy_version": '"0.5.0"'}
    for key in draw(st.lists(st.sampled_from(["description", "name", "Description", "extension", "x"]), max_size=3)):
        fields[key] = draw(st.sampled_from(GO_JSON))
    raw = ("{" + ",".join(f'"{k}":{v}' for k, v in fields.items()) + "}").encode()
    if draw(st.booleans()):
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xe2\x82", b"\xed\xa0\x80", b"\xc3"])) + raw[at:]
    return raw


@FUZZ
@given(case=st.one_of(
    toml_11_manifests().map(lambda raw: ("extension.toml", raw)),
    go_json_manifests().map(lambda raw: ("extension.json", raw)),
))
def test_go_read_manifests(case: tuple[str, bytes]) -> None:
    file, raw = case
    ran("manifest (Go-read)", only({"invalid_manifest", "path_escapes_root"},
                                   lambda: load_manifest_bytes(raw, file=file), Manifest))


@FUZZ
@given(st.one_of(toml_values.map(lambda v: {"k": v}).map(as_toml), st.dictionaries(st.text(max_size=6), toml_values,
                                                                                    max_size=4).map(as_toml)))
def test_toml_1_1_rewriting_keeps_every_toml_1_0_document(raw: bytes) -> None:
    """What tomllib reads, it reads the same after the rewriting, on the same lines."""
    try:
        text = raw.decode("utf-8")
        expected = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        ran("TOML 1.1 rewriting", False)
        return
    rewritten = toml_1_0(text)
    assert repr(tomllib.loads(rewritten)) == repr(expected)  # repr: nan equals itself
    assert rewritten.count("\n") == text.count("\n")
    ran("TOML 1.1 rewriting", True)


# --- a bundled job's task -----------------------------------------------------------------------

REQUEST = {"mode": "live", "channel_strategy": "named", "channel_id": "ops",
           "bounds": {"max_wakes": 3, "max_wake_wall_time": "10m", "max_total_wall_time": "1h"}}


def with_task(task: Any) -> dict[str, Any]:
    bundle = copy.deepcopy(LIGHT_BUNDLE)
    profile = bundle["profiles"][0]
    profile["channels"] = {"primary": "ops", "items": [{"name": "ops"}]}
    profile["jobs"] = [{"name": "digest", "prompt": "p", "schedule": {"mode": "every", "interval": "1h"},
                        "retry": {"strategy": "none"}, "fire_limit": {"max": 1, "window": "1h"}, "task": task}]
    return bundle


@FUZZ
@given(task=st.one_of(
    mutations({"title": "t", "owner": {"kind": "human", "ref": "u"}, "network_participation": REQUEST}),
    json_values,
    st.dictionaries(st.sampled_from(["network_participation", "Network_Participation", "owner", "title"]),
                    json_values | st.just(REQUEST), max_size=3),
))
def test_job_tasks(extension: Path, task: Any) -> None:
    replace_bundle(extension, "main.json", json.dumps(with_task(task)).encode())
    try:
        load_bundles(extension, ["bundles"], reserved_agent_names=[])
    except PkgmgrError as error:
        codes = {error.code, *(p.code for p in error.problems)}
        assert codes <= {"invalid_bundle", "invalid_layout", "path_escapes_root"}, error
        json.dumps(error.to_json(), ensure_ascii=False).encode("utf-8")
        ran("job task", error.code)
        return
    ran("job task", True)


# --- version-3 window layouts -------------------------------------------------------------------

V3 = copy.deepcopy(VALID_LAYOUT)
V3["document"]["version"] = 3
V3["document"]["desktops"][0]["floating_stacks"] = []
for window in V3["document"]["windows"].values():
    window["nav_stack"] = [{"pathname": "/a", "search": {"q": {"b": 1, "a": [2]}}}]
    window["pinned"] = False


@FUZZ
@given(raw=st.one_of(
    mutations(V3).map(lambda d: json.dumps(d).encode()),
    encoded(edited(json.dumps(V3, indent=1))),
    st.sampled_from(GO_JSON).map(lambda v: json.dumps(V3).replace('"/a"', v, 1).encode()),
), generation=st.sampled_from(["v0.2", "v0.3-beta.3"]))
def test_v3_window_layouts(raw: bytes, generation: str) -> None:
    layout, problems = parse_layout(raw, file="layouts/main.json", generation=generation)
    assert all(isinstance(p, Problem) and p.code == "invalid_layout" for p in problems)
    assert (layout is None) == bool(problems)
    json.dumps([layout, [p.message for p in problems]], ensure_ascii=False, allow_nan=False).encode("utf-8")
    ran("window layout v3", problems[0].code if problems else True)
