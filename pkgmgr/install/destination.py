"""The destination port: where a verified extension tree goes and how it is recorded.

The pipeline (`pkgmgr.install.pipeline`) only calls the methods below, as pypa/installer's
`install(source, destination)` only calls `WheelDestination`'s. One destination per host:
`pkgmgr.install.scope_destination.ScopeDestination` is pkgmgr's own scope store (Compozy); the
hosts issue adds terva, Eva and Vera as further implementations of this Protocol — nothing else
in the pipeline changes.

Contract:

- `writer(timeout)` is held around every `new_staging`/`switch` of one batch; raises `locked`
  when another writer holds it past `timeout`.
- `new_staging()` returns an empty private directory on the destination's filesystem (so the
  switch can be a rename); `discard(path)` removes it and never raises for a missing path.
- `installed(name)` reads without the lock and without creating anything.
- `check_switch(verified, options)` raises what `switch` would raise about what is already
  installed (e.g. `bundle_missing`), reading only: what a dry run can know.
- `make_durable(verified)` puts the staged trees' data on disk before any is switched to (one
  flush for a batch: SPEC 4 "Durability").
- A verified tree is a `Verified` (Compozy's) or a `pkgmgr.hosts.install.HostPrepared`
  (another host's); a destination refuses a tree of another host than its own.
- `switch(verified, options, announce)` makes the verified tree current atomically (the old state
  or the new one after a crash), calls `announce(summary)` once it is certain to change
  something and before it does, and returns the `Outcome`. Raises `PkgmgrError` only.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pkgmgr.hosts.install import HostPrepared
    from pkgmgr.hosts.records import HostInstalled
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.verify import Verified
    from pkgmgr.store.install import Outcome
    from pkgmgr.store.model import Installed

Announce = Callable[[dict[str, Any]], None]


class Destination(Protocol):
    """Where verified trees of one host go (see the module docstring for the contract)."""

    @property
    def label(self) -> str:
        """How messages name the destination, e.g. "global scope"."""
        ...

    def writer(self, timeout: float) -> AbstractContextManager[object]: ...

    def new_staging(self) -> Path: ...

    def discard(self, staging: Path) -> None: ...

    def installed(self, name: str) -> Installed | HostInstalled | None: ...

    # a tree is `Verified` (Compozy's) or `HostPrepared` (terva's, Eva's, Vera's: SPEC 13)
    def check_switch(self, verified: Verified | HostPrepared, options: InstallOptions) -> None: ...
    def make_durable(self, verified: list[Verified | HostPrepared]) -> None: ...

    def switch(self, verified: Verified | HostPrepared, options: InstallOptions,
               announce: Announce | None = None) -> Outcome: ...
