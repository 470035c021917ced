"""Property tests: whatever the document, only a PkgmgrError escapes the codec."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.manifest import Manifest, load_manifest_bytes, parse_manifest
from pkgmgr.versions import parse_semver
from tests.manifest.helpers import FULL_FILES, full_manifest
from tests.support.builders import write_extension

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VOCABULARY = [
    "name", "version", "min_compozy_version", "description", "requires_env", "extension", "network_participation",
    "required", "mode", "channel_scopes", "resources", "skills", "agents", "bundles", "loops", "hooks", "event",
    "priority", "timeout", "matcher", "executor", "kind", "command", "args", "env", "secret_env", "mcp_servers",
    "publish", "families", "max_scope", "tools", "capabilities", "provides", "actions", "security", "subprocess",
    "health_check_interval", "shutdown_timeout", "bridge", "platform", "display_name", "secret_slots",
]
INTERESTING_STRINGS = [
    "", " ", "live", "LIVE", "0.5.0", "v1.0.0", "1.0", "demo-ext", "marketplace", "bridge.adapter", "sessions/list",
    "session.read", "*", "30s", "-1s", "1x", "..", "../x", "/etc", "{{config_dir}}/../x", "{{env:", "{{env:A}}",
    "env:A", "GITHUB_TOKEN", "hooks", "global", "workspace", "sync", "async", "\u2028", "\ud800", "a\x00b",
]

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    | st.sampled_from(INTERESTING_STRINGS)
    | st.just(dt.datetime(1979, 5, 27, 7, 32)) | st.just(dt.date(1979, 5, 27)) | st.just(dt.time(7, 32))
)
keys = st.sampled_from(VOCABULARY) | st.text(max_size=8) | st.sampled_from(INTERESTING_STRINGS)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=20,
)


def assert_only_pkgmgr_errors(data: Any, *, root: Path | None = None) -> None:
    try:
        manifest = parse_manifest(data, file="extension.toml", root=root)
    except ValidationFailed as error:
        assert error.problems
        assert {problem.code for problem in error.problems} <= {"invalid_manifest", "path_escapes_root"}
        assert all(problem.key is not None for problem in error.problems)
        json.dumps(error.to_json())
        return
    assert isinstance(manifest, Manifest)
    assert re.fullmatch(r"[a-z][a-z0-9-]{1,63}", manifest.name) and manifest.name != "marketplace"
    parse_semver(manifest.version)
    parse_semver(manifest.min_compozy_version)
    manifest.commands()
    assert manifest.kind in ("resource", "subprocess")


@FUZZ
@given(values)
def test_arbitrary_documents(data: Any) -> None:
    assert_only_pkgmgr_errors(data)


@settings(FUZZ, max_examples=100)  # drawing these tables costs more than checking them
@given(st.dictionaries(keys, values, max_size=6))
def test_arbitrary_tables_with_manifest_keys(data: dict[str, Any]) -> None:
    assert_only_pkgmgr_errors(data)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, prefix + (index,))
    return found


ALL_PATHS = _paths(full_manifest())


@st.composite
def mutated_manifests(draw: st.DrawFn) -> dict[str, Any]:
    doc = full_manifest()
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent: Any = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        if not isinstance(parent, (dict, list)):  # an earlier mutation replaced a container by a string
            continue
        action = draw(st.sampled_from(["drop", "value", "string", "wrap", "empty"]))
        if action == "drop":
            del parent[path[-1]]
        elif action == "value":
            parent[path[-1]] = draw(values)
        elif action == "string":
            parent[path[-1]] = draw(st.sampled_from(INTERESTING_STRINGS) | st.text(max_size=10))
        elif action == "wrap":
            parent[path[-1]] = [parent[path[-1]]]
        else:
            parent[path[-1]] = {str: "", list: [], dict: {}}.get(type(parent[path[-1]]))
    return doc


@FUZZ
@given(mutated_manifests())
def test_mutated_manifests_without_root(doc: dict[str, Any]) -> None:
    assert_only_pkgmgr_errors(doc)


@pytest.fixture(scope="module")
def full_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_extension(tmp_path_factory.mktemp("fuzz") / "ext", full_manifest(), FULL_FILES)
    (root / "escape").symlink_to(root.parent)
    (root / "loop").symlink_to("loop")
    return root


@FUZZ
@given(doc=mutated_manifests())
def test_mutated_manifests_with_root(full_root: Path, doc: dict[str, Any]) -> None:
    assert_only_pkgmgr_errors(doc, root=full_root)


def test_unmutated_full_manifest_is_valid_with_root(full_root: Path) -> None:
    assert parse_manifest(full_manifest(), file="extension.toml", root=full_root).name == "full-ext"


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(["extension.toml", "extension.json"]))
def test_arbitrary_bytes(raw: bytes, file: str) -> None:
    try:
        load_manifest_bytes(raw, file=file)
    except PkgmgrError:
        pass


toml_ish = st.lists(st.sampled_from(list('[]{}=".,\n #\'abc-_019tfvx:\\') + ["name", "version", '"""', "true"]),
                    max_size=60).map("".join)


@FUZZ
@given(toml_ish, st.sampled_from(["extension.toml", "extension.json"]))
def test_toml_and_json_like_text(text: str, file: str) -> None:
    try:
        load_manifest_bytes(text.encode("utf-8"), file=file)
    except PkgmgrError:
        pass


@FUZZ
@given(mutated_manifests())
def test_mutated_manifests_as_json_bytes(doc: dict[str, Any]) -> None:
    raw = json.dumps(copy.deepcopy(doc), default=str).encode("utf-8", "surrogatepass")
    try:
        load_manifest_bytes(raw, file="extension.json")
    except PkgmgrError:
        pass
