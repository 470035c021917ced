"""The one rule for a host's own approval of a project folder that pkgmgr records (SPEC 7, 13:
`--approve-host-trust`): pkgmgr approves only what the operator saw.

A host that keeps its own approval of a project folder (Eva's `~/.eva/trust.json`: a content hash
of the folder's scripts) says, through `FolderHost.trust_inventory`, which files its hash covers,
what it loads from the folder without hashing it, and the hash of what was read. This module
decides, the same way for every such host:

- the files pkgmgr installed are those its records list, with the content they list; every other
  file the hash covers (a `backdoor.exs` committed to the repository, or an installed file edited
  since) is approved only when the operator names them (`--approve-host-trust=all`, after seeing
  the list);
- a folder holding what the host loads but does not hash is never approved (the approval would not
  cover it), nor one pkgmgr could not read whole (a FIFO, a link loop, a file over its bound);
- the check runs before a change moves anything (`check`: `trust_required`, nothing written), and
  the approval written after it is the hash of exactly the files listed in the message that says
  so (`step`), on the folder as it is then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.patterns import printable

if TYPE_CHECKING:
    from pkgmgr.hosts.base import FolderHost
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

SHOWN_MAX = 20  # files a message names before it says how many more there are


@dataclass(frozen=True)
class Covered:
    """A file the host's hash covers: its path relative to the folder (as the hash names it) and
    the sha256 of the content the hash took (empty when the host's hash took an error's name)."""

    rel: str
    sha256: str


@dataclass(frozen=True)
class Inventory:
    """What a host's approval of `folder` covers, read once: `covered` in the hash's order,
    `unhashed` (what the host loads from the folder without hashing it), `unreadable` (why
    pkgmgr could not take the hash as the host would: a FIFO, a loop, a bound), and `value`, the
    host's hash of what was read (None when something was unreadable)."""

    folder: Path
    covered: tuple[Covered, ...]
    unhashed: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()
    value: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The inventory judged against what pkgmgr installed: the covered files it installed (with
    the content it installed), and the others."""

    inventory: Inventory
    installed: tuple[str, ...]
    foreign: tuple[str, ...]

    def refusal(self, host: FolderHost, *, everything: bool) -> str | None:
        """Why the approval may not be recorded (None: it may). `everything`: the operator named
        every covered file (`--approve-host-trust=all`)."""
        inventory = self.inventory
        if inventory.unhashed:
            return (f"{inventory.folder} holds {listed(inventory.unhashed)}, which {host.title} loads but leaves out "
                    f"of its content hash ({host.unhashed_reason}): an approval would not cover "
                    f"{'it' if len(inventory.unhashed) == 1 else 'them'}")
        if inventory.unreadable or inventory.value is None:
            return (f"pkgmgr cannot take {host.title}'s content hash of {inventory.folder} as {host.title} would: "
                    f"{listed(inventory.unreadable)}")
        if self.foreign and not everything:
            return (f"{host.title}'s content hash of {inventory.folder} covers "
                    f"{'a file' if len(self.foreign) == 1 else 'files'} pkgmgr did not install: {listed(self.foreign)}")
        return None


def listed(names: Iterable[str]) -> str:
    """Names for a message: each one printable, at most SHOWN_MAX, then how many more."""
    names = list(names)
    shown = ", ".join(printable(n) for n in names[:SHOWN_MAX])
    return shown + (f" and {len(names) - SHOWN_MAX} more" if len(names) > SHOWN_MAX else "")


def installed_files(place: Path, layout: str, listing: Mapping[str, str]) -> dict[str, str]:
    """The files of an install at `place` (a top-level entry of a folder) with the sha256 pkgmgr
    recorded for each, keyed by their path relative to that folder. A recorded link is left out:
    the host's hash reads what it points to, which is not what pkgmgr installed."""
    files: dict[str, str] = {}
    if layout == "script":  # one file, listed under the name it was staged with
        values = list(listing.values())
        if len(values) == 1 and not values[0].startswith(("link:", "special")):
            files[place.name] = values[0].rpartition(":")[2]
        return files
    for rel, value in listing.items():
        if not value.startswith(("link:", "special")):
            files[f"{place.name}/{rel}"] = value.rpartition(":")[2]
    return files


def own_files(rows: Iterable[Installed], folder: Path, *, leaving: Iterable[str] = (),
              arriving: Mapping[str, tuple[str, Mapping[str, str]]] | None = None) -> dict[str, str]:
    """Every file pkgmgr installed into `folder` (relative path -> sha256), from its records of the
    host's installs there: the top-level entries `leaving` taken out, and `arriving` (entry ->
    layout and listing: what a change puts there) put in."""
    gone = set(leaving) | set(arriving or {})
    files: dict[str, str] = {}
    for row in rows:
        place = row.place
        if place.parent == folder and place.name not in gone:
            files.update(installed_files(place, row.layout, row.tree_listing))
    for entry, (layout, listing) in (arriving or {}).items():
        files.update(installed_files(folder / entry, layout, listing))
    return files


def judge(inventory: Inventory, own: Mapping[str, str]) -> Verdict:
    installed = tuple(c.rel for c in inventory.covered if c.sha256 and own.get(c.rel) == c.sha256)
    mine = set(installed)
    return Verdict(inventory, installed, tuple(c.rel for c in inventory.covered if c.rel not in mine))


def check(host: FolderHost, scope: Scope, folder: Path, *, everything: bool,
          overlay: Mapping[str, Path | None] | None = None, leaving: Iterable[str] = (),
          arriving: Mapping[str, tuple[str, Mapping[str, str]]] | None = None) -> None:
    """Before a change that is to record the host's approval of `folder`: refuse it
    (`trust_required`, before anything moves) when the approval would cover what the operator did
    not see. `overlay` (top-level entry -> the tree put there, or None: taken out) is the folder
    as the change leaves it; `leaving` and `arriving` the installs it takes out and puts in.
    Reads only; a host trust file pkgmgr could not replace is refused here too (its own code)."""
    if scope.kind != "workspace":
        return
    inventory = host.trust_inventory(folder, overlay)
    if inventory is None:
        return
    host.approved_hash(folder)  # a trust file pkgmgr cannot read (a FIFO, too large) refuses now, not after
    from pkgmgr.store import records

    rows = records.list_rows(scope, host.name) if scope.exists() else []
    verdict = judge(inventory, own_files(rows, folder, leaving=leaving, arriving=arriving))
    why = verdict.refusal(host, everything=everything)
    if why is None:
        return
    covered = [c.rel for c in inventory.covered]
    details: dict[str, Any] = {"folder": str(folder), "covers": covered, "not_installed_by_pkgmgr": list(verdict.foreign),
                               "unhashed": list(inventory.unhashed), "unreadable": list(inventory.unreadable)}
    if inventory.unhashed or inventory.unreadable or inventory.value is None:
        hint = ("remove or rename them; or run the command without --approve-host-trust, and approve the folder "
                f"in {host.title} itself")
    else:
        hint = (f"review {'it' if len(verdict.foreign) == 1 else 'them'}; then run the same command with "
                "--approve-host-trust=all to approve every file listed, or without --approve-host-trust to leave "
                f"{host.title}'s approval as it is")
    every = f"; the hash would cover {listed(covered)}" if covered and not inventory.unhashed else ""
    raise PkgmgrError(f"refusing --approve-host-trust: {why}{every}. Nothing was changed: pkgmgr approves only "
                      "what it installed or what you name", code=Code.TRUST_REQUIRED, path=str(folder),
                      details=details, hint=hint)


def step(host: FolderHost, scope: Scope, folder: Path, *, approve: bool, everything: bool) -> dict[str, Any] | None:
    """After a change in the project folder `folder`: the report of the host's approval of it
    (the hash it approved, the hash now, what the hash covers and what pkgmgr did not install),
    the approval recorded when asked and the rule holds on the folder as it is now (else the
    report says why not). None for a host that keeps no approval pkgmgr records. Raises what
    reading the host's trust file raises."""
    if scope.kind != "workspace":
        return None
    inventory = host.trust_inventory(folder)
    if inventory is None:
        return None
    from pkgmgr.store import records

    old = host.approved_hash(folder)
    verdict = judge(inventory, own_files(records.list_rows(scope, host.name), folder))
    report: dict[str, Any] = {
        "folder": str(folder), "approved_hash": old, "content_hash": inventory.value,
        "approved": inventory.value is not None and old == inventory.value, "updated": False,
        "covers": [c.rel for c in inventory.covered], "not_installed_by_pkgmgr": list(verdict.foreign),
        "unhashed": list(inventory.unhashed), "unreadable": list(inventory.unreadable), "refused": None,
    }
    why = verdict.refusal(host, everything=everything)
    if approve and why is not None:
        report["refused"] = why
    elif approve and not report["approved"]:
        assert inventory.value is not None
        host.record_approval(folder, inventory.value)
        report.update(approved=True, updated=True)
    return report
