"""pkgmgr's own scope store as Compozy's destination (SPEC 4): a verified tree becomes
`extensions/<name>/<version>/` of a scope, recorded in its `state.db`, and the scope's
activations of the extension are refreshed in the same transaction; a removal or a disable is
guarded by the extension's activations.

This is where the store (`pkgmgr.store.switch`) and the activations (`pkgmgr.activation`) are
composed: the store takes the refresh and the removal guard as hooks and imports neither.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pkgmgr.hosts.port import Announce, Options, Prepared, ScopeStaging, SwitchRefused, foreign_tree
from pkgmgr.store.checks import STORE_HOST

if TYPE_CHECKING:
    from pkgmgr.hosts.compozy import CompozyTree
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import OnSwitch, Outcome, Switch


class ScopeDestination(ScopeStaging):
    """Compozy's `Destination` in one scope (global or a workspace's): the scope store."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    @property
    def label(self) -> str:
        return f"{self.scope.kind} scope"

    def installed(self, name: str) -> Installed | None:
        from pkgmgr.store.switch import get_installed

        return get_installed(self.scope, name)

    def _own(self, prepared: Prepared[Any]) -> Prepared[CompozyTree]:
        """The tree, when it is Compozy's; another host's goes to that host's destination."""
        if prepared.host != STORE_HOST:
            raise foreign_tree(prepared, STORE_HOST)
        return prepared

    def check_switch(self, prepared: Prepared[Any], options: Options) -> None:
        from pkgmgr.store.switch import check_replace, get_installed

        tree = self._own(prepared)
        current = get_installed(self.scope, tree.name)
        if current is not None:
            check_replace(current, tree, options)  # source_conflict, reading only
        conn = self.scope.reader()
        if conn is not None and _has_activations(conn, tree.name):
            from pkgmgr.activation.lifecycle import check_kept

            check_kept(self.scope, tree.name, tree.version, tree.judged.bundles,
                       deactivate_missing=options.deactivate_missing)

    def make_durable(self, prepared: list[Prepared[Any]]) -> None:
        from pkgmgr.store.switch import make_durable

        make_durable(self.scope, [item for item in prepared if item.host == STORE_HOST])

    def switch(self, prepared: Prepared[Any], options: Options, announce: Announce | None = None) -> Outcome:
        from pkgmgr.store.switch import commit

        tree = self._own(prepared)
        return commit(self.scope, tree, options, announce, on_switch=self._refresh(tree, options))

    def _refresh(self, tree: Prepared[CompozyTree], options: Options) -> OnSwitch:
        scope = self.scope

        def refresh(conn: sqlite3.Connection, installed: Installed) -> list[dict[str, Any]]:
            if not _has_activations(conn, installed.name):
                return []
            from pkgmgr.activation.lifecycle import refresh_on_switch

            return refresh_on_switch(conn, scope, installed, tree.judged.bundles,
                                     deactivate_missing=options.deactivate_missing,
                                     confirm_always=options.confirm_always)

        return refresh

    def batch_item(self, prepared: Prepared[Any], options: Options, announce: Announce | None, index: int,
                   ) -> Switch:
        """Its part of a batch across hosts (`install.host_routing.HostRouting.switch_all`): the
        switch of one tree, in the scope's one transaction."""
        from pkgmgr.store.switch import Switch

        tree = self._own(prepared)
        return Switch(tree, announce, self._refresh(tree, options), index)

    def switch_all(self, prepared: Sequence[Prepared[Any]], options: Options,
                   announce: Sequence[Announce | None]) -> list[Outcome]:
        """Switch to every tree of a batch in one transaction (`store.switch.commit_all`): every
        row and every activation refresh commit together or not at all. Raises `SwitchRefused`
        (naming the ref) when one is refused; nothing is committed then."""
        from pkgmgr.store.switch import BatchRefused, Switch, commit_all

        trees = [self._own(item) for item in prepared]
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
