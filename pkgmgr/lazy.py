"""Package namespaces whose names load on first use (PEP 562).

A package's `__init__` that imports every submodule makes importing any one of them pay for
all: `pkgmgr.bundles.extension` (which every install imports) brought the agent, layout,
prompt-template and schedule codecs and their dataclasses with it, though a tree without
bundles uses none of them. `lazy_exports` gives such a package the same public names, each
imported from its submodule when it is first read; type checkers read the names from the
package's `if TYPE_CHECKING:` imports, which `tests/test_lazy_exports.py` holds to the table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, namespace: dict[str, Any],
                 table: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: `table` maps each submodule (relative to the
    package) to the names it exports; a name is imported once, then kept in `namespace`."""
    where = {name: module for module, names in table.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
