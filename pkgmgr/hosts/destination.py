"""terva's, Eva's and Vera's folders as destinations of the install pipeline (SPEC 13): each
host is one implementation of the `pkgmgr.install.destination.Destination` port, an adapter over
the host half of the pipeline (`pkgmgr.hosts.install`).

The scope's writer lock and its staging directory serve every host (what pkgmgr records of a
host install lives in the scope's `state.db`); a verified tree is moved from that staging into
the host's own staging folder and renamed into place there (`commit_hosted`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.install.destination import ScopeStaging

if TYPE_CHECKING:
    from pkgmgr.hosts.install import HostPrepared
    from pkgmgr.hosts.records import HostInstalled
    from pkgmgr.install.destination import Announce
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.verify import Verified
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome


class HostDestination(ScopeStaging):
    """The `Destination` of one host's folder in one scope (global or a workspace's)."""

    def __init__(self, scope: Scope, host: str) -> None:
        self.scope = scope
        self.host = host

    @property
    def label(self) -> str:
        return f"{self.host} {self.scope.kind} folder"

    def installed(self, name: str) -> HostInstalled | None:
        from pkgmgr.hosts.records import find_installed

        return find_installed(self.scope, name, self.host)

    def _hosted(self, verified: Verified | HostPrepared) -> HostPrepared:
        from pkgmgr.hosts.install import HostPrepared

        if not isinstance(verified, HostPrepared) or verified.host.name != self.host:
            found = verified.host.name if isinstance(verified, HostPrepared) else "compozy"
            raise PkgmgrError(f"{verified.name} is a {found} extension, not a {self.host} one",
                              code=Code.INVALID_ARCHIVE)
        return verified

    def check_switch(self, verified: Verified | HostPrepared, options: InstallOptions) -> None:
        from pkgmgr.hosts.install import check_hosted

        check_hosted(self.scope, self._hosted(verified), options)

    def make_durable(self, verified: list[Verified | HostPrepared]) -> None:
        """Nothing to do ahead: `commit_hosted` flushes each tree in the host's staging folder
        (where it is renamed from) before its switch."""

    def switch(self, verified: Verified | HostPrepared, options: InstallOptions,
               announce: Announce | None = None) -> Outcome:
        from pkgmgr.hosts.install import commit_hosted

        outcome: Outcome = commit_hosted(self.scope, self._hosted(verified), options, announce)
        return outcome
