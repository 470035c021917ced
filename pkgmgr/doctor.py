"""`doctor`'s checks of one scope: the store's (SPEC 4) composed with the activations' (SPEC 9),
so that neither layer calls the other."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pkgmgr.config import Config
    from pkgmgr.errors import Problem
    from pkgmgr.store.scope import Scope


def check_scope(scope: Scope, *, config: Config, verify_trees: bool = True) -> list[Problem]:
    """Every read-only invariant check of `scope`: installs, trees, leftovers, activations."""
    from pkgmgr.activation.invariants import check_activations
    from pkgmgr.store.recovery import check_store

    def activations(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
        return check_activations(scope, conn, config)

    return check_store(scope, verify_trees=verify_trees, row_checks=(activations,))
