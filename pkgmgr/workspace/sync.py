"""`pkgmgr sync`: bring a workspace's store to what its `pkgmgr.toml` declares (SPEC 10).

1. Check the approval (trust) and the store id.
2. Resolve every declared extension: a locked version is kept while it satisfies its
   requirement (as cargo and uv do); `--upgrade` re-resolves; `--frozen` takes the lock as it
   is; `--locked` refuses when resolving would change the lock.
3. Plan: installs and switches, removals, activations to create, confirm and remove. The plan
   is reported before anything is done (and is all `--dry-run` does).
4. Act, each step atomic on its own: deactivate what is no longer declared, remove what is no
   longer declared, install/switch, write `pkgmgr.lock` (keeping the approval), then create and
   confirm the declared activations. A crash between steps leaves a state the next `sync`
   completes.

A synced workspace costs no registry read, no download and no re-hash of installed trees: a
locked version that still satisfies its requirement and is installed with the locked checksums
is left alone (only the path extensions' trees are hashed, once, for the trust digest).
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pkgmgr.archive.checksum import is_tree_checksum
from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.install.plan import NameMismatch, Plan
from pkgmgr.progress import Reporter
from pkgmgr.store.installed import Installed
from pkgmgr.versions import same_version
from pkgmgr.workspace import trust
from pkgmgr.workspace.declaration import MANIFEST, DeclaredActivation
from pkgmgr.workspace.lockfile import LOCK, Lock, LockEntry, parse_lock
from pkgmgr.workspace.resolve import Item, Resolver, SyncOptions
from pkgmgr.workspace.workspace import Workspace

__all__ = ["SyncOptions", "SyncPlan", "SyncResult", "Workspace", "Resolver", "make_plan", "sync"]


@dataclass
class SyncPlan:
    workspace: Path
    items: list[Item]
    remove: list[Installed]
    activate: list[DeclaredActivation]
    deactivate: list[dict[str, Any]]
    confirm: list[dict[str, Any]] = field(default_factory=list)  # awaiting rows the declaration confirms
    lock_update: bool = False  # pkgmgr.lock will be (re)written

    @property
    def empty(self) -> bool:
        return (all(i.action == "unchanged" for i in self.items) and not self.remove and not self.activate
                and not self.deactivate and not self.confirm and not self.lock_update)

    def to_json(self) -> dict[str, Any]:
        def act(a: dict[str, Any]) -> dict[str, Any]:
            return {"id": a["id"], "extension": a["extension"], "bundle": a["bundle"], "profile": a["profile"]}

        return {
            "workspace": str(self.workspace),
            "extensions": [i.to_json() for i in self.items],
            "remove": [{"name": i.name, "version": i.version} for i in self.remove],
            "activate": [{"extension": a.extension, "bundle": a.bundle, "profile": a.profile} for a in self.activate],
            "deactivate": [act(a) for a in self.deactivate],
            "confirm": [{**act(a), "network_digest": a["network_digest"]} for a in self.confirm],
            "lock_update": self.lock_update,
            "empty": self.empty,
        }


@dataclass
class SyncResult:
    plan: SyncPlan
    installed: list[Any] = field(default_factory=list)  # installer RefResults
    removed: list[dict[str, Any]] = field(default_factory=list)
    activations: list[dict[str, Any]] = field(default_factory=list)
    lock_written: bool = False
    error: PkgmgrError | None = None
    # --approve-host-trust on project folders this sync did not change: the notes and the report of each
    host_trust: list[dict[str, Any]] = field(default_factory=list)

    def installed_rows(self) -> list[dict[str, Any]]:
        """One row per extension installed or switched, of any host, as `sync -o json` reports it
        (an install in a folder of its host with its host, directory and the notes its trust step
        left: `Installed.entry`)."""
        return [r.outcome.installed.entry(source=r.outcome.installed.source_kind, sha256=r.outcome.installed.sha256,
                                          verified=r.outcome.installed.verified, action=r.outcome.action)
                for r in self.installed if r.outcome is not None]

    def failed_rows(self) -> list[dict[str, Any]]:
        """One row per declared ref that failed to install: the ref and its error's JSON."""
        return [{"ref": r.ref, "error": r.error.to_json()} for r in self.installed if r.error is not None]

    def to_json(self, *, dry_run: bool, planned: dict[str, Any] | None = None) -> dict[str, Any]:
        """`sync -o json`'s document; `planned` is the plan as it was reported before acting (acting
        moves each item's current version), this result's plan when None."""
        root = self.plan.workspace
        return {
            "workspace": str(root),
            "dry_run": dry_run,
            "plan": planned or self.plan.to_json(),
            "installed": self.installed_rows(),
            "removed": self.removed,
            "failed": self.failed_rows(),
            "activations": self.activations,
            "lock": {"path": str(root / LOCK), "written": self.lock_written},
            **({"host_trust": self.host_trust} if self.host_trust else {}),
        }

    def final_error(self) -> PkgmgrError | None:
        """The error the command ends with: the first failure, else `confirmation_required` when
        activations await confirmation, else None."""
        if self.error is not None:
            return self.error
        awaiting = [a for a in self.activations if a.get("status") == "awaiting_confirmation"]
        if awaiting:
            from pkgmgr.activation.confirmation import confirmation_error

            return confirmation_error(awaiting)
        return None


def _matches(item: Item, current: Installed, ws: Workspace, resolver: Resolver) -> bool:
    """The installed extension already is what the item wants (compared with the records: no
    tree is hashed, except another host's in the work tree, which a `git pull` can change)."""
    entry = item.entry
    if entry is None or not _same_version(current.version, entry.version):
        return False
    if entry.host and entry.host != current.host:
        return False
    if not current.in_store and not _host_tree_intact(current):
        return False
    if not is_tree_checksum(current.tree_sha256):
        return False  # a format-1 value the state migration could not vouch for: reinstall
    if entry.tree_sha256 and current.tree_sha256 != entry.tree_sha256:
        return False
    if entry.kind == "path":
        return current.source_kind == "path" and Path(current.source) == ws.root / entry.locator
    if entry.kind == "github":
        return current.source_kind == "github" and current.sha256 == entry.sha256
    registry = resolver.registry_for_lock(entry)
    return (current.source_kind == "registry" and registry is not None and current.registry == registry.name
            and current.sha256 == entry.sha256)


def _same_version(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return same_version(a, b)
    except ValueError:  # an extension whose format carries no version, installed from a path, names none
        return False


def _host_tree_intact(current: Installed) -> bool:
    """An install in a folder of its host still has the tree pkgmgr recorded (SPEC 13: checked
    before sync reports success, since a project install lives in the work tree)."""
    from pkgmgr.hosts import get

    return get(current.host).intact(current)


def _installed(ws: Workspace) -> dict[str, Installed]:
    """What the workspace's store holds, by name, every host's (SPEC 13; of two hosts holding a
    name, the first in `pkgmgr.hosts.HOSTS` order)."""
    from pkgmgr.hosts import names
    from pkgmgr.store import records

    order = names()
    installed: dict[str, Installed] = {}
    for row in sorted(records.installed(ws.scope), key=lambda row: order.index(row.host)):
        installed.setdefault(row.name, row)
    return installed


def make_plan(ws: Workspace, resolver: Resolver, options: SyncOptions) -> SyncPlan:
    """What `sync` will do. Reads the store and, for what the lock does not settle, the
    registries; writes nothing. Raises the resolution errors, lock_outdated (--locked,
    --frozen) and the errors of a declared activation that can be checked already."""
    from pkgmgr.activation.lifecycle import list_activations

    _check_lock_version(ws, options)
    installed = _installed(ws)
    items = [resolver.resolve(d) for d in ws.manifest.extensions]
    if options.frozen and ws.lock is not None:
        extra = sorted({e.name for e in ws.lock.entries} - {i.name for i in items})
        if extra:
            raise PkgmgrError(f"{LOCK} locks extensions {MANIFEST} does not declare: {', '.join(extra)}",
                              code=Code.LOCK_OUTDATED, details={"extensions": extra},
                              hint="run 'pkgmgr sync' (without --frozen) to update the lock")
    if options.locked:
        _check_locked(ws, items)
    for item in items:
        _check_project_scope(ws, item)
    for item in items:
        item.current = installed.get(item.name)
        if item.current is not None and _matches(item, item.current, ws, resolver):
            assert item.entry is not None
            if not item.entry.tree_sha256:  # a fresh resolution that is installed already
                item.entry = dataclasses.replace(item.entry, tree_sha256=item.current.tree_sha256)
            continue
        if item.current is None:
            item.action = "install"
        elif item.version is not None and _same_version(item.current.version, item.version):
            item.action = "reinstall"
        else:
            item.action = "switch"
    declared_names = {d.name for d in ws.manifest.extensions}
    removals = [i for name, i in sorted(installed.items()) if name not in declared_names]
    existing = list_activations(ws.scope)
    workspace = ws.scope.workspace_path
    wanted = ws.manifest.activations
    deactivate = [a for a in existing if not any(_same_activation(a, d, workspace) for d in wanted)]
    activate, confirm = [], []
    for declared in wanted:
        row = next((a for a in existing if _same_activation(a, declared, workspace)), None)
        if row is None:
            activate.append(declared)
        elif _confirms(declared, row):
            confirm.append(row)
    unchanged = {i.name for i in items if i.action == "unchanged"}
    for declared in activate:  # what can be checked before acting is checked now
        if declared.extension in unchanged:
            _check_activation(ws, declared, config=resolver.session.config)
    plan = SyncPlan(ws.root, items, removals, activate, deactivate, confirm)
    plan.lock_update = not options.frozen and _render_lock(plan) != ws.lock_raw
    if options.locked and plan.lock_update:
        raise PkgmgrError(f"{LOCK} would be rewritten (it is not as pkgmgr writes it)", code=Code.LOCK_OUTDATED,
                          details={"extensions": []}, hint="run 'pkgmgr sync' to update the lock")
    return plan


def _check_project_scope(ws: Workspace, item: Item) -> None:
    """A declaration for a host without a project scope is refused before anything is done:
    such a host loads extensions only from its global folder, which a workspace never writes."""
    from pkgmgr.hosts import get

    name = (item.declared.host or (item.entry.host if item.entry is not None else None)
            or (item.plan.expects.host if item.plan is not None else None))
    if not name:
        return
    host = get(name)
    homes = host.homes(ws.scope.root, ws.scope.root, ws.root)
    if homes["project"] is not None:
        return
    declared = item.declared
    if declared.kind == "path":
        words = [str(ws.root / (declared.path or ".")), "--allow-unverified"]
    elif declared.kind == "github":
        words = [f"github:{declared.github}" + (f"@{declared.tag}" if declared.tag else ""), "--allow-unverified"]
    else:
        own = {registry.name for registry in ws.manifest.registries}  # a global command never reads them
        words = [item.name] + (["--registry", declared.registry] if declared.registry and declared.registry not in own
                               else [])
    # the command ends the hint, each word quoted for a POSIX shell: a path holding a space, `"`, `$`
    # or a backquote runs as printed
    command = f"pkgmgr ext install {shlex.join(words)}"
    raise PkgmgrError(f"{MANIFEST} declares {item.name} for {host.title}, which has no project scope: "
                      f"{host.title} loads extensions only from {homes['global']}; nothing was changed",
                      code=Code.USAGE, details={"key": f"extensions.{item.name}", "host": host.name,
                                                "command": command},
                      hint=f"remove {item.name} from [extensions] in {MANIFEST}; to install it where {host.title} "
                           f"loads it, for every project, run: {command}")


def _render_lock(plan: SyncPlan) -> bytes:
    return Lock(tuple(_with_host(item.entry, item.current, plan.workspace) for item in plan.items
                      if item.entry is not None)).render()


def _with_host(entry: LockEntry, current: Installed | None, root: Path) -> LockEntry:
    """A lock entry with the host and install path of what is installed in a folder of its host
    (SPEC 13)."""
    import os

    if current is None or current.in_store:
        return entry
    host = current.host
    path = str(current.path)
    if Path(path).is_relative_to(root):
        path = Path(os.path.relpath(path, root)).as_posix()
    elif current.scope == "workspace":
        path = ""  # kept in the workspace's store (a host that reads it from there): per machine, not locked
    return dataclasses.replace(entry, host=host, install_path=path)


def _same_activation(row: dict[str, Any], declared: DeclaredActivation, workspace: str) -> bool:
    """`row` is the activation `declared` asks for (one recorded for another workspace path,
    in a copied store, is not)."""
    return (row["extension"] == declared.extension and row["profile"].lower() == declared.profile.lower()
            and (declared.bundle is None or row["bundle"].lower() == declared.bundle.lower())
            and row["workspace"] == workspace)


def _confirms(declared: DeclaredActivation, row: dict[str, Any]) -> bool:
    from pkgmgr.activation.lifecycle import AWAITING

    return row["status"] == AWAITING and bool(declared.confirm) and declared.confirm == row["network_digest"]


def _check_activation(ws: Workspace, declared: DeclaredActivation, *, config: Any) -> None:
    from pkgmgr.activation.lifecycle import Target, resolve

    try:
        resolve(ws.scope, Target(declared.extension, declared.bundle, declared.profile), config=config)
    except PkgmgrError as error:
        raise _declaration_error(ws, declared, error) from None


def _declaration_error(ws: Workspace, declared: DeclaredActivation, error: PkgmgrError) -> PkgmgrError:
    """An activation's error, naming the declaration of pkgmgr.toml that asked for it."""
    key = f"{MANIFEST} activations[{ws.manifest.activations.index(declared)}]"
    hint = error.hint
    if error.code == Code.USAGE and declared.bundle is None:
        hint = f"name the bundle in {key}: bundle = \"...\""
    return PkgmgrError(f"{key} ({declared.label}): {error.message}", code=error.code, details=error.details,
                       hint=hint)


def _check_lock_version(ws: Workspace, options: SyncOptions) -> None:
    """--locked and --frozen promise the lock as it is, checksums included: a version-1 lock's
    tree checksums (format 1) cannot be checked, so it must be rewritten first."""
    if (options.locked or options.frozen) and ws.lock is not None and ws.lock.version == 1:
        flag = "--locked" if options.locked else "--frozen"
        raise PkgmgrError(f"{LOCK} is version 1, whose tree checksums (format 1) {flag} cannot check: sync "
                          "recomputes them and rewrites it as version 2", code=Code.LOCK_OUTDATED,
                          details={"extensions": []}, hint="run 'pkgmgr sync' to update the lock, then commit it")


def _check_locked(ws: Workspace, items: list[Item]) -> None:
    changed = [i.name for i in items if not i.kept]
    if ws.lock is not None:
        changed += sorted({e.name for e in ws.lock.entries} - {i.name for i in items})
    if ws.lock is None or changed:
        what = ", ".join(changed) if ws.lock is not None else f"there is no {LOCK}"
        raise PkgmgrError(f"{LOCK} does not match {MANIFEST} ({what})", code=Code.LOCK_OUTDATED,
                          details={"extensions": changed}, hint="run 'pkgmgr sync' to update the lock")


def sync(root: Path, *, home: Path, config: Any, options: SyncOptions, offline: bool = False,
         warn: Callable[[str], None] | None = None, reporter: Reporter | None = None, lock_timeout: float = 30.0,
         on_plan: Callable[[SyncPlan], None] | None = None,
         announce: Callable[[dict[str, Any]], None] | None = None) -> SyncResult:
    """Bring the workspace at `root` to its declaration; `on_plan` sees the plan before anything
    changes, `announce` each installed extension's summary before its commit (SPEC 7). Raises,
    before acting: not_found / invalid_config (pkgmgr.toml), usage, trust_required,
    lock_outdated and the resolution errors. An error while acting is returned
    in `SyncResult.error`, beside what was done."""
    from pkgmgr.registry.session import Session

    ws = Workspace(root, home)
    _check_upgrade(ws, options)
    ws.require_trust()
    session = Session(home, config, offline=offline, allow_expired=options.install.allow_expired, warn=warn,
                      extra_registries=ws.manifest.registries, record=not options.dry_run)
    try:
        resolver = Resolver(ws, session, options)
        plan = make_plan(ws, resolver, options)
        if on_plan is not None:
            on_plan(plan)
        result = SyncResult(plan)
        if options.dry_run:
            return result
        try:
            _apply(ws, resolver, plan, result, config=config, options=options, reporter=reporter or Reporter(),
                   lock_timeout=lock_timeout, announce=announce)
        except PkgmgrError as error:
            result.error = error
        return result
    finally:
        session.close()


def update_lock(root: Path, *, home: Path, config: Any, offline: bool = False,
                warn: Callable[[str], None] | None = None) -> bool | None:
    """After `ext install/remove --save`: write pkgmgr.lock as the next `sync` would, so that
    `sync --locked` passes (SPEC 10). Installs nothing: when the workspace store does not hold
    every declared extension yet, the lock is left for `sync` and None is returned. True when
    the lock was written."""
    from pkgmgr.registry.session import Session

    ws = Workspace(root, home)
    session = Session(home, config, offline=offline, warn=warn,
                      extra_registries=ws.manifest.registries if ws.trusted else ())
    try:
        resolver = Resolver(ws, session, SyncOptions())
        plan = make_plan(ws, resolver, SyncOptions())
        if any(item.action != "unchanged" for item in plan.items):
            return None
        return _write_lock(ws, plan)
    finally:
        session.close()


def _check_upgrade(ws: Workspace, options: SyncOptions) -> None:
    unknown = sorted(set(options.upgrade or ()) - {d.name for d in ws.manifest.extensions})
    if unknown:
        raise PkgmgrError(f"--upgrade names extensions {MANIFEST} does not declare: {', '.join(unknown)}",
                          code=Code.USAGE, details={"extensions": unknown},
                          hint="declare them first (e.g. 'pkgmgr ext install NAME --save')")


def _apply(ws: Workspace, resolver: Resolver, plan: SyncPlan, result: SyncResult, *, config: Any,
           options: SyncOptions, reporter: Reporter, lock_timeout: float,
           announce: Callable[[dict[str, Any]], None] | None) -> None:
    from pkgmgr.activation.lifecycle import deactivate
    from pkgmgr.store.leftovers import orphans

    if ws.scope.root.is_dir() and orphans(ws.scope):
        with ws.scope.writer(lock_timeout):  # taking it removes what an interrupted command left
            pass
    for activation in plan.deactivate:
        deactivate(ws.scope, activation["id"], lock_timeout=lock_timeout)
        result.activations.append({**activation, "status": "deactivated"})
    if plan.remove:
        from pkgmgr.lifecycle import Change, remove_records

        change = Change(deactivate=True, approve_host_trust=options.install.approve_host_trust,
                        approve_host_trust_all=options.install.approve_host_trust_all, lock_timeout=lock_timeout)
        done = remove_records(ws.scope, plan.remove, change)
        result.removed.extend(gone.entry() for gone in done.changed)
        result.activations.extend(done.deactivated)
        if done.error is not None:
            raise done.error
    pending = [i for i in plan.items if i.action != "unchanged"]
    if pending:
        _install(resolver, pending, result, config=config, options=options, reporter=reporter,
                 lock_timeout=lock_timeout, announce=announce)
        if result.error is not None:
            return
    crashpoint("sync.before_lock")
    if not options.frozen:
        result.lock_written = _write_lock(ws, plan)
    _activate(ws, result, config=config, lock_timeout=lock_timeout)
    if options.install.approve_host_trust or options.install.approve_host_trust_all:
        _approve_unchanged_folders(ws, result, options, lock_timeout)


def _approve_unchanged_folders(ws: Workspace, result: SyncResult, options: SyncOptions, lock_timeout: float) -> None:
    """`sync --approve-host-trust` (as `ext install`'s): the host's approval of each project folder
    of the workspace this sync did not change — one an earlier sync changed, whose note asked for
    the option — recorded by the same rule (`hosts.approval.step`: only what pkgmgr installed, or
    every file with `=all`); a folder this sync changed had it recorded with the change."""
    from pkgmgr.hosts import get, names
    from pkgmgr.hosts.base import FolderHost
    from pkgmgr.hosts.folder import trust_after
    from pkgmgr.store import records

    changed = {row.get("host") for row in [*result.installed_rows(), *result.removed]}
    if not ws.scope.exists():
        return
    with ws.scope.writer(lock_timeout):
        for name in names():
            host = get(name)
            if name in changed or not isinstance(host, FolderHost) or not records.list_rows(ws.scope, name):
                continue
            notes, report = trust_after(ws.scope, host, host.folder_of(ws.scope), options.install.approve_host_trust,
                                        options.install.approve_host_trust_all)
            if report is not None:  # a host that keeps its own approval of the folder
                result.host_trust.append({"host": name, "notes": notes, **report})


def _install(resolver: Resolver, pending: list[Item], result: SyncResult, *, config: Any, options: SyncOptions,
             reporter: Reporter, lock_timeout: float, announce: Callable[[dict[str, Any]], None] | None) -> None:
    from pkgmgr.install.pipeline import InstallRequest, install

    # The approved pkgmgr.toml is the consent for its sources (SPEC 10); its declaration is
    # authoritative over where an installed extension came from.
    install_options = dataclasses.replace(options.install, allow_unverified=True, yes=True, force=True,
                                          pin=False, dry_run=False)
    plans: list[Plan] = []
    for item in pending:
        plan = resolver.plan_for(item)
        # what is installed carries the declared name, checked before anything is installed (a
        # github release, or a locked archive, can hold another extension)
        plans.append(dataclasses.replace(plan, expects=dataclasses.replace(plan.expects, name=item.name,
                                                                              host=item.declared.host)))
    batch = install(InstallRequest(resolver.ws.scope, config=config, options=install_options, planned=plans,
                                   reporter=reporter, lock_timeout=lock_timeout, announce=announce,
                                   keep_going=False))  # all or nothing (SPEC 4)
    result.installed = batch.results
    for item, ref_result in zip(pending, batch.results):
        error = ref_result.error
        if isinstance(error, NameMismatch) and error.expected == item.name:
            name = error.actual
            github = f"{item.declared.github}@{item.declared.tag}" if item.declared.tag else item.declared.github
            source = f"github {github}" if github else item.declared.kind
            ref_result.error = PkgmgrError(
                f"{MANIFEST} declares {item.name} from {source}, but what it fetched holds the extension {name}; "
                "nothing was installed", code=Code.INVALID_CONFIG,
                details={"key": f"extensions.{item.name}" + (".github" if item.declared.github else ""),
                         "name": name},
                hint=f"declare it as {name} = {{ github = \"{github}\" }}" if github else None)
        if ref_result.outcome is not None:
            installed = ref_result.outcome.installed
            item.current = installed
            item.entry = _final_entry(item, installed)
            result.activations.extend(ref_result.outcome.activations)
    result.error = batch.first_error


def _final_entry(item: Item, installed: Installed) -> LockEntry:
    """The lock entry of what was just installed (fresh resolutions learn their tree here)."""
    entry = item.entry
    if entry is None:  # a fresh github resolution
        tag = item.plan.extra.get("tag", "") if item.plan else ""
        return LockEntry(installed.name, installed.version, f"github+{item.declared.github}@{tag}",
                         installed.source_url or "", installed.sha256 or "", installed.tree_sha256,
                         installed.network_digest)
    return dataclasses.replace(entry, version=installed.version, tree_sha256=installed.tree_sha256)


def _activate(ws: Workspace, result: SyncResult, *, config: Any, lock_timeout: float) -> None:
    """Create the declared activations that do not exist, confirm the awaiting ones whose
    declared digest is their network requirement, and report the others that await (exit 8).
    What exists already costs one read of the activation rows."""
    from pkgmgr.activation.lifecycle import (
        AWAITING,
        Target,
        activate,
        confirm,
        list_activations,
    )

    existing = list_activations(ws.scope)
    reported = {a["id"] for a in result.activations if a.get("status") == AWAITING}
    for declared in ws.manifest.activations:
        row = next((a for a in existing if _same_activation(a, declared, ws.scope.workspace_path)), None)
        try:
            if row is None:
                target = Target(declared.extension, declared.bundle, declared.profile)
                activation, _ = activate(ws.scope, target, config=config, confirm_digest=declared.confirm,
                                         lock_timeout=lock_timeout)
                result.activations.append({**activation, "change": "activated"})
            elif _confirms(declared, row):
                activation, _, _ = confirm(ws.scope, row["id"], expected_version=row["version"], confirmed_by=None,
                                           config=config, lock_timeout=lock_timeout)
                result.activations = [a for a in result.activations if a["id"] != row["id"]]
                result.activations.append({**activation, "change": "confirmed"})
            elif row["status"] == AWAITING and row["id"] not in reported:
                result.activations.append(row)
        except PkgmgrError as error:
            raise _declaration_error(ws, declared, error) from None


def _write_lock(ws: Workspace, plan: SyncPlan) -> bool:
    """Write pkgmgr.lock when its content changed, keeping the approval; True when written."""
    data = _render_lock(plan)
    if data == ws.lock_raw:
        return False
    trust.write_keeping_approval(ws.home, ws.root, ws.root / LOCK, data, trusted=ws.trusted,
                                 digest_after=ws.digest_with_lock(data),
                                 after_write=lambda: crashpoint("sync.after_lock_write"))
    ws.lock, ws.lock_raw = parse_lock(data), data
    return True
