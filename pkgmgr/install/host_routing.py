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

from pkgmgr.hosts.port import Announce, BatchDestination, BatchMember, Destination, Options, Prepared, ScopeStaging

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
        one host whose destination switches a batch (the scope store); this routing when the
        trees are of several hosts whose destinations each take part in a batch (`batch_item`:
        one transaction across hosts, SPEC 4); None otherwise (then they switch ref by ref)."""
        if not prepared:
            return None
        if len({item.host for item in prepared}) == 1:
            destination = self.for_tree(prepared[0])
            return destination if isinstance(destination, BatchDestination) else None
        if all(isinstance(self.for_tree(item), BatchMember) for item in prepared):
            return self
        return None

    def switch_all(self, prepared: Sequence[Prepared[Any]], options: Options,
                   announce: Sequence[Announce | None]) -> list[Outcome]:
        """Switch every tree of a batch of several hosts at once (`store.switch.commit_all`, the one
        protocol of `store.pending`): every host's part made ready (whatever can fail, fails
        then), every change recorded as pending, every host's lock taken, every tree moved in,
        then ONE transaction commits every row, then each host's own records follow. Raises
        `SwitchRefused` naming the ref; nothing is committed then."""
        from pkgmgr.errors import PkgmgrError
        from pkgmgr.hosts.port import SwitchRefused
        from pkgmgr.store.switch import BatchRefused, Outcome, Switch, commit_all

        items: list[Any] = []
        try:
            for index, tree in enumerate(prepared):
                destination = self.for_tree(tree)
                assert isinstance(destination, BatchMember)
                items.append(destination.batch_item(tree, options, announce[index], index))
        except PkgmgrError as error:
            _drop_parts([item for item in items if not isinstance(item, (Switch, Outcome))])
            raise SwitchRefused(len(items), error) from None
        switches = [item for item in items if isinstance(item, Switch)]
        parts = [item for item in items if not isinstance(item, (Switch, Outcome))]
        try:
            done = iter(commit_all(self.scope, switches, options, parts))
        except BatchRefused as refused:
            raise SwitchRefused(refused.index, refused.error) from None
        return [next(done) if isinstance(item, Switch) else item if isinstance(item, Outcome) else item.outcome()
                for item in items]

    def check_switch(self, prepared: Prepared[Any], options: Options) -> None:
        self.for_tree(prepared).check_switch(prepared, options)

    def make_durable(self, prepared: list[Prepared[Any]]) -> None:
        for host in dict.fromkeys(item.host for item in prepared):
            trees = [item for item in prepared if item.host == host]
            self.for_tree(trees[0]).make_durable(trees)

    def switch(self, prepared: Prepared[Any], options: Options, announce: Announce | None = None) -> Outcome:
        return self.for_tree(prepared).switch(prepared, options, announce)


def _drop_parts(parts: list[Any]) -> None:
    """The parts of a batch made ready before one ref was refused: nothing of theirs moved yet, their
    staging goes (`undo`)."""
    for part in parts:
        try:
            part.undo()
        except OSError:
            pass
