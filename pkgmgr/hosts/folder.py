"""The install pipeline's half for a host that loads extensions from a folder of its own (SPEC 13):
the same download, verification and safe extraction as every install, then the host's rules, one
atomic rename into the host's folder and one transaction in the scope's state — and remove,
enable/disable, adopt and the recovery of what a killed writer left, all the same for every such
host: what differs is a hook of its `FolderHost`.

Every function here runs under the scope's writer lock; a host's own records are also written
under the host's own lock (`FolderHost.host_lock`).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pkgmgr.store.pending as pending
from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError, ValidationFailed
from pkgmgr.fsutil import fsync_dir, private_dir, remove_tree
from pkgmgr.hosts.mechanics import PREVIOUS as KEPT_DIR
from pkgmgr.hosts.mechanics import STAGING, check_dirs, ensure_dirs, switch_in, sync_tree
from pkgmgr.hosts.port import Announce, Change, Options, Prepared, Source
from pkgmgr.store import previous, records
from pkgmgr.store.db import transaction
from pkgmgr.store.installed import Installed

if TYPE_CHECKING:
    from pkgmgr.hosts.base import FolderHost, Judged
    from pkgmgr.store.scope import Scope
    from pkgmgr.store.switch import Outcome

VERSION_SUFFIX = re.compile(r"-v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


def prepare(host: FolderHost, fetched: Source, root: Path | None, staging: Path) -> Prepared[Judged]:
    """Judge an extracted tree (or, `root` None, the single-file extension `fetched.archive`) by the
    rules of `host`. Raises the host's validation errors, `metadata_mismatch` (the registry entry
    understates the manifest), `invalid_config` (another name than declared) and
    `checksum_mismatch` (a lock's tree)."""
    if root is None:
        assert fetched.archive is not None  # a single-file extension is fetched as the archive
        script = staging / Path(fetched.archive).name
        shutil.copyfile(fetched.archive, script)
        os.chmod(script, 0o644)
        path, layout = script, "script"
    else:
        path, layout = host.locate(root)
    judged = host.judge(path, name_hint=_name_hint(host, fetched, root, staging, path, layout), layout=layout)
    judged = _check_expected(host, fetched, judged)
    tree_sha256, listing = host.checksum(path)
    fetched.expects.check_tree(f"{judged.name} {judged.version}", tree_sha256)
    return Prepared(host=host.name, fetched=fetched, root=path, staging=staging, name=judged.name,
                    version=judged.version, tree_sha256=tree_sha256, listing=listing, judged=judged,
                    shown=host.summary(judged, fetched), document=judged.document, grants=judged.capabilities,
                    layout=judged.layout, enabled=bool(judged.details.get("enabled", True)))


def _name_hint(host: FolderHost, fetched: Source, root: Path | None, staging: Path, path: Path,
               layout: str) -> str | None:
    """The name an extension of a host whose format names none installs under: the registry's or
    the declaration's, else what the host itself would call it — a single file by its base name, a
    directory by its own name (an archive's top directory, or its file name, without a
    `-<version>` suffix)."""
    if host.names_itself:
        return None
    if fetched.expects.entry is not None:
        return fetched.expects.entry.name
    if fetched.expects.name:
        return fetched.expects.name
    if layout == "script":
        return path.name.rpartition(".")[0] or path.name
    if fetched.directory is not None:
        return Path(fetched.directory).name
    if root is not None and root != staging:
        return VERSION_SUFFIX.sub("", root.name)
    base = Path(str(fetched.locator)).name
    for suffix in _ARCHIVE_SUFFIXES:
        base = base.removesuffix(suffix)
    return VERSION_SUFFIX.sub("", base)


def _check_expected(host: FolderHost, fetched: Source, judged: Judged) -> Judged:
    """The registry entry may not understate the manifest (SPEC 5.4): name, version (a host whose
    format carries none records the entry's) and, where the entry's permissions are the host's
    capabilities, those."""
    from pkgmgr.versions import same_version

    expected = fetched.expects.entry
    if expected is not None:
        differences = []
        if judged.name != expected.name:
            differences.append(f"name: entry says {expected.name!r}, archive says {judged.name!r}")
        if not host.versions_itself:
            judged = replace(judged, version=expected.version)
        else:
            try:
                same = same_version(judged.version, expected.version)
            except ValueError:
                same = False
            if not same:
                differences.append(f"version: entry says {expected.version}, archive says {judged.version!r}")
        if host.capabilities_are_permissions and sorted(set(judged.capabilities)) != sorted(set(expected.permissions)):
            differences.append(f"permissions: entry says {sorted(set(expected.permissions))}, archive's "
                               f"{judged.host} manifest says {sorted(set(judged.capabilities))}")
        if differences:
            raise PkgmgrError(f"{expected.name} {expected.version}: the registry entry does not match the archive's "
                              "manifest: " + "; ".join(differences), code=Code.METADATA_MISMATCH,
                              details={"differences": differences})
    fetched.expects.check_name(fetched.label or fetched.locator, judged.name, what=f"the {judged.host} extension")
    if expected is None and not host.versions_itself and fetched.expects.version:
        judged = replace(judged, version=fetched.expects.version)  # a kept install's, restored by a rollback
    return judged


# --- commit ----------------------------------------------------------------------------------------


def _transaction_dir(folder: Path, mode: int = 0o755) -> Path:
    """A fresh private directory in the host's staging folder, beside the scanned one (the host's
    home created with `mode` when missing)."""
    return private_dir(ensure_dirs(folder.parent, STAGING, mode=mode), "tx-")


def conflict_error(host: FolderHost, name: str, paths: list[Path]) -> PkgmgrError:
    listed = ", ".join(str(p) for p in paths)
    return PkgmgrError(f"{listed} already holds the {host.name} extension {name}, which pkgmgr did not install; "
                       "refusing to overwrite it", code=Code.SOURCE_CONFLICT, details={"paths": [str(p) for p in paths]},
                       hint=f"'pkgmgr adopt --host {host.name} {name}' takes it under management; --force replaces it")


def check(scope: Scope, host: FolderHost, prepared: Prepared[Judged], options: Options,
          current: Installed | None = None, *, reading: bool = True) -> bool:
    """Raise what switching to `prepared` would refuse, reading only (the destination's
    `check_switch`: a batch is refused before anything moves): `source_conflict` for an
    extension pkgmgr did not install in its place, or one installed from another source or with
    other content. True when the switch would change nothing (the same tree is intact)."""
    from pkgmgr.store.switch import check_source

    judged, fetched = prepared.judged, prepared.fetched
    folder = host.folder_of(scope)
    name = judged.name
    if reading:
        current = records.get(scope, host.name, name) if scope.exists() else None
        if any(intent.name == name for intent in pending.intents(scope.reader(), host.name)):
            return False  # a killed writer's change: the next writer settles it before it checks again
    target = host.target(folder, name, judged.layout)
    known = {current.place, current.directory} if current is not None else set()
    others = [p for p in host.occupants(folder, name) if p not in known] if folder.is_dir() else []
    if current is None:
        claimed = host.claimed_by_records(folder, name)
        if claimed is not None and target not in others:
            others.append(claimed)
    if others and not options.force:
        raise conflict_error(host, name, others)
    host.check_neighbours(folder, judged, known | set(others), scope.kind)
    if options.approve_host_trust or options.approve_host_trust_all:
        _check_approval(scope, host, prepared, options.approve_host_trust_all, current, others, target)
    if current is None or prepared.linked is not None:  # a link replaces whatever is installed
        return False
    if current.linked is not None and not options.force:
        from pkgmgr.store.switch import linked_error

        raise linked_error(current, "replace it")
    from_same_source = check_source(current, fetched, name, force=options.force)
    if not same_version(current.version, judged.version):
        return False
    same_content = from_same_source and current.tree_sha256 == prepared.tree_sha256
    if same_content and not options.force and host.intact(current):
        return True
    if not (options.force or same_content):
        raise PkgmgrError(f"{name} {judged.version} is already installed with different content "
                          f"(tree {current.tree_sha256[:21]} vs {prepared.tree_sha256[:21]})",
                          code=Code.SOURCE_CONFLICT, hint="pass --force to replace it")
    return False


def _check_approval(scope: Scope, host: FolderHost, prepared: Prepared[Judged], everything: bool,
                    current: Installed | None, others: list[Path], target: Path) -> None:
    """`--approve-host-trust` on an install: the host's approval of the folder as the switch will
    leave it must cover only what pkgmgr installs or the operator named (`approval.check`)."""
    from pkgmgr.hosts import approval

    folder = target.parent
    replaced = [p for p in [*others, *([current.place] if current is not None else [])] if p.parent == folder]
    overlay: dict[str, Path | None] = {p.name: None for p in replaced}
    arriving = {}
    enabled = current.enabled if current is not None else prepared.enabled
    if enabled or host.disabled_place(folder, prepared.name, prepared.layout) is None:  # it lands in the folder
        overlay[target.name] = prepared.root
        arriving[target.name] = (prepared.layout, prepared.listing)
    approval.check(host, scope, folder, everything=everything, overlay=overlay, leaving=list(overlay),
                   arriving=arriving)


@dataclass
class FolderSwitch:
    """One install switched into its host's folder: a `store.switch.Part` of the one protocol
    (`store.pending`). Everything that can fail is done when it is made (`switch_part`): the tree
    is in the host's staging folder, flushed, its record and its host's records computed. Then, in
    the store's `commit_all` with the rest of the batch: its intent recorded (phase `in`), the
    host's lock taken, the tree renamed in (the old one parked in the transaction directory), the
    row written in the one transaction (the intent turns `out`), the host's records written, and
    the transaction directory removed. A kill before the commit is undone by the recovery (the old
    tree back in place), one after it finished (the host's records written)."""

    scope: Scope
    host: FolderHost
    index: int
    current: Installed | None
    new: Installed
    place: Path
    tx: Path
    staged: Path
    host_records: dict[str, Any] | None
    lock_timeout: float
    approve: bool
    judged: Any = None  # the host's judgement of the tree, for its record hooks
    source: str = ""
    moved: bool = False
    notes: tuple[list[str], dict[str, Any] | None] = ([], None)
    approve_all: bool = False
    kept_place: Path | None = None  # where the install it replaces is kept for `ext rollback`
    dropped: tuple[Installed, ...] = ()  # the kept installs it stops keeping (their trees go with `tx`)
    old: Path | None = None  # where the replaced tree waits in `tx` once the new one is in
    ignore: tuple[str, ...] = ()  # the note that suggests keeping the host's project folder out of git

    @property
    def folder(self) -> Path:
        return self.host.folder_of(self.scope)

    @cached_property
    def intent(self) -> pending.Intent:
        return pending.Intent(str(self.place), self.new.name, self.new.version, pending.IN, host=self.host.name,
                              action="install", tx=str(self.tx),
                              row={"row": self.new.to_row(), "host": self.host_records})

    def intents(self) -> list[pending.Intent]:
        return [self.intent]

    def hold(self) -> AbstractContextManager[object]:
        return self.host.host_lock(self.lock_timeout)

    def move_in(self) -> list[Path]:
        crashpoint("host.install.after_pending")
        touched = [self.place.parent, self.tx]
        self.moved = True
        replacing = self.current is not None
        # a development link: the host loads the folder as it is, none of its records names it — unless
        # the host loads nothing its records do not name (`link_records`: Claude's)
        linked = self.new.linked is not None and not self.host.link_records
        if not linked:
            self.host.record_install(self.folder, self.judged, self.source, self.staged, enabled=self.new.enabled,
                                     replacing=replacing)
        for index, gone in enumerate(self.dropped):  # the kept trees no longer kept: into `tx`, gone with it
            if os.path.lexists(gone.place):
                os.rename(gone.place, self.tx / f"{DROPPED}{index}")
                touched.append(gone.place.parent)
        self.old = switch_in(self.staged, self.place, self.tx / PREVIOUS)
        current = self.current
        if current is not None and current.directory != self.place and os.path.lexists(current.directory):
            # a single file that became a directory, or the reverse, or a disabled install a link
            # replaces: the old one leaves the host's folder right after the new one is in (two names
            # cannot switch in one step), into the transaction directory, so that no kill after this
            # leaves the host a tree no row names
            os.rename(current.directory, self.tx / REPLACED)
            self.old = self.tx / REPLACED
            touched.append(current.directory.parent)
        if not linked:
            self.host.record_switched(self.folder, self.judged, enabled=self.new.enabled, replacing=replacing)
        crashpoint("host.install.after_rename")
        return touched

    def write(self, conn: sqlite3.Connection) -> None:
        records.put(conn, self.new)

    def undo(self) -> None:
        if self.moved:
            undo_install(self.host, self.intent, self.current)
            _restore_kept(self.current, self.tx)
        remove_tree(self.tx)

    def finish(self) -> None:
        crashpoint("host.install.after_commit")
        keep_replaced(self.new, self.tx, self.old)
        crashpoint("host.install.after_kept")
        self.host.settle(self.host.folder_of(self.scope), hosted(self.host, self.new), self.new.name, self.host_records)
        crashpoint("host.install.after_host_records")

    def cleanup(self) -> None:
        remove_tree(self.tx)
        pending.settle(self.scope, [self.intent.path])
        notes, trust = trust_after(self.scope, self.host, self.host.folder_of(self.scope), self.approve,
                                   self.approve_all)
        self.notes = ([*notes, *self.ignore], trust)

    def outcome(self) -> Outcome:
        from pkgmgr.store.switch import Outcome

        current, new = self.current, self.new
        if current is None:
            action = "installed"
        else:
            action = "reinstalled" if same_version(current.version, new.version) else "switched"
        notes, trust = self.notes
        return Outcome(action, new.with_changes(notes=tuple(notes), trust=trust),
                       current.version if current is not None else None)


PREVIOUS, REPLACED, REMOVED, UNDONE = "previous", "replaced", "removed", "undone"  # in a transaction directory
DROPPED = "dropped-"  # a kept tree a switch or a removal stops keeping, in its transaction directory


def hosted(host: FolderHost, item: Installed | None) -> Installed | None:
    """What the host's own records are to say of `item` (`settle`): nothing for a development link,
    which the host loads as it is — unless the host loads nothing its records do not name
    (`link_records`: Claude's), whose records name the link as they name an install."""
    return item if item is None or item.linked is None or host.link_records else None


def keep_replaced(new: Installed, tx: Path, old: Path | None = None) -> None:
    """Once a switch is committed, the tree it replaced (waiting in `tx`: `old`, else where the
    switch parks it) goes where `new` keeps it for `ext rollback`, when it keeps one there and
    nothing is there yet; what is left in `tx` goes with it."""
    kept = new.kept()
    if kept is None or os.path.lexists(kept.place):
        return
    script = kept.layout == "script"  # a script parked under its own name in `previous/` (`switch_in`)
    parked = [tx / PREVIOUS / Path(kept.place).name] if script else [tx / PREVIOUS]
    found = old if old is not None and os.path.lexists(old) else next(
        (p for p in [*parked, tx / REPLACED] if os.path.lexists(p) and os.path.isdir(p) != script), None)
    if found is None:
        return
    os.rename(found, kept.place)
    fsync_dir(Path(kept.place).parent)


def switch_part(scope: Scope, host: FolderHost, prepared: Prepared[Judged], options: Options, index: int = 0,
                announce: Announce | None = None) -> FolderSwitch | Outcome:
    """Make ready the switch of a prepared tree into its host's folder (writer lock held), or the
    `Outcome` "unchanged" when it would change nothing. Raises `source_conflict` (an extension
    pkgmgr did not install is there, or one from another source), `path_escapes_root` (a link or
    another user's directory on the way) and `io_error` (the tree could not be copied to the host's
    filesystem: staging removed)."""
    from pkgmgr.store.switch import Outcome, login_user, now_utc

    judged, fetched = prepared.judged, prepared.fetched
    folder = host.folder_of(scope)
    check_dirs(folder)
    recover(scope, host, options.lock_timeout)
    name = judged.name
    current = records.get(scope, host.name, name, writer=True)
    if current is not None:  # the enabled state the host itself may have changed since (kept by the switch)
        current = host.observed(current)
    target = host.target(folder, name, judged.layout)
    if check(scope, host, prepared, options, current, reading=False):  # the same tree, intact
        assert current is not None
        if current.pinned != options.pin:
            records.save(scope, current.with_changes(pinned=options.pin))
            current = current.with_changes(pinned=options.pin)
        notes, trust = host.trust_step(scope, folder, approve=options.approve_host_trust,
                                       approve_all=options.approve_host_trust_all)
        return Outcome("unchanged", current.with_changes(notes=tuple(notes), trust=trust), current.version)
    if announce is not None:
        announce(prepared.summary())
    ignore = _ignore_note(scope, folder)  # before anything is created there
    linked = prepared.linked
    enabled = True if linked is not None else current.enabled if current is not None else prepared.enabled
    place = target
    disabled_path = None
    if not enabled:
        away = host.disabled_place(folder, name, judged.layout)
        if away is not None:
            place = away
            disabled_path = str(away)
            ensure_dirs(place.parent.parent, place.parent.name)
    ensure_dirs(folder.parent, folder.name, mode=host.folder_mode)
    tx = _transaction_dir(folder, host.folder_mode)
    staged = tx / place.name
    try:
        _move_in(prepared.root, staged)
        if linked is None:  # a link's folder is the user's: nothing is written into it
            host.prepare_staged(staged, judged, enabled=enabled)
        sync_tree(tx)
        source = str(fetched.directory or fetched.archive or fetched.locator)
        if fetched.exact and os.path.isabs(fetched.locator):  # a rollback: where it first came from
            source = fetched.locator
        host_records = None if linked is not None else host.records_of(
            folder, judged, os.path.abspath(source), staged, enabled=enabled, current=current)
        host.check_trust(scope, folder)
        kept_place = None
        kept: dict[str, Any] | None
        if previous.keeps(current, judged.version, linked, prepared.tree_sha256):
            assert current is not None
            kept_place = ensure_dirs(folder.parent, KEPT_DIR, mode=host.folder_mode) / current.directory.name
            kept = current.with_changes(path=str(kept_place), disabled_path=None, enabled=True).as_previous()
        else:
            kept = previous.carried(current, judged.version, prepared.tree_sha256, linked)
        dropped = tuple(previous.replaced_trees(current, kept))
    except BaseException:
        remove_tree(tx)
        raise
    new = Installed(
        host=host.name, name=name, version=judged.version, path=str(target), layout=judged.layout, enabled=enabled,
        disabled_path=disabled_path, pinned=options.pin, source_kind=fetched.kind, source=fetched.locator,
        registry=fetched.registry, source_url=fetched.source_url, sha256=fetched.sha256, verified=fetched.verified,
        allow_unverified=options.allow_unverified and not fetched.verified, tier=fetched.tier,
        tree_sha256=prepared.tree_sha256, tree_listing=prepared.listing, manifest=dict(prepared.document),
        network_digest="", grants=prepared.grants, max_scope=None, installed_at=now_utc(),
        installed_by=login_user(), scope=scope.kind, root=scope.root, previous=kept, linked=linked,
    )
    return FolderSwitch(scope, host, index, current, new, place, tx, staged, host_records, options.lock_timeout,
                        options.approve_host_trust, judged, os.path.abspath(source),
                        approve_all=options.approve_host_trust_all, kept_place=kept_place, dropped=dropped,
                        ignore=tuple(ignore))


def _ignore_note(scope: Scope, folder: Path) -> list[str]:
    """The note that suggests keeping the host's project folder out of git, when this install is
    about to create it in a git work tree (once: the folder exists from then on)."""
    if scope.workspace is None:
        return []
    top = folder.parent  # `.terva`, `.eva`: what pkgmgr creates in the work tree
    workspace = Path(scope.workspace)
    if os.path.lexists(top) or top.parent != workspace:
        return []
    if not any(os.path.lexists(parent / ".git") for parent in (workspace, *workspace.parents)):
        return []
    return [f"created {top.name}/ in {workspace} for installed extensions: add '{top.name}/' to .gitignore to keep "
            "them out of git"]


def _restore_kept(stands: Installed | None, tx: Path) -> None:
    """Put back the kept tree a switch or a removal that did not happen had moved into its
    transaction directory, when the install that stands still keeps it."""
    kept = stands.kept() if stands is not None else None
    if kept is None or os.path.lexists(kept.place):
        return
    for leftover in sorted(tx.glob(f"{DROPPED}*")) if tx.is_dir() else []:
        os.rename(leftover, kept.place)
        fsync_dir(Path(kept.place).parent)
        return


def commit(scope: Scope, host: FolderHost, prepared: Prepared[Judged], options: Options,
           announce: Announce | None = None) -> Outcome:
    """Switch a prepared tree into its host's folder and record it (writer lock held), in the one
    protocol (`FolderSwitch`). Returns the `Outcome`. Raises what `switch_part` raises, and `locked`
    (the host's own lock)."""
    from pkgmgr.store.switch import BatchRefused, commit_all

    part = switch_part(scope, host, prepared, options, 0, announce)
    if not isinstance(part, FolderSwitch):
        return part
    try:
        commit_all(scope, [], options, [part])
    except BatchRefused as refused:
        raise refused.error from None
    return part.outcome()


def undo_install(host: FolderHost, intent: pending.Intent, standing: Installed | None) -> str:
    """Put back what an install that did not commit moved (the recovery's, and a refused batch's):
    the install `standing` (the row, None for a first install) where its row says, the new tree out
    of the host's folder. Decided by what is on disk: a tree is taken back only where it is the one
    the intent moved (its checksum), so nothing the intent did not move is ever touched."""
    place = Path(intent.path)
    tx = Path(intent.tx) if intent.tx else None
    new_tree = ((intent.row or {}).get("row") or {}).get("tree_sha256")

    new_link = ((intent.row or {}).get("row") or {}).get("linked")

    def holds(path: Path, checksum: str | None, link: str | None) -> bool:
        if link and os.path.lexists(path):  # a development link: what it makes the host load
            return host.link_source(path) == link
        return checksum is not None and os.path.lexists(path) and host.checksum(path)[0] == checksum

    if standing is not None and standing.directory == place:
        if holds(place, standing.tree_sha256, standing.linked) or tx is None:
            return f"kept {standing.label}"
        script = standing.layout == "script"  # a script kept under its own name in `previous/` (`switch_in`)
        # where the switch left the old tree: parked in `previous`, or where the new one was staged
        # when the kill came between the exchange and the parking rename (`switch_in`)
        parked = (tx / PREVIOUS / place.name, tx / PREVIOUS, tx / place.name)
        old = next((p for p in parked if os.path.isdir(p) != script and holds(p, standing.tree_sha256,
                                                                              standing.linked)), None)
        if old is None and holds(place, new_tree, new_link):
            # the new tree is in place, so what the switch parked is the old one (a host whose
            # checksum depends on where a tree is, as Gemini's own install record does, cannot be
            # checked there)
            old = next((p for p in parked if os.path.lexists(p) and os.path.isdir(p) != script), None)
        if old is None:
            return f"kept {standing.label} (its tree is not where the interrupted install left it)"
        if os.path.lexists(place):
            os.rename(place, tx / UNDONE)
        os.rename(old, place)
        fsync_dir(place.parent)
        return f"put back {standing.label}"
    if tx is not None and holds(place, new_tree, new_link):
        os.rename(place, tx / UNDONE)
        fsync_dir(place.parent)
    if standing is not None and tx is not None and not os.path.lexists(standing.directory) \
            and os.path.lexists(tx / REPLACED):
        os.rename(tx / REPLACED, standing.directory)
        fsync_dir(standing.directory.parent)
    return f"kept {standing.label}" if standing is not None else f"dropped the interrupted install of {intent.name}"


def same_version(a: str, b: str) -> bool:
    """Two versions name the same release (equal text, or equal semver; "" only equals "")."""
    if a == b:
        return True
    from pkgmgr.versions import same_version as same_semver

    try:
        return bool(a and b and same_semver(a, b))
    except ValueError:
        return False


def _move_in(source: Path, staged: Path) -> None:
    """The validated tree into the host's staging directory (on the host's filesystem): renamed
    when it is on the same filesystem, else copied with its modes. A disk that fails or fills up
    while copying is `io_error` (what was copied is removed by the caller)."""
    try:
        os.rename(source, staged)
        return
    except OSError as exc:
        import errno

        if exc.errno != errno.EXDEV:
            raise
    try:
        copy_tree(source, staged)
    except OSError as exc:
        from pkgmgr.errors import io_error

        disk = io_error(exc)
        if disk is not None:
            disk.hint = "free space on the host's filesystem (or mend it) and run the command again (nothing was committed)"
            raise disk from None
        raise


def copy_tree(source: Path, dest: Path) -> None:
    """Copy a file or a directory tree with its modes, not following links; the first error is
    raised as the OS gave it (`shutil.copytree` gathers them into one without an errno)."""
    if not source.is_dir() or source.is_symlink():
        shutil.copy2(source, dest, follow_symlinks=False)
        return
    stack = [(source, dest)]
    while stack:
        src, dst = stack.pop()
        os.mkdir(dst)
        for entry in os.scandir(src):
            target = dst / entry.name
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), target))
            else:
                shutil.copy2(entry.path, target, follow_symlinks=False)
        shutil.copystat(src, dst, follow_symlinks=False)


# --- remove, enable, disable ------------------------------------------------------------------------


def remove(scope: Scope, host: FolderHost, item: Installed, change: Change) -> Installed:
    """Take an install out of its host's folder and forget it (writer lock held), in the one
    protocol: the intent recorded, the host's lock taken, the tree renamed away in one step, the
    row deleted in the transaction that turns the intent `out`, the host's own records dropped,
    then the tree deleted."""
    folder = host.folder_of(scope)
    check_dirs(folder)
    recover(scope, host, change.lock_timeout)
    current = records.get(scope, item.host, item.name, writer=True)
    if current is None:  # an interrupted removal of it, finished just now by the recovery
        return item
    if change.approve_host_trust or change.approve_host_trust_all:
        _check_change_approval(scope, host, folder, change, current.place, None)
    host.check_records(folder)  # what Vera would refuse fails now, before anything moves
    host.check_trust(scope, folder)
    tx = _transaction_dir(folder)
    place = current.directory
    intent = pending.Intent(str(place), current.name, current.version, pending.IN, host=host.name, action="remove",
                            tx=str(tx))
    try:
        pending.begin(scope, [intent], _now())
        with host.host_lock(change.lock_timeout):
            moved = False
            try:
                if host.forgets_first:  # the host's records never name a tree that is gone (Claude's)
                    host.forget(folder, current.name)
                    crashpoint("host.remove.after_host_records")
                if os.path.lexists(place):
                    os.rename(place, tx / REMOVED)  # a development link's own link: the folder it names stays
                    moved = True
                kept = current.kept()
                if kept is not None and os.path.lexists(kept.place):  # the install it kept goes with it
                    os.rename(kept.place, tx / f"{DROPPED}0")
                if not host.forgets_first:
                    host.forget(folder, current.name)  # what the host must not read once the tree is gone
                fsync_dir(place.parent)
                crashpoint("host.remove.after_rename")
                with transaction(scope.db) as conn:
                    records.remove(conn, current.host, current.name)
                    pending.commit(conn, [intent.path])
            except BaseException:
                if moved and not os.path.lexists(place):
                    os.rename(tx / REMOVED, place)
                _restore_kept(current, tx)
                try:
                    host.settle(folder, hosted(host, current), current.name)  # the host's records: the install stands
                except (PkgmgrError, OSError):
                    pass  # the first failure is the one to report; `doctor --check` shows the host's records
                raise
            crashpoint("host.remove.after_commit")
            host.settle(folder, None, current.name)
    except BaseException:
        _forget_quietly(scope, intent, tx)
        raise
    remove_tree(tx)
    pending.settle(scope, [intent.path])
    notes, trust = trust_after(scope, host, folder, change.approve_host_trust, change.approve_host_trust_all)
    return current.with_changes(notes=tuple(notes), trust=trust)


def trust_after(scope: Scope, host: FolderHost, folder: Path, approve: bool,
                approve_all: bool = False) -> tuple[list[str], dict[str, Any] | None]:
    """The host's trust step once a change is committed (`check_trust` ran before it): what fails
    now can no longer fail the command (issue 25) — it is a note saying what was left."""
    try:
        return host.trust_step(scope, folder, approve=approve, approve_all=approve_all)
    except (PkgmgrError, OSError) as error:
        why = error.message if isinstance(error, PkgmgrError) else str(error)
        return [f"the change is done, but {host.title}'s trust step failed: {why}"], None


def _forget_quietly(scope: Scope, intent: pending.Intent, tx: Path | None) -> None:
    """A change refused before its commit (a lock, a full disk), its moves put back: its intent
    goes, unless the row is committed already (the recovery finishes it); a disk that fails here
    leaves it to the recovery."""
    try:
        found = [i for i in pending.intents(scope.db, intent.host) if i.path == intent.path]
        if found and found[0].pending == pending.IN:
            if tx is not None:
                remove_tree(tx)
            pending.settle(scope, [intent.path])
    except (PkgmgrError, OSError, sqlite3.Error):
        pass


def set_enabled(scope: Scope, host: FolderHost, item: Installed, enabled: bool, change: Change) -> Installed:
    """`ext enable/disable` the host's way (writer lock held), in the one protocol: the intent
    recorded, then the host's files changed under its lock — the state written in place by the
    host (`settle`), or the extension moved out of the scanned folder and back (a host with a
    `disabled_place`) — then the row and the intent in one transaction. A kill in between is
    undone by the recovery: the host's files say what the row says."""
    folder = host.folder_of(scope)
    check_dirs(folder)
    recover(scope, host, change.lock_timeout)
    current = records.get(scope, item.host, item.name, writer=True)
    if current is None:
        raise PkgmgrError(f"{item.name} is not installed in {item.host}'s {scope.kind} folder", code=Code.NOT_FOUND)
    current = host.observed(current)  # the state the host itself may have changed since
    if current.enabled == enabled:
        return current
    updated = current.with_changes(enabled=enabled)
    host.check_records(folder)  # what the host would refuse fails now, before anything changes
    host.check_trust(scope, folder)
    away = host.disabled_place(folder, current.name, current.layout)
    if away is not None and (change.approve_host_trust or change.approve_host_trust_all):
        _check_change_approval(scope, host, folder, change, current.place,
                               Path(current.disabled_path or away) if enabled else None)
    if away is not None:
        source, dest = (current.place, away) if not enabled else (Path(current.disabled_path or away), current.place)
        if os.path.lexists(dest):
            raise conflict_error(host, current.name, [dest])
        if enabled:  # what was installed while it was away may claim what it brings back (Eva: its module)
            _check_neighbours_of(host, folder, source, current, scope.kind)
        ensure_dirs(dest.parent.parent, dest.parent.name)
        updated = updated.with_changes(disabled_path=None if enabled else str(away))
        intent = pending.Intent(str(dest), current.name, current.version, pending.IN, host=host.name, action="move",
                                row={"row": updated.to_row()})
    else:  # the host's files rewritten in place: saved first, so that an undone change puts them back as they were
        tx = _transaction_dir(folder)
        try:
            saved = _save_files(tx, host.saved_state(current))
        except BaseException:
            remove_tree(tx)
            raise
        intent = pending.Intent(str(current.place), current.name, current.version, pending.IN, host=host.name,
                                action="enable", tx=str(tx), row={"row": updated.to_row(), SAVED: saved})
    pending.begin(scope, [intent], _now())
    crashpoint("host.enable.after_pending")
    try:
        with host.host_lock(change.lock_timeout):
            if away is not None:
                os.rename(source, dest)
                fsync_dir(dest.parent)
                crashpoint("host.enable.after_move")
            else:
                host.settle(folder, updated, updated.name)
                crashpoint("host.enable.after_host_files")
            with transaction(scope.db) as conn:
                records.put(conn, updated)
                pending.drop(conn, [intent.path])
    except BaseException:
        try:
            if away is not None and os.path.lexists(dest) and not os.path.lexists(source):
                os.rename(dest, source)
            elif away is None:
                with host.host_lock(0.0):
                    restore_saved(folder, intent)
                    host.settle(folder, current, current.name)  # back to what the row says
        except (PkgmgrError, OSError):
            raise  # what the host holds is unknown: the intent stays for the recovery
        _forget_quietly(scope, intent, Path(intent.tx) if intent.tx else None)
        raise
    if intent.tx:
        remove_tree(Path(intent.tx))
    notes, trust = trust_after(scope, host, folder, change.approve_host_trust, change.approve_host_trust_all)
    return updated.with_changes(notes=tuple(notes), trust=trust)


SAVED = "saved"  # an enable/disable intent's files saved before the host's were rewritten: [[name in tx, path, mode]]
SAVED_MAX_BYTES = 4 * 1024 * 1024  # pkgmgr's bound on a saved copy it reads back (a host file it saved: 1 MiB for terva)


def _save_files(tx: Path, files: dict[Path, bytes]) -> list[list[Any]]:
    """Copy each of the host's files (their bytes read by the host) into the transaction directory
    `tx`, durably, before the host's files are rewritten; what the intent records of them."""
    from pkgmgr.fsutil import atomic_write_bytes

    saved: list[list[Any]] = []
    for index, (path, data) in enumerate(files.items()):
        name = f"{SAVED}-{index}"
        atomic_write_bytes(tx / name, data, mode=0o600)
        saved.append([name, str(path), os.lstat(path).st_mode & 0o7777])
    return saved


def restore_saved(folder: Path, intent: pending.Intent) -> list[str]:
    """Put back, byte for byte, the host's files an enable/disable that did not happen had saved
    (`_save_files`) before it rewrote them: each written through a temporary file in the host's
    staging folder, outside the tree, where it differs. Only paths inside the host's home are
    touched. Returns the paths put back."""
    from pkgmgr.fsutil import atomic_write_bytes, read_regular

    if not intent.tx or intent.action != "enable":
        return []
    tx, home = Path(intent.tx), folder.parent
    restored = []
    for entry in (intent.row or {}).get(SAVED) or []:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and re.fullmatch(rf"{SAVED}-\d+", entry[0]) and isinstance(entry[1], str)
                and isinstance(entry[2], int)):
            continue  # not what `_save_files` records: nothing is written on its word
        path = Path(entry[1])
        if not path.is_absolute() or ".." in path.parts or not path.is_relative_to(home):
            continue
        try:
            data = read_regular(tx / entry[0], limit=SAVED_MAX_BYTES)
        except FileNotFoundError:
            continue  # killed before it was saved: the host's file was not rewritten yet
        if len(data) > SAVED_MAX_BYTES:
            continue
        try:
            if read_regular(path, limit=SAVED_MAX_BYTES) == data:
                continue
        except OSError:
            pass
        atomic_write_bytes(path, data, mode=entry[2] & 0o777, temp_dir=ensure_dirs(home, STAGING))
        restored.append(str(path))
    return restored


def _check_neighbours_of(host: FolderHost, folder: Path, source: Path, current: Installed, scope: str) -> None:
    """`host.check_neighbours` for the disabled tree `source` an enable moves back into `folder`;
    a tree the host's rules no longer accept (changed by hand while away) is `ext verify`'s to
    report, not this check's."""
    try:
        judged = host.judge(source, name_hint=current.name, layout=current.layout)
    except ValidationFailed:
        return
    host.check_neighbours(folder, judged, {current.place}, scope)


def _now() -> str:
    from pkgmgr.store.switch import now_utc

    return now_utc()


def _check_change_approval(scope: Scope, host: FolderHost, folder: Path, change: Change, place: Path,
                           arriving: Path | None) -> None:
    """`--approve-host-trust` on a remove, enable or disable that takes the entry `place` out of
    the folder (`arriving` None) or puts the tree at `arriving` there (`approval.check`)."""
    from pkgmgr.hosts import approval

    if place.parent != folder:
        return
    approval.check(host, scope, folder, everything=change.approve_host_trust_all, overlay={place.name: arriving},
                   leaving=[] if arriving is not None else [place.name])


# --- adopt -------------------------------------------------------------------------------------------


def adopt(scope: Scope, host: FolderHost, names: list[str], *, force: bool = False) -> list[Installed]:
    """Take hand-installed extensions of `host` in the scope's folder under management: each is
    judged by the host's rules and recorded with its tree checksum as it is now, without moving
    it. The host's own records may refuse one that changed (`tree_modified` unless `force`).
    Names: the ones to adopt, or every unmanaged one when empty."""
    from pkgmgr.store.switch import login_user, now_utc

    folder = host.folder_of(scope)
    check_dirs(folder)
    recover(scope, host)
    managed = {r.name for r in records.list_rows(scope, host.name)} if scope.exists() else set()
    found = {f.name: f for f in host.scan(folder)}
    wanted = names or sorted(n for n in found if n not in managed)
    adopted = []
    for name in wanted:
        if name in managed:
            raise PkgmgrError(f"{name} is already managed by pkgmgr in {host.name}'s {scope.kind} folder",
                              code=Code.SOURCE_CONFLICT)
        item = found.get(name)
        if item is None:
            raise PkgmgrError(f"{host.name} has no extension {name} in {folder}", code=Code.NOT_FOUND,
                              details={"found": sorted(found)})
        check_planted(item.path)
        judged = host.judge(item.path, name_hint=name, layout=item.layout)
        if judged.name != name and host.names_itself:
            raise PkgmgrError(f"{item.path} holds the {host.name} extension {judged.name}; pkgmgr manages a folder "
                              "only under its extension's own name", code=Code.INVALID_MANIFEST)
        host.check_adoptable(item, force=force)
        checksum, listing = host.checksum(item.path)
        row = Installed(
            host=host.name, name=name, version=judged.version, path=str(item.path), layout=item.layout,
            enabled=bool(judged.details.get("enabled", True)), disabled_path=None, pinned=False,
            source_kind="unknown", source="adopted", registry=None, source_url=None, sha256=None, verified=False,
            allow_unverified=False, tier=None, tree_sha256=checksum, tree_listing=listing, manifest=judged.document,
            network_digest="", grants=judged.capabilities, max_scope=None, installed_at=now_utc(),
            installed_by=login_user(), scope=scope.kind, root=scope.root)
        records.save(scope, row)
        adopted.append(row)
    return adopted


ADOPT_MAX_ENTRIES = 10_000  # pkgmgr's bound on what adopt walks (an archive holds at most as many: SPEC 3)


def check_planted(path: Path) -> None:
    """A hand-installed extension `adopt` takes under management holds only what pkgmgr itself
    would install (SPEC 13): the user's own directories and regular files, and links that stay
    inside it. Refused: the extension itself a link (`path_escapes_root`: pkgmgr would manage
    what it points to), an entry of another user (`path_escapes_root`, naming the owner: they
    could change it under pkgmgr's record), a link that leads out of it (`path_escapes_root`),
    a FIFO, socket or device (`invalid_archive`), more than ADOPT_MAX_ENTRIES entries. The walk
    follows no link and reads no file."""
    import stat

    from pkgmgr.fsutil import foreign_owner, kind_of

    def refuse(where: str, why: str, code: str = Code.PATH_ESCAPES_ROOT) -> PkgmgrError:
        return PkgmgrError(f"{where} {why}: pkgmgr does not adopt {path}", code=code, path=where,
                           hint="remove it, or move the extension out of the host's folder and install it "
                                "with 'pkgmgr ext install'")

    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise refuse(str(path), "is a symbolic link (pkgmgr manages only what is in the host's folder)")
    root = os.path.realpath(path)
    pending, seen = [str(path)], 0
    while pending:
        current = pending.pop()
        info = os.lstat(current)
        seen += 1
        if seen > ADOPT_MAX_ENTRIES:
            raise refuse(str(path), f"holds more than {ADOPT_MAX_ENTRIES} entries (pkgmgr's bound)",
                         Code.INVALID_ARCHIVE)
        owner = foreign_owner(info)
        if owner is not None:
            raise refuse(current, f"is owned by {owner}, not by you")
        if stat.S_ISLNK(info.st_mode):
            target = os.path.realpath(current)
            if target != root and not target.startswith(root.rstrip(os.sep) + os.sep):
                raise refuse(current, f"is a symbolic link that leads out of the extension (to {target})")
        elif stat.S_ISDIR(info.st_mode):
            pending.extend(os.path.join(current, name) for name in os.listdir(current))
        elif not stat.S_ISREG(info.st_mode):
            raise refuse(current, f"is {kind_of(info.st_mode)}, which no extension holds", Code.INVALID_ARCHIVE)


# --- recovery --------------------------------------------------------------------------------------


def recover(scope: Scope, host: FolderHost, timeout: float = 0.0) -> list[str]:
    """Settle what killed writers left for `host` in this scope (writer lock held; the host's own
    lock taken, waited for up to `timeout`): each intent of phase `in` is undone (the old install
    stands: its tree back in place), each of phase `out` finished; either way the host's own files
    are then made to say what the row says (`settle`), the transaction directory removed and the
    intent forgotten. Leftovers of the host's staging folder go too. Returns what was done."""
    done: list[str] = []
    if not scope.exists():
        return done
    folder = host.folder_of(scope)
    found = pending.intents(scope.db, host.name)
    if found:
        with host.host_lock(timeout):
            for intent in found:
                done.append(_settle_intent(scope, host, folder, intent))
    staging = folder.parent / STAGING
    if staging.is_dir() and not os.path.islink(staging):
        for leftover in staging.iterdir():
            remove_tree(leftover)
    done.extend(_drop_unkept(scope, host, folder))
    return done


def _drop_unkept(scope: Scope, host: FolderHost, folder: Path) -> list[str]:
    """Remove what lies among the kept trees (`.pkgmgr-previous`, pkgmgr's own) that no install of
    `host` keeps any more: what a killed writer or a removal left."""
    kept_dir = folder.parent / KEPT_DIR
    if not kept_dir.is_dir() or os.path.islink(kept_dir):
        return []
    named = {str(item.place) for row in records.list_rows(scope, host.name) if (item := row.kept()) is not None}
    done = []
    for leftover in sorted(kept_dir.iterdir()):
        if str(leftover) not in named:
            remove_tree(leftover)
            done.append(f"removed {leftover}, which no install keeps any more")
    return done


def _settle_intent(scope: Scope, host: FolderHost, folder: Path, intent: pending.Intent) -> str:
    standing = records.get(scope, host.name, intent.name, writer=True)
    tx = Path(intent.tx) if intent.tx else None
    hint = None
    if intent.pending == pending.IN:  # the commit did not happen: the old install stands
        if intent.action == "install":
            line = undo_install(host, intent, standing)
            if tx is not None:
                _restore_kept(standing, tx)
        elif intent.action == "remove":
            if standing is not None and tx is not None and not os.path.lexists(standing.directory) \
                    and os.path.lexists(tx / REMOVED):
                os.rename(tx / REMOVED, standing.directory)
                fsync_dir(standing.directory.parent)
            if tx is not None:
                _restore_kept(standing, tx)
            line = f"kept {intent.name} (its removal was interrupted before its commit)"
        elif intent.action == "move":
            moved = Path(intent.path)
            if standing is not None and not os.path.lexists(standing.directory) and os.path.lexists(moved):
                os.rename(moved, standing.directory)
                fsync_dir(standing.directory.parent)
            line = f"settled where {intent.name} is"
        else:
            restore_saved(folder, intent)  # the host's files as they were, byte for byte
            line = f"kept {intent.name} {'enabled' if standing is None or standing.enabled else 'disabled'}"
    else:  # committed: finish it
        if intent.action == "install" and standing is not None and (intent.row or {}).get("row", {}).get(
                "tree_sha256") == standing.tree_sha256:
            hint = (intent.row or {}).get("host")
            if tx is not None:
                keep_replaced(standing, tx)
        line = (f"finished removing {intent.name}" if standing is None
                else f"finished installing {standing.label}" if intent.action == "install"
                else f"finished {intent.action} of {standing.label}")
    host.settle(folder, hosted(host, standing), intent.name, hint)
    if tx is not None:
        remove_tree(tx)
    pending.settle(scope, [intent.path])
    return line


def health(scope: Scope, host: FolderHost) -> list[tuple[str, str, bool]]:
    """`doctor --check` of `host`'s installs in this scope (reads only): each tree against its
    record (gone, modified), the host's own records as the host parses them and against the
    installs (`record_problems`), and a stale lock of the host's (`lock_problem`, repairable)."""
    rows = records.list_rows(scope, host.name) if scope.exists() else []
    if not rows:
        return []
    found: list[tuple[str, str, bool]] = []
    changing = {intent.name for intent in pending.intents(scope.reader(), host.name)}
    for row in rows:
        if row.name in changing:  # a killed writer's change: listed by `interrupted`, settled by `recover`
            continue
        place = row.place if row.enabled or not row.disabled_path else Path(row.disabled_path)
        if row.linked is not None:  # a development link: the working folder changes as the author edits it
            if host.link_source(place) != row.linked:
                found.append(("install", f"{row.label}: {place} no longer links to {row.linked}, the folder it was linked to",
                              False))
            continue
        if not os.path.lexists(place):
            found.append(("install", f"{row.label}: {place} is missing (install it again, or forget it: "
                                     f"'pkgmgr ext remove {row.name} --host {host.name}')", False))
        elif not host.intact(row):
            found.append(("install", f"{row.label}: its tree differs from the installed one (run 'pkgmgr ext verify "
                                     f"{row.name} --host {host.name}' for the files)", False))
    folder = host.folder_of(scope)
    try:
        # a link is left out: the hosts whose records name links (`link_records`: Claude Code) check no
        # records here; one a killed writer was changing is settled by `recover` (listed by
        # `interrupted`: repairable), so what its records say of it now is no finding
        hosted_rows = [row for row in rows if row.linked is None and row.name not in changing]
        found.extend(("host_records", problem, False) for problem in host.record_problems(folder, hosted_rows))
    except PkgmgrError as error:
        found.append(("host_records", error.message, False))
    stale = host.lock_problem()
    if stale is not None:
        found.append(("host_lock", stale, True))
    return found


def interrupted(scope: Scope, host: FolderHost) -> list[str]:
    """What killed writers left of `host`'s installs in this scope, for `doctor --check` (reads
    only): each intent still recorded, and what lies in the host's staging folder."""
    found = [intent.label for intent in pending.intents(scope.reader(), host.name)]
    if found or records.list_rows(scope, host.name):
        staging = host.folder_of(scope).parent / STAGING
        if staging.is_dir() and not staging.is_symlink():
            found.extend(f"{host.name}: {staging / leftover.name} is a leftover of an interrupted command"
                         for leftover in sorted(staging.iterdir()))
    return found
