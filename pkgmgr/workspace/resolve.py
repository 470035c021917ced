"""Resolution of a workspace's declared extensions against its lock and the registries.

A locked version is kept while it still satisfies its requirement (as cargo and uv do) and is
looked up nowhere; `--upgrade` re-resolves; `--frozen` takes the lock as it is. An item whose
lock entry is known is fetched from its registry, its GitHub release or its directory, checked
against the locked checksums.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.plan import Expectations, Fetched, Plan
from pkgmgr.progress import Reporter
from pkgmgr.refs import Ref, parse_ref
from pkgmgr.store.installed import Installed
from pkgmgr.versions import parse_specifier, version_key
from pkgmgr.workspace.declaration import MANIFEST, Declared
from pkgmgr.workspace.lockfile import LOCK, LockEntry
from pkgmgr.workspace.workspace import Workspace

if TYPE_CHECKING:
    from pkgmgr.hosts.base import FolderHost
    from pkgmgr.registry.client import Registry
    from pkgmgr.registry.index_format import Entry, VersionEntry
    from pkgmgr.registry.session import Session


@dataclass(frozen=True)
class SyncOptions:
    install: InstallOptions = field(default_factory=InstallOptions)
    locked: bool = False
    frozen: bool = False
    upgrade: tuple[str, ...] | None = None  # None: keep locks; (): upgrade all; names: those
    dry_run: bool = False

    def upgrading(self, name: str) -> bool:
        return self.upgrade is not None and (not self.upgrade or name in self.upgrade)


@dataclass
class Item:
    """The desired state of one declared extension."""

    declared: Declared
    entry: LockEntry | None  # the lock entry, when known before installing
    kept: bool  # taken from the existing lock
    plan: Plan | None = None  # how to fetch it when an install is needed
    current: Installed | None = None
    action: str = "unchanged"  # install | switch | reinstall | unchanged

    @property
    def name(self) -> str:
        return self.declared.name

    @property
    def version(self) -> str | None:
        if self.entry is not None:
            return self.entry.version
        return self.plan.version if self.plan is not None else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "action": self.action, "source": self.declared.kind, "version": self.version,
                "current_version": self.current.version if self.current else None}


class Resolver:
    """The declared extensions against the lock and the registries."""

    def __init__(self, ws: Workspace, session: Session, options: SyncOptions) -> None:
        self.ws = ws
        self.session = session
        self.options = options

    def lock_source(self, registry: Registry) -> str:
        """`registry+<source>`, the same on every machine: the shipped registry is
        `registry+default`; a directory that pkgmgr.toml names relative to the workspace stays
        relative."""
        if registry.exempt:
            return "registry+default"
        return "registry+" + self.ws.manifest.lock_sources.get(registry.name, registry.source)

    def registry_for_lock(self, entry: LockEntry) -> Registry | None:
        return next((r for r in self.session.registries.ordered if self.lock_source(r) == entry.source), None)

    def resolve(self, declared: Declared) -> Item:
        locked = self.ws.lock.get(declared.name) if self.ws.lock else None
        if self.options.frozen:
            if locked is None or not self.fits(declared, locked):
                what = "is not locked" if locked is None else f"is locked from another source ({locked.source})"
                raise PkgmgrError(f"{declared.name} is declared in {MANIFEST} but {what} in {LOCK}",
                                  code=Code.LOCK_OUTDATED, details={"extensions": [declared.name]},
                                  hint="run 'pkgmgr sync' (without --frozen) to update the lock")
            return Item(declared, locked, kept=True)
        if declared.kind == "path":
            return self.resolve_path(declared, locked)
        if locked is not None and not self.options.upgrading(declared.name) and self.keeps(declared, locked):
            return Item(declared, locked, kept=True)
        if declared.kind == "github":
            return self.resolve_github(declared)
        return self.resolve_registry(declared)

    def fits(self, declared: Declared, locked: LockEntry) -> bool:
        """The lock entry comes from the source the declaration names (whatever its version)."""
        if declared.kind != locked.kind:
            return False
        if declared.kind == "path":
            return locked.locator == declared.path
        if declared.kind == "github":
            repo, _, tag = locked.locator.partition("@")
            return repo == declared.github and declared.tag in (None, tag)
        registry = self.registry_for_lock(locked)
        return registry is not None and declared.registry in (None, registry.name)

    def keeps(self, declared: Declared, locked: LockEntry) -> bool:
        """A locked version is kept while it still satisfies the declaration (a github lock
        while the declared tag, if any, is the locked one)."""
        if not self.fits(declared, locked):
            return False
        if declared.kind == "github":
            return True
        try:
            return parse_specifier(declared.spec).contains(version_key(locked.version), prereleases=True)
        except ValueError:
            return False

    def resolve_path(self, declared: Declared, locked: LockEntry | None) -> Item:
        from pkgmgr.manifest import read_manifest

        directory = self.ws.root / (declared.path or "")
        if not directory.is_dir():
            raise PkgmgrError(f"{declared.name}: {directory} is not a directory", code=Code.NOT_FOUND,
                              key=f"extensions.{declared.name}.path")
        tree = self.ws.path_tree(declared.name)  # hashed for the trust digest: exactly what was approved
        if tree.startswith("invalid:"):
            from pkgmgr.archive import select_files

            select_files(directory)  # raises the problem the digest recorded (path_escapes_root, ...)
        hosted = _host_of(directory, declared)
        if hosted is not None:  # a folder host's extension (SPEC 13): its own checksum, its own rules
            return self.resolve_hosted_path(declared, locked, directory, hosted)
        if locked is not None and locked.source == f"path+{declared.path}" and locked.tree_sha256 == tree:
            return Item(declared, locked, kept=True)  # the same files as locked: the same manifest
        manifest = read_manifest(directory, generation=self.session.config.compozy_generation)
        if manifest.name != declared.name:
            raise PkgmgrError(f"{MANIFEST} declares {declared.name} at {declared.path}, but its manifest names "
                              f"{manifest.name}", code=Code.INVALID_CONFIG,
                              key=f"extensions.{declared.name}.path")
        entry = LockEntry(declared.name, manifest.version, f"path+{declared.path}", "", "", tree,
                          manifest.network_digest)
        return Item(declared, entry, kept=locked == entry)

    def resolve_hosted_path(self, declared: Declared, locked: LockEntry | None, directory: Path,
                            host: FolderHost) -> Item:
        """A path extension of a folder host: judged by its host, locked with the checksum its
        install will have (a field the host rewrites itself left out) and its host."""
        tree = host.source_checksum(directory)
        if (locked is not None and locked.source == f"path+{declared.path}" and locked.tree_sha256 == tree
                and locked.host == host.name):
            return Item(declared, locked, kept=True)
        judged = host.judge_level(directory, declared.name)
        if judged.name != declared.name:
            raise PkgmgrError(f"{MANIFEST} declares {declared.name} at {declared.path}, but its {host.name} manifest "
                              f"names {judged.name}", code=Code.INVALID_CONFIG,
                              key=f"extensions.{declared.name}.path")
        install_path = locked.install_path if locked is not None and locked.host == host.name else ""
        entry = LockEntry(declared.name, judged.version, f"path+{declared.path}", "", "", tree, "", host=host.name,
                          install_path=install_path)
        return Item(declared, entry, kept=locked == entry)

    def resolve_registry(self, declared: Declared) -> Item:
        from pkgmgr.registry.resolve import Request, resolve

        request = Request(spec=declared.spec, exact=declared.exact, pre=self.options.install.pre,
                          host_version=self.session.config.host_version)
        resolved = resolve(self.session.registries, declared.name, request, registry=declared.registry,
                           key=f"extensions.{declared.name}.registry")
        registry, entry, version = resolved.registry, resolved.entry, resolved.version
        lock_entry = LockEntry(declared.name, version.version, self.lock_source(registry), version.url,
                               version.sha256, "", version.network_digest)
        item = Item(declared, lock_entry, kept=False)
        item.plan = self.registry_plan(registry, entry, version)
        return item

    def resolve_github(self, declared: Declared) -> Item:
        from pkgmgr.registry.github_plan import plan_github

        ref = parse_ref(f"github:{declared.github}" + (f"@{declared.tag}" if declared.tag else ""))
        plan = plan_github(self.session, ref, pre=self.options.install.pre)
        return Item(declared, None, kept=False, plan=plan)

    def registry_plan(self, registry: Registry, entry: Entry, version: VersionEntry, *,
                      tree: str | None = None) -> Plan:
        from pkgmgr.registry.plan import registry_plan

        plan = registry_plan(self.session, registry, entry, version, _ref(entry.name, version.version))
        return _expect_tree(plan, tree)

    def plan_for(self, item: Item) -> Plan:
        """How to fetch an item whose lock entry is known (kept or frozen)."""
        if item.plan is not None:
            return item.plan
        locked = item.entry
        assert locked is not None
        name = item.name
        if locked.kind == "path":
            directory = self.ws.root / locked.locator
            fetched = Fetched(kind="path", locator=str(directory), directory=directory, source_url=str(directory),
                              label=name, expects=Expectations(tree_sha256=locked.tree_sha256 or None))
            return Plan(_ref(name, locked.version), "path", str(directory), verified=False,
                        fetch=lambda reporter: fetched)
        if locked.kind == "github":
            return self.github_from_lock(locked)
        registry = self.registry_for_lock(locked)
        if registry is None:
            raise PkgmgrError(f"{name}: the lock names {locked.source}, which is neither configured nor declared",
                              code=Code.NOT_FOUND, hint=f"declare the registry in {MANIFEST} [registries]")
        entry = registry.entry(name)
        version = entry.find(locked.version) if entry is not None else None
        if entry is None or version is None:
            raise PkgmgrError(f"{name} {locked.version} (locked) is not listed by registry {registry.name}",
                              code=Code.VERSION_NOT_FOUND)
        if version.sha256 != locked.sha256:
            raise PkgmgrError(f"{name} {locked.version}: registry {registry.name} lists sha256 {version.sha256}, the "
                              f"lock records {locked.sha256}", code=Code.CHECKSUM_MISMATCH,
                              details={"sha256": version.sha256, "expected": locked.sha256, "name": name},
                              hint=f"if {LOCK} was changed by hand or by a merge, 'git checkout {LOCK}' restores it; "
                                   f"if the registry changed what it publishes as {name} {locked.version}, "
                                   f"review that, then 'pkgmgr sync --upgrade {name}' locks what it lists now")
        registry.remember()
        return self.registry_plan(registry, entry, version, tree=locked.tree_sha256 or None)

    def github_from_lock(self, locked: LockEntry) -> Plan:
        """The locked release asset, found again through the GitHub API (a private repository
        works with a token; the lock's url is not fetched blindly) and checked against the
        locked sha256 and tree."""
        from pkgmgr.registry.github_plan import asset_name

        repo, _, tag = locked.locator.partition("@")
        owner, _, name = repo.partition("/")
        session = self.session
        github = session.github
        release = github.release(owner, name, tag, pre=True)  # the lock names this very release
        wanted = asset_name(locked.url)
        chosen = next((a for a in release.assets if a.name == wanted), None) or github.select_asset(release, None)
        limit = session.config.limits.max_archive_bytes

        def fetch(reporter: Reporter) -> Fetched:
            downloaded = github.download_asset(release, chosen, cache=session.downloads, reporter=reporter,
                                               expected_sha256=locked.sha256 or None, max_bytes=limit)
            return Fetched(kind="github", locator=repo, archive=downloaded.path, sha256=downloaded.sha256,
                           source_url=chosen.url, verified=False, label=locked.name,
                           expects=Expectations(tree_sha256=locked.tree_sha256 or None))

        return Plan(_ref(locked.name, locked.version), "github", f"{repo}@{tag} ({chosen.name})", verified=False,
                    version=locked.version, fetch=fetch, extra={"repository": repo, "tag": tag})


def _ref(name: str, version: str) -> Ref:
    return Ref("name", f"{name}@{version}", name=name, spec=f"=={version}", exact=version)


def _host_of(directory: Path, declared: Declared) -> FolderHost | None:
    """The host of a declared directory when it is a folder host's extension, else None (the scope
    store's host, whose manifest `resolve_path` reads)."""
    from typing import cast

    from pkgmgr.hosts import DEFAULT, get
    from pkgmgr.hosts.detect import detect

    if declared.host is not None and get(declared.host).in_scope_store:
        return None
    host = get(detect(directory, declared.host, default=DEFAULT))
    return None if host.in_scope_store else cast("FolderHost", host)


def _expect_tree(plan: Plan, tree: str | None) -> Plan:
    if tree is None:
        return plan
    plan.expects = dataclasses.replace(plan.expects, tree_sha256=tree)
    return plan
