"""The fetcher port: the only door to the network, for registry readers, planners, the GitHub
client and the OCI distribution API alike.

As python-tuf's ngclient `FetcherInterface`, a caller never sees the transport: it gets a
`Fetcher` (`Session.http`; `pkgmgr.net.http.HttpClient` in production, anything with these
methods in a test) whose guarantees hold for every method — `get_small` and `download` (GET),
and `send`, a request of any method with headers and a body (what OCI's distribution API needs:
HEAD, POST, PUT) under the same caps, deadline, retries and token rule:

- only `PkgmgrError` escapes, with the network codes of SPEC 11 (`network_error`,
  `http_error`, `not_found`, `auth_required`, `rate_limited`, `usage` for a refused URL) and
  `archive_too_large` / `checksum_mismatch` for a body that breaks its bounds; `ValueError` or
  `RuntimeError` mean a bug in the caller, and a local disk failure stays an `OSError`;
- lengths are capped while streaming: `max_bytes` (and an exact `expected_size`) stop reading at
  the first byte too many, never after buffering the body;
- `download` returns only a file whose sha256 (when expected) was verified, in the cache.

An error the server's answer caused is a `FetchError`: its `url` (redacted) and, when there was a
response, its HTTP `status` are attributes a caller tests (also in `details`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.net.http import Downloaded, SmallResponse
    from pkgmgr.progress import Reporter


class FetchError(PkgmgrError):
    """A network failure of one URL: `url` (redacted) and the HTTP `status`, None when no response came."""

    def __init__(self, message: str, *, code: Code, url: str, status: int | None = None, hint: str | None = None,
                 **extra: Any) -> None:
        details: dict[str, Any] = {"url": url}
        if status is not None:
            details["status"] = status
        details.update({k: v for k, v in extra.items() if v is not None})
        super().__init__(message, code=code, details=details, hint=hint)
        self.url, self.status = url, status


class Fetcher(Protocol):
    """The network as registry readers see it (see the module docstring for the guarantees)."""

    @property
    def has_token(self) -> bool:
        """Whether a GitHub token is configured: GitHub's release assets are then fetched through
        the API, which takes it (private repositories), rather than the browser URL."""
        ...

    def get_small(self, url: str, *, etag: str | None = None, last_modified: str | None = None, max_bytes: int,
                  accept: str | None = None, insecure: bool = False,
                  extra_headers: Mapping[str, str] | None = None) -> SmallResponse:
        """A small document (status 200 with its body, or 304 when the validators still hold)."""
        ...

    def download(self, url: str, *, expected_sha256: str | None, expected_size: int | None,
                 cache: DownloadCache, reporter: Reporter, key: str, label: str, max_bytes: int,
                 accept: str | None = None, insecure: bool = False,
                 extra_headers: Mapping[str, str] | None = None) -> Downloaded:
        """An archive into `cache`, verified while it streams."""
        ...

    def send(self, method: str, url: str, *, ok: frozenset[int], body: bytes | None = None,
             headers: Mapping[str, str] | None = None, max_bytes: int = 64 * 1024,
             insecure: bool = False) -> SmallResponse:
        """One request of any method; its status, headers and small body when the status is in
        `ok` (a redirect is an `http_error`, other statuses map as for GET)."""
        ...

    def close(self) -> None: ...
