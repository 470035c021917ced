"""Install plans for the remote refs: registry names, `github:OWNER/REPO[@TAG]` and URLs.

`make_planner(session, options=, asset=)` returns the callable the installer gives every ref that
is not a local path. Planning (registry reads, resolution, GitHub release lookup) happens in
the caller's thread; each plan's `fetch` only downloads and verifies, and is safe to run in
the installer's thread pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pkgmgr.errors import Code, PkgmgrError, suggest_close
from pkgmgr.install.plan import Expectations, Expected, Fetched, Plan
from pkgmgr.registry.client import NotListed
from pkgmgr.registry.index_format import Entry, VersionEntry
from pkgmgr.registry.resolve import Request, VersionNotFound, resolve, select_version

if TYPE_CHECKING:
    from pkgmgr.install.options import InstallOptions
    from pkgmgr.progress import Reporter
    from pkgmgr.refs import Ref
    from pkgmgr.registry.client import Registry
    from pkgmgr.registry.session import Session



def make_planner(session: Session, *, options: InstallOptions, asset: str | None = None,
                 registry: str | None = None) -> RemotePlanner:
    """The planner of `ext install` (and of `update`): refs of kind name, github and url, read
    through `session`'s registries and fetcher. `registry` (`--registry NAME`) makes that
    registry alone answer for names."""
    planner = RemotePlanner(session, options=options, asset=asset, registry=registry)
    if registry is not None:
        session.registries.get(registry)  # an unknown name is refused before anything is planned
    return planner


class RemotePlanner:
    """The pipeline's `BatchPlanner` (`install.pipeline`) of names, `github:` refs and URLs."""

    def __init__(self, session: "Session", *, options: InstallOptions, asset: str | None = None,
                 registry: str | None = None) -> None:
        self.session = session
        self.options = options
        self.asset = asset
        self.registry = registry
        self._unrecorded: dict[str, Registry] | None = None  # a batch: registries whose memory `remember` records

    def __call__(self, ref: "Ref") -> Plan:
        if ref.kind == "name":
            return self.plan_name(ref)
        if ref.kind == "github":
            from pkgmgr.registry.github_plan import plan_github

            return plan_github(self.session, ref, pre=self.options.pre, asset=self.asset)
        if ref.kind == "url":
            return plan_url(self.session, ref)
        raise RuntimeError(f"no planner for {ref.kind} refs")  # paths are planned by pkgmgr.install.plan

    def prefetch(self, refs: "list[Ref]") -> None:
        """Read the registry entries of the name refs concurrently, before they are planned one
        by one (`Registries.prefetch`); errors surface when each is planned. The batch's plans
        then leave the registries' memory to one `remember()` (one transaction, not one a ref)."""
        self._unrecorded = {}
        names = [ref.name for ref in refs if ref.kind == "name" and ref.name]
        if not names or self.registry is not None:
            return
        try:
            self.session.registries.prefetch(names)
        except PkgmgrError:
            pass  # planning meets the same error, ref by ref

    def request(self, ref: "Ref") -> Request:
        return Request(spec=ref.spec or "", exact=ref.exact, pre=self.options.pre,
                       host_version=self.session.config.host_version)

    def plan_name(self, ref: "Ref") -> Plan:
        """SPEC 5.3: the first registry listing the name answers; highest allowed version
        (`registry.resolve.resolve`), with "did you mean" and the other registries that have
        the version added to its errors."""
        assert ref.name is not None
        registries = self.session.registries
        request = self.request(ref)
        try:
            resolved = resolve(registries, ref.name, request, registry=self.registry, record=self._record)
        except NotListed as error:
            suggest_listed(error, registries.ordered, ref.name)
            raise
        except VersionNotFound as error:
            assert error.registry is not None
            _name_other_registry(error, registries.ordered, error.registry, ref, request)
            raise
        return registry_plan(self.session, resolved.registry, resolved.entry, resolved.version, ref)

    def _record(self, registry: Registry) -> None:
        """What a plan read is recorded at once, or, in a batch, once per registry by `remember`."""
        if self._unrecorded is None:
            registry.remember()
        else:
            self._unrecorded[registry.name] = registry

    def remember(self) -> None:
        """Record what the plans of a batch read (`Registry.remember`, once per registry)."""
        unrecorded, self._unrecorded = self._unrecorded, None
        for registry in (unrecorded or {}).values():
            registry.remember()


def suggest_listed(error: PkgmgrError, ordered: list[Registry], word: str) -> None:
    """Did you mean (SPEC 11) for a name no registry lists: the closest names the readable
    registries list (`Registry.names_near` of each, one that cannot be read skipped)."""
    names: list[str] = []
    for registry in ordered:
        try:
            names += registry.names_near(word)
        except PkgmgrError:
            continue
    suggest_close(error, word, names)


def _name_other_registry(error: PkgmgrError, ordered: list[Registry], chosen: Registry, ref: Ref,
                         request: Request) -> None:
    """A shadowed name's `version_not_found` says which other registry has the version (SPEC 11).
    Only registries already readable are asked; their failures change nothing."""
    for other in ordered:
        if other is chosen:
            continue
        try:
            entry = other.entry(ref.name or "")
            if entry is None:
                continue
            version = select_version(entry, request, registry=other.name, vanished=other.vanished(entry.name))
        except PkgmgrError:
            continue
        error.message += (f"\nregistry {other.name} has {entry.name} {version.version}, but {chosen.name} "
                          f"answers for the name")
        error.args = (error.message,)
        error.details["available_in"] = {"registry": other.name, "version": version.version}
        error.hint = f"pkgmgr ext install {ref.text} --registry {other.name}"
        return


def registry_plan(session: "Session", registry: "Registry", entry: Entry, version: VersionEntry, ref: "Ref") -> Plan:
    """A plan for one version of a registry entry. The archive is verified against the entry's
    sha256 and exact size wherever it comes from (a download, the cache, a local registry)."""
    location = registry.locate(version)  # in this thread: a github registry resolves its commit here
    limit = session.config.limits.max_archive_bytes
    expected = Expected(name=entry.name, version=version.version, permissions=version.permissions,
                        network_digest=version.network_digest, min_compozy_version=version.min_compozy_version,
                        host=entry.host)
    label = f"{entry.name} {version.version}"
    tier = registry.tier(entry)  # what lifts the grant ceiling is the user's trust, not the entry's claim

    def fetch(reporter: "Reporter") -> Fetched:
        from pkgmgr.registry.stores import channel_for, local_store, store_for

        archive = None
        if location.path is None:
            from pkgmgr.net.shared_cache import fetch_shared

            archive = fetch_shared(session.downloads, sha256=version.sha256, size=version.size, limit=limit,
                                   label=label, warn=session.warn)
        if archive is None:
            store = local_store() if location.path is not None else store_for(location.url)
            assert store is not None  # `Registry.locate` refused a URL no store serves
            archive = store.fetch(str(location.path or location.url), channel_for(session, reporter,
                                                                                  insecure=registry.insecure),
                                  sha256=version.sha256, size=version.size, key=f"{entry.name}@{version.version}",
                                  label=label)
        return Fetched(kind="registry", locator=registry.name, archive=archive, sha256=version.sha256,
                       source_url=location.url, verified=entry.verified, tier=tier, registry=registry.name,
                       expects=Expectations(entry=expected), label=ref.text)

    return Plan(ref, "registry", f"{label} (registry {registry.name})", verified=entry.verified, tier=tier,
                name=entry.name, version=version.version, fetch=fetch,
                extra={"registry": registry.name, "url": location.url, "sha256": version.sha256,
                       "size": version.size})


def plan_url(session: "Session", ref: "Ref") -> Plan:
    """An https:// (or loopback http://) archive URL: unverified, its sha256 recorded."""
    from pkgmgr.net.http import UrlNotAllowed, check_url_allowed

    url = ref.url or ref.text
    try:
        check_url_allowed(url, insecure=False)
    except UrlNotAllowed as error:
        raise PkgmgrError(error.message, code=Code.USAGE, hint="use an https:// URL") from None
    limit = session.config.limits.max_archive_bytes

    def fetch(reporter: "Reporter") -> Fetched:
        downloaded = session.http.download(url, expected_sha256=None, expected_size=None, cache=session.downloads,
                                           reporter=reporter, key=url, label=url, max_bytes=limit)
        return Fetched(kind="url", locator=url, archive=downloaded.path, sha256=downloaded.sha256, source_url=url,
                       verified=False, label=ref.text)

    return Plan(ref, "url", url, verified=False, fetch=fetch, extra={"url": url})
