"""End-to-end: documents built to make a parser take super-linear time or crash it, through the
real entry point in a child process under a timeout (a regression fails instead of hanging).
Each gets its document's error code, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import tree
from tests.registry.helpers import RegistryDir
from tests.support.cli import run_subprocess
from tests.workspace.helpers import crew_files

DEEP_KEY = "a." * 40_000 + "b = 1\n"  # the red team's 80 KB pkgmgr.toml: a minute in tomllib
HUGE_INT = "n = 1" + "0" * 5000 + "\n"  # beyond Python's int() digit limit: a ValueError
MANIFEST = 'name = "demo-ext"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n'


def _code(result: object) -> str:
    return json.loads(result.stdout)["error"]["code"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", [DEEP_KEY, HUGE_INT], ids=["deep-key", "huge-int"])
def test_hostile_pkgmgr_toml_and_lock(tmp_path: Path, home: Path, body: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pkgmgr.toml").write_text(body)
    result = run_subprocess(["trust", "--show", "--workspace", ws, "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_config"), result
    (ws / "pkgmgr.toml").write_text("[extensions]\n")
    (ws / "pkgmgr.lock").write_text("version = 1\n" + body)
    before = tree(tmp_path)
    result = run_subprocess(["sync", "--workspace", ws, "--frozen", "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_config"), result
    assert tree(tmp_path) == before


@pytest.mark.parametrize("body", [DEEP_KEY, HUGE_INT], ids=["deep-key", "huge-int"])
def test_hostile_config_toml(tmp_path: Path, home: Path, body: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(body)
    result = run_subprocess(["registry", "list", "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_config"), result


@pytest.mark.parametrize("body", [DEEP_KEY, HUGE_INT], ids=["deep-key", "huge-int"])
def test_hostile_extension_toml(tmp_path: Path, body: str) -> None:
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "extension.toml").write_text(MANIFEST + body)
    before = tree(tmp_path)
    result = run_subprocess(["ext", "validate", ext, "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_manifest"), result
    assert tree(tmp_path) == before


@pytest.mark.parametrize("body", [DEEP_KEY, HUGE_INT], ids=["deep-key", "huge-int"])
def test_hostile_registry_entry(tmp_path: Path, body: str) -> None:
    index = tmp_path / "index"
    (index / "extensions" / "de").mkdir(parents=True)
    (index / "registry.toml").write_text('[registry]\nformat = 1\nname = "acme"\nserial = 1\n')
    (index / "extensions" / "de" / "demo-ext.toml").write_text('name = "demo-ext"\n' + body)
    before = tree(tmp_path)
    result = run_subprocess(["registry", "validate", index, "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_index"), result
    assert tree(tmp_path) == before


@pytest.mark.parametrize("front", [
    "model: 1" + ":59" * 300_000,  # a 1 MiB base-60 integer to PyYAML's YAML 1.1 resolver
    "model: 1" + "0" * 5000,  # beyond int()'s digit limit (was exit 70)
], ids=["base-60", "huge-int"])
def test_hostile_agent_front_matter(tmp_path: Path, front: str) -> None:
    ext = tmp_path / "ext"
    for rel, text in crew_files("crew-ext", "0.1.0").items():
        if rel.endswith("AGENT.md"):
            text = text.replace("---\n\n", f"{front}\n---\n\n", 1)
        (ext / rel).parent.mkdir(parents=True, exist_ok=True)
        (ext / rel).write_text(text)
    before = tree(tmp_path)
    result = run_subprocess(["ext", "validate", ext, "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_bundle"), result
    assert tree(tmp_path) == before


@pytest.mark.parametrize("field, value", [
    ("sha256", "a" * 64 + "\n"),  # passed `registry validate`, then every client exited 70
    ("name", "demo-ext\n"),
])
def test_a_trailing_newline_in_a_registry_field_is_refused(tmp_path: Path, home: Path, field: str,
                                                           value: str) -> None:
    registry = RegistryDir(tmp_path / "index")
    registry.publish("demo-ext", "1.0.0")
    if field == "sha256":
        registry.change("demo-ext", "1.0.0", sha256=value)
    else:
        registry.entries["demo-ext"]["name"] = value
        registry.write()
    result = run_subprocess(["registry", "validate", registry.root, "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_index"), result
    assert run_subprocess(["registry", "add", "team", registry.root], timeout=60).code == 0
    before = tree(tmp_path)
    result = run_subprocess(["ext", "install", "demo-ext", "--yes", "-o", "json"], timeout=60)
    assert (result.code, _code(result)) == (3, "invalid_index"), result
    assert tree(tmp_path) == before
