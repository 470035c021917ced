"""Fuzzing the TOML/JSON documents pkgmgr reads: extension manifests, registry entries,
registry.toml, config.toml, pkgmgr.toml and pkgmgr.lock. Whatever the bytes, the parser returns
a value or raises a PkgmgrError with the file's code — never anything else.

Each target mixes structural mutations of a valid document (rendered as TOML or JSON), edits of
its text, and arbitrary bytes; 1,000 examples per target (tests/fuzz/strategies.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.config import Config, parse_config
from pkgmgr.errors import PkgmgrError
from pkgmgr.manifest import Manifest, load_manifest_bytes
from pkgmgr.registry.index_format import Entry, RegistryMeta, parse_entry, parse_registry
from pkgmgr.workspace.declaration import WorkspaceManifest, parse_workspace_manifest
from pkgmgr.workspace.lockfile import Lock, parse_lock
from tests.bundles.test_fuzz import mutations
from tests.fuzz.strategies import FUZZ, as_toml, edited, encoded, ran, toml_values
from tests.manifest.helpers import full_manifest
from tests.manifest.test_fuzz import mutated_manifests

pytestmark = pytest.mark.slow


def no_none(value: Any) -> Any:
    """TOML has no null: the JSON-minded mutations' None becomes an empty string."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return {k: no_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [no_none(v) for v in value]
    return value


def toml_inputs(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """Structural mutations of `valid` as TOML, edits of its TOML text, TOML-ish documents, bytes."""
    text = as_toml(valid).decode("utf-8")
    return st.one_of(
        mutations(valid).map(no_none).map(as_toml),
        encoded(edited(text)),
        st.dictionaries(st.sampled_from(sorted(valid)) | st.text(max_size=6), toml_values, max_size=4).map(as_toml),
        st.binary(max_size=400),
    )


def only(codes: set[str], call: Callable[[], Any], kind: type) -> bool | str:
    """`call()` returns a `kind` (True) or raises a PkgmgrError whose code (and every problem's)
    is in `codes` (the code)."""
    try:
        value = call()
    except PkgmgrError as error:
        assert error.code in codes, error
        for problem in getattr(error, "problems", ()):
            assert problem.code in codes, problem
        json.dumps(error.to_json())
        return error.code
    assert isinstance(value, kind)
    return True


# --- extension manifests ------------------------------------------------------------------------

MANIFEST_TEXT = as_toml(full_manifest()).decode("utf-8")
MANIFEST_JSON = json.dumps(full_manifest(), indent=1)


@FUZZ
@given(st.one_of(
    mutated_manifests().map(lambda d: ("extension.toml", as_toml(no_none(d)))),
    mutated_manifests().map(lambda d: ("extension.json", json.dumps(d, default=str).encode("utf-8", "surrogatepass"))),
    encoded(edited(MANIFEST_TEXT)).map(lambda raw: ("extension.toml", raw)),
    encoded(edited(MANIFEST_JSON)).map(lambda raw: ("extension.json", raw)),
    st.tuples(st.sampled_from(["extension.toml", "extension.json"]), st.binary(max_size=400)),
))
def test_manifests(case: tuple[str, bytes]) -> None:
    file, raw = case
    ran("manifest", only({"invalid_manifest", "path_escapes_root"}, lambda: load_manifest_bytes(raw, file=file),
                         Manifest))


# --- registry files -------------------------------------------------------------------------------

PUBLISHED = datetime(2026, 1, 1, tzinfo=UTC)
ENTRY = {
    "name": "demo-ext", "description": "a demo", "repository": "acme/demo-ext", "tier": "community",
    "versions": [
        {"version": v, "url": f"archives/demo-ext-{v}.tar.gz", "sha256": c * 64, "size": 1234,
         "min_compozy_version": "0.5.0", "network_digest": "", "permissions": ["session.read"],
         "published": PUBLISHED, "yanked": False}
        for v, c in (("0.1.0", "a"), ("0.2.0-rc.1", "b"), ("1.0.0", "c"))
    ],
}
REGISTRY = {"registry": {"format": 1, "name": "acme", "description": "the acme index", "serial": 7,
                         "expires": PUBLISHED}}


@FUZZ
@given(toml_inputs(ENTRY))
def test_registry_entries(raw: bytes) -> None:
    file = "extensions/de/demo-ext.toml"
    ran("registry entry", only({"invalid_index"}, lambda: parse_entry(raw, file, expected_name="demo-ext"), Entry))


@FUZZ
@given(toml_inputs(REGISTRY))
def test_registry_toml(raw: bytes) -> None:
    ran("registry.toml", only({"invalid_index"}, lambda: parse_registry(raw), RegistryMeta))


# --- config.toml, pkgmgr.toml, pkgmgr.lock -------------------------------------------------------------

CONFIG = {
    "host": {"version": "1.2.0", "reserved_agent_names": ["coordinator", "dreaming-curator"]},
    "policy": {"allow_unverified": False, "confirm": "always"},
    "limits": {"max_archive_bytes": 1024, "max_uncompressed_bytes": 4096, "max_entries": 10, "max_ratio": 50.0},
    "network": {"connect_timeout": 1.5, "read_timeout": 3, "min_rate": 10, "min_rate_after": 2, "retries": 2,
                "backoff_base": 0.5, "parallel": 4},
    "registries": {"acme": {"source": "https://example.com/index/", "priority": 5, "insecure": False},
                   "local": {"source": "~/index"}},
}
WORKSPACE = {
    "registries": {"team": "github:acme/index@main", "mirror": {"source": "./mirror", "priority": 5}},
    "extensions": {"a-ext": ">=0.1,<0.2", "b-ext": {"version": "==0.3.*", "registry": "team"},
                   "c-ext": {"path": "tools/c-ext"}, "d-ext": {"github": "acme/d-ext@v1.0.0"}, "e-ext": "*"},
    "activations": [{"extension": "a-ext", "bundle": "crew", "profile": "default",
                     "confirm_network_requirement": "0" * 64}, {"extension": "c-ext"}],
}
LOCK = {"version": 2, "extension": [
    {"name": n, "version": "0.1.0", "source": s, "url": "https://example.com/a.tar.gz", "sha256": "a" * 64,
     "tree_sha256": "sha256-2:" + "b" * 64, "network_digest": ""}
    for n, s in (("a-ext", "registry+https://example.com/index/"), ("c-ext", "path+tools/c-ext"),
                 ("d-ext", "github+acme/d-ext@v1.0.0"))]}


@FUZZ
@given(toml_inputs(CONFIG))
def test_config_toml(raw: bytes) -> None:
    ran("config.toml", only({"invalid_config"}, lambda: parse_config(raw, Path("config.toml")), Config))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-workspace")
    (root / "tools" / "c-ext").mkdir(parents=True)
    (root / "mirror").mkdir()
    (root / "escape").symlink_to(root.parent)
    return root


@FUZZ
@given(raw=toml_inputs(WORKSPACE))
def test_pkgmgr_toml(workspace: Path, raw: bytes) -> None:
    ran("pkgmgr.toml", only({"invalid_config"}, lambda: parse_workspace_manifest(raw, workspace),
                            WorkspaceManifest))


@FUZZ
@given(toml_inputs(LOCK))
def test_pkgmgr_lock(raw: bytes) -> None:
    ran("pkgmgr.lock", only({"invalid_config"}, lambda: parse_lock(raw), Lock))
