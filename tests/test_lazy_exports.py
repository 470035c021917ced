"""The packages whose names load on first use (`pkgmgr.lazy`): the names a type checker reads
(their `if TYPE_CHECKING:` imports), `__all__` and what the package hands out at run time are
the same, each the submodule's own object, and importing the package imports no submodule."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ("pkgmgr.archive", "pkgmgr.bundles", "pkgmgr.manifest")


def type_checking_imports(package: str) -> dict[str, str]:
    """name -> submodule, from the `if TYPE_CHECKING:` block of the package's `__init__`."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom) and item.module
                found.update({alias.name: item.module for alias in item.names})
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_the_checked_names_are_the_names_handed_out(package: str) -> None:
    module = importlib.import_module(package)
    declared = type_checking_imports(package)
    assert sorted(declared) == sorted(module.__all__)
    for name, submodule in declared.items():
        assert getattr(module, name) is getattr(importlib.import_module(submodule), name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018 - the attribute error of any module


@pytest.mark.parametrize("package", PACKAGES)
def test_importing_the_package_imports_none_of_its_modules(package: str) -> None:
    code = (f"import json, sys; import {package}; "
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith('{package}.'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == []
