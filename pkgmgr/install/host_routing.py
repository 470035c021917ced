"""The pipeline's default destination: each verified tree to its own host's destination in one
scope (`pkgmgr.hosts.port.Host.destination`): pkgmgr's scope store for Compozy's, a folder host's
folder for its own (SPEC 13).

Which host a tree is for is known once it is verified (`--host`, the registry entry's `host`,
a declaration's `host = "..."`, or the manifest file the tree carries), so this destination
routes each prepared tree to the destination of its host; the pipeline sees one `Destination`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pkgmgr.hosts.port import Announce, BatchDestination, Destination, Options, Prepared, ScopeStaging

if TYPE_CHECKING:
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome


class HostRouting(ScopeStaging):
    """One scope's destinations, every host's: a prepared tree goes to its own host's (each uses
    the scope's writer lock and staging, `ScopeStaging`)."""

    def __init__(self, scope: Scope, host: str | None = None) -> None:
        self.scope = scope
        self.host = host  # --host: whose installs `installed` looks at (None: any host's)
        self._destinations: dict[str, Destination] = {}

    @property
    def label(self) -> str:
        return f"{self.scope.kind} scope"

    def installed(self, name: str) -> Installed | None:
        """The install of `name` in the scope (of `--host`'s host; else of the first host, in
        `pkgmgr.hosts.HOSTS` order, that holds one)."""
        from pkgmgr.hosts import names
        from pkgmgr.store import records

        order = names()
        found = sorted(records.find(self.scope, name, self.host), key=lambda row: order.index(row.host))
        return found[0] if found else None

    def for_tree(self, prepared: Prepared[Any]) -> Destination:
        """The destination of `prepared`'s host."""
        destination = self._destinations.get(prepared.host)
        if destination is None:
            from pkgmgr.hosts import get

            destination = self._destinations[prepared.host] = get(prepared.host).destination(self.scope)
        return destination

    def batch_destination(self, prepared: Sequence[Prepared[Any]]) -> BatchDestination | None:
        """The destination that can switch all of `prepared` at once: theirs when every tree is of
        one host whose destination switches a batch (the scope store); None otherwise (then they
        switch ref by ref)."""
        if not prepared or len({item.host for item in prepared}) != 1:
            return None
        destination = self.for_tree(prepared[0])
        return destination if isinstance(destination, BatchDestination) else None

    def check_switch(self, prepared: Prepared[Any], options: Options) -> None:
        self.for_tree(prepared).check_switch(prepared, options)

    def make_durable(self, prepared: list[Prepared[Any]]) -> None:
        for host in dict.fromkeys(item.host for item in prepared):
            trees = [item for item in prepared if item.host == host]
            self.for_tree(trees[0]).make_durable(trees)

    def switch(self, prepared: Prepared[Any], options: Options, announce: Announce | None = None) -> Outcome:
        return self.for_tree(prepared).switch(prepared, options, announce)
