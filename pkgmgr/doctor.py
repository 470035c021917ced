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
    """Every read-only invariant check of `scope`: installs, trees, leftovers, activations, and
    host installs a killed writer left pending."""
    from pkgmgr.activation.invariants import check_activations
    from pkgmgr.store.recovery import check_store

    def activations(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
        return check_activations(scope, conn, config)

    return check_store(scope, verify_trees=verify_trees, row_checks=(activations, _host_leftovers))


def _host_leftovers(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
    """Host installs a killed writer left pending (SPEC 4, 13), unless a writer is at work."""
    from pkgmgr.errors import Problem
    from pkgmgr.hosts.install import interrupted
    from pkgmgr.store.lock import is_held

    if is_held(scope.lock_path):
        return []
    found = interrupted(scope)
    if is_held(scope.lock_path):
        return []
    return [Problem.invariant(scope.kind, "leftover", message, True) for message in found]


def repair_hosts(scope: Scope, timeout: float) -> list[Problem]:
    """`doctor`'s repair of host installs: what a killed writer left pending is settled from what
    is on disk (`hosts.install.recover`), under the scope's writer lock."""
    from pkgmgr.errors import Problem
    from pkgmgr.hosts.install import interrupted, recover_all
    from pkgmgr.store.recovery import damaged_rows, database_problem

    if not scope.root.is_dir() or scope.layout_problem() is not None or database_problem(scope) is not None:
        return []  # nothing is settled on the word of a database that cannot be read, nor through a link
    conn = scope.reader()
    if conn is None or damaged_rows(scope, conn) or not interrupted(scope):
        return []
    with scope.writer(timeout):
        return [Problem.invariant(scope.kind, "leftover", line, True) for line in recover_all(scope)]
