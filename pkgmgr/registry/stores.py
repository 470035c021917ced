"""Where a registry's archives are stored (SPEC 5.1, 5.6): one `ArchiveStore` per kind, chosen by
the version URL's scheme from one table, `STORES` (as cargo's `SourceKind` picks a `Source`):

- `https` (and `http`, to a loopback host or with `--insecure`): a file on a web server — a GitHub
  release asset is one (its download URL is an https URL);
- no scheme: a path relative to the registry root, read from a directory registry or fetched
  beside an HTTP one (the reader turns it into a `Location` first);
- `oci`: a manifest digest in an OCI registry (`pkgmgr.net.oci`), which `registry publish
  --push` can also push to.

Nothing else in the registry asks which kind a URL is: it asks its store. Adding a store (an
S3-compatible bucket, say) is one class and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.progress import Reporter
    from pkgmgr.registry.session import Session

NO_STORE = "must be an https:// URL, an oci:// digest reference or a path relative to the registry root"


@dataclass
class Channel:
    """What a store fetches through for one command: its HTTP client, its download cache, and the
    OCI client over that HTTP client (made once, on first use)."""

    http: Any  # a `net.fetcher.Fetcher` (the command's `HttpClient`)
    cache: DownloadCache
    reporter: Reporter
    max_bytes: int
    insecure: bool = False
    make_oci: Callable[[], Any] | None = None
    _oci: Any = field(default=None, repr=False)

    def oci(self) -> Any:
        """The command's `net.oci.OciClient`."""
        if self._oci is None:
            if self.make_oci is not None:
                self._oci = self.make_oci()
            else:
                from pkgmgr.net.oci import OciClient

                self._oci = OciClient(self.http)
        return self._oci


def channel_for(session: Session, reporter: Reporter, *, insecure: bool = False) -> Channel:
    """The channel of `session`: its HTTP client, download cache, size limit and OCI client."""
    return Channel(session.http, session.downloads, reporter, session.config.limits.max_archive_bytes,
                   insecure=insecure, make_oci=lambda: session.oci)


class ArchiveStore(Protocol):
    """One kind of archive store."""

    def url_problem(self, url: str) -> str | None:
        """Why a registry entry may not name `url` (SPEC 5.1), or None. Whether plain http is
        allowed depends on the registry and is decided when the URL is used (`allowed`)."""
        ...

    def allowed(self, url: str, *, insecure: bool) -> None:
        """Refuse, by the policy of SPEC 5.1, a URL of this store pkgmgr must not fetch: raises
        `net.http.UrlNotAllowed` (code `usage`; callers re-raise with their own code)."""
        ...

    def fetch(self, url: str, channel: Channel, *, sha256: str | None, size: int | None, key: str,
              label: str) -> Path:
        """The archive at `url` in `channel.cache`, verified against `sha256` and `size` while it
        streams (None: whatever the store says it is). Raises what the transfer raises."""
        ...

    def push(self, session: Session, target: str, archive: Path, *, sha256: str, size: int, title: str) -> str:
        """Store `archive` at `target` and return the URL an entry records. Raises `usage` for a
        store that cannot be pushed to, or a target it cannot take."""
        ...


class _NoPush:
    def push(self, session: Session, target: str, archive: Path, *, sha256: str, size: int, title: str) -> str:
        raise PkgmgrError(f"--push {target}: pkgmgr pushes archives only to an OCI registry "
                          "(oci://HOST/REPOSITORY:TAG)", code=Code.USAGE)


class WebStore(_NoPush):
    """A file on a web server: `https://`, or `http://` to a loopback host (or with `--insecure`)."""

    def url_problem(self, url: str) -> str | None:
        parts = urlsplit(url)
        if not parts.hostname:
            return "has no host"
        if "@" in parts.netloc:
            return "must not carry credentials"
        return None

    def allowed(self, url: str, *, insecure: bool) -> None:
        from pkgmgr.net.http import check_url_allowed

        check_url_allowed(url, insecure=insecure)

    def fetch(self, url: str, channel: Channel, *, sha256: str | None, size: int | None, key: str,
              label: str) -> Path:
        downloaded = channel.http.download(url, expected_sha256=sha256, expected_size=size, cache=channel.cache,
                                           reporter=channel.reporter, key=key, label=label,
                                           max_bytes=channel.max_bytes, insecure=channel.insecure)
        return Path(downloaded.path)


class RelativeStore(_NoPush):
    """A path relative to the registry root: a file of a directory registry (copied, verified) or
    one its HTTP reader serves beside the index (made a URL of the web store by the reader)."""

    def url_problem(self, url: str) -> str | None:
        parts = urlsplit(url)
        if url.startswith("/") or parts.netloc:
            return "a relative url must not start with '/'"
        if any(segment in ("", ".", "..") for segment in parts.path.split("/")):
            return "a relative url must not contain empty, '.' or '..' segments"
        return None

    def allowed(self, url: str, *, insecure: bool) -> None:
        """A file of the registry itself: read where the registry is."""

    def fetch(self, url: str, channel: Channel, *, sha256: str | None, size: int | None, key: str,
              label: str) -> Path:
        from pkgmgr.net.localcopy import copy_verified

        if sha256 is None or size is None:
            raise RuntimeError("a registry file is copied only against the sha256 and size its entry records")
        return copy_verified(Path(url), channel.cache, sha256=sha256, size=size, limit=channel.max_bytes,
                             label=label)


class OciStore:
    """An artifact in an OCI registry (SPEC 5.6): `oci://HOST[:PORT]/REPOSITORY@sha256:<digest>`
    (pkgmgr.net.oci decides what a reference may be and who may be asked)."""

    def url_problem(self, url: str) -> str | None:
        from pkgmgr.net.oci import oci_url_problem

        return oci_url_problem(url)

    def allowed(self, url: str, *, insecure: bool) -> None:
        """The OCI client applies the policy to every request it sends."""

    def fetch(self, url: str, channel: Channel, *, sha256: str | None, size: int | None, key: str,
              label: str) -> Path:
        oci = channel.oci()
        if sha256 is None or size is None:  # the manifest's layer, which an entry's sha256 and size are checked against
            from pkgmgr.net.oci import parse_oci

            layer = oci.resolve(parse_oci(url), label=label)
            sha256, size = layer.digest, layer.size
        path: Path = oci.fetch(url, sha256=sha256, size=size, cache=channel.cache, reporter=channel.reporter,
                               key=key, label=label, max_bytes=channel.max_bytes)
        return path

    def push(self, session: Session, target: str, archive: Path, *, sha256: str, size: int, title: str) -> str:
        from pkgmgr.net.oci import push_archive

        url: str = push_archive(session.oci, target, archive, sha256=sha256, size=size, title=title)
        return url


_WEB = WebStore()
STORES: dict[str, ArchiveStore] = {"https": _WEB, "http": _WEB, "": RelativeStore(), "oci": OciStore()}


def store_for(url: str) -> ArchiveStore | None:
    """The store of `url`, by its scheme (case-insensitive); None for a scheme no store serves."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return STORES.get(scheme)


def local_store() -> ArchiveStore:
    """The store of a file read from a directory registry (a `Location` with a path)."""
    return STORES[""]
