"""The one lifecycle of every host's installs (SPEC 4, 13): each `ext` command, `pkgmgr hosts`,
`pkgmgr adopt`, `sync`'s removals and `doctor`'s recovery call one function here, which finds the
records the names mean (across hosts: `--host` picks one when two hold a name) and routes each to
the host of its record (`pkgmgr.hosts.port.Host`). Nothing here asks which host a record is: the
host answers. Installing and updating go through the one pipeline (`pkgmgr.install.pipeline`)
and `pkgmgr.updater`.

Every function returns values (records, results, the first failure beside what was done); the
CLI renders them, the same way for every host.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError, suggest_close
from pkgmgr.hosts.port import Change

if TYPE_CHECKING:
    from pkgmgr.config import Config
    from pkgmgr.hosts.port import Host, Validation
    from pkgmgr.hosts.views import Packed
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

__all__ = ["Change", "Done", "adopt", "find", "find_one", "health", "hosts_overview", "interrupted", "listed", "new", "observed",
           "pack", "plan_remove", "remove_records",
           "recover", "remove", "rollback", "set_pinned", "per_folder", "set_enabled_in", "forget_kept", "kept_problem", "link", "unlink", "kept_plan", "Switched", "set_enabled", "status",
           "validate", "verify"]


NO_CHANGE = Change()


@dataclass
class Done:
    """What a change of several installs did: the installs as they are now (each with the `notes`
    its host's trust step calls for), the activations deactivated with them, and the first failure
    in argument order (the others still ran: one failure does not hide their outcome)."""

    changed: list[Installed] = field(default_factory=list)
    deactivated: list[dict[str, Any]] = field(default_factory=list)
    error: PkgmgrError | None = None


def host_of(record: Installed) -> Host:
    from pkgmgr.hosts import get

    return get(record.host)


# --- finding what names mean --------------------------------------------------------------------------


def listed(scopes: Sequence[Scope], host: str | None = None) -> list[Installed]:
    """Every install seen from `scopes` (nearest first: a workspace's shadow global ones of the same
    host and name), of `host` only when given; by host and name (`ext list`, `ext verify --all`)."""
    from pkgmgr.store import records

    return [observed(record) for record in records.visible(scopes, host)]


def observed(record: Installed) -> Installed:
    """`record` as its host sees it now (`Host.observed`: a state the host changed itself); the
    scope store's own installs are what their rows say (no host module is imported for them)."""
    return record if record.in_store else host_of(record).observed(record)


def find(scopes: Sequence[Scope], names: Sequence[str], host: str | None = None) -> dict[str, Installed | PkgmgrError]:
    """The install each of `names` means, seen from `scopes` (nearest first), or the `not_found`
    it is. Raises `usage` when two hosts hold a name and `host` does not pick one (listing them)."""
    from pkgmgr.store import records

    found: dict[str, Installed | PkgmgrError] = {}
    for name in dict.fromkeys(names):
        holders: dict[str, Installed] = {}
        for scope in scopes:
            for row in records.find(scope, name, host):
                holders.setdefault(row.host, row)
        if len(holders) > 1:
            hosts = sorted(holders)
            raise PkgmgrError(f"{name} is installed for several hosts ({', '.join(hosts)}); say which with --host",
                              code=Code.USAGE, details={"hosts": hosts}, hint=" or ".join(f"--host {h}" for h in hosts))
        found[name] = observed(next(iter(holders.values()))) if holders else _not_found(scopes, name, host)
    return found


def _not_found(scopes: Sequence[Scope], name: str, host: str | None) -> PkgmgrError:
    where = " or ".join(scope.kind for scope in scopes)
    if host is None:
        return PkgmgrError(f"{name} is not installed in the {where} scope", code=Code.NOT_FOUND)
    return PkgmgrError(f"{name} is not installed for {host} in the {where} scope", code=Code.NOT_FOUND,
                       hint=f"'pkgmgr ext list --host {host}' shows what pkgmgr manages for it")


def find_one(scopes: Sequence[Scope], name: str, host: str | None = None) -> Installed:
    """The install `name` means (`find`), with a hint and the closest names when there is none.
    Raises `not_found` and `usage`."""
    item = find(scopes, [name], host)[name]
    if isinstance(item, PkgmgrError):
        suggest_close(item, name, [row.name for row in listed(scopes, host)])
        if host is None and "suggestions" not in item.details:
            item.hint = f"'pkgmgr ext list' shows what is installed, 'pkgmgr ext search {name}' what the registries offer"
        raise item
    return item


# --- reading ------------------------------------------------------------------------------------------


def status(record: Installed, scopes: Sequence[Scope], *, config: Config, home: Path, resolved: bool = False,
           warn: Callable[[str], None] = lambda _message: None) -> dict[str, Any]:
    """`ext status -o json` of `record` (SPEC 11), one of the installs seen from `scopes`."""
    from pkgmgr.status import status_document

    scope = next(s for s in scopes if s.kind == record.scope)
    return status_document(record, scope, config=config, home=home, resolved=resolved, warn=warn)


def verify(records: Sequence[Installed]) -> tuple[list[dict[str, Any]], PkgmgrError | None]:
    """`ext verify` of `records` (each tree against its record, as its host checksums it): one
    result each, and `tree_modified` naming every install that differs (None when all are intact)."""
    from pkgmgr.store.verify import verify_installed

    def checksum(item: Installed) -> tuple[str, dict[str, str]] | None:
        place = item.directory
        return host_of(item).checksum(place) if os.path.lexists(place) else None

    trees = [item for item in records if item.linked is None]
    results, error = verify_installed(trees, checksum=checksum, fields=lambda item: item.located(),
                                      label=lambda item: item.label)
    checked = iter(results)
    # a development link is the user's working folder: nothing was installed to compare it with
    return [next(checked) if item.linked is None else
            {"name": item.name, "version": item.version or None, **item.located(), "ok": True, "skipped": "linked",
             "linked": item.linked} for item in records], error


def hosts_overview(global_scope: Scope, workspace_scope: Scope | None, project: Path | None) -> list[dict[str, Any]]:
    """`pkgmgr hosts`: every host, its homes, how many extensions pkgmgr manages there and how many
    others are there."""
    from pkgmgr.hosts.views import hosts_overview as overview

    return overview(global_scope, workspace_scope, project)


# --- changing -----------------------------------------------------------------------------------------


def _each(scope: Scope, names: Sequence[str], host: str | None, timeout: float,
          action: Callable[[Installed], tuple[Installed, list[dict[str, Any]]]]) -> Done:
    """`action` on the install of each name in `scope`, in argument order, under one hold of the
    writer lock (taken only when one of them is there, so that a scope never written stays so)."""
    found = find([scope], names, host)
    done = Done()
    if not any(not isinstance(item, PkgmgrError) for item in found.values()):
        done.error = next(iter(found.values()))  # type: ignore[assignment]
        return done

    def one(name: str) -> tuple[Installed, list[dict[str, Any]]]:
        item = found[name]
        if isinstance(item, PkgmgrError):
            raise item
        return action(item)

    results, done.error = scope.each_under_writer(list(found), one, timeout)
    for installed, deactivated in results:
        done.changed.append(installed)
        done.deactivated.extend(deactivated)
    return done


def remove(scope: Scope, names: Sequence[str], *, host: str | None = None, change: Change = NO_CHANGE) -> Done:
    """`ext remove`: each install taken out by its host (SPEC 4: refused while activations of it
    exist, unless `change.deactivate`)."""
    return _each(scope, names, host, change.lock_timeout, _remover(scope, change))


def remove_records(scope: Scope, items: Sequence[Installed], change: Change) -> Done:
    """Take each of `items` (installs of `scope`) out, by its host, under one hold of the writer
    lock (`sync`'s removals of what is no longer declared)."""
    done = Done()
    results, done.error = scope.each_under_writer(list(items), _remover(scope, change), change.lock_timeout)
    for installed, deactivated in results:
        done.changed.append(installed)
        done.deactivated.extend(deactivated)
    return done


def _remover(scope: Scope, change: Change) -> Callable[[Installed], tuple[Installed, list[dict[str, Any]]]]:
    def action(item: Installed) -> tuple[Installed, list[dict[str, Any]]]:
        changed = host_of(item).remove(scope, item, change)
        return changed.installed, changed.deactivated

    return action


def set_enabled(scope: Scope, names: Sequence[str], enabled: bool, *, host: str | None = None,
                change: Change = NO_CHANGE) -> Done:
    """`ext enable|disable`: each install enabled or disabled its host's way (disabling is refused
    while activations of it exist, unless `change.deactivate`)."""
    def action(item: Installed) -> tuple[Installed, list[dict[str, Any]]]:
        if item.linked is not None:  # the host loads the user's folder as it is: pkgmgr writes nothing there
            from pkgmgr.store.switch import linked_error

            raise linked_error(item, f"{'enable' if enabled else 'disable'} it")
        changed = host_of(item).set_enabled(scope, item, enabled, change)
        return changed.installed, changed.deactivated

    return _each(scope, names, host, change.lock_timeout, action)


def per_folder(scope: Scope, global_scope: Scope, names: Sequence[str], host: str | None) -> bool:
    """Whether `--scope workspace ext enable|disable NAMES` means the per-folder rule of installs of
    the global scope (`set_enabled_in`): the workspace scope holds none of them, and the global one
    holds each, of a host that keeps such a rule (`Host.enables_per_folder`). Reads only."""
    if scope.exists() and any(not isinstance(item, PkgmgrError) for item in find([scope], names, host).values()):
        return False
    found = find([global_scope], names, host).values()
    return all(not isinstance(item, PkgmgrError) and host_of(item).enables_per_folder for item in found)


def set_enabled_in(scope: Scope, names: Sequence[str], enabled: bool, *, folder: Path, host: str | None = None,
                   change: Change = NO_CHANGE) -> Done:
    """`--scope workspace ext enable|disable` of installs of the global `scope` whose host turns an
    extension on or off per project folder itself (its own workspace scope): the host's rule for
    `folder`, written its way (`Host.set_enabled_in`); the install's own state stays."""
    def action(item: Installed) -> tuple[Installed, list[dict[str, Any]]]:
        changed = host_of(item).set_enabled_in(scope, item, enabled, folder, change)
        return changed.installed, changed.deactivated

    return _each(scope, names, host, change.lock_timeout, action)


def set_pinned(scope: Scope, items: Sequence[Installed], pinned: bool, *, lock_timeout: float = 30.0,
               ) -> list[Installed]:
    """Pin or release each of `items` (installs of `scope`: `ext update --unpin`), under one hold of
    the writer lock; the installs as they are now."""
    from pkgmgr.store import records

    if not items:
        return []
    changed = []
    with scope.writer(lock_timeout):
        for item in items:
            current = records.get(scope, item.host, item.name, writer=True)
            if current is not None and current.pinned != pinned:
                current = current.with_changes(pinned=pinned)
                records.save(scope, current)
                changed.append(current)
    return changed


def kept_problem(record: Installed) -> str | None:
    """Why the install `record` keeps for `ext rollback` cannot be rolled back to (its tree is
    gone or changed since it was replaced); None when it can, or when nothing is kept. Reads only."""
    kept = record.kept()
    if kept is None:
        return None
    if not os.path.lexists(kept.place):
        return f"{record.label}: the tree of {kept.version or '-'} kept for a rollback is missing ({kept.place})"
    if host_of(record).installed_checksum(kept.place) != kept.tree_sha256:
        return (f"{record.label}: the tree of {kept.version or '-'} kept for a rollback changed since it was "
                f"replaced ({kept.place})")
    return None


def forget_kept(scope: Scope, *, broken_only: bool = False, older_than: float | None = None,
                lock_timeout: float = 30.0) -> list[Installed]:
    """Stop keeping the installs `scope`'s installs keep for a rollback, and delete their trees
    (`cache clean`; `doctor`, with `broken_only`: only those `kept_problem` finds; `older_than`:
    only those replaced that many days ago or more). Each goes its destination's way: the scope
    store's through its pending trees, a folder host's row first (what a kill leaves in its
    `.pkgmgr-previous` the next writer removes). Returns the kept installs that went."""
    import time
    from datetime import datetime

    from pkgmgr.fsutil import remove_tree
    from pkgmgr.store import records
    from pkgmgr.store.recovery import damaged_rows, database_problem
    from pkgmgr.store.switch import forget_previous

    if not scope.exists() or scope.layout_problem() is not None or database_problem(scope) is not None:
        return []  # nothing is forgotten on the word of a database that cannot be read
    conn = scope.reader()
    if conn is None or damaged_rows(scope, conn):
        return []

    def wanted(row: Installed) -> bool:
        if row.previous is None:
            return False
        if older_than is not None:
            try:
                replaced = datetime.fromisoformat(row.installed_at.replace("Z", "+00:00")).timestamp()
            except ValueError:
                replaced = 0.0
            if time.time() - replaced < older_than * 86400:
                return False
        return not broken_only or kept_problem(row) is not None

    if not any(wanted(row) for row in records.installed(scope)):
        return []
    gone: list[Installed] = []
    with scope.writer(lock_timeout):
        rows = [row for row in records.installed(scope) if wanted(row)]
        gone.extend(forget_previous(scope, [row.name for row in rows if row.in_store]))
        for row in rows:
            if row.in_store:
                continue
            kept = row.kept()
            assert kept is not None
            records.save(scope, row.with_changes(previous=None))
            remove_tree(kept.place)
            gone.append(kept)
    return gone


def plan_remove(scope: Scope, names: Sequence[str], *, host: str | None = None,
                ) -> list[tuple[Installed, list[dict[str, Any]]]]:
    """`ext remove --dry-run`: each named install of `scope` and the activations removing it would
    deactivate. Raises `not_found` for a name not installed there, `usage`. Reads only."""
    planned = []
    for item in find([scope], names, host).values():
        if isinstance(item, PkgmgrError):
            raise item
        planned.append((item, host_of(item).plan_remove(scope, item)))
    return planned


def adopt(scope: Scope, host: str, names: list[str], *, force: bool = False, lock_timeout: float = 30.0,
          ) -> list[Installed]:
    """`pkgmgr adopt`: extensions installed by hand in `host`'s folder for `scope`, recorded as they
    are. Raises `usage` (no such host, or one whose installs only pkgmgr makes), `not_found`,
    `source_conflict`, `tree_modified`."""
    from pkgmgr.hosts.views import adopt_names

    return adopt_names(scope, host, names, force=force, lock_timeout=lock_timeout)


# --- what killed writers left (SPEC 4) ---------------------------------------------------------------


def recover(scope: Scope, timeout: float) -> list[str]:
    """Settle, under the scope's writer lock, what killed writers left of every host's installs
    (`Host.recover`; taking the lock removes the scope store's own leftovers). Nothing is settled
    on the word of a database that cannot be read, nor through a link: [] then."""
    from pkgmgr.hosts import get
    from pkgmgr.store.recovery import damaged_rows, database_problem

    if not scope.root.is_dir() or scope.layout_problem() is not None or database_problem(scope) is not None:
        return []
    conn = scope.reader()
    if conn is None or damaged_rows(scope, conn) or not interrupted(scope):
        return []
    with scope.writer(timeout):
        return [f"{name}: {line}" for name in _hosts_with_rows(scope) for line in get(name).recover(scope, timeout)]


def interrupted(scope: Scope) -> list[str]:
    """What killed writers left of every host's installs in `scope` that `recover` settles, for
    `doctor --check` (reads only)."""
    from pkgmgr.hosts import get

    return [line for name in _hosts_with_rows(scope) for line in get(name).interrupted(scope)]


def health(scope: Scope) -> list[tuple[str, str, bool]]:
    """What `doctor --check` finds wrong with every host's installs in `scope` (`Host.health`)."""
    from pkgmgr.hosts import get

    return [found for name in _hosts_with_rows(scope) for found in get(name).health(scope)]


def repair(scope: Scope) -> list[str]:
    """What `doctor` repairs of every host's (`Host.repair`: a stale lock of the host's)."""
    from pkgmgr.hosts import get

    return [f"{name}: {line}" for name in _hosts_with_rows(scope) for line in get(name).repair(scope)]


def _hosts_with_rows(scope: Scope) -> list[str]:
    """The hosts with installs in `scope`, or changes a killed writer left there (`store.pending`)."""
    from pkgmgr.hosts import names
    from pkgmgr.store import records
    from pkgmgr.store.pending import hosts_with_intents

    present = {row.host for row in records.list_rows(scope)} | hosts_with_intents(scope.reader())
    return [name for name in names() if name in present]


# --- authoring ---------------------------------------------------------------------------------------------


def host_at(path: Path, forced: str | None, *, config: Config, extract_into: Path | None = None,
            ) -> tuple[Host, Path]:
    """The host of the extension at `path` (a directory, a single-file extension, or an archive
    extracted into `extract_into`) and the tree it judges: `forced` (`--host`), else the one whose
    manifest file is there, else the default host's (whose rules then say what is missing).
    Raises `not_found`, `invalid_archive`, `usage`."""
    from pkgmgr.hosts import DEFAULT, get, manifest_patterns, script_host
    from pkgmgr.hosts.detect import detect

    scripted = script_host(path) if path.is_file() else None
    if scripted is not None:
        if forced not in (None, scripted):
            raise PkgmgrError(f"{path} is {get(scripted).article} script, not a {forced} extension",
                              code=Code.INVALID_ARCHIVE)
        return get(scripted), path
    if path.is_dir() or extract_into is None:
        return get(detect(path, forced, default=None if forced else DEFAULT)), path
    from pkgmgr.archive import extract_archive

    root = extract_archive(path, extract_into, config.limits, manifests=manifest_patterns())
    return get(detect(root, forced)), root


def validate(path: Path, forced: str | None, *, config: Config, shown: str) -> Validation:
    """`ext validate` of a directory, archive or single-file extension, judged by its host as an
    install judges it. Raises `not_found` and what the host raises."""
    import tempfile

    if not os.path.exists(path):  # unlike Path.exists, also False for a name too long
        raise PkgmgrError(f"{shown}: no such file or directory", code=Code.NOT_FOUND)
    with tempfile.TemporaryDirectory(prefix="pkgmgr-validate-") as tmp:
        host, root = host_at(path, forced, config=config, extract_into=Path(tmp))
        return host.validate(root, config=config, shown=shown)


def pack(path: Path, forced: str | None, *, release: str | None, output: str | None, config: Config,
         shown: str) -> Packed:
    """`ext pack`: the extension at `path` (a directory, or a single-file extension) judged by its
    host and packed, reproducibly, under `<name>-<version>/` into `output` — a file, or a directory
    (an existing one, or one named with a final separator) that receives `<name>-<version>.tar.gz`;
    by default that name in the current directory. Raises `not_found` and what the host raises."""
    from pkgmgr.fsutil import user_path
    from pkgmgr.hosts import script_host
    from pkgmgr.hosts.views import write_archive

    if not os.path.isdir(path) and not (path.is_file() and script_host(path) is not None):
        raise PkgmgrError(f"{shown}: not a directory", code=Code.NOT_FOUND)
    host, root = host_at(path, forced, config=config)
    packable = host.packable(root, release=release, config=config, label=shown)
    default_name = f"{packable.name}-{packable.version}.tar.gz"
    target = user_path(output) if output else Path.cwd() / default_name
    if os.path.isdir(target) or (output or "").endswith(os.sep):
        target = target / default_name  # an existing directory (or DIR/) receives the archive, as cp does
    return write_archive(packable, target)


@dataclass(frozen=True)
class Created:
    """What `ext new` wrote."""

    name: str
    host: str
    template: str
    path: Path
    files: list[str]


def new(name: str, *, host: str, template: str | None, target: Path) -> Created:
    """`ext new`: a new extension `name` for `host` from one of its templates (its first by
    default) in `target`, which must not exist or be empty. Raises `usage`."""
    from pkgmgr.hosts import get

    chosen = get(host)
    template = template or chosen.templates[0]
    if template not in chosen.templates:
        raise PkgmgrError(f"{chosen.title} has no template {template!r}; its templates are "
                          f"{', '.join(chosen.templates)}", code=Code.USAGE)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise PkgmgrError(f"{target} exists and is not empty; nothing was written", code=Code.USAGE,
                          hint="choose another NAME or --path DIR")
    files = chosen.scaffold(name, template)
    if "ext validate ." not in files.get("README.md", "ext validate ."):  # its own README names them already
        files["README.md"] += _next_steps(name, chosen.title, versions_itself=getattr(chosen, "versions_itself", True))
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if rel.endswith(".sh"):
            os.chmod(path, 0o755)
    return Created(name, chosen.name, template, target, sorted(files))


def _next_steps(name: str, title: str, *, versions_itself: bool) -> str:
    """The commands a scaffold's README names after its host's own words: check, pack, try, publish."""
    release = "" if versions_itself else " --release 0.1.0"
    archive = f"./dist/{name}-0.1.0.tar.gz"
    return (f"\nNext, from this folder (pkgmgr's docs/authoring.md has a section on {title}):\n\n"
            f"    pkgmgr ext validate .\n"
            f"    pkgmgr ext pack . --output dist/{release}\n"
            f"    pkgmgr ext install {archive} --allow-unverified\n"
            f"    pkgmgr registry publish {archive} --index ../my-registry\n")


# --- rollback, development links (SPEC 11) --------------------------------------------------------------


def kept_plan(record: Installed) -> Any:
    """The install plan that switches `record` back to the install it keeps (`Installed.kept`):
    its kept tree, staged as it is, with the provenance it was installed with. Raises
    `not_found` when nothing is kept (or the kept tree is gone) and `tree_modified` when the kept
    tree changed since it was replaced."""
    from pkgmgr.install.plan import Expectations, Fetched, Plan
    from pkgmgr.refs import Ref

    kept = record.kept()
    where = f"the {record.scope} scope" if record.in_store else f"{record.host}'s {record.scope} folder"
    if kept is None:
        message = (f"{record.label} has no previous version to roll back to in {where}: none was replaced since it "
                   "was installed (or 'cache clean' removed the one kept)")
        if record.source_kind != "registry":  # no registry lists its versions: its source is where they are
            raise PkgmgrError(f"{message}; install the version you want from its source to switch to it",
                              code=Code.NOT_FOUND)
        raise PkgmgrError(message, code=Code.NOT_FOUND, hint=f"'pkgmgr ext info {record.name}' lists the versions "
                          f"a registry has; 'pkgmgr ext install {record.name}@VERSION --pin' installs one and holds it")
    place = kept.place
    if not os.path.lexists(place):
        raise PkgmgrError(f"{record.label}: the tree of the version it keeps ({kept.version or '-'}) is gone from "
                          f"{place}; there is nothing to roll back to", code=Code.NOT_FOUND, path=str(place))
    if host_of(record).installed_checksum(place) != kept.tree_sha256:
        raise PkgmgrError(f"{record.label}: the kept tree of {kept.version or '-'} at {place} changed since it was "
                          "replaced; refusing to roll back to it", code=Code.TREE_MODIFIED, path=str(place))
    directory = place if place.is_dir() and not place.is_symlink() else None
    fetched = Fetched(kind=kept.source_kind, locator=kept.source, archive=None if directory else place,
                      directory=directory, sha256=kept.sha256, source_url=kept.source_url, verified=kept.verified,
                      tier=kept.tier, registry=kept.registry, label=f"{kept.name} {kept.version}".strip(),
                      expects=Expectations(name=kept.name, host=kept.host, tree_sha256=kept.tree_sha256,
                                           version=kept.version or None), exact=True)
    ref = Ref("name", f"{kept.name}@{kept.version}" if kept.version else kept.name, name=kept.name,
              spec=f"=={kept.version}" if kept.version else "", exact=kept.version or None)
    # consented to when it was installed: restoring it asks nothing again
    return Plan(ref, kept.source_kind, str(place), verified=True, tier=kept.tier, name=kept.name,
                version=kept.version, fetch=lambda reporter: fetched)


@dataclass
class Switched:
    """What `ext rollback`, `ext link` or `ext unlink` did: per name the install before and after
    (None: it is gone), the activations the switch changed, and the first failure (its name's
    entry is then absent)."""

    before: list[Installed | None] = field(default_factory=list)
    after: list[Installed | None] = field(default_factory=list)
    activations: list[dict[str, Any]] = field(default_factory=list)
    failed: list[tuple[str, PkgmgrError]] = field(default_factory=list)

    @property
    def error(self) -> PkgmgrError | None:
        return self.failed[0][1] if self.failed else None


def _switch(scope: Scope, plans: list[tuple[Installed, Any]], *, config: Config, options: Any, interactive: bool,
            reporter: Any, lock_timeout: float, announce: Any, done: Switched) -> None:
    """Commit `plans` (each a record and the plan that replaces it) through the install pipeline:
    all or none (SPEC 4)."""
    from pkgmgr.install.pipeline import InstallRequest, install

    if not plans:
        return
    batch = install(InstallRequest(scope, config=config, options=options, planned=[plan for _, plan in plans],
                                   interactive=interactive, reporter=reporter, lock_timeout=lock_timeout,
                                   announce=announce, keep_going=False))
    for (record, _), result in zip(plans, batch.results, strict=True):
        if result.error is not None or result.outcome is None:
            error = result.error or PkgmgrError(result.message or f"{record.name} was not changed", code=Code.USAGE)
            done.failed.append((record.name, error))
            continue
        done.before.append(record)
        done.after.append(result.outcome.installed)
        done.activations.extend(result.outcome.activations)


def rollback(scope: Scope, names: Sequence[str], *, host: str | None, config: Config, options: Any,
             interactive: bool = False, reporter: Any = None, lock_timeout: float = 30.0,
             announce: Any = None) -> Switched:
    """`ext rollback`: switch each named install of `scope` back to the install it keeps, atomically
    through the pipeline (the kept tree judged again by its host, and the host's records and trust
    step as for any install), pinned so that `ext update` leaves it until `ext update NAME --unpin`.
    Raises nothing for a name: its failure (`not_found`, `tree_modified`, a link's
    `source_conflict`) is in the result."""
    from dataclasses import replace as changed

    from pkgmgr.store.switch import linked_error

    done = Switched()
    plans = []
    for name, record in find([scope], names, host).items():
        try:
            if isinstance(record, PkgmgrError):
                raise record
            if record.linked is not None:
                raise linked_error(record, "roll it back")
            plans.append((record, kept_plan(record)))
        except PkgmgrError as error:
            done.failed.append((name, error))
    if done.failed:
        return done
    # the kept install was consented to and granted when it was installed; a source other than
    # the current one's replaces it (as the kept one was replaced)
    options = changed(options, pin=True, force=True, allow_grants=True, allow_unverified=True, link=False)
    _switch(scope, plans, config=config, options=options, interactive=interactive, reporter=reporter,
            lock_timeout=lock_timeout, announce=announce, done=done)
    return done


def link(scope: Scope, path: Path, *, shown: str, host: str | None, config: Config, options: Any,
         lock_timeout: float = 30.0, announce: Any = None) -> Switched:
    """`ext link PATH`: the extension in the working folder `path` (a directory, or a single-file
    extension), judged as an install judges it, made what its host loads — through the host's
    link (`Host.make_link`: a symbolic link by default) — in place of the install of its name, which
    is kept for `ext unlink`. Raises `not_found`, `usage` (an archive) and what the host's rules
    raise."""
    from dataclasses import replace as changed

    from pkgmgr.hosts import script_host
    from pkgmgr.install.plan import plan_path
    from pkgmgr.refs import Ref

    if not os.path.lexists(path):
        raise PkgmgrError(f"{shown}: no such file or directory", code=Code.NOT_FOUND)
    if not path.is_dir() and script_host(path) is None:
        raise PkgmgrError(f"{shown}: not a directory: a development link makes the host load a working folder "
                          "(or a single-file extension) as it is, not an archive", code=Code.USAGE)
    plan = plan_path(Ref("path", shown, path=path.absolute()))
    plan = changed(plan, verified=True)  # the user's own folder, named by the user: nothing to consent to
    options = changed(options, link=True, pin=False, host=host)
    done = Switched()
    _switch(scope, [(_placeholder(path), plan)], config=config, options=options, interactive=False,
            reporter=None, lock_timeout=lock_timeout, announce=announce, done=done)
    if done.after:  # `before`: the install the link keeps, which `ext unlink` restores (None: none)
        now = done.after[0]
        done.before[0] = now.kept() if now is not None else None
    return done


def _placeholder(path: Path) -> Installed:
    """A stand-in record for what `ext link` replaces, until the switch says what it was."""
    from pkgmgr.store.installed import Installed

    return Installed(name=path.name, version="", path=str(path.absolute()), enabled=True, pinned=False,
                     source_kind="path", source=str(path), registry=None, source_url=None, sha256=None, verified=False,
                     allow_unverified=False, tier=None, tree_sha256="", tree_listing={}, manifest={},
                     network_digest="", grants=(), max_scope=None, installed_at="", installed_by="")


def unlink(scope: Scope, names: Sequence[str], *, host: str | None, config: Config, options: Any,
           lock_timeout: float = 30.0, announce: Any = None) -> Switched:
    """`ext unlink NAME`: the development link of each name removed — never the folder it names —
    and the install it replaced restored from its kept tree (as it was: not pinned unless it was);
    with none kept, the name is no longer installed. Raises nothing for a name: `not_found`, or
    `usage` for a name that is not linked, is in the result."""
    from dataclasses import replace as changed

    done = Switched()
    restores, removals = [], []
    for name, record in find([scope], names, host).items():
        if isinstance(record, PkgmgrError):
            done.failed.append((name, record))
        elif record.linked is None:
            done.failed.append((name, PkgmgrError(f"{record.label} is not linked: it is installed ({record.where})",
                                                  code=Code.USAGE)))
        elif record.kept() is not None:
            try:
                restores.append((record, kept_plan(record)))
            except PkgmgrError as error:
                done.failed.append((name, error))
        else:
            removals.append(record)
    if done.failed:
        return done
    if restores:
        pinned = all(record.kept().pinned for record, _ in restores)  # type: ignore[union-attr]
        restore = changed(options, pin=pinned, force=True, allow_grants=True, allow_unverified=True, link=False)
        _switch(scope, restores, config=config, options=restore, interactive=False, reporter=None,
                lock_timeout=lock_timeout, announce=announce, done=done)
    if removals and not done.failed:
        removed = remove_records(scope, removals, Change(lock_timeout=lock_timeout))
        for gone in removed.changed:
            done.before.append(gone)
            done.after.append(None)
        if removed.error is not None:
            done.failed.append(("", removed.error))
    return done
