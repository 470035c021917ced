"""What every host that loads extensions from a folder of its own shares (SPEC 13): `FolderHost`,
the `Host` port implemented once over the hooks each such host fills in — where an extension of a
name goes for a scope, how a staged tree is judged by the host's rules, where a disabled extension
waits, how enable/disable is written, the host's own records of its installs and its lock, its
trust step. The filesystem mechanics they share are `hosts.mechanics`'.

One `FolderHost` per host (`terva.py`, `eva.py`, `vera.py`); `pkgmgr.hosts.folder` drives them all
with the same pipeline: stage on the target's filesystem, judge, one atomic rename, one
transaction in pkgmgr's state. What a host accepts is decided in its own module.

`HostRules` is the part of a `FolderHost` that reads a tree (`judge`): a host whose rules are held
to its corpus before it is wired into `pkgmgr.hosts.HOSTS` (`gemini.py`, `claude.py`) is only that.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.hosts.mechanics import tree_checksum
from pkgmgr.hosts.port import Change, Changed, Host, Packable, Prepared, Validation

if TYPE_CHECKING:
    from pkgmgr.archive import TreeRecord
    from pkgmgr.config import Config
    from pkgmgr.hosts.approval import Inventory
    from pkgmgr.hosts.port import Destination, Options, Source, Warn
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

@dataclass(frozen=True)
class Judged:
    """A tree as its host reads it: the identity, what it runs and what it asks for."""

    host: str
    name: str  # the identity the host knows it by (terva folder/name, Eva name, Vera id)
    version: str  # "" when the host's format carries none (Eva): the registry's is recorded
    layout: str  # "directory" | "script" (a single-file extension)
    kind: str  # terva: subprocess | theme; eva: script | directory; vera: extension
    entry: str = ""  # terva exec, Eva module, Vera entrypoint
    capabilities: tuple[str, ...] = ()
    description: str = ""
    warnings: tuple[str, ...] = ()
    document: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"host": self.host, "name": self.name, "version": self.version or None, "kind": self.kind,
                "layout": self.layout, "entry": self.entry, "capabilities": list(self.capabilities),
                "description": self.description}


@dataclass(frozen=True)
class Found:
    """Something a host would load from its folder: its name and where it is."""

    name: str
    path: Path
    layout: str


class HostRules:
    """A host's rules alone: how it reads an extension's tree (`judge`), with no folder, install or
    record of its own. Every `FolderHost` has them; a host not in `pkgmgr.hosts.HOSTS` yet has only
    them (nothing installs for it, and no command offers it)."""

    name: ClassVar[str] = ""
    manifest_files: ClassVar[tuple[str, ...]] = ()

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        """The tree at `root` (a directory, or a single-file extension) by the host's rules. Raises
        `ValidationFailed` (invalid_manifest, path_escapes_root) with every problem found."""
        raise NotImplementedError


class FolderHost(HostRules, Host):
    """A host that loads extensions from a folder of its own. Subclasses fill in the host's rules
    (`home`, `scan`, `judge`, `claim`, `scaffold`) and the hooks below where they differ."""

    names_itself: ClassVar[bool] = True  # its format names the extension (else: the name it is installed under)
    versions_itself: ClassVar[bool] = True  # its format carries a version (else: the registry's is recorded)
    capabilities_are_permissions: ClassVar[bool] = False  # a registry entry's permissions list its capabilities
    entry_label: ClassVar[str] = "runs"  # how `ext validate` names what `Judged.entry` holds
    folder_mode: ClassVar[int] = 0o755  # the host's directories pkgmgr creates (Vera makes its own 0700)
    # a removal drops the host's records of the install before its tree leaves the folder (a host that
    # reports a record naming a missing tree as an error: Claude's uninstall); else after (Vera's order)
    forgets_first: ClassVar[bool] = False
    # a development link (`ext link`) is written into the host's own records as an install is (a host
    # that loads nothing its records do not name: Claude's); else the host loads it as it is
    link_records: ClassVar[bool] = False

    # --- where ------------------------------------------------------------------------------

    def home(self) -> Path:
        """The host's own directory on this machine (TERVA_HOME, ~/.eva, VERA_HOME)."""
        raise NotImplementedError

    def project_root(self, project: Path) -> Path | None:
        """The host's directory in a project (`.terva`, `.eva`), None when it has no project scope."""
        return None

    def folder(self, scope: str, project: Path | None) -> Path:
        """The folder the host scans for `scope` (global | workspace)."""
        if scope == "workspace":
            if project is None:
                raise RuntimeError("a workspace scope needs its project directory")
            root = self.project_root(project)
            if root is None:
                raise PkgmgrError(f"{self.name} has no project scope: it loads extensions only from "
                                  f"{self.home() / 'extensions'}", code=Code.USAGE,
                                  hint=f"{self.title} extensions are global: run the command without --scope workspace")
            return root / "extensions"
        return self.home() / "extensions"

    def folder_of(self, scope: Scope) -> Path:
        return self.folder(scope.kind, scope.workspace)

    def target(self, folder: Path, name: str, layout: str) -> Path:
        return folder / name

    def occupants(self, folder: Path, name: str) -> list[Path]:
        """What already occupies `name` in `folder` (the host would load it under that name)."""
        path = folder / name
        return [path] if os.path.lexists(path) else []

    def scan(self, folder: Path) -> list[Found]:
        """Every extension the host would consider in `folder`, sorted by name."""
        raise NotImplementedError

    def homes(self, global_root: Path, workspace_root: Path | None, project: Path | None) -> dict[str, Path | None]:
        root = self.project_root(project) if project is not None else None
        return {"global": self.folder("global", None), "project": root / "extensions" if root is not None else None}

    def unmanaged(self, scope: Scope, folder: Path) -> int:
        from pkgmgr.store import records

        rows = records.list_rows(scope, self.name) if scope.exists() else []
        paths = {r.place for r in rows} | {r.directory for r in rows}
        return len([f for f in self.scan(folder) if f.path not in paths])

    # --- what ---------------------------------------------------------------------------------

    def judge_level(self, level: Path, name_hint: str | None) -> Judged:
        """The extension at a level this host claimed, judged (`locate` finds its tree there). A
        single-file extension found there is judged under its own name, as an install of it is
        named (its file's), not under `name_hint`."""
        path, layout = self.locate(level)
        return self.judge(path, name_hint=name_hint if layout != "script" else None, layout=layout)

    def check_neighbours(self, folder: Path, judged: Judged, own: set[Path], scope: str) -> None:
        """Raise what the host would refuse about `judged` beside the other extensions of `folder`
        (and of the folders the host loads with it), `own` (what the install replaces) left out;
        nothing by default (Eva: two extensions of one module)."""

    def checksum(self, path: Path) -> tuple[str, dict[str, str]]:
        """Tree checksum (SPEC 3 format 2) and listing of an install; hosts that rewrite a file
        themselves (terva's `enabled`) leave that out."""
        return tree_checksum(path)

    def source_checksum(self, source: Path) -> str:
        """The checksum an install of the source directory `source` will have (what
        `copy_source` copies)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="pkgmgr-tree-") as tmp:
            copy = self.copy_source(source, Path(tmp) / "tree")
            return self.checksum(copy)[0]

    def kind_of(self, record: Installed) -> str:
        """What kind of extension an install is (`ext status`'s `kind`)."""
        return str(record.manifest.get("kind") or "extension")

    def summary(self, judged: Judged, fetched: Source) -> dict[str, Any]:
        """What the operator sees before it is installed (SPEC 7, 13: its capabilities first)."""
        return {
            "name": judged.name, "version": judged.version or "-", "host": judged.host,
            "source": fetched.kind, "verified": fetched.verified,
            "kind": judged.host if judged.kind == "extension" else f"{judged.host} {judged.kind}",
            "permissions": [], "capabilities": list(judged.capabilities),
            "subprocess": judged.entry if judged.kind == "subprocess" else None,
            "entry": judged.entry, "network_requirement": None, "network_digest": "", "max_scope": None,
        }

    # --- hooks around a switch (default: nothing) ------------------------------------------------

    def prepare_staged(self, staged: Path, judged: Judged, *, enabled: bool) -> None:
        """Make the staged tree carry the install's enabled state before it is switched in."""

    def notes(self, scope: str, project: Path | None, folder: Path) -> list[str]:
        """What the operator must know after a change in `folder` (trust, reloads)."""
        return []

    def trust_step(self, scope: Scope, folder: Path, *, approve: bool,
                   approve_all: bool = False) -> tuple[list[str], dict[str, Any] | None]:
        """The host's trust step after a change in `folder`: the notes for the operator, and the
        report of the host's approval of the folder (None where the host has none pkgmgr may
        record), the approval recorded when asked (`approve`; `approve_all`: with every file its
        hash covers named) and `pkgmgr.hosts.approval`'s rule allows it."""
        from pkgmgr.hosts import approval

        report = approval.step(self, scope, folder, approve=approve or approve_all, everything=approve_all)
        if report is None:
            return self.notes(scope.kind, scope.workspace, folder), None
        return self.trust_lines(report), report

    # --- the host's own approval of a project folder (default: it keeps none pkgmgr records) ---------

    unhashed_reason: ClassVar[str] = ""  # why its hash leaves out what it loads (`Inventory.unhashed`), for messages

    def trust_inventory(self, folder: Path, overlay: Mapping[str, Path | None] | None = None) -> Inventory | None:
        """What the host's approval of the project folder `folder` covers, read once through
        pkgmgr's bounded reads (`approval.Inventory`: every file its hash reads with the digest of
        what was read, what it loads without hashing it, what could not be read, and the hash);
        `overlay`: top-level entries of `folder` replaced by the tree at a path, or taken out
        (None) — the folder as a change will leave it. None: the host keeps no approval pkgmgr
        records. Never raises for what is in the folder."""
        return None

    def approved_hash(self, folder: Path) -> str | None:
        """The hash the host approved for `folder`, from its own trust file (None: none). Raises
        when that file cannot be read as a file (`invalid_config`)."""
        return None

    def record_approval(self, folder: Path, value: str) -> None:
        """Record, as the host does, its approval of `folder` at the hash `value`."""
        raise NotImplementedError

    def trust_lines(self, report: dict[str, Any]) -> list[str]:
        """What the operator reads of a trust step's report (`approval.step`)."""
        return []

    def trust_status(self, record: Installed) -> dict[str, Any] | None:
        """The host's approval of the folder an install is in, for `ext status` (None: none)."""
        return None

    def check_trust(self, scope: Scope, folder: Path) -> None:
        """Raise, before a change moves anything, what would make `trust_step` fail after its commit
        (issue 25: Eva's trust hash over a folder holding a link loop); nothing by default."""

    def disabled_place(self, folder: Path, name: str, layout: str) -> Path | None:
        """Where a disabled extension waits, outside the scanned folder; None for a host that
        disables an extension in place (`settle` writes the state the host's way)."""
        return None

    # --- the host's own files: records, the enabled state written in place, its lock -------------------

    def host_lock(self, timeout: float) -> AbstractContextManager[object]:
        """The lock the host takes around its own files (waited for up to `timeout`, then `locked`):
        held from before pkgmgr touches the host's folder until its records say what pkgmgr did."""
        return nullcontext()

    def claimed_by_records(self, folder: Path, name: str) -> Path | None:
        """The file of the host's own records that names an extension `name` of `folder`, if any."""
        return None

    def records_of(self, folder: Path, judged: Judged, source: str, staged: Path, *, enabled: bool,
                   current: Installed | None) -> dict[str, Any] | None:
        """What the host's own records will say of an install of `judged` (the tree `staged`, from
        `source`), computed before anything moves — whatever can fail, fails then (issue 25); None
        for a host that keeps no records of its own. Reads only."""
        return None

    def record_switched(self, folder: Path, judged: Judged, *, enabled: bool, replacing: bool) -> None:
        """Record what the host must read only once the tree is in place: right after the switch
        (host lock held), before pkgmgr's row is committed; a kill in between is settled by
        `settle` from the row (`store.pending`). Default: nothing."""

    def forget(self, folder: Path, name: str) -> None:
        """Drop an install from the host's own records (host lock held)."""

    def record_install(self, folder: Path, judged: Judged, source: str, staged: Path, *, enabled: bool,
                       replacing: bool) -> None:
        """Record, before the tree `staged` is renamed in (host lock held, intent recorded), what the
        host may read before the tree is in place; a kill after it is settled by `settle` from the
        row. Default: nothing."""

    def settle(self, folder: Path, item: Installed | None, name: str, records: dict[str, Any] | None = None) -> None:
        """Make the host's own files say what `item` says (None: that it has no extension `name`):
        its records (`records`, when `records_of` computed them) and an enabled state it keeps in
        place. Idempotent: the one protocol calls it once a change is committed, and the recovery
        again for a change a killed writer left (host lock held). Nothing by default."""

    def saved_state(self, item: Installed) -> dict[Path, bytes]:
        """The host's own files that `settle` rewrites in place for `item`'s enabled state (terva's
        manifest), with their bytes now, read bounded: saved before an enable/disable, so that one
        undone puts them back byte for byte, not rewritten in the host's layout. Nothing by default."""
        return {}

    def check_records(self, folder: Path) -> None:
        """Raise what the host would refuse of its own records of `folder` (`invalid_config`), before
        a change moves anything; nothing by default (a host that keeps none). Reads only."""

    def lock_problem(self) -> str | None:
        """Why the host's own lock is stale (left by a process that is provably dead: its pid is
        gone, or it was taken before the system booted), for `doctor --check`; None when there is
        none, or it may belong to a live process. Reads only."""
        return None

    def reclaim_lock(self) -> str | None:
        """Remove the host's own lock when it is stale (`lock_problem`); what was done, or None."""
        return None

    def check_adoptable(self, found: Found, *, force: bool) -> None:
        """Refuse to adopt an extension the host's own records say changed (`tree_modified`)."""

    def record_problems(self, folder: Path, rows: list[Installed]) -> list[str]:
        """What the host would refuse of its own records of `folder` as it parses them, and where
        they disagree with the installs pkgmgr recorded there (`rows`), for `doctor --check`.
        Reads only; nothing by default (a host that keeps no records)."""
        return []

    # --- the port -----------------------------------------------------------------------------------

    def prepare(self, fetched: Source, root: Path | None, staging: Path, *, config: Config, options: Options,
                record: TreeRecord | None = None) -> Prepared[Any]:
        from pkgmgr.hosts.folder import prepare

        return prepare(self, fetched, root, staging)

    def destination(self, scope: Scope) -> Destination:
        from pkgmgr.hosts.destination import FolderDestination

        return FolderDestination(scope, self)

    def remove(self, scope: Scope, record: Installed, change: Change) -> Changed:
        from pkgmgr.hosts.folder import remove

        return Changed(remove(scope, self, record, change))

    def set_enabled(self, scope: Scope, record: Installed, enabled: bool, change: Change) -> Changed:
        from pkgmgr.hosts.folder import set_enabled

        return Changed(set_enabled(scope, self, record, enabled, change))

    def adopt(self, scope: Scope, names: list[str], *, force: bool = False) -> list[Installed]:
        from pkgmgr.hosts.folder import adopt

        return adopt(scope, self, names, force=force)

    def recover(self, scope: Scope, timeout: float = 0.0) -> list[str]:
        from pkgmgr.hosts.folder import recover

        return recover(scope, self, timeout)

    def interrupted(self, scope: Scope) -> list[str]:
        from pkgmgr.hosts.folder import interrupted

        return interrupted(scope, self)

    def health(self, scope: Scope) -> list[tuple[str, str, bool]]:
        from pkgmgr.hosts.folder import health

        return health(scope, self)

    def repair(self, scope: Scope) -> list[str]:
        done = self.reclaim_lock()
        return [done] if done else []

    def status(self, record: Installed, scope: Scope, *, config: Config, resolved: bool,
               environ: Mapping[str, str], warn: Warn) -> dict[str, Any]:
        from pkgmgr.hosts.views import hosted_status

        return hosted_status(record)

    def validate(self, path: Path, *, config: Config, shown: str) -> Validation:
        from pkgmgr.hosts.views import judge_path

        judged = judge_path(path, self.name, limits=config.limits)
        assert judged is not None  # a folder host's tree is judged by it
        what = f"{judged.name} {judged.version}".strip()
        kind = f" ({judged.kind})" if judged.kind != "extension" else ""  # a Vera extension is of no kind but that
        lines = [f"{shown}: {what} is a valid {judged.host} extension{kind}"]
        if judged.capabilities:
            lines.append(f"  capabilities: {', '.join(judged.capabilities)}")
        if judged.entry:
            lines.append(f"  {self.entry_label}: {judged.entry}")
        return Validation({"valid": True, **judged.summary(), "warnings": list(judged.warnings)}, lines,
                          list(judged.warnings))

    def packable(self, root: Path, *, release: str | None, config: Config, label: str) -> Packable:
        from pkgmgr.hosts.views import packable

        return packable(self, root, release=release, limits=config.limits, label=label)

    def entry_facts(self, root: Path, staging: Path, archive: Path, *, config: Config) -> dict[str, Any]:
        from pkgmgr.hosts.facts import hosted_facts

        return hosted_facts(self, root, staging, archive)
