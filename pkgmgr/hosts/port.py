"""The host port (SPEC 13): what a host of extensions is to pkgmgr, and what the install pipeline
and the lifecycle (`pkgmgr.lifecycle`) hand a host and get back.

Every host — Compozy, whose installs live in pkgmgr's own scope store, and each host that loads
extensions from a folder of its own (`hosts.base.FolderHost`) — is one `Host`. Nothing above
`pkgmgr/hosts/` asks which host it holds: it asks the host (cargo's `Source` trait, one
implementation per kind). The pipeline drives a host's `prepare` and its `destination`, as
pypa/installer's `install()` drives a `WheelDestination`; the lifecycle routes every other command
to the host of the record it acts on.

The layers above hand the hosts what they need as the Protocols below (`Source`, `Options`), so
that nothing here imports them.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.store import switch

if TYPE_CHECKING:
    from pkgmgr.archive import TreeRecord
    from pkgmgr.config import Config
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome

Announce = Callable[[dict[str, Any]], None]  # shows a summary before its ref is committed (SPEC 7)
Warn = Callable[[str], None]


# --- what the layers above hand a host --------------------------------------------------------------


class Promised(Protocol):
    """What a registry entry promises about an archive (`install.plan.Expected`)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def permissions(self) -> tuple[str, ...]: ...
    @property
    def network_digest(self) -> str: ...
    @property
    def min_compozy_version(self) -> str: ...
    @property
    def host(self) -> str: ...


class Promises(Protocol):
    """What the fetched tree must turn out to be (`install.plan.Expectations`)."""

    @property
    def entry(self) -> Promised | None: ...
    @property
    def tree_sha256(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def host(self) -> str | None: ...
    @property
    def version(self) -> str | None: ...

    def check_name(self, source: str, name: str, *, what: str = ...) -> None: ...
    def check_tree(self, label: str, tree_sha256: str) -> None: ...


class Source(switch.Source, Protocol):
    """A source made local (`install.plan.Fetched`): where a tree came from, as its record keeps it
    (`store.switch.Source`), and what it holds and must turn out to be."""

    @property
    def archive(self) -> Path | None: ...
    @property
    def directory(self) -> Path | None: ...
    @property
    def label(self) -> str: ...
    @property
    def expects(self) -> Promises: ...
    @property
    def exact(self) -> bool: ...  # an installed tree staged as it is (`ext rollback`): `locator` is where it first came from


class Options(switch.SwitchOptions, Protocol):
    """The options of an install as a host reads them (`install.options.InstallOptions`): those a
    switch of the store reads (`store.switch.SwitchOptions`), and the hosts' own."""

    @property
    def allow_grants(self) -> bool: ...
    @property
    def deactivate_missing(self) -> bool: ...
    @property
    def confirm_always(self) -> bool: ...
    @property
    def approve_host_trust(self) -> bool: ...
    @property
    def approve_host_trust_all(self) -> bool: ...
    @property
    def lock_timeout(self) -> float: ...
    @property
    def host(self) -> str | None: ...
    @property
    def link(self) -> bool: ...  # `ext link`: the host is to load the source folder itself


@dataclass(frozen=True)
class Change:
    """The options of `ext remove`, `ext enable` and `ext disable` (and of `sync`'s removals)."""

    deactivate: bool = False  # deactivate the extension's activations in the same step (Compozy's)
    approve_host_trust: bool = False  # record the host's new approval of a project folder (Eva's)
    approve_host_trust_all: bool = False  # ... with every file its hash covers named (hosts.approval)
    lock_timeout: float = 30.0  # how long a lock the host itself holds is waited for (Vera's)


# --- what a host hands back -----------------------------------------------------------------------------


class Claim(NamedTuple):
    """A manifest file at a level that makes the extension there a host's. `strength`: `own` (a
    file only this host reads that way), `shared` (a file name other hosts use too: it yields to
    another host's `own` claim of the same file) or `fallback` (only when no other host claims
    anything at that level)."""

    file: str
    strength: str = "own"


OWN, SHARED, FALLBACK = "own", "shared", "fallback"

J = TypeVar("J")


@dataclass
class Prepared(Generic[J]):
    """A tree extracted into pkgmgr's staging and judged by its host's rules: what a destination
    switches to. `judged` is the host's own reading of it (Compozy: `hosts.compozy.CompozyTree`;
    a folder host: `hosts.base.Judged`)."""

    host: str
    fetched: Source
    root: Path  # the tree (a directory, or a single-file extension) inside `staging`
    staging: Path
    name: str
    version: str  # "" when neither the tree nor its source names one
    tree_sha256: str
    listing: dict[str, str]
    judged: J
    shown: dict[str, Any]  # what the operator sees before it is installed (SPEC 7, 13)
    document: Mapping[str, Any] = field(default_factory=dict)  # the manifest as its record keeps it
    grants: tuple[str, ...] = ()  # what it is granted or asks for (Compozy's grants, a host's capabilities)
    layout: str = "directory"  # directory | script (a single-file extension)
    network_digest: str = ""
    max_scope: str | None = None
    enabled: bool = True  # the state a first install starts in (the manifest's own, where it has one)
    durable: bool = False  # its files are on disk already (`make_durable`): the switch need not flush
    linked: str | None = None  # a development link (`ext link`): `root` is what makes the host load this folder

    def summary(self) -> dict[str, Any]:
        return dict(self.shown)


@dataclass(frozen=True)
class Changed:
    """What `remove` or `set_enabled` did: the install as it is now (`notes` and `trust` on it say
    what the operator must know), and the activations it deactivated."""

    installed: Installed
    deactivated: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Validation:
    """`ext validate` of a tree by its host: the JSON document, the human lines, the warnings."""

    data: dict[str, Any]
    lines: list[str]
    warnings: list[str]


@dataclass(frozen=True)
class Packable:
    """What `ext pack` archives: the extension's name and version, and the directory to pack (a
    single-file extension is packed from a directory `pack` makes: `script`)."""

    host: str
    name: str
    version: str
    root: Path
    script: bool = False


# --- where the pipeline switches trees ------------------------------------------------------------------


class Destination(Protocol):
    """Where verified trees of one host go in one scope. The pipeline (`pkgmgr.install.pipeline`)
    only calls these:

    - `writer(timeout)` is held around every `new_staging`/`switch` of one batch; raises `locked`
      when another writer holds it past `timeout`.
    - `new_staging()` returns an empty private directory on the destination's filesystem (so the
      switch can be a rename); `discard(path)` removes it and never raises for a missing path.
    - `installed(name)` reads without the lock and without creating anything.
    - `check_switch(prepared, options)` raises what `switch` would raise about what is already
      installed (`source_conflict`, `bundle_missing`), reading only: what a dry run can know.
    - `make_durable(prepared)` puts the staged trees' data on disk before any is switched to (one
      flush for a batch: SPEC 4 "Durability").
    - `switch(prepared, options, announce)` makes the tree current atomically (the old state or the
      new one after a crash), calls `announce(summary)` once it is certain to change something and
      before it does, and returns the `Outcome`. Raises `PkgmgrError` only; a tree of another host
      than its own is refused (`invalid_archive`).
    """

    @property
    def label(self) -> str:
        """How messages name the destination, e.g. "global scope"."""
        ...

    def writer(self, timeout: float) -> AbstractContextManager[object]: ...
    def new_staging(self) -> Path: ...
    def discard(self, staging: Path) -> None: ...
    def installed(self, name: str) -> Installed | None: ...
    def check_switch(self, prepared: Prepared[Any], options: Options) -> None: ...
    def make_durable(self, prepared: list[Prepared[Any]]) -> None: ...
    def switch(self, prepared: Prepared[Any], options: Options, announce: Announce | None = None) -> Outcome: ...


class SwitchRefused(Exception):  # noqa: N818 - carries the PkgmgrError of the refused ref
    """`switch_all` committed nothing: the ref at `index` was refused with `error`."""

    def __init__(self, index: int, error: PkgmgrError) -> None:
        super().__init__(error.message)
        self.index, self.error = index, error


@runtime_checkable
class BatchDestination(Destination, Protocol):
    """A destination that can switch a whole batch at once: every tree made current in one step
    (all or none, also after a crash), one `Outcome` each; a refused ref raises
    `SwitchRefused(index, error)` with nothing committed."""

    def switch_all(self, prepared: Sequence[Prepared[Any]], options: Options,
                   announce: Sequence[Announce | None]) -> list[Outcome]: ...


@runtime_checkable
class BatchMember(Destination, Protocol):
    """A destination whose switches take part in a batch across hosts (SPEC 4: one transaction per
    batch): `batch_item` makes one ready — whatever can fail, fails then — as a
    `store.switch.Switch` (the scope store's tree), a `store.switch.Part` (another host's), or
    the `Outcome` "unchanged"."""

    def batch_item(self, prepared: Prepared[Any], options: Options, announce: Announce | None,
                   index: int) -> Any: ...


class ScopeStaging:
    """What every destination shares: the scope's writer lock and its private staging directory
    (every host's installs are recorded in the scope's `state.db`)."""

    scope: Scope

    def writer(self, timeout: float) -> AbstractContextManager[object]:
        return self.scope.writer(timeout)

    def new_staging(self) -> Path:
        return self.scope.new_staging()

    def discard(self, staging: Path) -> None:
        self.scope.discard(staging)


def foreign_tree(prepared: Prepared[Any], host: str) -> PkgmgrError:
    """The refusal of a destination handed another host's tree (a bug in the routing above)."""
    return PkgmgrError(f"{prepared.name} is a {prepared.host} extension, not a {host} one", code=Code.INVALID_ARCHIVE)


# --- the port ----------------------------------------------------------------------------------------------


class Host(ABC):
    """A host of extensions. `name` is its key in `pkgmgr.hosts.HOSTS`; `title` how messages name it.

    Recognising: `claim` (the manifest file that makes a level its extension's), `locate` (the
    tree at such a level), `is_script` (a single file that is one of its extensions), `copy_source`
    (a source directory copied as its installer copies it).
    Where: `homes` (where it loads extensions from, for `pkgmgr hosts`), `unmanaged`.
    Installing: `prepare` (judge a staged tree by its rules), `destination` (where the pipeline
    switches it in a scope).
    The lifecycle, by record: `remove`, `set_enabled`, `plan_remove`, `adopt`, `verify`, `intact`,
    `status`, and `recover`/`interrupted` (what a killed writer left, settled by the next writer
    and by `doctor`).
    Authoring: `validate`, `packable`, `scaffold` (and `templates`), `entry_facts` (what a release
    archive says, for a registry entry); `read_only_grants` (the grant ceiling its permissions are
    held to, None when it has none).
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    in_scope_store: ClassVar[bool] = False  # its installs are trees of pkgmgr's scope store (else a folder of its own)
    templates: ClassVar[tuple[str, ...]] = ()  # what `ext new --template` offers; the first is the default
    read_only_grants: ClassVar[frozenset[str] | None] = None
    # the names at the top of an install that the host itself writes there (its install record, what
    # it writes while it runs): not installed content — `checksum` and `ext verify` leave them out,
    # and an installed tree used as a source (`copy_installed`) is staged without them
    runtime_files: ClassVar[tuple[str, ...]] = ()
    enables_per_folder: ClassVar[bool] = False  # it turns an install on or off per project folder itself (`set_enabled_in`)

    @property
    def article(self) -> str:
        """`a terva`, `an Eva`: the host's title with its article, for messages."""
        return ("an " if self.title[:1].upper() in "AEIOU" else "a ") + self.title

    # --- recognising an extension --------------------------------------------------------------

    @abstractmethod
    def claim(self, level: Path, files: frozenset[str]) -> Claim | None:
        """The manifest file among `files` (the names of the files at `level`) that makes the
        extension at `level` this host's, or None. Reads only; never raises."""

    def locate(self, level: Path) -> tuple[Path, str]:
        """The tree at a level this host claimed and its layout (`directory`, or `script`: a
        single-file extension the level holds)."""
        return level, "directory"

    def is_script(self, path: Path) -> bool:
        """Whether the file `path` is one of this host's extensions by itself (no archive)."""
        return False

    def make_link(self, source: Path, dest: Path) -> None:
        """Make `dest` (in staging) what makes this host load the working folder (or single-file
        extension) `source` directly once it is switched in, for `ext link`: a symbolic link by
        default; a host with a development mechanism of its own makes that instead. Never writes
        into `source`."""
        os.symlink(source, dest)

    def link_source(self, place: Path) -> str | None:
        """The folder `make_link` made `place` load, or None when `place` is no such link (what
        the recovery of an interrupted `ext link` looks at)."""
        return os.readlink(place) if os.path.islink(place) else None

    def copy_installed(self, place: Path, dest: Path) -> Path:
        """Copy an installed tree — the one kept for `ext rollback` and `ext unlink` — into `dest`
        (staging) as the source of a switch back to it: every file as it is (links kept as links),
        but the host's `runtime_files`, which name the place the tree was installed at and are
        written again by the switch, as for any install (one rule for every host)."""
        import shutil

        runtime = set(self.runtime_files)
        top = os.path.abspath(place)

        def ignore(folder: str, names: list[str]) -> list[str]:
            return [n for n in names if n in runtime] if os.path.abspath(folder) == top else []

        return Path(shutil.copytree(place, dest, symlinks=True, copy_function=shutil.copy2, ignore=ignore))

    def installed_checksum(self, place: Path) -> str:
        """The tree checksum an installed tree has as a source (`copy_installed`'s copy): what its
        record keeps, whatever install record of the host names another place in it. Hashed in
        place, the host's `runtime_files` left out, as `copy_installed` leaves them out."""
        if not self.runtime_files or not os.path.isdir(place) or os.path.islink(place):
            return self.checksum(place)[0]
        from pkgmgr.hosts.mechanics import tree_checksum

        return tree_checksum(place, leave_out=self.runtime_files)[0]

    def copy_source(self, source: Path, dest: Path) -> Path:
        """Copy an extension's source directory into `dest` (staging) as an install of it does:
        pkgmgr's selection (VCS directories and .pkgmgrignore'd files left out), unless the host's
        own installer copies otherwise (Vera's)."""
        from pkgmgr.archive import copy_source_tree

        return copy_source_tree(source, dest)

    # --- where ------------------------------------------------------------------------------------

    @abstractmethod
    def homes(self, global_root: Path, workspace_root: Path | None, project: Path | None) -> dict[str, Path | None]:
        """Where this host's installs of the global scope and of the project (`project`, whose
        pkgmgr store is `workspace_root`) are: `{"global": …, "project": … or None}`."""

    def unmanaged(self, scope: Scope, folder: Path) -> int:
        """How many extensions this host would load from `folder` (a home of `scope`) that pkgmgr
        does not manage (`pkgmgr hosts`)."""
        return 0

    # --- installing -------------------------------------------------------------------------------

    @abstractmethod
    def prepare(self, fetched: Source, root: Path | None, staging: Path, *, config: Config, options: Options,
                record: TreeRecord | None = None) -> Prepared[Any]:
        """Judge the tree staged at `root` (None: the single-file extension `fetched.archive`,
        staged as it is) by this host's rules and every promise of `fetched.expects`; `record` is
        the tree checksum taken while the archive was extracted, when it was. Raises the host's
        validation errors, `metadata_mismatch`, `invalid_config` (another name than declared),
        `checksum_mismatch` (a lock's tree) and what the host's policy refuses."""

    @abstractmethod
    def destination(self, scope: Scope) -> Destination:
        """Where the pipeline switches this host's trees for `scope`."""

    # --- the lifecycle, by record -------------------------------------------------------------------

    @abstractmethod
    def remove(self, scope: Scope, record: Installed, change: Change) -> Changed:
        """Take the install out and forget it (writer lock held). Raises `not_found`,
        `extension_has_active_bundles` (activations without `change.deactivate`), `locked`."""

    @abstractmethod
    def set_enabled(self, scope: Scope, record: Installed, enabled: bool, change: Change) -> Changed:
        """Enable or disable the install the host's way (writer lock held). Raises `not_found`,
        `extension_has_active_bundles` (disabling), `locked`."""

    def set_enabled_in(self, scope: Scope, record: Installed, enabled: bool, folder: Path, change: Change) -> Changed:
        """Enable or disable the install of the global `scope` for the project `folder` (and its
        subfolders) only, where the host keeps such a rule itself (`enables_per_folder`: Gemini
        CLI's workspace scope); the install's own state stays (writer lock held). Raises `usage`
        for a host that keeps none."""
        raise PkgmgrError(f"{self.title} has no per-folder enablement of its own: {record.label} is enabled or "
                          "disabled where it is installed (leave out --scope workspace)", code=Code.USAGE)

    def plan_remove(self, scope: Scope, record: Installed) -> list[dict[str, Any]]:
        """The activations removing the install would deactivate (`ext remove --dry-run`). Reads only."""
        return []

    def adopt(self, scope: Scope, names: list[str], *, force: bool = False) -> list[Installed]:
        """Record extensions installed by hand in this host's folder for `scope`, as they are
        (writer lock held). Raises `usage` for a host whose installs only pkgmgr makes."""
        raise PkgmgrError(f"{self.title}'s extensions are installed by pkgmgr itself: there is nothing to adopt",
                          code=Code.USAGE)

    @abstractmethod
    def checksum(self, path: Path) -> tuple[str, dict[str, str]]:
        """The tree checksum (SPEC 3, format 2) and file listing of an install at `path`, as this
        host's records keep it (a field the host rewrites itself left out)."""

    def observed(self, record: Installed) -> Installed:
        """The install as the host sees it now: a state the host itself changes (terva's own
        `ext enable/disable`) read from where the host keeps it, over the recorded one. Reads only."""
        return record

    def intact(self, record: Installed) -> bool:
        """The install is still there with the tree its record names."""
        import os

        place = record.directory
        return os.path.lexists(place) and self.checksum(place)[0] == record.tree_sha256

    @abstractmethod
    def status(self, record: Installed, scope: Scope, *, config: Config, resolved: bool,
               environ: Mapping[str, str], warn: Warn) -> dict[str, Any]:
        """The host's fields of `ext status -o json` (SPEC 11): what it reads of the install
        beyond its record. Reads only."""

    @abstractmethod
    def recover(self, scope: Scope, timeout: float = 0.0) -> list[str]:
        """Settle what a killed writer left of this host's installs in `scope` (writer lock held; a
        lock of the host's own waited for up to `timeout`), so that the old or the new install
        stands (`store.pending`: a change recorded before its commit is undone, one after it
        finished); what was done, for messages."""

    def interrupted(self, scope: Scope) -> list[str]:
        """What killed writers left of this host's installs in `scope` that `recover` settles, for
        `doctor --check` (reads only)."""
        return []

    def health(self, scope: Scope) -> list[tuple[str, str, bool]]:
        """What `doctor --check` finds wrong with this host's installs in `scope` beyond what killed
        writers left — `(check, message, repairable)`: an install whose tree is gone or modified,
        the host's own records as the host parses them, a stale lock of the host's. Reads only;
        nothing by default (the scope store's trees are checked by `store.recovery`)."""
        return []

    def repair(self, scope: Scope) -> list[str]:
        """What `doctor` repairs of `health`'s findings (a stale lock of the host's, when its owner is
        provably dead); what was done. Nothing by default."""
        return []

    # --- authoring --------------------------------------------------------------------------------------

    @abstractmethod
    def validate(self, path: Path, *, config: Config, shown: str) -> Validation:
        """`ext validate` of the directory, archive or single file `path` (`shown`: as the user
        wrote it), judged as an install judges it. Raises `not_found` and the host's errors."""

    @abstractmethod
    def packable(self, root: Path, *, release: str | None, config: Config, label: str) -> Packable:
        """What `ext pack` archives of the extension at `root`: its name and version (`release`
        for a host whose format carries none). Raises the host's validation errors and `usage`."""

    @abstractmethod
    def scaffold(self, name: str, template: str) -> dict[str, str]:
        """The files (relative path -> text) of a new extension `name` made from `template` (one of
        `templates`) that `ext validate`, `ext pack` and `ext install` accept as they are. Raises
        `usage` for a name this host cannot give an extension."""

    @abstractmethod
    def entry_facts(self, root: Path, staging: Path, archive: Path, *, config: Config) -> dict[str, Any]:
        """What the release archive `archive` (extracted at `root` inside `staging`) says about
        itself for a registry entry: name, version, description, min_compozy_version,
        network_digest, permissions, warnings. Raises the host's validation errors and `usage`."""
