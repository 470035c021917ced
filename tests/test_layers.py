"""No layer imports one above it (docs/architecture.md), at run time nor for its types: the store
knows nothing of the pipeline, the activations, the hosts, the workspace, the registries or the
CLI; the activations nothing of the hosts or the pipeline; the hosts nothing of the pipeline, the
registries, the workspace or the lifecycle; the codecs (manifest below bundles, archive) nothing of
any of them; nothing below cli/ imports cli/, nor rich: the CLI alone renders for a terminal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "pkgmgr"

CODECS_ABOVE = ("pkgmgr.store", "pkgmgr.activation", "pkgmgr.hosts", "pkgmgr.install", "pkgmgr.registry",
                "pkgmgr.workspace", "pkgmgr.net", "pkgmgr.cli", "pkgmgr.lifecycle", "pkgmgr.updater", "pkgmgr.doctor",
                "pkgmgr.status")
ABOVE = {
    "store": ("pkgmgr.install", "pkgmgr.activation", "pkgmgr.workspace", "pkgmgr.registry", "pkgmgr.cli",
              "pkgmgr.updater", "pkgmgr.doctor", "pkgmgr.hosts", "pkgmgr.lifecycle", "pkgmgr.status"),
    "activation": ("pkgmgr.install", "pkgmgr.workspace", "pkgmgr.registry", "pkgmgr.cli", "pkgmgr.updater",
                   "pkgmgr.doctor", "pkgmgr.hosts", "pkgmgr.lifecycle", "pkgmgr.status"),
    "net": ("pkgmgr.install", "pkgmgr.store", "pkgmgr.activation", "pkgmgr.workspace", "pkgmgr.registry",
            "pkgmgr.cli", "pkgmgr.hosts", "pkgmgr.lifecycle"),
    # the hosts sit on the store and the activations; the pipeline, the registries, the workspace and
    # the lifecycle drive them
    "hosts": ("pkgmgr.install", "pkgmgr.registry", "pkgmgr.workspace", "pkgmgr.cli", "pkgmgr.lifecycle",
              "pkgmgr.updater", "pkgmgr.doctor", "pkgmgr.status"),
    "install": ("pkgmgr.cli", "pkgmgr.registry", "pkgmgr.workspace", "pkgmgr.lifecycle", "pkgmgr.updater",
                "pkgmgr.doctor"),
    "registry": ("pkgmgr.cli", "pkgmgr.workspace", "pkgmgr.lifecycle", "pkgmgr.updater", "pkgmgr.doctor"),
    "workspace": ("pkgmgr.cli",),
    # the pure codecs: bytes in, values or problems out (the manifest below the bundles)
    "manifest": ("pkgmgr.bundles", "pkgmgr.config", "pkgmgr.archive", *CODECS_ABOVE),
    "bundles": ("pkgmgr.archive", *CODECS_ABOVE),
    "archive": ("pkgmgr.manifest", "pkgmgr.bundles", *CODECS_ABOVE),
}


def runtime_imports(path: Path, *, typing_too: bool = False) -> set[str]:
    """The modules `path` imports outside `if TYPE_CHECKING:` blocks (function bodies included);
    with `typing_too`, those inside them as well (a type a lower layer names from a higher one is
    still a dependency on it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if typing_too:
            break
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


@pytest.mark.parametrize("layer", sorted(ABOVE))
def test_no_layer_names_a_type_of_one_above_it(layer: str) -> None:
    """The same, counting the imports under `if TYPE_CHECKING:` too."""
    offending = []
    for path in sorted((PKG / layer).rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        for module in runtime_imports(path, typing_too=True):
            if any(module == above or module.startswith(above + ".") for above in ABOVE[layer]):
                offending.append((rel, module))
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
