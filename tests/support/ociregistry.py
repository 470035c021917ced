"""A real OCI registry on loopback for tests: Debian's `docker-registry` (CNCF distribution).

`registry_binary()` finds the server: `$PKGMGR_TEST_DOCKER_REGISTRY`, else `docker-registry` on
PATH, else `/usr/bin/docker-registry` (`.ci/run` extracts the Debian package with
`apt-get download` + `dpkg-deb -x` and sets the variable; the packaged service, which listens
on every interface, is never started). `RealRegistry(tmp, users=...)` writes its own config
(127.0.0.1, a free port, filesystem storage under `tmp`, htpasswd auth when `users` are given:
bcrypt entries from apache2-utils' `htpasswd -B`), starts it, and polls `/v2/` until it answers
(bounded; no sleeps waiting for a result).

`upload(base, repo, ...)` pushes blobs and a manifest with the standard library only (a
second, independent client, so a fault — a wrong digest, two layers, a wrong media type — can
be put into the registry on purpose). `RegistryProxy` stands in front of a registry: it forwards
every request, and can answer a blob GET with a redirect to another loopback server or cut the
connection in the middle of a blob.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.servers import LoopbackServer, _reset, respond

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
ARTIFACT = "application/vnd.pkgmgr.extension.v1"
LAYER = "application/vnd.pkgmgr.extension.v1.tar+gzip"
USER, PASSWORD = "alice", "pw-Oci-s3cret-4242"
SKIP_REASON = "docker-registry is not installed (.ci/run extracts Debian's docker-registry package)"


def registry_binary() -> str | None:
    for candidate in (os.environ.get("PKGMGR_TEST_DOCKER_REGISTRY"), shutil.which("docker-registry"),
                      "/usr/bin/docker-registry"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def htpasswd_line(user: str, password: str) -> str | None:
    """A bcrypt htpasswd entry (apache2-utils' htpasswd, else the bcrypt module); None if neither."""
    tool = shutil.which("htpasswd")
    if tool:
        out = subprocess.run([tool, "-nbB", user, password], capture_output=True, text=True, check=True, timeout=30)
        return out.stdout.strip()
    try:
        import bcrypt  # type: ignore[import-not-found]
    except ImportError:
        return None
    return f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RealRegistry:
    def __init__(self, root: Path, *, users: Mapping[str, str] | None = None) -> None:
        self.root = Path(root)
        self.users = dict(users or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def start(self) -> RealRegistry:
        binary = registry_binary()
        assert binary is not None
        self.root.mkdir(parents=True, exist_ok=True)
        auth = ""
        if self.users:
            lines = [htpasswd_line(u, p) for u, p in self.users.items()]
            (self.root / "htpasswd").write_text("\n".join(line for line in lines if line) + "\n")
            auth = f"auth:\n  htpasswd:\n    realm: pkgmgr-tests\n    path: {self.root / 'htpasswd'}\n"
        for _attempt in range(3):
            self.port = _free_port()
            config = self.root / "config.yml"
            config.write_text(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
                f"storage:\n  filesystem:\n    rootdirectory: {self.root / 'data'}\n"
                f"http:\n  addr: 127.0.0.1:{self.port}\n  secret: pkgmgr-tests-only\n{auth}"
            )
            log = open(self.root / "registry.log", "ab")  # noqa: SIM115 - the process keeps it
            self.process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=log,
                                            stdin=subprocess.DEVNULL)
            log.close()
            if self._wait_ready():
                return self
            self.stop()
        raise RuntimeError(f"docker-registry did not start; see {self.root / 'registry.log'}")

    def _wait_ready(self, limit: float = 15.0) -> bool:
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
            except OSError:
                time.sleep(0.02)  # polling the port until it answers (bounded), not waiting for a result
                continue
            status, _, _ = request("GET", f"{self.url}/v2/")
            if status in (200, 401):
                return True
        return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None


def request(method: str, url: str, data: bytes | None = None,
            headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
    except (urllib.error.URLError, OSError):
        return 0, {}, b""


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def push_blob(base: str, repo: str, blob: bytes, auth: Mapping[str, str] | None = None) -> str:
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    status, headers, _ = request("POST", f"{base}/v2/{repo}/blobs/uploads/", b"", auth)
    assert status == 202, status
    location = headers["Location"]
    if not location.startswith("http"):
        location = base + location
    sep = "&" if "?" in location else "?"
    status, _, body = request("PUT", f"{location}{sep}digest={digest}", blob,
                              {"Content-Type": "application/octet-stream", **(auth or {})})
    assert status == 201, (status, body)
    return digest


def upload(base: str, repo: str, tag: str, layers: list[tuple[str, bytes]], *, artifact_type: str | None = ARTIFACT,
           layer_digests: list[str] | None = None, auth: Mapping[str, str] | None = None) -> str:
    """Push `layers` ((media type, bytes) each) and a manifest naming them; return the manifest's
    digest URL `oci://host:port/repo@sha256:…`. `layer_digests` overrides what the manifest says
    (the blobs are pushed under their real digests)."""
    config = push_blob(base, repo, b"{}", auth)
    descriptors = []
    for index, (media, blob) in enumerate(layers):
        digest = push_blob(base, repo, blob, auth)
        if layer_digests is not None:
            digest = layer_digests[index]
        descriptors.append({"mediaType": media, "digest": digest, "size": len(blob)})
    doc: dict[str, Any] = {"schemaVersion": 2, "mediaType": MANIFEST}
    if artifact_type is not None:
        doc["artifactType"] = artifact_type
    doc["config"] = {"mediaType": EMPTY, "digest": config, "size": 2}
    doc["layers"] = descriptors
    body = json.dumps(doc).encode()
    status, _, answer = request("PUT", f"{base}/v2/{repo}/manifests/{tag}", body,
                                {"Content-Type": MANIFEST, **(auth or {})})
    assert status == 201, (status, answer)
    host = urlsplit(base).netloc
    return f"oci://{host}/{repo}@sha256:{hashlib.sha256(body).hexdigest()}"


class RegistryProxy(LoopbackServer):
    """Forwards to `upstream`; a blob GET is answered by `redirect_to` (a 307 to that base URL,
    same path) or, with `cut_after=N`, by the first N bytes of the upstream blob and a reset."""

    def __init__(self, upstream: str, *, redirect_to: str | None = None, cut_after: int | None = None,
                 bearer: tuple[str, str] | None = None) -> None:
        """`bearer=(realm, token)`: every request without `Authorization: Bearer <token>` gets a
        401 with a Bearer challenge naming `realm` (the distribution spec's token flow)."""
        super().__init__(name="registry-proxy")
        self.upstream = upstream
        self.redirect_to = redirect_to
        self.cut_after = cut_after
        self.bearer = bearer

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        blob = "/blobs/sha256:" in h.path and h.command == "GET"
        if self.bearer is not None and h.headers.get("Authorization") != f"Bearer {self.bearer[1]}":
            repo = h.path.split("/v2/", 1)[-1].split("/manifests/")[0].split("/blobs/")[0]
            challenge = f'Bearer realm="{self.bearer[0]}",service="pkgmgr-tests",scope="repository:{repo}:pull"'
            respond(h, 401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                    {"WWW-Authenticate": challenge, "Content-Type": "application/json"})
            return
        if blob and self.redirect_to is not None:
            respond(h, 307, b"", {"Location": self.redirect_to + h.path})
            return
        parts = urlsplit(self.upstream)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in ("host", "connection")}
        if self.bearer is not None:
            headers.pop("Authorization", None)
        conn.request(h.command, h.path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        if blob and self.cut_after is not None and resp.status == 200:
            h.send_response(200)
            h.send_header("Content-Length", str(len(body)))
            h.send_header("Content-Type", "application/octet-stream")
            h.end_headers()
            h.wfile.write(body[: self.cut_after])
            h.wfile.flush()
            _reset(h)
            return
        passed = {k: v for k, v in resp.getheaders() if k.lower() not in ("connection", "transfer-encoding",
                                                                           "content-length")}
        respond(h, resp.status, body, passed)


class BlobHost(LoopbackServer):
    """A second loopback server that serves blobs by path from another registry (a storage
    host behind a redirect), recording every request's headers."""

    def __init__(self, upstream: str, auth: Mapping[str, str] | None = None) -> None:
        super().__init__(name="blob-host")
        self.upstream = upstream
        self.auth = dict(auth or {})

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        status, _, body = request("GET", self.upstream + h.path, headers=self.auth)
        respond(h, status if status else 502, body, {"Content-Type": "application/octet-stream"})


class TokenServer(LoopbackServer):
    """A token realm: `GET /token` with Basic `user:password` (or anonymously when `anonymous`)
    answers `{"token": token}`; anything else is a 401."""

    def __init__(self, user: str, password: str, token: str, *, anonymous: bool = False) -> None:
        super().__init__(name="token-realm")
        self.expected = basic(user, password)["Authorization"]
        self.token = token
        self.anonymous = anonymous

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        if not h.path.startswith("/token"):
            respond(h, 404)
            return
        if h.headers.get("Authorization") != self.expected and not self.anonymous:
            respond(h, 401, b"{}", {"Content-Type": "application/json"})
            return
        respond(h, 200, json.dumps({"token": self.token}).encode(), {"Content-Type": "application/json"})


@pytest.fixture(scope="module")
def open_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRegistry]:
    """A registry without authentication, for one test module."""
    if registry_binary() is None:
        pytest.skip(SKIP_REASON)
    registry = RealRegistry(tmp_path_factory.mktemp("oci-open")).start()
    yield registry
    registry.stop()


@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRegistry]:
    """A registry with htpasswd authentication (USER, PASSWORD), for one test module."""
    if registry_binary() is None:
        pytest.skip(SKIP_REASON)
    if htpasswd_line("probe", "probe") is None:
        pytest.skip("no bcrypt htpasswd writer (apache2-utils' htpasswd, or the bcrypt module)")
    registry = RealRegistry(tmp_path_factory.mktemp("oci-auth"), users={USER: PASSWORD}).start()
    yield registry
    registry.stop()


# --------------------------------------------------------------------------- fakes (no docker-registry)


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    length = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(length) if length else b""


def artifact_manifest(data: bytes, title: str = "demo-1.0.0.tar.gz") -> bytes:
    """pkgmgr's artifact manifest for one archive (as `registry publish --push` writes it)."""
    from pkgmgr.net.oci import render_manifest

    return render_manifest(hashlib.sha256(data).hexdigest(), len(data), title=title)


class FakeDistribution(LoopbackServer):
    """A minimal distribution API on a loopback address: serves one artifact (`data`) under any
    repository. Authentication: `basic=(user, password)`, or `bearer=(realm, token)` (a 401 with a
    Bearer challenge naming `realm` unless `Authorization: Bearer <token>`), or none. Blob GETs are
    served here, or redirected (307) to `blobs_at` (a base URL, same path); uploads (POST) answer
    202 with a `Location` under `uploads_at` (default: here) and PUTs 201. Records every header."""

    def __init__(self, data: bytes, *, host: str = "127.0.0.1", basic: tuple[str, str] | None = None,
                 bearer: tuple[str, str] | None = None, blobs_at: str | None = None,
                 uploads_at: str | None = None) -> None:
        super().__init__(host, name="registry")
        self.data = data
        self.manifest = artifact_manifest(data)
        self.basic_auth = basic
        self.bearer = bearer
        self.blobs_at = blobs_at
        self.uploads_at = uploads_at

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.manifest).hexdigest()

    def ref(self, repository: str = "acme/demo") -> str:
        return f"oci://{self.host}:{self.port}/{repository}@sha256:{self.digest}"

    def _authorized(self, h: BaseHTTPRequestHandler) -> bool:
        got = h.headers.get("Authorization")
        if self.bearer is not None:
            return got == f"Bearer {self.bearer[1]}"
        if self.basic_auth is not None:
            return got == basic(*self.basic_auth)["Authorization"]
        return True

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        _read_body(h)
        if not self._authorized(h):
            challenge = (f'Bearer realm="{self.bearer[0]}",service="registry"' if self.bearer is not None
                         else 'Basic realm="registry"')
            respond(h, 401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                    {"WWW-Authenticate": challenge, "Content-Type": "application/json"})
            return
        path = h.path.split("?", 1)[0]
        if "/manifests/" in path and h.command in ("GET", "HEAD"):
            respond(h, 200, self.manifest, {"Content-Type": MANIFEST})
        elif "/blobs/uploads/" in path and h.command == "POST":
            base = self.uploads_at or self.url
            respond(h, 202, b"", {"Location": f"{base}/v2/upload/session-1"})
        elif "/blobs/" in path and h.command == "HEAD":
            respond(h, 404)
        elif "/blobs/" in path and h.command == "GET" and self.blobs_at is not None:
            respond(h, 307, b"", {"Location": self.blobs_at + h.path})
        elif "/blobs/" in path and h.command == "GET":
            respond(h, 200, self.data, {"Content-Type": "application/octet-stream"})
        elif h.command == "PUT" and ("/manifests/" in path or "/upload/" in path):
            digest = hashlib.sha256(self.manifest).hexdigest()
            respond(h, 201, b"", {"Docker-Content-Digest": f"sha256:{digest}"})
        else:
            respond(h, 404)


class ChallengingStorage(LoopbackServer):
    """Another origin (default 127.0.0.2) behind a registry's redirect or upload `Location`: with
    `data` it serves that blob to anyone; otherwise every request gets a 401 whose challenge
    names its own realm (`/token`), which mints `token` for anyone who asks."""

    def __init__(self, *, host: str = "127.0.0.2", data: bytes | None = None,
                 token: str = "token-minted-by-another-origin") -> None:
        super().__init__(host, name="storage")
        self.data = data
        self.token = token

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        _read_body(h)
        if h.path.startswith("/token"):
            respond(h, 200, json.dumps({"token": self.token}).encode(), {"Content-Type": "application/json"})
            return
        if self.data is not None and h.command == "GET" and "/blobs/" in h.path:
            respond(h, 200, self.data, {"Content-Type": "application/octet-stream"})
            return
        challenge = f'Bearer realm="{self.url}/token",service="storage",scope="repository:acme/demo:pull"'
        respond(h, 401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                {"WWW-Authenticate": challenge, "Content-Type": "application/json"})
