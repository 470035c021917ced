"""Real HTTP servers on loopback for network tests — never mocks of requests.

Every server is a threaded HTTP/1.1 server (keep-alive) in a daemon thread, bound to
`127.0.0.1` or another loopback address such as `127.0.0.2` (a second "host"). Use them as
context managers, or through the fixtures of `tests/net/conftest.py`.

`LoopbackServer(host="127.0.0.1", name=...)` — the base:
    `.url` (`http://127.0.0.1:PORT`), `.host`, `.port`, `.start()`, `.stop()`;
    `.requests` — every request as a `RecordedRequest(server, method, path, headers, client)`
    (`path` includes the query, `headers` have lower-case names, `client` is the peer
    `(ip, port)`, so connection reuse is visible); `.count(path=None)`; `.clear()`;
    `.errors` — exceptions raised by handlers (a broken pipe from a client that hung up is
    not one). Subclasses override `handle(h)` where `h` is the `BaseHTTPRequestHandler`;
    `respond(h, status, body, headers)` writes a complete response.

`StaticFileServer(root, host=..., gzip=False)` — serves the files under `root` (GET and
HEAD) with a strong `ETag` (content hash) and `Last-Modified` (mtime), answering a matching
`If-None-Match` (or, without it, an `If-Modified-Since` not older than the file) with 304.
With `gzip=True` it gzips bodies for clients that accept gzip.

`FaultServer(host=...)` — replies scripted per path: `.script(path, *replies)`; each request
to the path (query ignored) takes the next `Reply`, the last one repeating. A `Reply` can
misbehave on purpose:
    `Reply(status, body, headers)`           — a plain response;
    `Reply.redirect(location, status=302)`   — a redirect (loops are two scripted paths);
    `declared_length=N`                      — announce N bytes, send `body`, close (short body);
    `reset_after=N`                          — send N body bytes, then reset the connection (RST);
    `drip=(n, seconds)`                      — send `body` n bytes at a time, pausing between;
    `endless=True`                           — stream `body` again and again, no length;
    `delay=seconds`                          — wait before the status line (read timeouts);
    `raw=b"..."`                             — send these bytes verbatim instead, then close
                                               (malformed responses); with `drip`, n bytes at a
                                               time (a status line and headers that never end).
`closed_port_url()` gives a URL on which nothing listens (connection refused).
"""

from __future__ import annotations

import gzip as gzip_module
import hashlib
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit


@dataclass(frozen=True)
class RecordedRequest:
    server: str
    method: str
    path: str
    headers: dict[str, str]
    client: tuple[str, int]

    @property
    def route(self) -> str:
        """The path without its query."""
        return urlsplit(self.path).path


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # idle keep-alive connections end on their own
    disable_nagle_algorithm = True  # headers and body go out at once (no delayed-ACK stalls)
    server: _HTTPServer

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.server.owner._dispatch(self)

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # a subclass reads a body it expects

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            self.owner.errors.append(exc)


def respond(h: BaseHTTPRequestHandler, status: int, body: bytes = b"",
            headers: Mapping[str, str] | None = None) -> None:
    """Write a complete response (Content-Length set unless given; no body for HEAD/304)."""
    h.send_response(status)
    names = {k.lower() for k in (headers or {})}
    for key, value in (headers or {}).items():
        h.send_header(key, value)
    if "content-length" not in names and status != 304:
        h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    if body and h.command != "HEAD" and status != 304:
        h.wfile.write(body)


class LoopbackServer:
    """Base class: a threaded HTTP/1.1 server that records requests (module docstring)."""

    def __init__(self, host: str = "127.0.0.1", *, name: str | None = None) -> None:
        self.host = host
        self.name = name or type(self).__name__
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> LoopbackServer:
        server = _HTTPServer((self.host, 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"{self.name}-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):  # noqa: ANN204 - returns the subclass
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # records
    def count(self, path: str | None = None) -> int:
        """How many requests arrived (for `path`: with that path, query ignored if it has none)."""
        with self._lock:
            reqs = list(self.requests)
        if path is None:
            return len(reqs)
        return sum(1 for r in reqs if r.path == path or ("?" not in path and r.route == path))

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def _dispatch(self, h: BaseHTTPRequestHandler) -> None:
        record = RecordedRequest(self.name, h.command, h.path, {k.lower(): v for k, v in h.headers.items()},
                                 tuple(h.client_address[:2]))  # type: ignore[arg-type]
        with self._lock:
            self.requests.append(record)
        self.handle(h)

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        respond(h, 404, b"not found")


class StaticFileServer(LoopbackServer):
    """Serves a directory with ETag/Last-Modified validators (module docstring)."""

    def __init__(self, root: Path, host: str = "127.0.0.1", *, name: str | None = None, gzip: bool = False) -> None:
        super().__init__(host, name=name or "static")
        self.root = Path(root).resolve()
        self.gzip = gzip

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        rel = unquote(urlsplit(h.path).path).lstrip("/")
        target = (self.root / rel).resolve()
        if not target.is_relative_to(self.root) or not target.is_file():
            respond(h, 404, b"not found")
            return
        data = target.read_bytes()
        mtime = target.stat().st_mtime
        etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
        headers = {"ETag": etag, "Last-Modified": formatdate(mtime, usegmt=True)}
        inm = h.headers.get("If-None-Match")
        ims = h.headers.get("If-Modified-Since")
        if inm is not None:
            if inm.strip() == "*" or etag in [t.strip() for t in inm.split(",")]:
                respond(h, 304, headers=headers)
                return
        elif ims is not None:
            try:
                since = parsedate_to_datetime(ims).timestamp()
            except (TypeError, ValueError):
                since = None
            if since is not None and int(mtime) <= since:
                respond(h, 304, headers=headers)
                return
        headers["Content-Type"] = "application/octet-stream"
        if self.gzip and "gzip" in h.headers.get("Accept-Encoding", ""):
            data = gzip_module.compress(data, mtime=0)
            headers["Content-Encoding"] = "gzip"
        respond(h, 200, data, headers)


@dataclass
class Reply:
    """One scripted response of a `FaultServer` (module docstring)."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    declared_length: int | None = None
    reset_after: int | None = None
    drip: tuple[int, float] | None = None
    endless: bool = False
    delay: float = 0.0
    raw: bytes | None = None

    @classmethod
    def redirect(cls, location: str, status: int = 302) -> Reply:
        return cls(status, b"", {"Location": location})


class FaultServer(LoopbackServer):
    """Scripted, misbehaving replies per path (module docstring)."""

    ENDLESS_CAP = 1 << 30  # safety net: never stream more than 1 GiB

    def __init__(self, host: str = "127.0.0.1", *, name: str | None = None) -> None:
        super().__init__(host, name=name or "fault")
        self._scripts: dict[str, deque[Reply]] = {}

    def script(self, path: str, *replies: Reply) -> str:
        """Script `path`; returns its full URL."""
        assert replies, "at least one reply"
        with self._lock:
            self._scripts[path] = deque(replies)
        return self.url + path

    def _next(self, path: str) -> Reply | None:
        with self._lock:
            queue = self._scripts.get(path)
            if not queue:
                return None
            return queue.popleft() if len(queue) > 1 else queue[0]

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        reply = self._next(urlsplit(h.path).path)
        if reply is None:
            respond(h, 404, b"not scripted")
            return
        if reply.delay:
            time.sleep(reply.delay)
        try:
            self._send(h, reply)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True

    def _send(self, h: BaseHTTPRequestHandler, reply: Reply) -> None:
        body = reply.body
        if reply.raw is not None:
            h.close_connection = True
            step, pause = reply.drip or (len(reply.raw), 0.0)
            for start in range(0, len(reply.raw), max(step, 1)):
                h.wfile.write(reply.raw[start:start + step])
                h.wfile.flush()
                time.sleep(pause)
            return
        if reply.endless:
            h.send_response(reply.status)
            for key, value in reply.headers.items():
                h.send_header(key, value)
            h.send_header("Connection", "close")
            h.end_headers()
            h.close_connection = True
            chunk = body or b"x" * 65536
            sent = 0
            while sent < self.ENDLESS_CAP:
                h.wfile.write(chunk)
                sent += len(chunk)
            return
        length = reply.declared_length if reply.declared_length is not None else len(body)
        h.send_response(reply.status)
        for key, value in reply.headers.items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(length))
        if reply.declared_length is not None or reply.reset_after is not None:
            h.send_header("Connection", "close")
        h.end_headers()
        if reply.reset_after is not None:
            h.wfile.write(body[: reply.reset_after])
            h.wfile.flush()
            _reset(h)
            return
        if reply.drip is not None:
            step, pause = reply.drip
            for start in range(0, len(body), step):
                h.wfile.write(body[start:start + step])
                h.wfile.flush()
                time.sleep(pause)
            return
        h.wfile.write(body)
        if reply.declared_length is not None:
            h.close_connection = True


def _reset(h: BaseHTTPRequestHandler) -> None:
    """Abort the connection with a TCP RST (SO_LINGER 0, then close every reference)."""
    sock: socket.socket = h.connection
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    h.close_connection = True
    h.rfile.close()
    sock.close()


def closed_port_url(host: str = "127.0.0.1") -> str:
    """A URL on which nothing listens: the port was bound, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port = sock.getsockname()[1]
    return f"http://{host}:{port}"
