"""The install pipeline's host half (SPEC 13): the same download, verification and safe
extraction as every install, then the host's rules instead of Compozy's, one atomic rename into
the host's folder and one transaction in the scope's state.

`prepare_hosted` is called by `install.verify.prepare` once a tree is staged and
`pkgmgr.hosts.detect.staged_host` found it is not Compozy's; `commit_hosted` by
`pkgmgr.hosts.destination.HostDestination.switch` for what it prepared (the pipeline's
`Destination` for a host's folder). `remove`, `set_enabled` and `adopt` serve the other commands. Every function here runs under the scope's
writer lock; Vera's records are also written under Vera's own lock.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import fsync_dir, private_dir, remove_tree
from pkgmgr.hosts import records
from pkgmgr.hosts.base import (
    STAGING,
    Host,
    Judged,
    check_dirs,
    ensure_dirs,
    switch_in,
    sync_tree,
)
from pkgmgr.hosts.records import HostInstalled

if TYPE_CHECKING:
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.plan import Fetched
    from pkgmgr.store.scope import Scope

_VERSION_SUFFIX = re.compile(r"-v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


@dataclass
class HostPrepared:
    """A tree extracted into pkgmgr's staging and judged by its host, ready to be committed."""

    fetched: Fetched
    root: Path  # the tree (a directory, or an Eva script file) inside `staging`
    staging: Path
    host: Host
    judged: Judged
    tree_sha256: str
    listing: dict[str, str]
    bundles: tuple[Any, ...] = ()

    @property
    def name(self) -> str:
        return self.judged.name

    @property
    def version(self) -> str:
        return self.judged.version

    def summary(self) -> dict[str, Any]:
        """What the operator sees before it is installed (SPEC 7, 13: capabilities first)."""
        judged = self.judged
        return {
            "name": judged.name, "version": judged.version or "-", "host": judged.host,
            "source": self.fetched.kind, "verified": self.fetched.verified,
            "kind": judged.host if judged.kind == "extension" else f"{judged.host} {judged.kind}",
            "permissions": [], "capabilities": list(judged.capabilities),
            "subprocess": judged.entry if judged.host == "terva" and judged.kind == "subprocess" else None,
            "entry": judged.entry, "network_requirement": None, "network_digest": "", "max_scope": None,
        }


def prepare_hosted(fetched: Fetched, root: Path | None, staging: Path, host_name: str) -> HostPrepared:
    """Judge an extracted tree (or, `root` None, the Eva script `fetched.archive`) by the rules of
    its host, `host_name` (`pkgmgr.hosts.detect.staged_host`: not compozy). Raises the host's
    validation errors, `metadata_mismatch` (the registry entry understates the manifest) and
    `checksum_mismatch` (a lock's tree)."""
    from pkgmgr.hosts.detect import for_host, manifests

    if root is None:
        assert fetched.archive is not None  # an Eva script is a file fetched as the archive
        script = staging / Path(fetched.archive).name
        shutil.copyfile(fetched.archive, script)
        os.chmod(script, 0o644)
        path, layout = script, "script"
    else:
        path, layout = root, "directory"
        if host_name == "eva":
            _found, lone = manifests(root)
            if "extension.exs" not in os.listdir(root) and lone is not None:
                path, layout = root / lone, "script"
    host = for_host(host_name)
    judged = host.judge(path, name_hint=_name_hint(fetched, host_name, root, staging, path, layout), layout=layout)
    judged = _check_expected(fetched, judged)
    tree_sha256, listing = host.checksum(path)
    fetched.expects.check_tree(f"{judged.name} {judged.version}", tree_sha256)
    return HostPrepared(fetched, path, staging, host, judged, tree_sha256, listing)


def judge_level(host: Host, level: Path, name_hint: str | None) -> Judged:
    """A directory judged by `host`: an Eva directory holding one script (and no
    extension.exs) is that script."""
    if host.name == "eva":
        from pkgmgr.hosts.detect import manifests

        _, lone = manifests(level)
        if not (level / "extension.exs").is_file() and lone is not None:
            # installed as the script itself, `<lone>`, which Eva names after its file (as install does)
            return host.judge(level / lone, layout="script")
    return host.judge(level, name_hint=name_hint, layout="directory")


def _name_hint(fetched: Fetched, host: str, root: Path | None, staging: Path, path: Path, layout: str) -> str | None:
    """The name an Eva extension installs under: the registry's or the declaration's, else
    what Eva itself would call it — a script by its base name, a directory by its own name (an
    archive's top directory, or its file name, without a `-<version>` suffix)."""
    if host != "eva":
        return None
    if fetched.expects.entry is not None:
        return fetched.expects.entry.name
    if fetched.expects.name:
        return fetched.expects.name
    if layout == "script":
        return path.name[: -len(".exs")]
    if fetched.directory is not None:
        return Path(fetched.directory).name
    if root is not None and root != staging:
        return _VERSION_SUFFIX.sub("", root.name)
    base = Path(str(fetched.locator)).name
    for suffix in _ARCHIVE_SUFFIXES:
        base = base.removesuffix(suffix)
    return _VERSION_SUFFIX.sub("", base)


def _check_expected(fetched: Fetched, judged: Judged) -> Judged:
    """The registry entry may not understate the manifest (SPEC 5.4): name, version (Eva has
    none: the entry's is recorded) and, for Vera, the capabilities (the entry's permissions)."""
    from dataclasses import replace

    from pkgmgr.versions import same_version

    expected = fetched.expects.entry
    if expected is not None:
        differences = []
        if judged.name != expected.name:
            differences.append(f"name: entry says {expected.name!r}, archive says {judged.name!r}")
        if judged.host == "eva":
            judged = replace(judged, version=expected.version)
        else:
            try:
                same = same_version(judged.version, expected.version)
            except ValueError:
                same = False
            if not same:
                differences.append(f"version: entry says {expected.version}, archive says {judged.version!r}")
        if judged.host == "vera" and sorted(set(judged.capabilities)) != sorted(set(expected.permissions)):
            differences.append(f"permissions: entry says {sorted(set(expected.permissions))}, archive's "
                               f"{judged.host} manifest says {sorted(set(judged.capabilities))}")
        if differences:
            raise PkgmgrError(f"{expected.name} {expected.version}: the registry entry does not match the archive's "
                              "manifest: " + "; ".join(differences), code=Code.METADATA_MISMATCH,
                              details={"differences": differences})
    fetched.expects.check_name(fetched.label or fetched.locator, judged.name, what=f"the {judged.host} extension")
    return judged


# --- commit ----------------------------------------------------------------------------------------


def _folder(host: Host, scope: Scope) -> Path:
    return host.folder(scope.kind, scope.workspace)


def _transaction_dir(folder: Path, mode: int = 0o755) -> Path:
    """A fresh private directory in the host's staging folder, beside the scanned one (the host's
    home created with `mode` when missing)."""
    return private_dir(ensure_dirs(folder.parent, STAGING, mode=mode), "tx-")


def _intact(host: Host, item: HostInstalled) -> bool:
    place = item.directory
    return os.path.lexists(place) and host.checksum(place)[0] == item.tree_sha256


def conflict_error(host: Host, name: str, paths: list[Path]) -> PkgmgrError:
    listed = ", ".join(str(p) for p in paths)
    return PkgmgrError(f"{listed} already holds the {host.name} extension {name}, which pkgmgr did not install; "
                       "refusing to overwrite it", code=Code.SOURCE_CONFLICT, details={"paths": [str(p) for p in paths]},
                       hint=f"'pkgmgr adopt --host {host.name} {name}' takes it under management; --force replaces it")


def check_hosted(scope: Scope, prepared: HostPrepared, options: InstallOptions, current: HostInstalled | None = None, *,
                 reading: bool = True) -> bool:
    """Raise what switching to `prepared` would refuse, reading only (the destination's
    `check_switch`: a batch is refused before anything moves): `source_conflict` for an
    extension pkgmgr did not install in its place, or one installed from another source or with
    other content. True when the switch would change nothing (the same tree is intact)."""
    from pkgmgr.versions import same_version

    host, judged, fetched = prepared.host, prepared.judged, prepared.fetched
    folder = _folder(host, scope)
    name = judged.name
    if reading:
        current = records.get(scope, host.name, name) if scope.exists() else None
        if current is not None and current.pending is not None:
            return False  # a killed writer's switch: the next writer settles it before it checks again
    target = host.target(folder, name, judged.layout)
    known = {current.path, current.directory} if current is not None else set()
    others = [p for p in host.occupants(folder, name) if p not in known] if folder.is_dir() else []
    if host.name == "vera" and current is None:
        from pkgmgr.hosts import vera

        if any(r["id"] == name for r in vera.read_records(folder)) and target not in others:
            others.append(folder.parent / vera.REGISTRY)
    if others and not options.force:
        raise conflict_error(host, name, others)
    host.check_neighbours(folder, judged, known | set(others), scope.kind)
    if current is None:
        return False
    from pkgmgr.store.switch import check_source

    from_same_source = check_source(current, fetched, name, force=options.force)
    same = current.version == judged.version or _same_semver(current.version, judged.version, same_version)
    if not same:
        return False
    same_content = from_same_source and current.tree_sha256 == prepared.tree_sha256
    if same_content and not options.force and _intact(host, current):
        return True
    if not (options.force or same_content):
        raise PkgmgrError(f"{name} {judged.version} is already installed with different content "
                          f"(tree {current.tree_sha256[:21]} vs {prepared.tree_sha256[:21]})",
                          code=Code.SOURCE_CONFLICT, hint="pass --force to replace it")
    return False


def commit_hosted(scope: Scope, prepared: HostPrepared, options: InstallOptions,
                  announce: Callable[[dict[str, Any]], None] | None = None) -> Any:
    """Switch a prepared tree into its host's folder and record it (writer lock held). Returns
    a `store.switch.Outcome` whose `installed` is the `HostInstalled`. Raises `source_conflict`
    (an extension pkgmgr did not install is there, or one from another source), `locked`
    (Vera's lock) and `path_escapes_root` (a link or another user's directory on the way)."""
    from pkgmgr.store.switch import Outcome, login_user, now_utc

    host, judged, fetched = prepared.host, prepared.judged, prepared.fetched
    folder = _folder(host, scope)
    check_dirs(folder)
    recover(scope, host)
    name = judged.name
    current = records.get(scope, host.name, name, writer=True)
    target = host.target(folder, name, judged.layout)
    if check_hosted(scope, prepared, options, current, reading=False):  # the same tree, intact
        assert current is not None
        if current.pinned != options.pin:
            records.save(scope, current.with_changes(pinned=options.pin))
            current = current.with_changes(pinned=options.pin)
        return Outcome("unchanged", current, current.version)
    if announce is not None:
        announce(prepared.summary())
    enabled = current.enabled if current is not None else bool(judged.details.get("enabled", True))
    place = target
    disabled_path = None
    if not enabled and host.name == "eva":
        from pkgmgr.hosts.eva import Eva

        assert isinstance(host, Eva)
        place = disabled_path = host.disabled_place(folder, name, judged.layout)
        ensure_dirs(place.parent.parent, place.parent.name)
    ensure_dirs(folder.parent, folder.name, mode=host.folder_mode)
    tx = _transaction_dir(folder, host.folder_mode)
    staged = tx / place.name
    _move_in(prepared.root, staged)
    host.prepare_staged(staged, judged, enabled=enabled)
    sync_tree(tx)
    new = HostInstalled(
        host=host.name, name=name, version=judged.version, path=target, layout=judged.layout, enabled=enabled,
        disabled_path=disabled_path, pinned=options.pin, source_kind=fetched.kind, source=fetched.locator,
        registry=fetched.registry, source_url=fetched.source_url, sha256=fetched.sha256, verified=fetched.verified,
        tier=fetched.tier, tree_sha256=prepared.tree_sha256, tree_listing=prepared.listing,
        manifest=judged.document, capabilities=judged.capabilities,
        installed_at=now_utc(), installed_by=login_user(), scope=scope.kind,
    )
    records.mark_pending(scope, current, new, {"tx": str(tx), "place": str(place), "action": "install"})
    crashpoint("host.install.after_pending")
    parking = tx / "previous"
    try:
        if host.name == "vera":
            from pkgmgr.hosts import vera

            with vera.registry_lock(getattr(options, "lock_timeout", 30.0)):
                source = str(fetched.directory or fetched.archive or fetched.locator)
                installed_at = None
                if current is not None:
                    old = next((r for r in vera.read_records(folder) if r["id"] == name), None)
                    installed_at = old["installedAt"] if old else None
                version = vera.recorded_version(judged.document, judged.version)
                vera.put_record(folder, vera.record(name, version, os.path.abspath(source),
                                                    vera.digest(staged), enabled=enabled, installed_at=installed_at))
                crashpoint("host.install.after_host_records")
                switch_in(staged, place, parking)
        else:
            switch_in(staged, place, parking)
    except BaseException:
        _roll_back(scope, host, current, name, tx)
        raise
    if current is not None and current.directory != place and os.path.lexists(current.directory):
        # Eva: a script that became a directory, or the reverse. The old one goes into the
        # transaction directory right after the new one is in (two names cannot switch in one
        # step), so that no kill after this leaves the host a tree no row names (SPEC 4);
        # `recover` finishes the switch from the pending row
        os.rename(current.directory, tx / "replaced")
    fsync_dir(place.parent)
    crashpoint("host.install.after_rename")
    records.save(scope, new)
    crashpoint("host.install.after_commit")
    remove_tree(tx)
    notes, trust = _after_change(host, scope, folder, options)
    action = "installed" if current is None else "reinstalled" if same_version_or_equal(current, new) else "switched"
    return Outcome(action, new.with_changes(notes=tuple(notes), trust=trust),
                   current.version if current is not None else None)


def _roll_back(scope: Scope, host: Host, current: HostInstalled | None, name: str, tx: Path) -> None:
    """A switch that failed before its tree moved (a lock, a full disk): the old row stands."""
    if current is None:
        records.delete(scope, host.name, name)
    else:
        records.save(scope, current.with_changes(pending=None))
    remove_tree(tx)


def _same_semver(a: str, b: str, same_version: Callable[[str, str], bool]) -> bool:
    try:
        return bool(a and b and same_version(a, b))
    except ValueError:
        return False


def same_version_or_equal(current: HostInstalled, new: HostInstalled) -> bool:
    from pkgmgr.versions import same_version

    return current.version == new.version or _same_semver(current.version, new.version, same_version)


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


def _after_change(host: Host, scope: Scope, folder: Path, options: Any) -> tuple[list[str], dict[str, Any] | None]:
    """The notes a change in `folder` calls for, and Eva's approval of a project folder."""
    notes = host.notes(scope.kind, scope.workspace, folder)
    trust = None
    if host.name == "eva" and scope.kind == "workspace":
        from pkgmgr.hosts import eva

        trust = eva.trust_report(folder, old=eva.approved_hash(folder),
                                 approve_it=bool(getattr(options, "approve_host_trust", False)))
        notes.extend(eva.trust_lines(trust))
    return notes, trust


# --- remove, enable, disable ------------------------------------------------------------------------


def remove(scope: Scope, item: HostInstalled, *, options: Any = None) -> HostInstalled:
    """Take an install out of its host's folder and forget it (writer lock held): the tree is
    renamed away in one step, Vera's records dropped, the row deleted, then the tree deleted."""
    from pkgmgr.hosts.detect import for_host

    host = for_host(item.host)
    folder = _folder(host, scope)
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
        if host.name == "vera":
            from pkgmgr.hosts import vera

            with vera.registry_lock(getattr(options, "lock_timeout", 30.0)):
                if os.path.lexists(place):
                    os.rename(place, parking)
                vera.drop_record(folder, current.name)
        elif os.path.lexists(place):
            os.rename(place, parking)
    except BaseException:
        if not os.path.lexists(place) and os.path.lexists(parking):
            os.rename(parking, place)
        _roll_back(scope, host, current, current.name, tx)
        raise
    fsync_dir(place.parent)
    crashpoint("host.remove.after_rename")
    records.delete(scope, current.host, current.name)
    crashpoint("host.remove.after_commit")
    remove_tree(tx)
    notes, trust = _after_change(host, scope, folder, options)
    return current.with_changes(notes=tuple(notes), trust=trust)


def set_enabled(scope: Scope, item: HostInstalled, enabled: bool, *, options: Any = None) -> HostInstalled:
    """`ext enable/disable` the host's way (writer lock held): terva's manifest `enabled`
    rewritten as `terva ext enable/disable` does; an Eva extension moved out of the scanned
    folder and back; Vera's own records switched as `setExtensionEnabled` does."""
    from pkgmgr.hosts import terva
    from pkgmgr.hosts.detect import for_host

    host = for_host(item.host)
    folder = _folder(host, scope)
    check_dirs(folder)
    recover(scope, host)
    current = records.get(scope, item.host, item.name, writer=True)
    if current is None:
        raise PkgmgrError(f"{item.name} is not installed in {item.host}'s {scope.kind} folder", code=Code.NOT_FOUND)
    if current.enabled == enabled:
        return current
    updated = current.with_changes(enabled=enabled)
    if host.name == "terva":
        terva.set_enabled(current.path, enabled)
    elif host.name == "eva":
        from pkgmgr.hosts.eva import Eva

        assert isinstance(host, Eva)
        away = host.disabled_place(folder, current.name, current.layout)
        source, dest = (current.path, away) if not enabled else (current.disabled_path or away, current.path)
        if os.path.lexists(dest):
            raise conflict_error(host, current.name, [dest])
        ensure_dirs(dest.parent.parent, dest.parent.name)
        records.mark_pending(scope, current, updated.with_changes(disabled_path=None if enabled else away),
                             {"place": str(dest), "action": "move"})
        os.rename(source, dest)
        fsync_dir(dest.parent)
        crashpoint("host.enable.after_move")
        updated = updated.with_changes(disabled_path=None if enabled else away)
    else:
        from pkgmgr.hosts import vera

        with vera.registry_lock(getattr(options, "lock_timeout", 30.0)):
            if vera.set_record_enabled(folder, current.name, enabled) is None:
                raise PkgmgrError(f"Vera has no record of {current.name} in {folder.parent / vera.REGISTRY}",
                                  code=Code.STATE_INCONSISTENT, hint="'pkgmgr ext install' it again with --force")
    records.save(scope, updated)
    notes, trust = _after_change(host, scope, folder, options)
    return updated.with_changes(notes=tuple(notes), trust=trust)


# --- adopt -------------------------------------------------------------------------------------------


def adopt(scope: Scope, host: Host, names: list[str], *, force: bool = False) -> list[HostInstalled]:
    """Take hand-installed extensions of `host` in the scope's folder under management: each is
    judged by the host's rules and recorded with its tree checksum as it is now, without moving
    it. A Vera extension must still have the digest Vera recorded (`tree_modified` otherwise,
    unless `force`). Names: the ones to adopt, or every unmanaged one when empty."""
    from pkgmgr.store.switch import login_user, now_utc

    folder = _folder(host, scope)
    check_dirs(folder)
    recover(scope, host)
    managed = {r.name for r in records.list_rows(scope, host.name)} if scope.exists() else set()
    found = {f.name: f for f in host.scan(folder)}
    wanted = names or sorted(n for n in found if n not in managed)
    adopted = []
    vera_records: dict[str, dict[str, Any]] = {}
    if host.name == "vera":
        from pkgmgr.hosts import vera

        vera_records = {r["id"]: r for r in vera.read_records(folder)}
    for name in wanted:
        if name in managed:
            raise PkgmgrError(f"{name} is already managed by pkgmgr in {host.name}'s {scope.kind} folder",
                              code=Code.SOURCE_CONFLICT)
        item = found.get(name)
        if item is None:
            raise PkgmgrError(f"{host.name} has no extension {name} in {folder}", code=Code.NOT_FOUND,
                              details={"found": sorted(found)})
        judged = host.judge(item.path, name_hint=name, layout=item.layout)
        if judged.name != name and host.name != "eva":
            raise PkgmgrError(f"{item.path} holds the {host.name} extension {judged.name}; pkgmgr manages a folder "
                              "only under its extension's own name", code=Code.INVALID_MANIFEST)
        if host.name == "vera":
            from pkgmgr.hosts import vera

            recorded = vera_records.get(name)
            if recorded is not None and recorded["digest"] != vera.digest(item.path) and not force:
                raise PkgmgrError(f"{item.path} changed since Vera recorded it (digest {recorded['digest']})",
                                  code=Code.TREE_MODIFIED, hint="reinstall it, or pass --force to adopt it as it is")
        checksum, listing = host.checksum(item.path)
        row = HostInstalled(
            host=host.name, name=name, version=judged.version, path=item.path, layout=item.layout,
            enabled=bool(judged.details.get("enabled", True)), disabled_path=None, pinned=False,
            source_kind="unknown", source="adopted", registry=None, source_url=None, sha256=None, verified=False,
            tier=None, tree_sha256=checksum, tree_listing=listing, manifest=judged.document,
            capabilities=judged.capabilities, installed_at=now_utc(), installed_by=login_user(), scope=scope.kind)
        records.save(scope, row)
        adopted.append(row)
    return adopted


# --- recovery --------------------------------------------------------------------------------------


def recover(scope: Scope, host: Host) -> list[str]:
    """Settle what a killed writer left for `host` in this scope (writer lock held): a pending
    row becomes the new install when its tree is in place, else the old one stands (a fresh
    install's placeholder row is dropped); Vera's records follow what is on disk; leftover
    transaction directories are removed. Returns what was done, for messages."""
    done: list[str] = []
    if not scope.exists():
        return done
    folder = _folder(host, scope)
    for item in records.list_rows(scope, host.name):
        conn = scope.db
        row = conn.execute(f"SELECT * FROM {records.TABLE} WHERE host = ? AND name = ?", (item.host, item.name)).fetchone()
        current = records.from_row(row, scope.kind)
        if current.pending is None:
            continue
        pending = current.pending
        action = pending.get("action")
        place = Path(pending["place"])
        new = records.row_from_pending(pending["row"], scope.kind)
        if action == "remove":
            if not os.path.lexists(place):
                records.delete(scope, current.host, current.name)
                _vera_settle(host, folder, None, name=current.name)
                done.append(f"finished removing {current.name}")
            else:
                records.save(scope, current.with_changes(pending=None))
                done.append(f"kept {current.name} (its removal was interrupted before it began)")
        elif action == "move":
            moved = os.path.lexists(place)
            records.save(scope, (new if moved else current).with_changes(pending=None))
            done.append(f"settled where {current.name} is")
        else:
            observed = host.checksum(place)[0] if os.path.lexists(place) else None
            if observed == new.tree_sha256:
                records.save(scope, new.with_changes(pending=None))
                if current.directory != place and not records.is_placeholder(current):
                    remove_tree(current.directory)
                _vera_settle(host, folder, new)
                done.append(f"finished installing {new.name} {new.version}")
            elif records.is_placeholder(current):
                records.delete(scope, current.host, current.name)
                _vera_settle(host, folder, None, name=current.name)
                done.append(f"dropped the interrupted install of {current.name}")
            else:
                records.save(scope, current.with_changes(pending=None))
                _vera_settle(host, folder, current)
                done.append(f"kept {current.name} {current.version}")
        tx = pending.get("tx")
        if tx:
            remove_tree(Path(tx))
    staging = folder.parent / STAGING
    if staging.is_dir() and not os.path.islink(staging):
        for leftover in staging.iterdir():
            remove_tree(leftover)
    return done


def interrupted(scope: Scope) -> list[str]:
    """What killed writers left of host installs in this scope, for `doctor --check` (reads only):
    each row still pending, and what lies in the staging folder of a host with rows."""
    from pkgmgr.hosts.detect import for_host

    found = [f"{item.host} {item.name}: an interrupted {(item.pending or {}).get('action', 'switch')} is pending"
             for item in records.list_rows(scope) if item.pending is not None]
    for name in sorted({item.host for item in records.list_rows(scope)}):
        staging = _folder(for_host(name), scope).parent / STAGING
        if staging.is_dir() and not staging.is_symlink():
            found.extend(f"{name}: {staging / leftover.name} is a leftover of an interrupted command"
                         for leftover in sorted(staging.iterdir()))
    return found


def recover_all(scope: Scope) -> list[str]:
    """`recover` for every host with rows in this scope (writer lock held): `doctor`'s repair."""
    from pkgmgr.hosts.detect import for_host

    done: list[str] = []
    for name in sorted({item.host for item in records.list_rows(scope)}):
        host = for_host(name)
        done.extend(f"{name}: {line}" for line in recover(scope, host))
    return done


def _vera_settle(host: Host, folder: Path, item: HostInstalled | None, *, name: str | None = None) -> None:
    """Vera's records made to say what is on disk after a recovery."""
    if host.name != "vera":
        return
    from pkgmgr.hosts import vera

    ext_id = item.name if item is not None else name
    if ext_id is None:
        return
    path = folder / ext_id
    with vera.registry_lock(0.0):
        records_now = {r["id"]: r for r in vera.read_records(folder)}
        if item is None or not os.path.isdir(path):
            if ext_id in records_now:
                vera.drop_record(folder, ext_id)
            return
        old = records_now.get(ext_id)
        vera.put_record(folder, vera.record(ext_id, vera.recorded_version(item.manifest, item.version),
                                            (old or {}).get("source", {}).get("path")
                                            or str(path), vera.digest(path), enabled=item.enabled,
                                            installed_at=(old or {}).get("installedAt")))
