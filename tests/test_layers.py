"""No layer imports one above it at run time (docs/architecture.md): the store knows nothing of
the pipeline, the activations, the workspace, the registries or the CLI; the activations nothing
of the pipeline, the workspace, the registries or the CLI; nothing below cli/ imports cli/, nor
rich: the CLI alone renders for a terminal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "pkgmgr"

ABOVE = {
    "store": ("pkgmgr.install", "pkgmgr.activation", "pkgmgr.workspace", "pkgmgr.registry", "pkgmgr.cli",
              "pkgmgr.updater", "pkgmgr.doctor"),
    "activation": ("pkgmgr.install", "pkgmgr.workspace", "pkgmgr.registry", "pkgmgr.cli", "pkgmgr.updater",
                   "pkgmgr.doctor"),
    "net": ("pkgmgr.install", "pkgmgr.store", "pkgmgr.activation", "pkgmgr.workspace", "pkgmgr.registry",
            "pkgmgr.cli"),
    "install": ("pkgmgr.cli",),
    "registry": ("pkgmgr.cli",),
    "workspace": ("pkgmgr.cli",),
}


def runtime_imports(path: Path) -> set[str]:
    """The modules `path` imports outside `if TYPE_CHECKING:` blocks (function bodies included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(ABOVE))
def test_no_layer_imports_one_above_it(layer: str) -> None:
    offending = []
    for path in sorted((PKG / layer).rglob("*.py")):
        for module in runtime_imports(path):
            if any(module == above or module.startswith(above + ".") for above in ABOVE[layer]):
                offending.append(f"{path.relative_to(PKG.parent)} imports {module}")
    assert offending == []


def test_only_the_cli_renders_for_a_terminal() -> None:
    """rich (tables, progress bars) is the CLI's: the core reports to a `Reporter` and returns values."""
    offending = []
    for path in sorted(PKG.rglob("*.py")):
        if path.relative_to(PKG).parts[0] == "cli":
            continue
        offending += [f"{path.relative_to(PKG.parent)} imports {module}" for module in sorted(runtime_imports(path))
                      if module == "rich" or module.startswith("rich.")]
    assert offending == []
