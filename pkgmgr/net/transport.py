"""The transports behind the one HTTP client (`pkgmgr.net.http.HttpClient`): how a request gets
on the wire, and nothing else. The client owns every rule — the URL policy, the token rule,
redirects, the status mapping, retries, caps, Content-Encoding, the minimum rate and the
deadline — and asks a `Transport` for one hop at a time (`open`), then reads the response's
bytes as they are on the wire (`raw.read1(n, decode_content=False)`).

- `StdlibTransport`: `http.client` with keep-alive connections of its own, for a GET's first
  hop while nothing has needed requests (it costs ~0.1 s to import requests, urllib3,
  charset_normalizer and idna: `docs/performance.md`). It answers `None` — the client then asks
  the requests transport — when a proxy variable is set for a non-loopback host or the request
  fails before any response.
- `RequestsTransport`: requests' `HTTPAdapter` (urllib3 pools, proxies and CA bundle from the
  environment), imported on first use: every other hop and every other method.

Both bound the status line and headers in all by `read_timeout` (`_Watchdog`), and raise
`TransportFailure` (what went wrong, said without the exception's own text, which can quote
URLs and headers) for a failure before any response.
"""

from __future__ import annotations

import functools
import heapq
import ipaddress
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pkgmgr.config import NetworkSettings


@functools.lru_cache(maxsize=64)  # pure; asked for every request (~60 µs of ipaddress each)
def is_loopback_host(host: str | None) -> bool:
    """127.0.0.0/8, `localhost` and ::1 (host as `urlsplit(...).hostname` gives it)."""
    if not host:
        return False
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _BrokenBody(OSError):
    """A body http.client or zlib could not read (`_describe` names the cause, as it names
    urllib3's `ProtocolError`/`DecodeError` causes)."""


class TransportFailure(Exception):
    """A request that got no response: `kind` is `connect-timeout`, `read-timeout`, `tls`,
    `connect` (refused, reset: worth retrying) or `other`; `cause` a short description."""

    def __init__(self, kind: str, cause: str) -> None:
        super().__init__(kind, cause)
        self.kind = kind
        self.cause = cause


class Response(Protocol):
    """What a transport hands back: `status_code`, `url`, case-insensitive `headers`, `raw` (with
    `read1(n, decode_content=False)` and `length_remaining`) and `close()`."""

    status_code: int
    url: str
    headers: Any
    raw: Any

    def close(self) -> None: ...


class Transport(Protocol):
    def open(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None = None) -> Response | None:
        """Send one request and return its response (status line and headers read, the body
        not yet), whatever the status; None when this transport cannot send it. Raises
        TransportFailure."""
        ...

    def close(self) -> None: ...


class StdlibTransport:
    """GETs over `http.client` (module docstring); `pool_size` idle connections per origin."""

    def __init__(self, settings: NetworkSettings, pool_size: int) -> None:
        self._settings = settings
        self._pool = _PlainPool(pool_size)

    def close(self) -> None:
        self._pool.close()

    def open(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None = None) -> Response | None:
        """A GET with the standard library's `http.client` (no requests, urllib3,
        charset_normalizer or idna imported). `connect_timeout` bounds connecting and the TLS
        handshake, `read_timeout` each read and the status line and headers in all (the
        watchdog), as `_header_deadline_pools` does for requests; a timeout is a
        TransportFailure as requests' would be. The CA bundle is the one requests would use
        (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, else certifi). None when a proxy variable is set (for
        a non-loopback host), for another method or a body, and when the request fails before
        any response (refused, reset, TLS, a kept-alive connection the server closed): requests
        then reports the failure as it always has."""
        import socket

        if method != "GET" or body is not None:
            return None
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        try:
            host = parts.hostname
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            return None
        if scheme not in ("http", "https") or not host or (not is_loopback_host(host) and _proxy_in_environment()):
            return None
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        key = (scheme, host, port)
        conn = self._pool.take(key)
        try:
            if conn is None:
                conn = self._connect(scheme, host, port)
            conn.sock.settimeout(float(self._settings.read_timeout))
            sock = conn.sock

            def abort() -> None:
                try:
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)  # ends a blocked read
                except (OSError, TypeError):
                    pass

            token = _WATCHDOG.arm(float(self._settings.read_timeout), abort)
            try:
                conn.request("GET", target, headers=dict(headers))
                resp = conn.getresponse()
            except BaseException:
                if not _WATCHDOG.disarm(token):
                    raise TimeoutError("no complete response headers in time") from None
                raise
            if not _WATCHDOG.disarm(token):
                resp.close()
                raise TimeoutError("no complete response headers in time")
        except TransportFailure:
            self._pool.discard(conn)
            raise
        except TimeoutError:
            self._pool.discard(conn)
            raise TransportFailure("read-timeout", "timed out") from None
        except Exception:  # noqa: BLE001 - nothing was received: requests sends it and reports what it finds
            self._pool.discard(conn)
            return None
        return _PlainResponse(resp, conn, url, lambda: self._pool.give(key, conn))

    def _connect(self, scheme: str, host: str, port: int) -> Any:
        import http.client

        connect = float(self._settings.connect_timeout)
        conn: Any
        if scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=connect, context=self._pool.tls_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=connect)
        try:
            conn.connect()
        except TimeoutError:
            conn.close()
            raise TransportFailure("connect-timeout", "timed out") from None
        return conn


class RequestsTransport:
    """Any request over requests' `HTTPAdapter` (module docstring), one urllib3 pool per host of
    `pool_size` connections, shared by threads. requests is imported on first use (`loaded`)."""

    def __init__(self, settings: NetworkSettings, pool_size: int) -> None:
        self._settings = settings
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._stack: Any = None  # (requests, adapter, send errors, body errors, timeout errors)

    @property
    def loaded(self) -> bool:
        return self._stack is not None

    def _load(self) -> Any:
        with self._lock:
            if self._stack is None:
                import requests
                import requests.adapters
                import urllib3.exceptions

                adapter = requests.adapters.HTTPAdapter(pool_connections=16, pool_maxsize=self._pool_size,
                                                        max_retries=0)
                adapter.poolmanager.pool_classes_by_scheme = _header_deadline_pools(float(self._settings.read_timeout))
                send_errors = (requests.RequestException, urllib3.exceptions.HTTPError, ValueError, OSError)
                body_errors = (urllib3.exceptions.HTTPError, requests.RequestException, OSError)
                timeout_errors = (requests.exceptions.ReadTimeout, urllib3.exceptions.ReadTimeoutError, TimeoutError)
                self._stack = (requests, adapter, send_errors, body_errors, timeout_errors)
            return self._stack

    @property
    def body_errors(self) -> tuple[type[BaseException], ...]:
        """What reading a body may raise (requests' and urllib3's errors, OSError)."""
        return self._load()[3]

    @property
    def timeout_errors(self) -> tuple[type[BaseException], ...]:
        return self._load()[4]

    def close(self) -> None:
        if self._stack is not None:
            self._stack[1].close()

    def open(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None = None) -> Response:
        requests, adapter, send_errors, _, _ = self._load()
        timeout = (self._settings.connect_timeout, self._settings.read_timeout)
        try:
            request = requests.Request(method, url, headers=dict(headers), data=body)
            return adapter.send(request.prepare(), stream=True, timeout=timeout, **self._environment(url))
        except send_errors as exc:
            raise self._failure(exc) from None

    def _environment(self, url: str) -> dict[str, Any]:
        """Proxies and CA bundle from the environment (what `trust_env` gives, minus netrc)."""
        proxies = {} if is_loopback_host(urlsplit(url).hostname) else self._load()[0].utils.get_environ_proxies(url)
        verify: Any = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        return {"proxies": proxies, "verify": verify}

    def _failure(self, exc: BaseException) -> TransportFailure:
        exceptions = self._load()[0].exceptions
        if isinstance(exc, exceptions.ConnectTimeout):
            return TransportFailure("connect-timeout", "timed out")
        if isinstance(exc, exceptions.ReadTimeout):
            return TransportFailure("read-timeout", "timed out")
        if isinstance(exc, exceptions.SSLError):
            return TransportFailure("tls", _describe(exc))
        if isinstance(exc, (exceptions.ConnectionError, exceptions.ChunkedEncodingError)):
            return TransportFailure("connect", _describe(exc))
        return TransportFailure("other", _describe(exc))


def _proxy_in_environment() -> bool:
    """Whether any `*_proxy` variable is set (requests would consult it): the stdlib path then
    steps aside for every non-loopback host, whatever `no_proxy` says."""
    return any(name.lower().endswith("_proxy") and name.lower() != "no_proxy" and value
               for name, value in os.environ.items())


class _Headers(dict):
    """Response headers looked up case-insensitively (as requests' `CaseInsensitiveDict`),
    repeated fields joined with ", " (as urllib3 joins them)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        super().__init__()
        self._names: dict[str, str] = {}
        for name, value in pairs:
            lower = name.lower()
            if lower in self._names:
                first = self._names[lower]
                super().__setitem__(first, f"{dict.__getitem__(self, first)}, {value}")
            else:
                self._names[lower] = name
                super().__setitem__(name, value)

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, self._names.get(name.lower(), name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._names

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default


class _PlainResponse:
    """An `http.client` response with the surface of a streaming requests one that `_open`,
    `_check_status`, `_iter_body` and `_release` use: `status_code`, `url`, case-insensitive
    `headers`, `raw.read1(amt, decode_content=False)` (the bytes on the wire: `_iter_body`
    decodes a Content-Encoding itself, for either transport; a body shorter than its
    Content-Length is an error, as urllib3's `enforce_content_length`), and `close()`, which
    gives a fully read connection back to the pool and closes any other."""

    length_remaining = None  # `_release`: nothing to drain, `close()` decides

    def __init__(self, resp: Any, conn: Any, url: str, reuse: Callable[[], None]) -> None:
        self._resp = resp
        self._conn = conn
        self._reuse = reuse
        self.url = url
        self.status_code = int(resp.status)
        self.headers = _Headers(resp.getheaders())
        self.raw = self
        self._done = False

    def read1(self, amt: int, decode_content: bool = False) -> bytes:
        import http.client

        if decode_content:
            raise ValueError("_PlainResponse hands out the bytes on the wire; _iter_body decodes them")
        resp = self._resp
        if amt <= 0:
            return b""
        try:
            left = resp.length
            data = resp.read1(amt)
            if not data:
                if left:  # the server closed before its Content-Length
                    raise http.client.IncompleteRead(b"", left)
                self._done = True
            elif resp.length == 0:
                self._done = True
        except http.client.HTTPException as exc:
            raise _BrokenBody(exc) from exc
        return data

    def close(self) -> None:
        resp = self._resp
        complete = self._done or resp.isclosed() or (resp.length == 0 and not resp.chunked)  # 0: a 304 too
        will_close = resp.will_close
        resp.close()
        if complete and not will_close:
            self._reuse()
        else:
            self._conn.close()


class _PlainPool:
    """Idle keep-alive `http.client` connections by (scheme, host, port), shared by threads; one
    the server closed meanwhile (readable while idle) is dropped when taken."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, str, int], list[Any]] = {}
        self._tls: dict[str, Any] = {}

    def take(self, key: tuple[str, str, int]) -> Any:
        import select

        while True:
            with self._lock:
                idle = self._idle.get(key)
                conn = idle.pop() if idle else None
            if conn is None:
                return None
            readable = True
            try:
                readable = conn.sock is None or bool(select.select([conn.sock], [], [], 0)[0])
            except (OSError, ValueError):
                pass
            if not readable:
                return conn
            conn.close()

    def give(self, key: tuple[str, str, int], conn: Any) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self._size:
                idle.append(conn)
                return
        conn.close()

    def discard(self, conn: Any) -> None:
        if conn is not None:
            conn.close()

    def tls_context(self) -> Any:
        """The verifying context for the CA bundle requests would use now."""
        import ssl

        where = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        if not where:
            import certifi

            where = certifi.where()
        with self._lock:
            context = self._tls.get(where)
            if context is None:
                if os.path.isdir(where):
                    context = ssl.create_default_context(capath=where)
                else:
                    context = ssl.create_default_context(cafile=where)
                context.minimum_version = ssl.TLSVersion.TLSv1_2
                self._tls[where] = context
            return context

    def close(self) -> None:
        with self._lock:
            idle = [conn for conns in self._idle.values() for conn in conns]
            self._idle.clear()
        for conn in idle:
            conn.close()


class _Watchdog:
    """One daemon thread that calls each armed callback at its deadline, unless it was disarmed
    first (a thread per request costs ~0.1–0.7 ms to start; arming costs a heap push)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._thread: Any = None

    def arm(self, seconds: float, callback: Callable[[], None]) -> int:
        with self._cond:
            self._next += 1
            deadline = time.monotonic() + seconds
            earliest = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, self._next))
            self._armed[self._next] = callback
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pkgmgr-deadlines", daemon=True)
                self._thread.start()
            elif earliest:  # else the thread already waits for an earlier deadline, and re-checks then
                self._cond.notify()
            return self._next

    def disarm(self, token: int) -> bool:
        """True when disarmed in time; False when the callback has fired (or is firing)."""
        with self._cond:
            return self._armed.pop(token, None) is not None

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)  # disarmed
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, token = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                callback = self._armed.pop(token)
                self._cond.release()
                try:
                    callback()
                except Exception:  # noqa: BLE001 - a callback's failure must not stop the others' deadlines
                    pass
                finally:
                    self._cond.acquire()


_WATCHDOG = _Watchdog()


def _header_deadline_pools(seconds: float) -> dict[str, type]:
    """urllib3 pool classes whose connections must receive a response's status line and headers
    within `seconds` in all. The socket timeout bounds each read only; past the deadline the
    watchdog shuts the socket down, which ends the blocked read, and the wait is a read timeout."""
    import socket

    import urllib3.connection
    import urllib3.connectionpool

    def with_deadline(base: type) -> type:
        class Connection(base):
            def getresponse(self, *args: Any, **kwargs: Any) -> Any:
                sock = self.sock

                def abort() -> None:
                    try:
                        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # not SSLSocket's: no TLS state touched
                    except (OSError, TypeError):  # already closed, or no socket
                        pass

                token = _WATCHDOG.arm(seconds, abort)
                try:
                    response = super().getresponse(*args, **kwargs)
                except Exception:
                    if not _WATCHDOG.disarm(token):
                        raise TimeoutError(f"no complete response headers within {seconds:g} s") from None
                    raise
                if not _WATCHDOG.disarm(token):  # the headers arrived as the deadline passed
                    response.close()
                    raise TimeoutError(f"no complete response headers within {seconds:g} s")
                return response

        Connection.__name__ = Connection.__qualname__ = f"HeaderDeadline{base.__name__}"
        return Connection

    class HTTPPool(urllib3.connectionpool.HTTPConnectionPool):
        ConnectionCls = with_deadline(urllib3.connection.HTTPConnection)

    class HTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
        ConnectionCls = with_deadline(urllib3.connection.HTTPSConnection)

    return {"http": HTTPPool, "https": HTTPSPool}


def _describe(exc: BaseException) -> str:
    """A short cause for an exception chain (the OS error text, else a class name), never the
    exception's own text: requests and urllib3 put full URLs in theirs."""
    seen: set[int] = set()
    current: BaseException | None = exc
    names: list[str] = []
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        names.append(type(current).__name__)
        nested = getattr(current, "reason", None)
        if not isinstance(nested, BaseException):
            nested = next((a for a in current.args if isinstance(a, BaseException)), None)
        current = nested or current.__cause__ or current.__context__
    meaningful = [n for n in names if n not in ("ConnectionError", "MaxRetryError", "ProtocolError")]
    return (meaningful or names)[-1]
