"""HTTP for pkgmgr: `HttpClient`, the one HTTP client (the production `Fetcher`).

It sends each hop through a transport (`pkgmgr.net.transport`: the standard library's for a
GET's first hop while requests is not loaded, requests' — imported on first use, the only place
that imports it — for the rest) and owns every rule around it: the URL policy (`check_url_allowed`), token scoping, manual redirects, retries with
backoff, the mapping of statuses to error codes (SPEC 6, 11), timeouts and the minimum-rate
rule, size caps enforced while streaming, and hash-while-downloading into the
content-addressed `DownloadCache` (SPEC 5.4).

Timeouts: `connect_timeout` bounds connecting; `read_timeout` bounds each read, and also the
status line and headers *in all* (a server that drips its headers a byte at a time would
otherwise hold a command for ever: the transports' watchdog); the body is bounded by the
minimum average rate after `min_rate_after` seconds, by its size cap, and by an overall
deadline of `deadline + size / deadline_rate` seconds, `size` being the expected (or capped)
length (a server keeping just above the minimum rate would otherwise hold a 50 MiB download
for 13 hours). Both are checked as bytes arrive; a read blocks at most `read_timeout`.

Guarantee (python-tuf's fetcher): whatever the network or a server does, the public methods
raise only `PkgmgrError`. `ValueError`/`RuntimeError` mean a bug in the caller; `OSError` from
the local disk (cache full, permissions) is not a network failure and is not disguised as one.

Content-Encoding (small documents ask for gzip; downloads for identity) is decoded by pkgmgr,
not by the transport (`_ContentDecoder`, in `_iter_body`): decoded bytes are capped at
`max_bytes`, the bytes on the wire at `2 * max_bytes + 64 KiB`, and a gzip member must carry
content to be read through (`GZIP_MEMBERS_FREE`), so neither a bomb nor a flood of empty members
costs more than its cap.

Status mapping: 401 and a plain 403 -> `auth_required`; 403/429 with `X-RateLimit-Remaining: 0`
-> `rate_limited` at once (naming the reset time); 403/429 with `Retry-After` <= 60 s, 429
without it, 5xx, connection errors and broken bodies are retried (exponential backoff,
`Retry-After` honoured, `settings.retries` tries in all), then `rate_limited` /
`http_error` / `network_error`; 403/429 asking to wait more than 60 s -> `rate_limited`, and a
5xx asking that -> `http_error`, at once, naming the time asked for; a wait of more than 2 s
is announced through `notify` (stderr in the CLI);
404/410 -> `not_found`; any other unexpected status -> `http_error`. Every `http_error` and
`not_found` is a `FetchError` whose `status` (also `details["status"]`) says the HTTP status.

Thread safety: one client may be shared by a thread pool. Its transports hold their
connection pools (sized for `settings.parallel`, thread-safe); requests' sends each request with
`HTTPAdapter.send(PreparedRequest)` — no `requests.Session`: sessions are not thread-safe, and
`Session.send` reads a redirect's whole body even with `allow_redirects=False` (an endless
redirect body would never end). So there is no shared mutable state besides the pools: no
cookie jar (cookies are ignored), no `~/.netrc` (nothing reads it, as `trust_env = False` would
give), no hooks. Proxies (`HTTPS_PROXY`, `NO_PROXY`, ...) and `REQUESTS_CA_BUNDLE` /
`CURL_CA_BUNDLE` are read from the environment, and loopback hosts never go through a proxy.

Secrets: the token is sent only to origins (scheme, host, port) listed in `token_hosts`, and
only while a redirect chain stays on its first origin. It never appears in messages,
details or reprs; URLs are shown through `redact_url` (no credentials, no signed query).
"""

from __future__ import annotations

import email.utils
import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping
from urllib.parse import urljoin, urlsplit

from pkgmgr import __version__
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.net.fetcher import FetchError
from pkgmgr.net.hashing import CHUNK, digests_equal
from pkgmgr.net.transport import (
    RequestsTransport,
    StdlibTransport,
    TransportFailure,
    _BrokenBody,
    _describe,
    is_loopback_host,
)
from pkgmgr.patterns import HEX64_ANY_CASE
from pkgmgr.redact import redact_url  # re-exported: the one redaction (pkgmgr.redact)

if TYPE_CHECKING:
    from pathlib import Path

    from pkgmgr.config import NetworkSettings
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.progress import Reporter

MAX_REDIRECTS = 10
MAX_RETRY_WAIT = 60.0
ANNOUNCED_WAIT = 2.0  # a longer wait between retries is announced (SPEC 6)
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_SMALL_DRAIN = 64 * 1024
_HEX64 = HEX64_ANY_CASE
_CROSS_ORIGIN_DROP = frozenset({"authorization", "cookie", "proxy-authorization"})
_NOT_IN_URL = re.compile(r"[\s\x00-\x1f\x7f]")  # \s is str.isspace's whitespace: one search, not a loop per character


# --------------------------------------------------------------------------- URL policy


class UrlNotAllowed(PkgmgrError):
    """A URL the policy refuses (SPEC 5.1). Code `usage`: callers that read the URL from a
    registry or a config re-raise it with their own code (`invalid_index`, `invalid_config`)."""

    code = Code.USAGE


def check_url_allowed(url: str, *, insecure: bool) -> None:
    """Refuse a URL pkgmgr must not fetch: anything but `https://` without credentials or a
    fragment, except `http://` to a loopback host (or any host when `insecure`).

    Raises `UrlNotAllowed` (a `PkgmgrError` with code `usage`); re-raise with your own code.
    """
    shown = redact_url(url)
    if not isinstance(url, str) or _NOT_IN_URL.search(url) is not None:
        raise UrlNotAllowed(f"{shown}: not a valid URL (whitespace or control characters)")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise UrlNotAllowed(f"{shown}: not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise UrlNotAllowed(f"{shown}: only https:// URLs are allowed")
    if not host:
        raise UrlNotAllowed(f"{shown}: the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise UrlNotAllowed(f"{shown}: URLs must not carry credentials")
    if "#" in url:
        raise UrlNotAllowed(f"{shown}: URLs must not have a fragment")
    if scheme == "http" and not insecure and not is_loopback_host(host):
        raise UrlNotAllowed(
            f"{shown}: plain http:// is allowed only for loopback hosts",
            hint="use https://, or add the registry with --insecure",
        )


def check_redirect(source: str, target: str, *, insecure: bool) -> None:
    """A redirect may never go from https to http, and its target must pass
    `check_url_allowed`. Raises `PkgmgrError(network_error)` (the server chose the URL)."""
    try:
        downgrade = urlsplit(source).scheme.lower() == "https" and urlsplit(target).scheme.lower() != "https"
    except ValueError:
        downgrade = False  # check_url_allowed below refuses the malformed target
    if downgrade:
        raise PkgmgrError(
            f"{redact_url(source)}: refusing a redirect from https to {redact_url(target)}",
            code=Code.NETWORK_ERROR,
            details={"url": redact_url(source), "location": redact_url(target)},
        )
    try:
        check_url_allowed(target, insecure=insecure)
    except UrlNotAllowed as exc:
        raise PkgmgrError(
            f"{redact_url(source)}: refusing a redirect: {exc.message}",
            code=Code.NETWORK_ERROR,
            details={"url": redact_url(source), "location": redact_url(target)},
        ) from None


def origin(url: str) -> str:
    """`scheme://host:port` with the default port made explicit (how token hosts compare)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = 443 if scheme == "https" else 80
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def _origin_of_entry(entry: str) -> str:
    """A `token_hosts` entry: a URL/origin, or a bare `host[:port]` meaning https."""
    return origin(entry if "://" in entry else f"https://{entry}")


def token_from_env() -> str | None:
    """`GITHUB_TOKEN`, else `GH_TOKEN`; None when neither is set (or both are empty)."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class SmallResponse:
    """A small document: `status` 200 (body set) or 304 (body None, the caller's copy holds).

    `etag`/`last_modified` are the server's validators (on a 304 without them, the ones sent);
    `url` is the final URL after redirects; `headers` the final response's headers.
    """

    status: int
    body: bytes | None
    etag: str | None
    last_modified: str | None
    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Downloaded:
    """A verified file in the download cache."""

    path: Path
    sha256: str
    size: int
    from_cache: bool


class _Transient(Exception):
    """Internal: an attempt failed in a way worth retrying; `error` is what the user sees."""

    def __init__(self, error: PkgmgrError, wait: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.wait = wait


# --------------------------------------------------------------------------- the client


class HttpClient:
    """Fetches small documents and archives with pkgmgr's network rules (module docstring).

    `backoff_base` (default `settings.backoff_base` if it exists, else 1 s) and `sleep` exist
    so tests never wait; `pool_size` overrides the per-host connection pool size; `notify`
    receives a line for every wait between retries longer than `ANNOUNCED_WAIT`.
    `stdlib_first_hop` False sends every request through requests (tests compare the two paths).
    """

    def __init__(
        self,
        settings: NetworkSettings,
        *,
        token: str | None = None,
        token_hosts: frozenset[str] = frozenset(),
        offline: bool = False,
        user_agent: str = f"pkgmgr/{__version__}",
        backoff_base: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        pool_size: int | None = None,
        notify: Callable[[str], None] | None = None,
        stdlib_first_hop: bool = True,
    ) -> None:
        if token is not None:
            token = token.strip() or None
        if token is not None and any(ch.isspace() or ord(ch) < 0x20 or ord(ch) >= 0x7F for ch in token):
            raise PkgmgrError("the GitHub token contains invalid characters", code=Code.INVALID_CONFIG)
        self._settings = settings
        self._token = token
        self._token_origins = frozenset(_origin_of_entry(h) for h in token_hosts)
        self.offline = offline
        self._backoff = float(backoff_base if backoff_base is not None else getattr(settings, "backoff_base", 1.0))
        self._sleep = sleep
        self._notify = notify
        self._attempts = max(1, int(settings.retries))
        self._pool_size = pool_size or max(10, 2 * int(settings.parallel))
        self._headers = {"User-Agent": user_agent, "Accept": "*/*"}
        # the one client's two transports (pkgmgr.net.transport): the standard library's for a
        # GET's first hop while requests is not loaded, requests' (imported on first use) for the rest
        self._stdlib = StdlibTransport(settings, self._pool_size)
        self._stack = RequestsTransport(settings, self._pool_size)
        self._stdlib_first_hop = stdlib_first_hop

    @property
    def has_token(self) -> bool:
        return self._token is not None

    def __repr__(self) -> str:
        token = "'***'" if self._token else "None"
        return f"HttpClient(token={token}, token_hosts={sorted(self._token_origins)!r}, offline={self.offline})"

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every pooled connection (the client stays usable; pools reopen on demand)."""
        self._stdlib.close()
        self._stack.close()

    # ------------------------------------------------------------------ public API

    def get_small(
        self,
        url: str,
        *,
        etag: str | None = None,
        last_modified: str | None = None,
        max_bytes: int,
        accept: str | None = None,
        insecure: bool = False,
        extra_headers: Mapping[str, str] | None = None,
    ) -> SmallResponse:
        """GET a small document, conditionally when `etag`/`last_modified` are given.

        The body may be gzip-encoded on the wire (decoded in bounded steps); more than
        `max_bytes` decoded bytes -> `archive_too_large`. Raises `UrlNotAllowed` (usage) for
        a refused URL and the `PkgmgrError`s of the module docstring.
        """
        check_url_allowed(url, insecure=insecure)
        self._check_online(url)
        validators = {"If-None-Match": etag, "If-Modified-Since": last_modified}
        headers = _request_headers(extra_headers, "gzip", accept, validators)
        conditional = bool(etag or last_modified)

        def attempt() -> SmallResponse:
            resp = self._open(url, headers, insecure=insecure, allow_304=conditional, plain=self._plain_first())
            try:
                final = resp.url
                resp_headers = resp.headers
                if resp.status_code == 304:
                    return SmallResponse(
                        304,
                        None,
                        resp.headers.get("ETag") or etag,
                        resp.headers.get("Last-Modified") or last_modified,
                        final,
                        resp_headers,
                    )
                encoded = resp.headers.get("Content-Encoding", "identity").strip().lower() not in ("", "identity")
                if not encoded:
                    self._refuse_announced(resp, max_bytes, None, final)
                body = bytearray()
                for chunk in self._iter_body(resp, limit=max_bytes, decode=True, shown=redact_url(final),
                                             size=max_bytes):
                    body += chunk
                if len(body) > max_bytes:
                    raise self._too_large(final, max_bytes)
                return SmallResponse(
                    200, bytes(body), resp.headers.get("ETag"), resp.headers.get("Last-Modified"), final, resp_headers
                )
            finally:
                self._release(resp)

        return self._retrying(attempt)

    def download(
        self,
        url: str,
        *,
        expected_sha256: str | None,
        expected_size: int | None,
        cache: DownloadCache,
        reporter: Reporter,
        key: str,
        label: str,
        max_bytes: int,
        accept: str | None = None,
        insecure: bool = False,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Downloaded:
        """Download an archive into `cache`, verifying it while it streams.

        A cached file with `expected_sha256` (re-verified) is returned without any request,
        even offline. The body is requested with `Accept-Encoding: identity` and hashed raw
        (never content-decoded). `expected_size` is exact: more -> `archive_too_large` (read
        stops at size + 1 bytes), less -> `checksum_mismatch`; without it `max_bytes` caps the
        body (`archive_too_large`). A wrong sha256 -> `checksum_mismatch`. On any failure the
        temporary file is deleted and the cache is unchanged. Raises `ValueError` for a
        malformed `expected_sha256`.
        """
        expected = _normalise_sha256(expected_sha256) if expected_sha256 is not None else None
        if expected_size is not None and expected_size > max_bytes:
            raise PkgmgrError(
                f"{redact_url(url)}: the archive is {expected_size} bytes, over the {max_bytes}-byte limit",
                code=Code.ARCHIVE_TOO_LARGE,
                details={"url": redact_url(url), "size": expected_size, "limit": max_bytes},
            )
        if expected is not None:
            cached = cache.get(expected)
            if cached is not None:
                size = cached.stat().st_size
                if expected_size is not None and size != expected_size:
                    raise self._mismatch(url, f"the expected sha256 names a file of {size} bytes, not {expected_size}")
                return Downloaded(cached, expected, size, True)
        check_url_allowed(url, insecure=insecure)
        self._check_online(url)
        headers = _request_headers(extra_headers, "identity", accept)
        limit = expected_size if expected_size is not None else max_bytes

        def attempt() -> Downloaded:
            resp = self._open(url, headers, insecure=insecure, allow_304=False, plain=self._plain_first())
            try:
                final = resp.url
                announced = self._refuse_announced(resp, limit, expected_size, final)
                with cache.incoming() as incoming:
                    digest = hashlib.sha256()
                    write = incoming.file.write
                    total = 0
                    size = expected_size if expected_size is not None else announced
                    reporter.download_answered(key, size)
                    for chunk in self._iter_body(resp, limit=limit, decode=False, shown=redact_url(final),
                                                 size=limit if size is None else size):
                        digest.update(chunk)
                        write(chunk)
                        total += len(chunk)
                        reporter.download_advanced(key, len(chunk))
                    if total > limit:
                        raise self._too_large(final, limit)
                    if expected_size is not None and total != expected_size:
                        raise self._mismatch(final, f"received {total} bytes, expected {expected_size}")
                    actual = digest.hexdigest()
                    if expected is not None and not digests_equal(actual, expected):
                        raise self._mismatch(final, f"sha256 is {actual}, expected {expected}", actual=actual)
                    path = incoming.commit(actual)
                return Downloaded(path, actual, total, False)
            finally:
                self._release(resp)

        # shown from the request on: a slow server's wait for the first byte is progress too
        reporter.download_started(key, label, expected_size)
        try:
            return self._retrying(attempt)
        finally:
            reporter.download_finished(key)

    def send(
        self,
        method: str,
        url: str,
        *,
        ok: frozenset[int],
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int = 64 * 1024,
        insecure: bool = False,
    ) -> SmallResponse:
        """Send one request (PUT, POST, HEAD, ...: the OCI distribution API) and return its
        status, headers and small body when the status is in `ok`. Redirects are not followed
        (one is an `http_error`); other statuses map as for GET (module docstring), and
        transient failures are retried. The token rule holds as for GET: the GitHub token goes
        only to its hosts, and the caller's `Authorization` goes where the caller sends it."""
        check_url_allowed(url, insecure=insecure)
        self._check_online(url)
        base = _request_headers(headers, "identity", None)

        def attempt() -> SmallResponse:
            try:
                resp = self._stack.open(method, url, self._headers_for(url, True, base), body)
            except TransportFailure as failure:
                raise self._transport_error(failure, url) from None
            if resp.status_code not in ok:
                if resp.status_code in REDIRECT_STATUSES or resp.status_code == 200:
                    self._release(resp)
                    raise self._error(Code.HTTP_ERROR, f"{redact_url(url)}: unexpected HTTP {resp.status_code} to "
                                      f"{method}", url, resp.status_code)
                self._check_status(resp, allow_304=False)
            try:
                data = b""
                if method != "HEAD":
                    data = b"".join(self._iter_body(resp, limit=max_bytes, decode=True, shown=redact_url(url),
                                                    size=max_bytes))
                    if len(data) > max_bytes:
                        raise self._too_large(url, max_bytes)
                return SmallResponse(resp.status_code, data, resp.headers.get("ETag"), None, url, resp.headers)
            finally:
                self._release(resp)

        return self._retrying(attempt)

    # ------------------------------------------------------------------ internals

    def _plain_first(self) -> bool:
        """Whether a GET's first hop goes out through the standard library (`StdlibTransport`): while
        requests is not loaded. A command whose requests all get an answer then never imports
        requests, urllib3, charset_normalizer or idna (~0.1 s); once something needed requests
        (a redirect, a failure before any response), the rest of the command uses it."""
        return self._stdlib_first_hop and not self._stack.loaded

    def _check_online(self, url: str) -> None:
        if self.offline:
            raise PkgmgrError(
                f"offline: not fetching {redact_url(url)}",
                code=Code.NETWORK_ERROR,
                details={"url": redact_url(url), "offline": True},
                hint="run without --offline",
            )

    def _retrying(self, attempt: Callable[[], Any]) -> Any:
        tries = 0
        while True:
            tries += 1
            try:
                return attempt()
            except _Transient as transient:
                if tries >= self._attempts:
                    raise transient.error from None
                wait = transient.wait
                if wait is None:
                    wait = self._backoff * (2 ** (tries - 1))
                wait = min(max(wait, 0.0), MAX_RETRY_WAIT)
                if wait > ANNOUNCED_WAIT and self._notify is not None:
                    self._notify(f"{transient.error.message}; retrying in {wait:.0f} s "
                                 f"(attempt {tries + 1} of {self._attempts})")
                self._sleep(wait)

    def _headers_for(self, url: str, on_first_origin: bool, base: Mapping[str, str]) -> dict[str, str]:
        """Headers of one hop. While the chain has not left its first origin: the caller's
        headers, plus the token when that origin is a token host. Once it left (even if it
        comes back): no token, and no caller Authorization/Cookie/Proxy-Authorization."""
        if on_first_origin:
            headers = {**self._headers, **base}
            if self._token is not None and origin(url) in self._token_origins:
                headers["Authorization"] = f"Bearer {self._token}"
        else:
            headers = {**self._headers, **{k: v for k, v in base.items() if k.lower() not in _CROSS_ORIGIN_DROP}}
        return headers

    def _open(self, url: str, headers: Mapping[str, str], *, insecure: bool, allow_304: bool,
              plain: bool = False) -> Any:
        """Send GET, following redirects by hand; return a streaming 200 (or allowed 304). With
        `plain`, the first hop goes to the standard library's transport (requests' sends it when
        that one cannot)."""
        first_origin = origin(url)
        on_first_origin = True
        seen = {url}
        current = url
        for hop in range(MAX_REDIRECTS + 1):
            on_first_origin = on_first_origin and origin(current) == first_origin
            sent = self._headers_for(current, on_first_origin, headers)
            try:
                resp: Any = self._stdlib.open("GET", current, sent) if plain and not hop else None
                if resp is None:
                    resp = self._stack.open("GET", current, sent)
            except TransportFailure as failure:
                raise self._transport_error(failure, current) from None
            if resp.status_code in REDIRECT_STATUSES:
                location = resp.headers.get("Location")
                self._release(resp)
                if not location:
                    raise self._error(
                        Code.HTTP_ERROR, f"{redact_url(current)}: redirect without a Location", current, resp.status_code
                    )
                try:
                    target = urljoin(current, location.strip())
                except ValueError:
                    target = location.strip()  # malformed: check_redirect refuses it
                check_redirect(current, target, insecure=insecure)
                if target in seen:
                    raise self._error(Code.NETWORK_ERROR, f"{redact_url(url)}: redirect loop at {redact_url(target)}", url)
                seen.add(target)
                current = target
                continue
            self._check_status(resp, allow_304=allow_304)
            return resp
        raise self._error(Code.NETWORK_ERROR, f"{redact_url(url)}: more than {MAX_REDIRECTS} redirects", url)

    def _check_status(self, resp: Any, *, allow_304: bool) -> None:
        status = resp.status_code
        if status == 200 or (status == 304 and allow_304):
            return
        url = resp.url
        shown = redact_url(url)
        reason = self._error_reason(resp)
        what = f"{shown}: HTTP {status}{reason}"
        headers = resp.headers
        self._release(resp)
        if status in (403, 429):
            remaining = headers.get("X-RateLimit-Remaining")
            if remaining is not None and remaining.strip() == "0":
                reset = _reset_time(headers.get("X-RateLimit-Reset"))
                when = f"; it resets at {reset}" if reset else ""
                raise self._error(
                    Code.RATE_LIMITED, f"{what}: rate limit exhausted{when}", url, status, reset=reset,
                    hint=self._token_hint(url),
                )
            wait = _retry_after(headers.get("Retry-After"))
            if wait is not None and wait > MAX_RETRY_WAIT:
                raise self._error(
                    Code.RATE_LIMITED, f"{what}: rate limited, asked to wait {int(wait)} s", url, status, retry_after=wait
                )
            if wait is not None or status == 429:
                raise _Transient(self._error(Code.RATE_LIMITED, f"{what}: rate limited", url, status), wait)
            raise self._error(Code.AUTH_REQUIRED, f"{what}: access denied", url, status, hint=self._token_hint(url))
        if status == 401:
            hint = self._token_hint(url)
            raise self._error(Code.AUTH_REQUIRED, f"{what}: authentication required", url, status, hint=hint,
                              www_authenticate=_printable(headers.get("WWW-Authenticate")))
        if status in (404, 410):
            raise self._error(Code.NOT_FOUND, f"{what}: not found", url, status)
        if status >= 500:
            wait = _retry_after(headers.get("Retry-After"))
            if wait is not None and wait > MAX_RETRY_WAIT:
                raise self._error(Code.HTTP_ERROR, f"{what}: server error, asked to retry after {int(wait)} s "
                                  f"(more than pkgmgr waits, {int(MAX_RETRY_WAIT)} s)", url, status, retry_after=wait)
            raise _Transient(self._error(Code.HTTP_ERROR, f"{what}: server error", url, status), wait)
        raise self._error(Code.HTTP_ERROR, f"{what}: unexpected response", url, status)

    def _token_hint(self, url: str) -> str | None:
        if origin(url) not in self._token_origins:
            return None
        if self._token is None:
            return "set GITHUB_TOKEN (or GH_TOKEN) for private repositories and higher rate limits"
        return "check that GITHUB_TOKEN (or GH_TOKEN) is valid and may read this repository"

    def _error_reason(self, resp: Any) -> str:
        """`: <message>` from a small JSON error body ({"message": ...}), else ''."""
        if "json" not in resp.headers.get("Content-Type", ""):
            return ""
        from pkgmgr.documents import DocumentError, decode_json

        try:
            text = b"".join(self._iter_body(resp, limit=4096, decode=True, shown="", size=4096))
            data = decode_json(text, max_bytes=4096)
        except (PkgmgrError, _Transient, DocumentError):
            return ""
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, str) or not message:
            return ""
        clean = "".join(ch if ch.isprintable() else " " for ch in message)[:200]
        return f" ({self._scrub(clean)})"

    def _release(self, resp: Any) -> None:
        """Finish with a response. One with nothing left to read (a 304, a consumed body)
        goes back to the pool; any other is closed: a rest is never read, however small
        (it could drip)."""
        if getattr(resp.raw, "length_remaining", None) == 0:
            try:
                resp.raw.drain_conn()
            except Exception:  # noqa: BLE001 - the connection is dropped by close() below
                pass
        resp.close()

    def _refuse_announced(self, resp: Any, limit: int, expected_size: int | None, url: str) -> int | None:
        """Content-Length over the limit -> refuse before reading. Returns the length."""
        value = resp.headers.get("Content-Length")
        if value is None:
            return None
        try:
            announced = int(value)
        except ValueError:
            return None
        if announced > limit:
            if expected_size is not None:
                raise PkgmgrError(
                    f"{redact_url(url)}: the server announces {announced} bytes, expected {expected_size}",
                    code=Code.ARCHIVE_TOO_LARGE,
                    details={"url": redact_url(url), "size": announced, "expected": expected_size},
                )
            raise self._too_large(url, limit, announced=announced)
        return announced

    def _iter_body(self, resp: Any, *, limit: int, decode: bool, shown: str, size: int) -> Iterator[bytes]:
        """Yield the body in chunks of at most 1 MiB, stopping once more than `limit` bytes
        arrived (the caller sees the overflow). With `decode`, a gzip or deflate
        Content-Encoding is decoded here (`_ContentDecoder`, whatever the transport), the bytes on
        the wire capped too (`_raw_limit`). Enforces the minimum average rate and the deadline for
        a body of `size` bytes (module docstring); neither is retried."""
        read1 = resp.raw.read1
        min_rate = float(self._settings.min_rate)
        after = float(self._settings.min_rate_after)
        deadline = self._deadline(size)
        encoding = resp.headers.get("Content-Encoding", "").strip().lower() if decode else ""
        decoder = _ContentDecoder(encoding) if encoding in _ENCODINGS else None
        raw_limit = _raw_limit(limit)
        start = time.monotonic()
        total = wire = 0
        while total <= limit:
            want = min(CHUNK, limit + 1 - total)
            try:
                if decoder is None:
                    chunk = read1(want, decode_content=False)
                else:
                    chunk = decoder.read(want)
                    if not chunk and not decoder.finished:  # all that came is decoded: more from the wire
                        if wire > raw_limit:
                            raise self._too_large(shown, raw_limit)
                        raw = read1(min(CHUNK, raw_limit + 1 - wire), decode_content=False)
                        if not raw:
                            return
                        wire += len(raw)
                        decoder.feed(raw)
                        self._check_deadline(shown, start, deadline, total, size)
                        continue
            except _TooManyMembers as flood:
                raise FetchError(f"{shown}: the server's gzip encoding of the response holds {flood.members} "
                                 f"members for {total} bytes of content; pkgmgr refuses it",
                                 code=Code.HTTP_ERROR, url=shown, members=flood.members) from None
            except self._body_errors() as exc:
                raise self._body_error(exc, shown, total) from None
            if not chunk:
                return
            total += len(chunk)
            yield chunk
            if min_rate > 0:
                elapsed = time.monotonic() - start
                if elapsed >= after and total < min_rate * elapsed:
                    raise PkgmgrError(
                        f"{shown}: too slow ({total / elapsed:.0f} bytes/s on average, "
                        f"the minimum is {min_rate:.0f} bytes/s)",
                        code=Code.NETWORK_ERROR,
                        details={"url": shown, "received": total, "seconds": round(elapsed, 3)},
                    )
            self._check_deadline(shown, start, deadline, total, size)

    @staticmethod
    def _check_deadline(shown: str, start: float, deadline: float | None, total: int, size: int) -> None:
        if deadline is not None and time.monotonic() - start > deadline:
            raise PkgmgrError(
                f"{shown}: not received within {deadline:.0f} s ({total} of {size} bytes arrived; "
                "the deadline is network.deadline + size / network.deadline_rate)",
                code=Code.NETWORK_ERROR,
                details={"url": shown, "received": total, "deadline": round(deadline, 3)},
            )

    def _deadline(self, size: int) -> float | None:
        """Seconds a body of `size` bytes may take in all (`deadline_rate` 0: no deadline)."""
        rate = float(getattr(self._settings, "deadline_rate", 0.0))
        if rate <= 0:
            return None
        return float(getattr(self._settings, "deadline", 0.0)) + max(size, 0) / rate

    def _transport_error(self, failure: TransportFailure, url: str) -> Exception:
        """Map a transport's failure before any response to a (possibly transient) error."""
        shown = redact_url(url)
        if failure.kind == "connect-timeout":
            return _Transient(self._error(Code.NETWORK_ERROR, f"{shown}: timed out connecting", url))
        if failure.kind == "read-timeout":
            return _Transient(self._error(Code.NETWORK_ERROR, f"{shown}: timed out waiting for the server", url))
        if failure.kind == "tls":
            return self._error(Code.NETWORK_ERROR, f"{shown}: TLS error ({failure.cause})", url)
        if failure.kind == "connect":
            return _Transient(self._error(Code.NETWORK_ERROR, f"{shown}: cannot connect ({failure.cause})", url))
        return self._error(Code.NETWORK_ERROR, f"{shown}: request failed ({failure.cause})", url)

    def _body_errors(self) -> tuple[type[BaseException], ...]:
        """What reading a body may raise: OSError (http.client's, zlib's), and requests' and
        urllib3's own once that transport is in use."""
        return self._stack.body_errors if self._stack.loaded else (OSError,)

    def _body_error(self, exc: BaseException, shown: str, received: int) -> Exception:
        timeouts = self._stack.timeout_errors if self._stack.loaded else (TimeoutError,)
        if isinstance(exc, timeouts):
            message = f"{shown}: timed out reading the body after {received} bytes"
        else:
            message = f"{shown}: connection broken after {received} bytes ({_describe(exc)})"
        return _Transient(self._error(Code.NETWORK_ERROR, message, shown, received=received))

    def _too_large(self, url: str, limit: int, *, announced: int | None = None) -> PkgmgrError:
        size = f" ({announced} bytes announced)" if announced is not None else ""
        return PkgmgrError(
            f"{redact_url(url)}: the response is larger than the {limit}-byte limit{size}",
            code=Code.ARCHIVE_TOO_LARGE,
            details={"url": redact_url(url), "limit": limit},
        )

    def _mismatch(self, url: str, why: str, *, actual: str | None = None) -> PkgmgrError:
        details: dict[str, Any] = {"url": redact_url(url)}
        if actual:
            details["actual"] = actual
        return PkgmgrError(f"{redact_url(url)}: checksum mismatch: {why}", code=Code.CHECKSUM_MISMATCH, details=details)

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    def _error(
        self, code: Code, message: str, url: str, status: int | None = None, *, hint: str | None = None, **extra: Any
    ) -> FetchError:
        return FetchError(self._scrub(message), code=code, url=redact_url(url), status=status, hint=hint, **extra)


# --------------------------------------------------------------------------- helpers


class _TooManyMembers(Exception):
    def __init__(self, members: int) -> None:
        super().__init__(members)
        self.members = members


_ENCODINGS = frozenset({"gzip", "x-gzip", "deflate"})
GZIP_MEMBERS_FREE = 16  # as for archives (pkgmgr.archive.limits): members must pay for themselves
GZIP_MEMBER_BYTES = 32 * 1024


def _raw_limit(limit: int) -> int:
    """The bytes on the wire a decoded body of at most `limit` bytes may take (compression never
    makes a document much larger; an encoded body that does is refused, not read without end)."""
    return 2 * limit + 64 * 1024


class _ContentDecoder:
    """A gzip or deflate Content-Encoding decoded in bounded steps (`feed` what arrives, `read`
    at most `amt` decoded bytes; b"" when it needs more), as urllib3 decodes it: deflate as zlib,
    else raw deflate; several gzip members read through, garbage after a complete one ignored.
    Each gzip member after the first must pay for itself as in an archive
    (`GZIP_MEMBERS_FREE`, plus one for every `GZIP_MEMBER_BYTES` decoded; else
    `_TooManyMembers`): 2.5 million empty members took minutes to decode to nothing."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._d: Any = None
        self._pending = b""
        self._members = 1
        self._complete = False  # a member ended: another may follow, or garbage (ignored)
        self._produced = 0
        self.finished = False  # the rest of the body is ignored

    def feed(self, data: bytes) -> None:
        if not self.finished:
            self._pending = self._pending + data if self._pending else data

    def read(self, amt: int) -> bytes:
        import zlib

        while self._pending and not self.finished:
            if self._d is None:
                if self._complete:
                    self._members += 1
                    if self._members > GZIP_MEMBERS_FREE + self._produced // GZIP_MEMBER_BYTES:
                        raise _TooManyMembers(self._members)
                wbits = zlib.MAX_WBITS if self._encoding == "deflate" else (
                    -zlib.MAX_WBITS if self._encoding == "raw-deflate" else 16 + zlib.MAX_WBITS)
                self._d = zlib.decompressobj(wbits)
            data, self._pending = self._pending, b""
            try:
                out = self._d.decompress(data, amt)
            except zlib.error as exc:
                if self._encoding == "deflate" and not self._complete and self._produced == 0:
                    self._encoding, self._d, self._pending = "raw-deflate", None, data  # as urllib3 retries
                    continue
                if self._complete and self._encoding in ("gzip", "x-gzip"):
                    self.finished = True  # garbage after a complete member: ignored, as urllib3 does
                    return b""
                raise _BrokenBody(exc) from exc
            if self._d.eof:
                self._pending, self._d, self._complete = self._d.unused_data, None, True
                if self._encoding not in ("gzip", "x-gzip"):
                    self.finished = True  # one deflate stream: what follows is ignored
            else:
                self._pending = self._d.unconsumed_tail
            if out:
                self._produced += len(out)
                return bytes(out)
        return b""


def _request_headers(
    extra: Mapping[str, str] | None, encoding: str, accept: str | None, optional: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    headers = dict(extra or {})
    headers["Accept-Encoding"] = encoding
    headers.update({name: value for name, value in {"Accept": accept, **(optional or {})}.items() if value})
    return headers


def _printable(value: str | None) -> str | None:
    """A header value as it may be shown (a challenge: printable ASCII, at most 512 characters)."""
    if value is None:
        return None
    return "".join(ch if 0x20 <= ord(ch) < 0x7F else " " for ch in value)[:512]


def _normalise_sha256(value: str) -> str:
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise ValueError("expected_sha256 must be 64 hex digits")
    return value.lower()


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent/bad."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _reset_time(value: str | None) -> str | None:
    """X-RateLimit-Reset (epoch seconds) as an ISO 8601 UTC time."""
    if value is None:
        return None
    try:
        stamp = datetime.fromtimestamp(int(value.strip()), tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


