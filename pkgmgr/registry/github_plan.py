"""Install plans for `github:OWNER/REPO[@TAG]` (SPEC 6): a release, one of its assets, verified
against the release's checksum file when it has one (integrity, not authenticity). Always
unverified: there is no registry entry vouching for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from pkgmgr.install.plan import Fetched, Plan
from pkgmgr.versions import parse_semver, strip_v

if TYPE_CHECKING:
    from pkgmgr.progress import Reporter
    from pkgmgr.refs import Ref
    from pkgmgr.registry.session import Session


def tag_version(tag: str) -> str | None:
    """The semantic version a release tag names (`v1.2.0` -> `1.2.0`), or None."""
    candidate = strip_v(tag.rsplit("/", 1)[-1])
    try:
        parse_semver(candidate)
    except ValueError:
        return None
    return candidate


def plan_github(session: "Session", ref: "Ref", *, pre: bool, asset: str | None = None,
                previous_asset: str | None = None, previous_version: str | None = None) -> Plan:
    """Resolve the release and the asset now; download (and verify) in `fetch`.

    `previous_asset`/`previous_version` (from `ext update`) pick the asset whose name is the
    previously installed one with its version replaced, when the release has several."""
    assert ref.owner is not None and ref.repo is not None
    github = session.github
    release = github.release(ref.owner, ref.repo, ref.tag, pre=pre)
    version = tag_version(release.tag)
    if asset is None and previous_asset and previous_version and version:
        renamed = previous_asset.replace(previous_version, version)
        if any(a.name == renamed for a in release.assets):
            asset = renamed
    chosen = github.select_asset(release, asset)
    locator = f"{ref.owner}/{ref.repo}"
    limit = session.config.limits.max_archive_bytes

    def fetch(reporter: "Reporter") -> Fetched:
        checksum = github.asset_checksum(release, chosen)
        downloaded = github.download_asset(release, chosen, cache=session.downloads, reporter=reporter,
                                           expected_sha256=checksum, max_bytes=limit)
        return Fetched(kind="github", locator=locator, archive=downloaded.path, sha256=downloaded.sha256,
                       source_url=chosen.url, verified=False, label=ref.text)

    extra: dict[str, Any] = {"repository": locator, "tag": release.tag, "asset": chosen.name, "url": chosen.url}
    return Plan(ref, "github", f"{locator}@{release.tag} ({chosen.name})", verified=False, version=version,
                fetch=fetch, extra=extra)


def asset_name(url: str | None) -> str | None:
    """The file name at the end of a recorded asset URL."""
    if not url:
        return None
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])  # a download URL encodes '+', spaces...
    return name or None
