"""The pipeline's default destination: pkgmgr's scope store for Compozy's trees, the host's
folder (`pkgmgr.hosts.destination.HostDestination`) for terva's, Eva's and Vera's (SPEC 13).

Which host a tree is for is known once it is verified (`--host`, the registry entry's `host`,
a declaration's `host = "..."`, or the manifest file the tree carries), so this destination
routes each verified tree to the destination of its host; the pipeline sees one `Destination`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.install.destination import Announce, BatchDestination, Destination
from pkgmgr.install.scope_destination import ScopeDestination

if TYPE_CHECKING:
    from pkgmgr.hosts.install import HostPrepared
    from pkgmgr.hosts.records import HostInstalled
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.verify import Verified
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome


class HostRouting:
    """One scope's destinations, every host's: a verified tree goes to its own host's."""

    def __init__(self, scope: Scope, host: str | None = None) -> None:
        self.scope = scope
        self.host = host  # --host: whose installs `installed` looks at (None: any host's)
        self.compozy = ScopeDestination(scope)

    @property
    def label(self) -> str:
        return self.compozy.label

    def writer(self, timeout: float) -> AbstractContextManager[object]:
        return self.compozy.writer(timeout)

    def new_staging(self) -> Path:
        return self.compozy.new_staging()

    def discard(self, staging: Path) -> None:
        self.compozy.discard(staging)

    def installed(self, name: str) -> Installed | HostInstalled | None:
        current: Installed | HostInstalled | None = None
        if self.host in (None, "compozy"):
            current = self.compozy.installed(name)
        if current is None and self.host != "compozy":  # an install in another host's folder
            from pkgmgr.hosts.records import find_installed

            current = find_installed(self.scope, name, self.host)
        return current

    def for_tree(self, verified: Verified | HostPrepared) -> Destination:
        """The destination of `verified`'s host."""
        from pkgmgr.install.verify import Verified

        if isinstance(verified, Verified):
            return self.compozy
        from pkgmgr.hosts.destination import HostDestination

        return HostDestination(self.scope, verified.host.name)

    def batch_destination(self, verified: list[Verified | HostPrepared]) -> BatchDestination | None:
        """The destination that can switch all of `verified` at once: the scope store when every
        tree is Compozy's; None when a tree is another host's (those switch ref by ref)."""
        from pkgmgr.install.verify import Verified

        return self.compozy if all(isinstance(item, Verified) for item in verified) else None

    def check_switch(self, verified: Verified | HostPrepared, options: InstallOptions) -> None:
        self.for_tree(verified).check_switch(verified, options)

    def make_durable(self, verified: list[Verified | HostPrepared]) -> None:
        self.compozy.make_durable(verified)  # Compozy's trees; a host's are flushed at its switch

    def switch(self, verified: Verified | HostPrepared, options: InstallOptions,
               announce: Announce | None = None) -> Outcome:
        return self.for_tree(verified).switch(verified, options, announce)
