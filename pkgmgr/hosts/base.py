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
                                  hint="install it without --scope workspace")
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

    def trust_step(self, scope: Scope, folder: Path, *, approve: bool) -> tuple[list[str], dict[str, Any] | None]:
        """The host's trust step after a change in `folder`: the notes for the operator, and the
        host's approval of the folder (None where the host has none pkgmgr may record)."""
        return self.notes(scope.kind, scope.workspace, folder), None

    def trust_status(self, record: Installed) -> dict[str, Any] | None:
        """The host's approval of the folder an install is in, for `ext status` (None: none)."""
        return None

    def disabled_place(self, folder: Path, name: str, layout: str) -> Path | None:
        """Where a disabled extension waits, outside the scanned folder; None for a host that
        disables an extension in place (`write_enabled`)."""
        return None

    def write_enabled(self, folder: Path, record: Installed, enabled: bool, *, lock_timeout: float) -> None:
        """Write the enabled state the host's way, in place (a host with a `disabled_place` moves
        the extension instead)."""
        raise NotImplementedError

    # --- the host's own records of its installs (default: it keeps none) -----------------------------

    def host_lock(self, timeout: float) -> AbstractContextManager[object]:
        """The lock the host takes around its own records (waited for up to `timeout`, then `locked`)."""
        return nullcontext()

    def claimed_by_records(self, folder: Path, name: str) -> Path | None:
        """The file of the host's own records that names an extension `name` of `folder`, if any."""
        return None

    def record_install(self, folder: Path, judged: Judged, source: str, staged: Path, *, enabled: bool,
                       replacing: bool) -> None:
        """Record an install of `judged` in the host's own records, before the tree `staged` is
        renamed in (host lock held)."""

    def record_switched(self, folder: Path, judged: Judged, *, enabled: bool, replacing: bool) -> None:
        """Record what the host must read only once the tree is in place: right after the switch
        (host lock not held), before pkgmgr's row is committed; a kill in between is settled by
        `settle` from the pending row. Default: nothing."""

    def forget(self, folder: Path, name: str) -> None:
        """Drop an install from the host's own records (host lock held)."""

    def settle(self, folder: Path, record: Installed | None, name: str) -> None:
        """Make the host's own records say what is on disk after a recovery (`record` is what
        stands; None: nothing of `name` does)."""

    def check_adoptable(self, found: Found, *, force: bool) -> None:
        """Refuse to adopt an extension the host's own records say changed (`tree_modified`)."""

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

    def recover(self, scope: Scope) -> list[str]:
        from pkgmgr.hosts.folder import recover

        return recover(scope, self)

    def interrupted(self, scope: Scope) -> list[str]:
        from pkgmgr.hosts.folder import interrupted

        return interrupted(scope, self)

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
