"""Where the data shipped with pkgmgr is found: `pkgmgr/_data/<name>` in a wheel, the
repository's top level in a checkout or an editable install, and a clear error without it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pkgmgr import resources_data
from pkgmgr.registry.index_format import parse_index, parse_registry
from pkgmgr.resources_data import default_registry_dir, schemas_dir

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = ("bundle", "config", "extension", "index", "registry", "registry_entry", "window_layout", "workspace")


def test_a_checkout_finds_the_top_level_directories() -> None:
    assert not (REPO / "pkgmgr" / "_data").exists(), "this test describes a source checkout"
    assert schemas_dir() == REPO / "schemas"
    assert default_registry_dir() == REPO / "registry_index"
    assert schemas_dir().is_absolute() and default_registry_dir().is_absolute()


def test_answers_are_computed_once() -> None:
    assert schemas_dir() is schemas_dir()
    assert default_registry_dir() is default_registry_dir()


def test_the_schemas_directory_holds_every_schema_pkgmgr_loads() -> None:
    found = sorted(p.name.removesuffix(".schema.json") for p in schemas_dir().glob("*.schema.json"))
    assert found == sorted(SCHEMAS)
    for name in SCHEMAS:
        doc = json.loads((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))
        assert isinstance(doc, dict) and "$schema" in doc


def test_the_default_registry_directory_is_a_valid_registry() -> None:
    root = default_registry_dir()
    meta = parse_registry((root / "registry.toml").read_bytes())
    assert meta.name == "default"
    index = parse_index((root / "index.json").read_bytes())
    assert index.serial == meta.serial
    assert (root / "extensions").is_dir()


def package_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Pretend the package lives at tmp_path/site/pkgmgr."""
    package = tmp_path / "site" / "pkgmgr"
    package.mkdir(parents=True)
    monkeypatch.setattr(resources_data, "_PACKAGE", package)
    return package


def test_a_wheel_layout_wins_over_the_parent_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = package_at(tmp_path, monkeypatch)
    (package / "_data" / "schemas").mkdir(parents=True)
    (package.parent / "schemas").mkdir()
    assert resources_data._find("schemas") == package / "_data" / "schemas"


def test_the_parent_directory_serves_an_editable_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = package_at(tmp_path, monkeypatch)
    (package.parent / "registry_index").mkdir()
    assert resources_data._find("registry_index") == package.parent / "registry_index"


def test_a_missing_data_directory_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = package_at(tmp_path, monkeypatch)
    (package / "_data").mkdir()
    (package / "_data" / "schemas").write_text("a file, not a directory")
    (package.parent / "schemas").write_text("neither")
    with pytest.raises(RuntimeError) as exc:
        resources_data._find("schemas")
    assert str(exc.value) == "pkgmgr is installed without its schemas/ data directory"


def test_an_installed_wheel_layout_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """A copy of the package with `_data/` beside its modules (what the wheel's force-include
    builds) finds its data there, not in the checkout."""
    site = tmp_path / "site"
    package = site / "pkgmgr"
    package.mkdir(parents=True)
    for module in ("__init__.py", "resources_data.py"):
        (package / module).write_bytes((REPO / "pkgmgr" / module).read_bytes())
    (package / "_data" / "schemas").mkdir(parents=True)
    (package / "_data" / "registry_index").mkdir()
    code = ("import pkgmgr.resources_data as r; print(r.schemas_dir()); print(r.default_registry_dir()); "
            "print(r.__file__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[2] == str((package / "resources_data.py").resolve())
    assert lines[:2] == [str((package / "_data" / "schemas").resolve()),
                         str((package / "_data" / "registry_index").resolve())]
