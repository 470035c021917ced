from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pkgmgr.bundles import MAX_LAYOUT_BYTES, LayoutSpec, layout_scope_problems, parse_layout

from .helpers import LAYOUTS, REPO
from .helpers import layout_doc as _layout_doc


def layout_doc(layout_id: str = "two-up") -> dict:
    return _layout_doc(layout_id, version=2)  # parse_layout judges as v0.2 unless told

VALID = sorted((LAYOUTS / "valid").glob("*.json"))
EXPECTED = json.loads((LAYOUTS / "invalid" / "expected.json").read_text(encoding="utf-8"))
SHARED_VECTOR = REPO.parent / "shared" / "vectors" / "layout_valid.json"


def encode(value) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_corpus(path: Path):
    layout, problems = parse_layout(path.read_bytes(), file=path.name)
    assert problems == []
    assert layout == json.loads(path.read_text(encoding="utf-8"))


def test_corpus_holds_the_shared_vector_and_one_case_per_expectation():
    assert (LAYOUTS / "valid" / "shared-vector.json").is_file()
    cases = {path.name for path in (LAYOUTS / "invalid").glob("*.json")} - {"expected.json"}
    assert cases == set(EXPECTED)


@pytest.mark.skipif(not SHARED_VECTOR.is_file(), reason="shared/vectors not beside the repository")
def test_shared_vector_validates():
    layout, problems = parse_layout(SHARED_VECTOR.read_bytes(), file="layout_valid.json")
    assert problems == [] and layout["id"] == "two-up"
    assert layout == json.loads((LAYOUTS / "valid" / "shared-vector.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_invalid_corpus(name: str):
    expected = EXPECTED[name]
    layout, problems = parse_layout((LAYOUTS / "invalid" / name).read_bytes(), file=f"layouts/{name}")
    assert layout is None and problems
    assert all(p.code == "invalid_layout" and p.file == f"layouts/{name}" for p in problems)
    assert any(p.key == expected["key"] and expected["message"] in p.message for p in problems), \
        [f"{p.key}: {p.message}" for p in problems]


def test_size_limit():
    document = layout_doc()
    document["document"]["windows"]["w1"]["route"]["search"] = {"pad": "x" * MAX_LAYOUT_BYTES}
    layout, problems = parse_layout(encode(document), file="big.json")
    assert layout is None and "larger than 4 MiB" in problems[0].message


def test_just_under_the_size_limit_is_decoded():
    document = layout_doc()
    size = len(encode(document))
    document["document"]["windows"]["w1"]["route"]["search"] = {"pad": "x" * (MAX_LAYOUT_BYTES - size - 100)}
    data = encode(document)
    assert len(data) <= MAX_LAYOUT_BYTES
    assert parse_layout(data, file="big.json")[1] == []


@pytest.mark.parametrize("data", [b"\xff\xfe{}", b"", b"   ", b"null", b"3", b'"x"', b"{", "[" * 100_000])
def test_garbage_is_a_problem(data):
    layout, problems = parse_layout(data if isinstance(data, bytes) else data.encode(), file="x.json")
    assert layout is None and problems and problems[0].code == "invalid_layout"


def test_route_search_is_free_form():
    document = layout_doc()
    document["document"]["windows"]["w1"]["route"]["search"] = {"q": "x", "deep": {"any": [1, None, True]}}
    assert parse_layout(encode(document), file="x.json")[1] == []


def test_all_problems_of_a_layout_are_reported_together():
    document = layout_doc()
    windows = document["document"]["windows"]
    windows["w1"]["colour"] = "red"  # schema
    windows["w2"]["minimized"] = True  # topology
    document["document"]["desktops"][0]["groups"][0]["frame"]["width"] = 2  # rect
    _, problems = parse_layout(encode(document), file="x.json")
    keys = {p.key for p in problems}
    assert {"document.windows.w1.colour", "document.windows.w2.minimized", "document.desktops[0].groups[0].frame"} <= keys


def test_topology_survives_wrong_types():
    document = layout_doc()
    document["document"]["desktops"] = [1, {"id": 3, "groups": "x", "floating": {}}, {"groups": [1, {"root": []}]}]
    document["document"]["windows"] = {"w": 5, "v": {"id": None, "floating_rect": [1]}}
    layout, problems = parse_layout(encode(document), file="x.json")
    assert layout is None and problems


def test_nested_splits_within_depth_are_fine():
    document = layout_doc()
    node = {"id": "leaf-w2", "kind": "leaf", "window_id": "w2"}
    for level in range(20):
        axis = "horizontal" if level % 2 else "vertical"
        node = {"id": f"s{level}", "kind": "split", "axis": axis, "weights": [0.5, 0.5],
                "children": [node, {"id": f"f{level}", "kind": "leaf", "window_id": f"x{level}"}]}
        document["document"]["windows"][f"x{level}"] = {**copy.deepcopy(document["document"]["windows"]["w1"]), "id": f"x{level}"}
    root = document["document"]["desktops"][0]["groups"][0]["root"]
    root["children"][1] = node
    root["axis"] = "vertical" if node["axis"] == "horizontal" else "horizontal"  # axes alternate
    assert parse_layout(encode(document), file="x.json")[1] == []


def _spec(workspace_id: str) -> LayoutSpec:
    document = layout_doc()
    document["document"]["workspace_id"] = workspace_id
    return LayoutSpec("two-up", "Two up", "layouts/two-up.json", document)


def test_scope_binding():
    assert layout_scope_problems(_spec(""), "global", "") == []
    assert layout_scope_problems(_spec(""), "workspace", "/work/app") == []
    assert layout_scope_problems(_spec("/work/app"), "workspace", "/work/app") == []
    [problem] = layout_scope_problems(_spec("/work/app"), "global", "")
    assert (problem.code, problem.file, problem.key) == ("invalid_layout", "layouts/two-up.json", "document.workspace_id")
    [problem] = layout_scope_problems(_spec("/work/other"), "workspace", "/work/app")
    assert "not to this workspace '/work/app'" in problem.message
    with pytest.raises(ValueError):
        layout_scope_problems(_spec(""), "galaxy", "")


@pytest.mark.parametrize("layout_id", [" two-up", "two-up "])
def test_layout_id_is_trimmed(layout_id: str):
    """Compozy's validateLayoutResource trims the id (and display_name) before using it."""
    layout, problems = parse_layout(encode(layout_doc(layout_id)), file="x.json")
    assert problems == [] and layout is not None


def test_layout_id_is_a_name():
    layout, problems = parse_layout(encode(layout_doc("two\tup")), file="x.json")
    assert layout is None
    assert [(p.code, p.key) for p in problems] == [("invalid_layout", "id")]


@pytest.mark.parametrize(("pathname", "fragment"), [
    ("sessions", "application-internal absolute path"),
    ("//host/x", "application-internal absolute path"),
    ("/sessions?tab=1", "must not carry search"),
    ("/sessions#top", "must not carry search"),
    (" /sessions", "surrounding whitespace"),
])
def test_route_pathnames_as_compozy_canonicalises_them(pathname: str, fragment: str):
    # Compozy's canonicalRoutePathname (internal/windowmanager/route.go)
    document = layout_doc()
    window = next(iter(document["document"]["windows"].values()))
    window["route"]["pathname"] = pathname
    layout, problems = parse_layout(encode(document), file="x.json")
    assert layout is None
    assert any(p.key.endswith(".route.pathname") and fragment in p.message for p in problems), problems


def test_layouts_as_compozy_writes_them():
    # `"overrides": {}`, empty aspect_variant/overflow_policy (the defaults), a return_anchor
    document = layout_doc()
    document["aspect_variant"] = document["overflow_policy"] = ""
    document["document"]["overrides"] = {}
    window = next(iter(document["document"]["windows"].values()))
    window["return_anchor"] = {"desktop_id": window["desktop_id"], "source_revision": 3}
    layout, problems = parse_layout(encode(document), file="x.json")
    assert problems == [] and layout is not None


def test_a_packaged_layout_binds_no_workspace():
    document = layout_doc()
    document["document"]["workspace_id"] = "/home/me/project"
    _, problems = parse_layout(encode(document), file="x.json")
    assert [(p.key, "must not bind a workspace" in p.message) for p in problems] == [
        ("document.workspace_id", True)]


def test_text_is_read_as_go_reads_it():
    """Compozy's decoder makes a lone surrogate escape and a broken UTF-8 byte U+FFFD and loads
    the layout (recorded in tests/hosts/compozy/layout_cases.toml, `search-lone-surrogate`)."""
    raw = (LAYOUTS / "valid" / "minimal.json").read_bytes()
    doc = json.loads(raw)
    doc["display_name"] = "Stu\\ud800dio"
    text = json.dumps(doc).replace("\\\\ud800", "\\ud800").encode().replace(b'"id"', b'"id"', 1)
    layout, problems = parse_layout(text.replace(b"Stu", b"St\xffu", 1), file="layout.json")
    assert problems == [] and layout is not None
    assert layout["display_name"] == "St\ufffdu\ufffddio"


@pytest.mark.parametrize("generation, version", [("v0.2", 3), ("v0.3-beta.3", 2)])
def test_the_document_version_is_the_generations(generation: str, version: int):
    doc = json.loads((LAYOUTS / "valid" / "minimal.json").read_text(encoding="utf-8"))
    doc["document"]["version"] = version
    layout, problems = parse_layout(json.dumps(doc).encode(), file="layout.json", generation=generation)
    assert layout is None and [p.key for p in problems] == ["document.version"]
    doc["document"]["version"] = 5 - version
    assert parse_layout(json.dumps(doc).encode(), file="layout.json", generation=generation) == (doc, [])
