"""Locate the data shipped with the package: JSON Schemas and the default registry.

A wheel carries them under `pkgmgr/_data/` (see pyproject's force-include); a source checkout
or an editable install finds them at the repository's top level.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise RuntimeError(f"pkgmgr is installed without its {name}/ data directory")


@cache
def schemas_dir() -> Path:
    return _find("schemas")


@cache
def default_registry_dir() -> Path:
    return _find("registry_index")
