"""pkgmgr's own scope store as a destination (the Compozy host): a verified tree becomes
`extensions/<name>/<version>/` of a scope, recorded in its `state.db`, and the scope's
activations of the extension are refreshed in the same transaction.

This is where the store (`pkgmgr.store.switch`) and the activations (`pkgmgr.activation`) are
composed: the store takes the refresh and the removal guard as hooks and imports neither.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.install.destination import Announce, ScopeStaging, SwitchRefused

if TYPE_CHECKING:
    from pkgmgr.hosts.install import HostPrepared
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.verify import Verified
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import OnSwitch, Outcome


class ScopeDestination(ScopeStaging):
    """The `Destination` of one scope (global or a workspace's)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    @property
    def label(self) -> str:
        return f"{self.scope.kind} scope"

    def installed(self, name: str) -> Installed | None:
        from pkgmgr.store.switch import get_installed

        return get_installed(self.scope, name)

    def _compozy(self, verified: Verified | HostPrepared) -> Verified:
        """The tree, when it is Compozy's; another host's goes to that host's destination."""
        from pkgmgr.install.verify import Verified

        if not isinstance(verified, Verified):
            raise PkgmgrError(f"{verified.name} is a {verified.host.name} extension, not a Compozy one",
                              code=Code.INVALID_ARCHIVE)
        return verified

    def check_switch(self, verified: Verified | HostPrepared, options: InstallOptions) -> None:
        from pkgmgr.store.switch import check_replace, get_installed

        verified = self._compozy(verified)
        current = get_installed(self.scope, verified.name)
        if current is not None:
            check_replace(current, verified, options)  # source_conflict, reading only
        conn = self.scope.reader()
        if conn is not None and _has_activations(conn, verified.name):
            from pkgmgr.activation.lifecycle import check_kept

            check_kept(self.scope, verified.name, verified.version, verified.bundles,
                       deactivate_missing=options.deactivate_missing)

    def make_durable(self, verified: list[Verified | HostPrepared]) -> None:
        from pkgmgr.install.verify import Verified
        from pkgmgr.store.switch import make_durable

        make_durable(self.scope, [item for item in verified if isinstance(item, Verified)])

    def switch(self, verified: Verified | HostPrepared, options: InstallOptions,
               announce: Announce | None = None) -> Outcome:
        from pkgmgr.store.switch import commit

        tree = self._compozy(verified)
        return commit(self.scope, tree, options, announce, on_switch=self._refresh(tree, options))

    def _refresh(self, tree: Verified, options: InstallOptions) -> OnSwitch:
        scope = self.scope

        def refresh(conn: sqlite3.Connection, installed: Installed) -> list[dict[str, Any]]:
            if not _has_activations(conn, installed.name):
                return []
            from pkgmgr.activation.lifecycle import refresh_on_switch

            return refresh_on_switch(conn, scope, installed, tree.bundles,
                                     deactivate_missing=options.deactivate_missing,
                                     confirm_always=options.confirm_always)

        return refresh

    def switch_all(self, verified: Sequence[Verified | HostPrepared], options: InstallOptions,
                   announce: Sequence[Announce | None]) -> list[Outcome]:
        """Switch to every tree of a batch in one transaction (`store.switch.commit_all`): every
        row and every activation refresh commit together or not at all. Raises `SwitchRefused`
        (naming the ref) when one is refused; nothing is committed then."""
        from pkgmgr.store.switch import BatchRefused, Switch, commit_all

        trees = [self._compozy(item) for item in verified]
        switches = [Switch(tree, announce[i], self._refresh(tree, options)) for i, tree in enumerate(trees)]
        try:
            return commit_all(self.scope, switches, options)
        except BatchRefused as refused:
            raise SwitchRefused(refused.index, refused.error) from None


def _has_activations(conn: sqlite3.Connection, name: str) -> bool:
    """Whether `name` has activations in the scope: only then is `pkgmgr.activation.lifecycle`
    (the projection and its checks) imported, which most installs never need."""
    from pkgmgr.activation.rows import extension_rows

    return bool(extension_rows(conn, name))


def remove(scope: Scope, name: str, *, deactivate: bool) -> tuple[Installed, list[dict[str, Any]]]:
    """Remove an installed extension (writer lock held). Raises not_found and
    extension_has_active_bundles (unless `deactivate`, which deactivates them in the same step)."""
    from pkgmgr.activation.lifecycle import guard_removal
    from pkgmgr.store.switch import remove as store_remove

    def guard(conn: sqlite3.Connection, current: Installed) -> list[dict[str, Any]]:
        return guard_removal(conn, scope, current, deactivate=deactivate, action="remove")

    return store_remove(scope, name, before_delete=guard)


def set_enabled(scope: Scope, name: str, enabled: bool, *, deactivate: bool = False,
                ) -> tuple[Installed, list[dict[str, Any]]]:
    """Enable or disable an installed extension; disabling one with activations raises
    extension_has_active_bundles unless `deactivate`."""
    from pkgmgr.activation.lifecycle import guard_removal
    from pkgmgr.store.switch import set_enabled as store_set_enabled

    def guard(conn: sqlite3.Connection, current: Installed) -> list[dict[str, Any]]:
        return guard_removal(conn, scope, current, deactivate=deactivate, action="disable")

    return store_set_enabled(scope, name, enabled, before_disable=guard)


def _require_store(scope: Scope, names: Sequence[str]) -> None:
    """A scope never written holds nothing to change: say so without creating its store."""
    if not scope.exists():
        raise PkgmgrError(f"{names[0]} is not installed in the {scope.kind} scope", code=Code.NOT_FOUND)


def plan_remove(scope: Scope, names: Sequence[str]) -> list[dict[str, Any]]:
    """`ext remove --dry-run`: each named install of `scope` and the activations removing it
    would deactivate. Raises not_found for a name not installed there. Reads only."""
    from pkgmgr.activation.lifecycle import activations_for
    from pkgmgr.store.switch import get_installed

    planned = []
    for name in names:
        item = get_installed(scope, name)
        if item is None:
            raise PkgmgrError(f"{name} is not installed in the {scope.kind} scope", code=Code.NOT_FOUND)
        planned.append({"name": item.name, "version": item.version, "scope": scope.kind,
                        "activations": activations_for(scope, item.name)})
    return planned


def remove_each(scope: Scope, names: Sequence[str], *, deactivate: bool, timeout: float,
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], PkgmgrError | None]:
    """`ext remove`: each name in its own transaction under one writer lock; what was removed,
    the activations deactivated with it, and the first failure (the others still run)."""
    _require_store(scope, names)
    done, error = scope.each_under_writer(names, lambda name: remove(scope, name, deactivate=deactivate), timeout)
    removed = [{"name": item.name, "version": item.version, "scope": scope.kind} for item, _ in done]
    return removed, [a for _, gone in done for a in gone], error


def set_enabled_each(scope: Scope, names: Sequence[str], enabled: bool, *, deactivate: bool, timeout: float,
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], PkgmgrError | None]:
    """`ext enable|disable`: each name in its own transaction under one writer lock; what changed,
    the activations a disable deactivated, and the first failure (the others still run)."""
    _require_store(scope, names)
    done, error = scope.each_under_writer(
        names, lambda name: set_enabled(scope, name, enabled, deactivate=deactivate), timeout)
    changed = [{"name": item.name, "version": item.version, "scope": item.scope, "enabled": item.enabled}
               for item, _ in done]
    return changed, [a for _, gone in done for a in gone], error
