"""`ext update`: move installed extensions to the newest allowed version of their recorded
source (SPEC 4) — not yanked, no prerelease unless --pre, compatible with the host.

Deciding is done here, per extension, and one extension's failure never hides the others'
outcome; committing goes through `install.pipeline.install` (the same consent checks, parallel
fetches, prepare/commit under the writer lock), handing it the plans decided here. Pinned
extensions are reported `pinned`; path and archive installs are not updatable and reported
unchanged. An update never moves to a lower version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from pkgmgr.errors import PkgmgrError
from pkgmgr.refs import Ref
from pkgmgr.versions import parse_semver

if TYPE_CHECKING:
    from pkgmgr.config import Config
    from pkgmgr.hosts.port import Announce
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.install.pipeline import Confirm
    from pkgmgr.install.plan import Plan
    from pkgmgr.progress import Reporter
    from pkgmgr.registry.session import Session
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope


@dataclass
class UpdateItem:
    """The outcome for one extension. status: updated | unchanged | pinned | failed |
    skipped (held: another update of the batch failed, so none was committed) |
    available (--check) | planned (--dry-run)."""

    name: str
    version: str | None
    status: str
    source: str = ""
    target: str | None = None
    reason: str = ""
    error: PkgmgrError | None = None
    installed: Installed | None = None  # after a commit
    summary: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.status == "failed":
            assert self.error is not None
            return {"name": self.name, "version": self.version, "error": self.error.to_json()}
        data: dict[str, Any] = {"name": self.name, "version": self.version, "source": self.source}
        if self.status == "updated" and self.installed is not None:
            inst = self.installed
            data.update({"version": inst.version, "previous_version": self.version, "scope": inst.scope,
                         "sha256": inst.sha256, "verified": inst.verified})
        elif self.status in ("available", "planned"):
            data["latest"] = self.target
        if self.reason:
            data["reason"] = self.reason
        if self.summary is not None:
            data["summary"] = self.summary
        return data


@dataclass
class UpdateReport:
    items: list[UpdateItem] = field(default_factory=list)
    activations: list[dict[str, Any]] = field(default_factory=list)
    unpinned: list[str] = field(default_factory=list)  # --unpin: the names whose pin was released

    @property
    def first_error(self) -> PkgmgrError | None:
        return next((i.error for i in self.items if i.error is not None), None)

    def by_status(self, status: str) -> list[UpdateItem]:
        return [i for i in self.items if i.status == status]


class Updater:
    def __init__(self, session: "Session", scope: "Scope", *, options: InstallOptions, asset: str | None = None,
                 registry: str | None = None, unpin: bool = False) -> None:
        self.session = session
        self.scope = scope
        self.options = options
        self.asset = asset
        self.registry = registry  # --registry: registry installs move to this registry's versions
        self.unpin = unpin  # --unpin: a pinned install is released and updated like the others

    # --- deciding -------------------------------------------------------------------------

    def decide(self, installed: "Installed", reporter: "Reporter", *, check: bool) -> tuple[UpdateItem, "Plan | None"]:
        """What to do with one installed extension (raises the errors of its source)."""
        item = UpdateItem(installed.name, installed.version, "unchanged", source=installed.source_kind)
        if installed.pinned and not self.unpin:
            item.status, item.reason = "pinned", f"pinned at {installed.version}"
            return item, None
        kind = installed.source_kind
        if kind == "registry":
            return self._registry(installed, item)
        if kind == "github":
            return self._github(installed, item)
        if kind == "url":
            return self._url(installed, item, reporter, check=check)
        item.reason = f"not updatable: installed from a {kind} ({installed.source}); install it again to change it"
        return item, None

    def _newer(self, installed: "Installed", version: str | None) -> bool:
        if version is None:
            return False
        try:
            return parse_semver(version) > parse_semver(installed.version)
        except ValueError:
            return False

    def _registry(self, installed: "Installed", item: UpdateItem) -> tuple[UpdateItem, "Plan | None"]:
        from pkgmgr.registry.plan import registry_plan
        from pkgmgr.registry.resolve import Request, VersionNotFound, resolve

        request = Request(pre=self.options.pre, host_version=self.session.config.host_version)
        try:
            resolved = resolve(self.session.registries, installed.name, request,
                               registry=self.registry or installed.registry or installed.source, listed_before=True)
        except VersionNotFound as error:
            why = "; ".join(f"{s.version}: {s.reason}" for s in error.skipped) if error.skipped else error.message
            item.reason = "no allowed version: " + why
            return item, None
        registry, entry, newest = resolved.registry, resolved.entry, resolved.version
        item.target = newest.version
        if not self._newer(installed, newest.version):
            item.reason = f"up to date (newest allowed in registry {registry.name}: {newest.version})"
            return item, None
        text = f"{entry.name}@{newest.version}"
        ref = Ref("name", text, name=entry.name, spec=f"=={newest.version}", exact=newest.version)
        item.status = "available"
        return item, registry_plan(self.session, registry, entry, newest, ref)

    def _github(self, installed: "Installed", item: UpdateItem) -> tuple[UpdateItem, "Plan | None"]:
        from pkgmgr.registry.github_plan import asset_name, plan_github

        owner, _, repo = installed.source.partition("/")
        ref = Ref("github", f"github:{installed.source}", owner=owner, repo=repo)
        plan = plan_github(self.session, ref, pre=self.options.pre, asset=self.asset,
                           previous_asset=asset_name(installed.source_url), previous_version=installed.version)
        tag = plan.extra["tag"]
        item.target = plan.version or tag
        if plan.version is not None:
            newer = self._newer(installed, plan.version)
        else:  # a tag that is no version: a different asset URL is a different release
            newer = plan.extra["url"] != installed.source_url
        if not newer:
            item.reason = f"up to date (latest release {tag})"
            return item, None
        plan.ref = Ref("github", f"github:{installed.source}@{tag}", owner=owner, repo=repo, tag=tag)
        item.status = "available"
        return item, plan

    def _url(self, installed: "Installed", item: UpdateItem, reporter: "Reporter", *,
             check: bool) -> tuple[UpdateItem, "Plan | None"]:
        """A URL has no version list: fetch it again; the same sha256 is no update."""
        from pkgmgr.registry.plan import plan_url

        plan = plan_url(self.session, Ref("url", installed.source, url=installed.source))
        if check:
            fetched = plan.fetch(reporter)
            if fetched.sha256 == installed.sha256:
                item.reason = "up to date (the URL serves the installed archive)"
                return item, None
            item.status, item.target, item.reason = "available", None, "the URL serves a different archive"
            return item, None
        item.status = "available"
        return item, plan

    # --- running ----------------------------------------------------------------------------

    def run(self, names: Sequence[str], *, all_: bool, check: bool, config: Config, interactive: bool = False,
            confirm: Confirm | None = None, reporter: "Reporter | None" = None, lock_timeout: float = 30.0,
            announce: Announce | None = None) -> UpdateReport:
        from pkgmgr.lifecycle import find, listed
        from pkgmgr.progress import Reporter

        reporter = reporter or Reporter()
        report = UpdateReport()
        host = self.options.host
        targets: list[Installed] = []
        if all_:
            targets = listed([self.scope], host)  # every host's installs update the same way (SPEC 13)
        else:
            for name, installed in find([self.scope], names, host).items():
                if isinstance(installed, PkgmgrError):
                    report.items.append(UpdateItem(name, None, "failed", error=installed))
                else:
                    targets.append(installed)
        if self.unpin and not check and not self.options.dry_run:
            from pkgmgr.lifecycle import set_pinned

            report.unpinned = [item.name for item in set_pinned(self.scope, [t for t in targets if t.pinned], False,
                                                                  lock_timeout=lock_timeout)]
        self._prefetch(targets)
        plans: list[tuple[UpdateItem, Plan]] = []
        for installed in targets:
            try:
                item, plan = self.decide(installed, reporter, check=check)
            except PkgmgrError as error:
                item, plan = UpdateItem(installed.name, installed.version, "failed", source=installed.source_kind,
                                        error=error), None
            report.items.append(item)
            if plan is not None:
                plans.append((item, plan))
        if check or not plans:
            return report
        self._commit(report, plans, config=config, interactive=interactive, confirm=confirm, reporter=reporter,
                     lock_timeout=lock_timeout, announce=announce)
        return report

    def _prefetch(self, targets: Sequence["Installed"]) -> None:
        """Read the registry entries of the targets concurrently before deciding one by one
        (`Registry.prefetch`: the checks, and any error, still come per extension, in order)."""
        by_registry: dict[str, list[str]] = {}
        for installed in targets:
            if installed.source_kind == "registry" and (self.unpin or not installed.pinned):
                by_registry.setdefault(self.registry or installed.registry or installed.source,
                                       []).append(installed.name)
        for name, names in by_registry.items():
            if len(names) < 2:
                continue
            try:
                registry = self.session.registries.get(name)
            except PkgmgrError:
                continue  # deciding reports it, per extension
            registry.prefetch(names, workers=self.session.config.network.parallel)

    def _commit(self, report: UpdateReport, plans: list[tuple[UpdateItem, "Plan"]], *, config: Config,
                interactive: bool, confirm: Confirm | None, reporter: "Reporter", lock_timeout: float,
                announce: Announce | None) -> None:
        from pkgmgr.install.pipeline import InstallRequest, install

        batch = install(InstallRequest(self.scope, config=config, options=self.options,
                                       planned=[plan for _, plan in plans], interactive=interactive, confirm=confirm,
                                       reporter=reporter, lock_timeout=lock_timeout, announce=announce,
                                       keep_going=False))
        for (item, _), result in zip(plans, batch.results):
            item.summary = result.summary
            if result.status == "failed":
                item.status, item.error = "failed", result.error
            elif result.status == "skipped":  # held: another update of the batch failed (SPEC 4)
                item.status, item.reason = "skipped", result.message
            elif result.status == "planned":
                item.status, item.target = "planned", result.version or item.target
            elif result.outcome is not None and result.outcome.action == "unchanged":
                item.status, item.reason = "unchanged", "up to date (same version and content)"
            elif result.outcome is not None:
                item.status, item.installed = "updated", result.outcome.installed
                report.activations.extend(result.outcome.activations)
