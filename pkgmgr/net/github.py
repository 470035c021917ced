"""GitHub: commit resolution for `github:` registries, releases and their assets (SPEC 5.2, 6).

Talks to two configurable bases — the REST API (`PKGMGR_GITHUB_API_URL`, default
https://api.github.com) and the raw-content host (`PKGMGR_GITHUB_RAW_URL`, default
https://raw.githubusercontent.com) — through the fetcher port (an `HttpClient`), which must list those two
origins in its `token_hosts` for the token to be sent (`pkgmgr.net.github_hosts.github_client`
builds such a client).
Release assets redirect to a storage host: the client drops the token there.

Errors are the client's (`not_found`, `auth_required`, `rate_limited`, ...), with messages
naming the repository, plus `version_not_found` (no eligible release, a draft, a prerelease
without `pre`), `ambiguous_asset`, and `http_error` for a response that is not what GitHub
sends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, TypeVar
from urllib.parse import quote

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.net.fetcher import Fetcher, FetchError
from pkgmgr.net.github_hosts import api_url_from_env, raw_url_from_env
from pkgmgr.net.http import (
    UrlNotAllowed,
    check_url_allowed,
    redact_url,
)
from pkgmgr.patterns import ARCHIVE_SUFFIXES, GITHUB_OWNER_RE, GITHUB_REPO_RE, HEX64_ANY_CASE

if TYPE_CHECKING:
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.net.http import Downloaded
    from pkgmgr.progress import Reporter

API_VERSION_HEADERS = {"X-GitHub-Api-Version": "2022-11-28"}
JSON_ACCEPT = "application/vnd.github+json"
CHECKSUM_FILES = ("SHA256SUMS", "checksums.txt")
MAX_API_BYTES = 8 * 1024 * 1024
MAX_CHECKSUM_BYTES = 1024 * 1024

_OWNER, _REPO = GITHUB_OWNER_RE, GITHUB_REPO_RE
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_HEX64 = HEX64_ANY_CASE
_BSD_LINE = re.compile(r"SHA256 ?\((?P<name>.+)\) ?= ?(?P<hex>[0-9a-fA-F]{64})")

T = TypeVar("T")


@dataclass(frozen=True)
class CommitRef:
    """`sha` of the ref (None when `not_modified`: the caller's cached sha still holds)."""

    sha: str | None
    etag: str | None
    not_modified: bool


@dataclass(frozen=True)
class Asset:
    """A release asset. `url` is the public download URL, `api_url` the API asset URL (used
    with a token: it works for private repositories). `pseudo` marks the release's source
    tarball standing in for an asset (size unknown)."""

    name: str
    url: str
    api_url: str
    size: int | None
    content_type: str
    pseudo: bool = False


@dataclass(frozen=True)
class Release:
    tag: str
    name: str
    draft: bool
    prerelease: bool
    assets: tuple[Asset, ...]
    tarball_url: str | None
    html_url: str
    owner: str = ""
    repo: str = ""


def parse_checksums(text: str, name: str, *, bare_ok: bool) -> str | None:
    """The sha256 recorded for `name` in a sha256sum-style file (`<hex>  <name>`, `<hex> *<name>`,
    BSD `SHA256 (<name>) = <hex>`); a bare `<hex>` line counts when `bare_ok` (a `<asset>.sha256`
    file). Names compare by basename. None when the file does not list it."""
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        bsd = _BSD_LINE.fullmatch(line)
        if bsd:
            digest, listed = bsd["hex"], bsd["name"]
        else:
            digest, _, listed = line.partition(" ")
            listed = listed.strip().lstrip("*")
            if not _HEX64.fullmatch(digest):
                continue
            if not listed:
                if bare_ok:
                    return digest.lower()
                continue
        if listed == name or PurePosixPath(listed.replace("\\", "/")).name == name:
            return digest.lower()
    return None


class GitHub:
    """The GitHub REST API and raw host, through `http` (see the module docstring)."""

    def __init__(self, http: Fetcher, *, api_url: str | None = None, raw_url: str | None = None) -> None:
        self.http = http
        self.api_url = _base(api_url or api_url_from_env(), "PKGMGR_GITHUB_API_URL")
        self.raw_url = _base(raw_url or raw_url_from_env(), "PKGMGR_GITHUB_RAW_URL")

    def __repr__(self) -> str:
        return f"GitHub(api_url={self.api_url!r}, raw_url={self.raw_url!r})"

    # ------------------------------------------------------------------ commits and files

    def commit_sha(self, owner: str, repo: str, ref: str, *, etag: str | None = None) -> CommitRef:
        """Resolve `ref` (branch, tag or sha) to a commit sha; with `etag`, an unchanged ref
        costs a 304 (`not_modified`). Raises not_found for an unknown repository or ref."""
        slug = _slug(owner, repo)
        if not ref or any(ch.isspace() or ord(ch) < 0x20 for ch in ref):
            raise PkgmgrError(f"{slug}: {ref!r} is not a git ref", code=Code.USAGE)
        url = f"{self.api_url}/repos/{slug}/commits/{quote(ref, safe='/')}"
        resp = self._on_missing(
            lambda: self.http.get_small(
                url, etag=etag, max_bytes=4096, accept="application/vnd.github.sha", extra_headers=API_VERSION_HEADERS
            ),
            f"GitHub repository {slug} or its ref {ref!r} not found",
            statuses=(422,),
        )
        if resp.status == 304:
            return CommitRef(None, resp.etag, True)
        sha = (resp.body or b"").decode("ascii", "replace").strip().lower()
        if not _COMMIT.fullmatch(sha):
            raise PkgmgrError(
                f"{slug}@{ref}: the GitHub API did not answer with a commit sha",
                code=Code.HTTP_ERROR,
                details={"url": redact_url(url)},
            )
        return CommitRef(sha, resp.etag, False)

    def raw_file_url(self, owner: str, repo: str, sha: str, path: str) -> str:
        """`{RAW}/OWNER/REPO/<sha>/<path>`. Raises usage for a path that is absolute or has
        `..`/empty segments."""
        slug = _slug(owner, repo)
        parts = path.split("/")
        if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
            raise PkgmgrError(f"{slug}: {path!r} is not a relative file path", code=Code.USAGE)
        if not sha or "/" in sha:
            raise PkgmgrError(f"{slug}: {sha!r} is not a commit", code=Code.USAGE)
        return f"{self.raw_url}/{slug}/{quote(sha, safe='')}/{quote(path, safe='/')}"

    # ------------------------------------------------------------------ releases

    def release(self, owner: str, repo: str, tag: str | None, *, pre: bool) -> Release:
        """The release to install (SPEC 6). Without `tag`: the latest release (falling back
        to the newest of `?per_page=30` that is neither a draft nor, unless `pre`, a
        prerelease; with `pre`, the newest non-draft of that list). With `tag`: that release;
        a draft is always refused and a prerelease unless `pre` (`version_not_found`)."""
        slug = _slug(owner, repo)
        base = f"{self.api_url}/repos/{slug}/releases"
        if tag is not None:
            if not tag or any(ch.isspace() or ord(ch) < 0x20 for ch in tag):
                raise PkgmgrError(f"{slug}: {tag!r} is not a tag", code=Code.USAGE)
            data = self._on_missing(
                lambda: self._api_json(f"{base}/tags/{quote(tag, safe='')}"),
                f"GitHub repository {slug} has no release tagged {tag!r}",
            )
            release = _parse_release(data, owner, repo)
            if release.draft:
                raise PkgmgrError(
                    f"{slug}: release {tag} is a draft (not published)", code=Code.VERSION_NOT_FOUND,
                    details={"repository": slug, "tag": tag, "reason": "draft"},
                )
            if release.prerelease and not pre:
                raise PkgmgrError(
                    f"{slug}: release {tag} is a prerelease", code=Code.VERSION_NOT_FOUND,
                    details={"repository": slug, "tag": tag, "reason": "prerelease"},
                    hint="pass --pre to install a prerelease",
                )
            return release
        if not pre:
            try:
                latest = _parse_release(self._api_json(f"{base}/latest"), owner, repo)
            except PkgmgrError as exc:
                if exc.code != Code.NOT_FOUND:
                    raise
            else:
                if not latest.draft and not latest.prerelease:
                    return latest
        listing = self._on_missing(
            lambda: self._api_json(f"{base}?per_page=30"), f"GitHub repository {slug} not found"
        )
        if not isinstance(listing, list):
            raise _unexpected(slug, "a list of releases")
        skipped = {"draft": 0, "prerelease": 0}
        for item in listing:
            release = _parse_release(item, owner, repo)
            if release.draft:
                skipped["draft"] += 1
            elif release.prerelease and not pre:
                skipped["prerelease"] += 1
            else:
                return release
        why = ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in skipped.items() if n)
        raise PkgmgrError(
            f"{slug}: no published release" + (f" ({why} skipped)" if why else ""),
            code=Code.VERSION_NOT_FOUND,
            details={"repository": slug, "skipped": skipped},
            hint="pass --pre to consider prereleases" if skipped["prerelease"] else None,
        )

    def select_asset(self, release: Release, asset_name: str | None) -> Asset:
        """`asset_name` exactly; else the single .tar.gz/.tgz/.zip asset; none -> the source
        tarball as a pseudo-asset; several -> `ambiguous_asset` listing them."""
        where = f"{release.owner}/{release.repo}@{release.tag}"
        names = [a.name for a in release.assets]
        if asset_name is not None:
            for asset in release.assets:
                if asset.name == asset_name:
                    return asset
            raise PkgmgrError(
                f"{where}: no asset named {asset_name!r} (assets: {', '.join(names) or 'none'})",
                code=Code.NOT_FOUND,
                details={"assets": names},
            )
        archives = [a for a in release.assets if a.name.lower().endswith(ARCHIVE_SUFFIXES)]
        if len(archives) == 1:
            return archives[0]
        if len(archives) > 1:
            listed = [a.name for a in archives]
            raise PkgmgrError(
                f"{where}: several archive assets: {', '.join(listed)}",
                code=Code.AMBIGUOUS_ASSET,
                details={"assets": listed},
                hint="choose one with --asset NAME",
            )
        if not release.tarball_url:
            raise PkgmgrError(f"{where}: no archive asset and no source tarball", code=Code.NOT_FOUND)
        tag = release.tag.replace("/", "-")
        return Asset(
            name=f"{release.repo or 'source'}-{tag}.tar.gz",
            url=release.tarball_url,
            api_url=release.tarball_url,
            size=None,
            content_type="application/gzip",
            pseudo=True,
        )

    def asset_checksum(
        self, release: Release, asset: Asset, *, cache: DownloadCache | None = None, reporter: Reporter | None = None
    ) -> str | None:
        """The sha256 the release publishes for `asset` in `<asset>.sha256`, `SHA256SUMS` or
        `checksums.txt` (first that lists it), or None. A `<asset>.sha256` that holds no
        digest for it -> `checksum_mismatch`. (`cache`/`reporter` are accepted for API
        stability; checksum files are small and fetched directly.)"""
        if asset.pseudo:
            return None
        by_name = {a.name: a for a in release.assets}
        by_lower = {a.name.lower(): a for a in release.assets}
        candidates = [(by_name.get(f"{asset.name}.sha256"), True)]
        candidates += [(by_name.get(n) or by_lower.get(n.lower()), False) for n in CHECKSUM_FILES]
        for candidate, own in candidates:
            if candidate is None:
                continue
            url, accept = self._asset_source(candidate)
            body = self.http.get_small(url, max_bytes=MAX_CHECKSUM_BYTES, accept=accept).body or b""
            digest = parse_checksums(body.decode("utf-8", "replace"), asset.name, bare_ok=own)
            if digest is not None:
                return digest
            if own:
                raise PkgmgrError(
                    f"{release.owner}/{release.repo}@{release.tag}: {candidate.name} holds no sha256 for {asset.name}",
                    code=Code.CHECKSUM_MISMATCH,
                    details={"asset": asset.name, "checksum_file": candidate.name},
                )
        return None

    def download_asset(
        self,
        release: Release,
        asset: Asset,
        *,
        cache: DownloadCache,
        reporter: Reporter,
        expected_sha256: str | None,
        max_bytes: int,
    ) -> Downloaded:
        """Download `asset` into `cache` (checked against `expected_sha256` when given, and
        against the asset's exact size). With a token, through the API asset URL (private
        repositories); otherwise through the public download URL."""
        url, accept = self._asset_source(asset)
        return self.http.download(
            url,
            expected_sha256=expected_sha256,
            expected_size=asset.size if asset.size else None,
            cache=cache,
            reporter=reporter,
            key=f"{release.owner}/{release.repo}@{release.tag}/{asset.name}",
            label=asset.name,
            max_bytes=max_bytes,
            accept=accept,
        )

    # ------------------------------------------------------------------ internals

    def _asset_source(self, asset: Asset) -> tuple[str, str | None]:
        if asset.pseudo:
            return asset.url, None
        if self.http.has_token and asset.api_url:
            return asset.api_url, "application/octet-stream"
        return asset.url, None

    def _api_json(self, url: str) -> Any:
        from pkgmgr.documents import DocumentError, decode_json

        resp = self.http.get_small(url, max_bytes=MAX_API_BYTES, accept=JSON_ACCEPT, extra_headers=API_VERSION_HEADERS)
        try:
            return decode_json(resp.body or b"", max_bytes=MAX_API_BYTES)
        except DocumentError:
            raise PkgmgrError(
                f"{redact_url(url)}: the GitHub API did not answer with JSON",
                code=Code.HTTP_ERROR,
                details={"url": redact_url(url)},
            ) from None

    @staticmethod
    def _on_missing(call: Callable[[], T], message: str, *, statuses: tuple[int, ...] = ()) -> T:
        """Run `call`, rewording not_found (and the given http_error statuses) as `message`."""
        try:
            return call()
        except PkgmgrError as exc:
            if exc.code == Code.NOT_FOUND or (exc.code == Code.HTTP_ERROR and isinstance(exc, FetchError)
                                              and exc.status in statuses):
                raise PkgmgrError(
                    message,
                    code=Code.NOT_FOUND,
                    details=exc.details,
                    hint="if the repository is private, set GITHUB_TOKEN (or GH_TOKEN)",
                ) from None
            raise


def _base(url: str, variable: str) -> str:
    try:
        check_url_allowed(url, insecure=False)
    except UrlNotAllowed as exc:
        raise PkgmgrError(f"{variable}: {exc.message}", code=Code.INVALID_CONFIG) from None
    return url.rstrip("/")


def _slug(owner: str, repo: str) -> str:
    if not isinstance(owner, str) or not _OWNER.fullmatch(owner):
        raise PkgmgrError(f"{owner!r} is not a GitHub owner name", code=Code.USAGE)
    if not isinstance(repo, str) or not _REPO.fullmatch(repo) or repo in (".", ".."):
        raise PkgmgrError(f"{repo!r} is not a GitHub repository name", code=Code.USAGE)
    return f"{owner}/{repo}"


def _unexpected(slug: str, wanted: str) -> PkgmgrError:
    return PkgmgrError(f"{slug}: the GitHub API did not answer with {wanted}", code=Code.HTTP_ERROR)


def _parse_release(data: Any, owner: str, repo: str) -> Release:
    slug = f"{owner}/{repo}"
    if not isinstance(data, dict):
        raise _unexpected(slug, "a release object")
    tag = data.get("tag_name")
    assets_data = data.get("assets", [])
    if not isinstance(tag, str) or not tag or not isinstance(assets_data, list):
        raise _unexpected(slug, "a release object")
    assets = []
    for item in assets_data:
        if not isinstance(item, dict):
            raise _unexpected(slug, "release assets")
        name, url, api_url = item.get("name"), item.get("browser_download_url"), item.get("url")
        size = item.get("size")
        if not (isinstance(name, str) and name and isinstance(url, str) and isinstance(api_url, str)):
            raise _unexpected(slug, "release assets")
        assets.append(
            Asset(
                name=name,
                url=url,
                api_url=api_url,
                size=size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
                content_type=str(item.get("content_type") or ""),
            )
        )
    tarball = data.get("tarball_url")
    return Release(
        tag=tag,
        name=str(data.get("name") or tag),
        draft=data.get("draft") is True,
        prerelease=data.get("prerelease") is True,
        assets=tuple(assets),
        tarball_url=tarball if isinstance(tarball, str) and tarball else None,
        html_url=str(data.get("html_url") or ""),
        owner=owner,
        repo=repo,
    )
