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
- A `BatchDestination` also has `switch_all(verified_list, options, announce_list)`: every tree
  of a batch made current in one step (all or none, also after a crash), returning one `Outcome`
  each; a refused ref raises `SwitchRefused(index, error)` with nothing committed. The pipeline
  uses it for a batch that is not `--keep-going` when every tree goes to one such destination
  (the scope store, Compozy's); the other hosts' destinations switch ref by ref.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pkgmgr.errors import PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.hosts.install import HostPrepared
    from pkgmgr.hosts.records import HostInstalled
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.verify import Verified
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome

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


class SwitchRefused(Exception):  # noqa: N818 - carries the PkgmgrError of the refused ref
    """`switch_all` committed nothing: the ref at `index` was refused with `error`."""

    def __init__(self, index: int, error: PkgmgrError) -> None:
        super().__init__(error.message)
        self.index, self.error = index, error


@runtime_checkable
class BatchDestination(Destination, Protocol):
    """A destination that can switch a whole batch at once (module docstring)."""

    def switch_all(self, verified: Sequence[Verified | HostPrepared], options: InstallOptions,
                   announce: Sequence[Announce | None]) -> list[Outcome]: ...


class ScopeStaging:
    """What every destination in this project shares: the scope's writer lock and its private
    staging directory (a host's install is recorded in the scope's `state.db` too)."""

    scope: Scope

    def writer(self, timeout: float) -> AbstractContextManager[object]:
        return self.scope.writer(timeout)

    def new_staging(self) -> Path:
        return self.scope.new_staging()

    def discard(self, staging: Path) -> None:
        self.scope.discard(staging)
