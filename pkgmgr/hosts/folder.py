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
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import fsync_dir, private_dir, remove_tree
from pkgmgr.hosts.mechanics import PREVIOUS, STAGING, check_dirs, ensure_dirs, switch_in, sync_tree
from pkgmgr.hosts.port import Announce, Change, Options, Prepared, Source
from pkgmgr.store import previous, records
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
        if current is not None and current.pending is not None:
            return False  # a killed writer's switch: the next writer settles it before it checks again
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


def commit(scope: Scope, host: FolderHost, prepared: Prepared[Judged], options: Options,
           announce: Announce | None = None) -> Outcome:
    """Switch a prepared tree into its host's folder and record it (writer lock held). Returns
    the `Outcome`. Raises `source_conflict` (an extension pkgmgr did not install is there, or one
    from another source), `locked` (the host's own lock) and `path_escapes_root` (a link or
    another user's directory on the way)."""
    from pkgmgr.store.switch import Outcome, login_user, now_utc

    judged, fetched = prepared.judged, prepared.fetched
    folder = host.folder_of(scope)
    check_dirs(folder)
    recover(scope, host)
    name = judged.name
    current = records.get(scope, host.name, name, writer=True)
    target = host.target(folder, name, judged.layout)
    if check(scope, host, prepared, options, current, reading=False):  # the same tree, intact
        assert current is not None
        if current.pinned != options.pin:
            records.save(scope, current.with_changes(pinned=options.pin))
            current = current.with_changes(pinned=options.pin)
        return Outcome("unchanged", current, current.version)
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
    _move_in(prepared.root, staged)
    if linked is None:  # a link's folder is the user's: nothing is written into it
        host.prepare_staged(staged, judged, enabled=enabled)
    sync_tree(tx)
    kept_place = None
    kept: dict[str, Any] | None
    if previous.keeps(current, judged.version, linked, prepared.tree_sha256):
        assert current is not None
        kept_place = ensure_dirs(folder.parent, PREVIOUS, mode=host.folder_mode) / current.directory.name
        kept = current.with_changes(path=str(kept_place), disabled_path=None, enabled=True).as_previous()
    else:
        kept = previous.carried(current, judged.version, prepared.tree_sha256, linked)
    dropped = previous.replaced_trees(current, kept)
    new = Installed(
        host=host.name, name=name, version=judged.version, path=str(target), layout=judged.layout, enabled=enabled,
        disabled_path=disabled_path, pinned=options.pin, source_kind=fetched.kind, source=fetched.locator,
        registry=fetched.registry, source_url=fetched.source_url, sha256=fetched.sha256, verified=fetched.verified,
        allow_unverified=options.allow_unverified and not fetched.verified, tier=fetched.tier,
        tree_sha256=prepared.tree_sha256, tree_listing=prepared.listing, manifest=dict(prepared.document),
        network_digest="", grants=prepared.grants, max_scope=None, installed_at=now_utc(),
        installed_by=login_user(), scope=scope.kind, root=scope.root, previous=kept, linked=linked,
    )
    records.mark_pending(scope, current, new, {"tx": str(tx), "place": str(place), "action": "install"})
    crashpoint("host.install.after_pending")
    parking = tx / "previous"
    try:
        with host.host_lock(options.lock_timeout):
            if linked is not None:  # the host loads the folder as it is: none of its own records names it
                if current is not None:
                    host.forget(folder, name)
            else:
                source = str(fetched.directory or fetched.archive or fetched.locator)
                if fetched.exact and os.path.isabs(fetched.locator):  # a rollback: where it first came from
                    source = fetched.locator
                host.record_install(folder, judged, os.path.abspath(source), staged, enabled=enabled,
                                    replacing=current is not None)
            crashpoint("host.install.after_host_records")
            for index, gone in enumerate(dropped):  # the kept tree no longer kept: out of its place first
                if os.path.lexists(gone.place):
                    os.rename(gone.place, tx / f"dropped-{index}")
            if kept_place is not None and current is not None and current.directory == place \
                    and not os.path.isdir(place) and os.path.lexists(place):
                os.link(place, parking, follow_symlinks=False)  # a file replaced in one rename: kept by a link
            old = switch_in(staged, place, parking)
    except BaseException:
        _restore_kept(current, tx)
        _roll_back(scope, host, current, name, tx)
        raise
    if current is not None and current.directory != place and os.path.lexists(current.directory):
        # a single file that became a directory, or the reverse, or a disabled install a link replaces.
        # The old one goes right after the new one is in (two names cannot switch in one step), so
        # that no kill after this leaves the host a tree no row names (SPEC 4); the recovery
        # finishes the switch from the pending row
        old = tx / "replaced"
        os.rename(current.directory, old)
    elif old is None and os.path.lexists(parking):
        old = parking
    if kept_place is not None and old is not None:
        os.rename(old, kept_place)  # kept for `ext rollback`, beside the folder the host scans
        fsync_dir(kept_place.parent)
    fsync_dir(place.parent)
    host.record_switched(folder, judged, enabled=enabled, replacing=current is not None)
    crashpoint("host.install.after_rename")
    records.save(scope, new)
    crashpoint("host.install.after_commit")
    remove_tree(tx)
    notes, trust = host.trust_step(scope, folder, approve=options.approve_host_trust)
    notes = [*notes, *ignore]
    if current is None:
        action = "installed"
    else:
        action = "reinstalled" if same_version(current.version, new.version) else "switched"
    return Outcome(action, new.with_changes(notes=tuple(notes), trust=trust),
                   current.version if current is not None else None)


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
    """Put back the kept tree a switch that did not happen had moved into its transaction
    directory, when the install that stands still keeps it."""
    kept = stands.kept() if stands is not None else None
    if kept is None or os.path.lexists(kept.place):
        return
    for leftover in sorted(tx.glob("dropped-*")) if tx.is_dir() else []:
        os.rename(leftover, kept.place)
        return


def _roll_back(scope: Scope, host: FolderHost, current: Installed | None, name: str, tx: Path) -> None:
    """A switch that failed before its tree moved (a lock, a full disk): the old row stands."""
    if current is None:
        records.delete(scope, host.name, name)
    else:
        records.save(scope, current.with_changes(pending=None))
    remove_tree(tx)


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
    """The validated tree into the host's staging directory: renamed when it is on the same
    filesystem, else copied with its modes."""
    try:
        os.rename(source, staged)
        return
    except OSError as exc:
        import errno

        if exc.errno != errno.EXDEV:
            raise
    if source.is_dir():
        shutil.copytree(source, staged, copy_function=shutil.copy2, symlinks=True)
    else:
        shutil.copy2(source, staged)


# --- remove, enable, disable ------------------------------------------------------------------------


def remove(scope: Scope, host: FolderHost, item: Installed, change: Change) -> Installed:
    """Take an install out of its host's folder and forget it (writer lock held): the tree is
    renamed away in one step, the host's own records dropped, the row deleted, then the tree
    deleted."""
    folder = host.folder_of(scope)
    check_dirs(folder)
    recover(scope, host)
    current = records.get(scope, item.host, item.name, writer=True)
    if current is None:  # an interrupted removal of it, finished just now by the recovery
        return item
    tx = _transaction_dir(folder)
    place = current.directory
    records.mark_pending(scope, current, current, {"tx": str(tx), "place": str(place), "action": "remove"})
    parking = tx / "removed"
    try:
        with host.host_lock(change.lock_timeout):
            if os.path.lexists(place):
                os.rename(place, parking)  # a development link's own link: the folder it names stays
            host.forget(folder, current.name)
    except BaseException:
        if not os.path.lexists(place) and os.path.lexists(parking):
            os.rename(parking, place)
        _roll_back(scope, host, current, current.name, tx)
        raise
    kept = current.kept()
    if kept is not None and os.path.lexists(kept.place):
        os.rename(kept.place, tx / "dropped-0")
    fsync_dir(place.parent)
    crashpoint("host.remove.after_rename")
    records.delete(scope, current.host, current.name)
    crashpoint("host.remove.after_commit")
    remove_tree(tx)
    notes, trust = host.trust_step(scope, folder, approve=change.approve_host_trust)
    return current.with_changes(notes=tuple(notes), trust=trust)


def set_enabled(scope: Scope, host: FolderHost, item: Installed, enabled: bool, change: Change) -> Installed:
    """`ext enable/disable` the host's way (writer lock held): written in place by the host
    (`write_enabled`), or the extension moved out of the scanned folder and back (a host with a
    `disabled_place`)."""
    folder = host.folder_of(scope)
    check_dirs(folder)
    recover(scope, host)
    current = records.get(scope, item.host, item.name, writer=True)
    if current is None:
        raise PkgmgrError(f"{item.name} is not installed in {item.host}'s {scope.kind} folder", code=Code.NOT_FOUND)
    current = host.observed(current)  # the state the host itself may have changed since
    if current.enabled == enabled:
        return current
    updated = current.with_changes(enabled=enabled)
    away = host.disabled_place(folder, current.name, current.layout)
    if away is not None:
        source, dest = (current.place, away) if not enabled else (Path(current.disabled_path or away), current.place)
        if os.path.lexists(dest):
            raise conflict_error(host, current.name, [dest])
        ensure_dirs(dest.parent.parent, dest.parent.name)
        updated = updated.with_changes(disabled_path=None if enabled else str(away))
        records.mark_pending(scope, current, updated, {"place": str(dest), "action": "move"})
        os.rename(source, dest)
        fsync_dir(dest.parent)
        crashpoint("host.enable.after_move")
    else:
        host.write_enabled(folder, current, enabled, lock_timeout=change.lock_timeout)
    records.save(scope, updated)
    notes, trust = host.trust_step(scope, folder, approve=change.approve_host_trust)
    return updated.with_changes(notes=tuple(notes), trust=trust)


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


# --- recovery --------------------------------------------------------------------------------------


def recover(scope: Scope, host: FolderHost) -> list[str]:
    """Settle what a killed writer left for `host` in this scope (writer lock held): a pending
    row becomes the new install when its tree is in place, else the old one stands (a fresh
    install's placeholder row is dropped); the host's own records follow what is on disk; leftover
    transaction directories are removed. Returns what was done, for messages."""
    done: list[str] = []
    if not scope.exists():
        return done
    folder = host.folder_of(scope)
    for current in records.list_rows(scope, host.name):
        if current.pending is None:
            continue
        pending = current.pending
        action = pending.get("action")
        place = Path(pending["place"])
        new = records.row_from_pending(pending["row"], scope)
        if action == "remove":
            if not os.path.lexists(place):
                records.delete(scope, current.host, current.name)
                host.settle(folder, None, current.name)
                done.append(f"finished removing {current.name}")
            else:
                records.save(scope, current.with_changes(pending=None))
                done.append(f"kept {current.name} (its removal was interrupted before it began)")
        elif action == "move":
            moved = os.path.lexists(place)
            records.save(scope, (new if moved else current).with_changes(pending=None))
            done.append(f"settled where {current.name} is")
        else:
            if new.linked is not None:
                arrived = host.link_source(place) == new.linked
            else:
                arrived = os.path.lexists(place) and host.checksum(place)[0] == new.tree_sha256
            if arrived:
                records.save(scope, new.with_changes(pending=None))
                kept = new.kept()
                if current.directory != place and not records.is_placeholder(current) \
                        and (kept is None or kept.place != current.directory):
                    remove_tree(current.directory)
                host.settle(folder, new if new.linked is None else None, new.name)
                done.append(f"finished installing {new.name} {new.version}")
            elif records.is_placeholder(current):
                records.delete(scope, current.host, current.name)
                host.settle(folder, None, current.name)
                done.append(f"dropped the interrupted install of {current.name}")
            else:
                records.save(scope, current.with_changes(pending=None))
                _restore_kept(current, Path(pending.get("tx") or place))
                host.settle(folder, current if current.linked is None else None, current.name)
                done.append(f"kept {current.name} {current.version}")
        tx = pending.get("tx")
        if tx:
            remove_tree(Path(tx))
    staging = folder.parent / STAGING
    if staging.is_dir() and not os.path.islink(staging):
        for leftover in staging.iterdir():
            remove_tree(leftover)
    done.extend(_drop_unkept(scope, host, folder))
    return done


def _drop_unkept(scope: Scope, host: FolderHost, folder: Path) -> list[str]:
    """Remove what lies among the kept trees (`.pkgmgr-previous`, pkgmgr's own) that no install of
    `host` keeps any more: what a killed writer or a removal left."""
    kept_dir = folder.parent / PREVIOUS
    if not kept_dir.is_dir() or os.path.islink(kept_dir):
        return []
    named = {str(item.place) for row in records.list_rows(scope, host.name) if (item := row.kept()) is not None}
    done = []
    for leftover in sorted(kept_dir.iterdir()):
        if str(leftover) not in named:
            remove_tree(leftover)
            done.append(f"removed {leftover}, which no install keeps any more")
    return done


def interrupted(scope: Scope, host: FolderHost) -> list[str]:
    """What killed writers left of `host`'s installs in this scope, for `doctor --check` (reads
    only): each row still pending, and what lies in the host's staging folder when it has rows."""
    rows = records.list_rows(scope, host.name)
    found = [f"{item.host} {item.name}: an interrupted {(item.pending or {}).get('action', 'switch')} is pending"
             for item in rows if item.pending is not None]
    if rows:
        staging = host.folder_of(scope).parent / STAGING
        if staging.is_dir() and not staging.is_symlink():
            found.extend(f"{host.name}: {staging / leftover.name} is a leftover of an interrupted command"
                         for leftover in sorted(staging.iterdir()))
    return found
