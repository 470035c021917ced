"""A folder host's folder in one scope as the install pipeline's `Destination` (SPEC 13): an
adapter over the folder half of the pipeline (`pkgmgr.hosts.folder`).

The scope's writer lock and its staging directory serve every host (what pkgmgr records of an
install lives in the scope's `state.db`); a verified tree is moved from that staging into the
host's own staging folder and renamed into place there (`folder.commit`; in a batch across hosts,
`folder.switch_part`, committed with the rest of the batch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pkgmgr.hosts.port import Announce, Options, Prepared, ScopeStaging, foreign_tree

if TYPE_CHECKING:
    from pkgmgr.hosts.base import FolderHost, Judged
    from pkgmgr.hosts.folder import FolderSwitch
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome


class FolderDestination(ScopeStaging):
    """The `Destination` of one folder host's folder in one scope (global or a workspace's)."""

    def __init__(self, scope: Scope, host: FolderHost) -> None:
        self.scope = scope
        self.host = host

    @property
    def label(self) -> str:
        return f"{self.host.name} {self.scope.kind} folder"

    def installed(self, name: str) -> Installed | None:
        from pkgmgr.store import records

        found = records.find(self.scope, name, self.host.name)
        return found[0] if found else None

    def _own(self, prepared: Prepared[Any]) -> Prepared[Judged]:
        if prepared.host != self.host.name:
            raise foreign_tree(prepared, self.host.name)
        return prepared

    def check_switch(self, prepared: Prepared[Any], options: Options) -> None:
        from pkgmgr.hosts.folder import check

        check(self.scope, self.host, self._own(prepared), options)

    def make_durable(self, prepared: list[Prepared[Any]]) -> None:
        """Nothing to do ahead: `folder.commit` flushes each tree in the host's staging folder
        (where it is renamed from) before its switch."""

    def batch_item(self, prepared: Prepared[Any], options: Options, announce: Announce | None, index: int,
                   ) -> FolderSwitch | Outcome:
        """Its part of a batch across hosts (`install.host_routing.HostRouting.switch_all`): the
        switch made ready (`folder.switch_part`: everything that can fail done), committed in the
        scope's one transaction with the rest of the batch; or the `Outcome` "unchanged"."""
        from pkgmgr.hosts.folder import switch_part

        return switch_part(self.scope, self.host, self._own(prepared), options, index, announce)

    def switch(self, prepared: Prepared[Any], options: Options, announce: Announce | None = None) -> Outcome:
        from pkgmgr.hosts.folder import commit

        return commit(self.scope, self.host, self._own(prepared), options, announce)
