"""A fake GitHub on loopback: REST API, raw host, release downloads and a storage host.

Four real servers (`tests.support.servers.LoopbackServer`):

- `api` (127.0.0.1) — the REST API at `.api_url`:
    `GET /repos/O/R/commits/REF` (needs `Accept: application/vnd.github.sha`; body = sha,
    `ETag: "<sha>"`, 304 on a matching `If-None-Match`; unknown ref -> 422, unknown repo -> 404);
    `GET /repos/O/R/releases/latest` (newest release neither draft nor prerelease; 404 if none);
    `GET /repos/O/R/releases?per_page=N` (newest first, drafts included);
    `GET /repos/O/R/releases/tags/TAG`;
    `GET /repos/O/R/releases/assets/ID` (JSON, or with `Accept: application/octet-stream` a 302
    to the storage host);
    `GET /repos/O/R/tarball/TAG` (302 to the storage host's source tarball).
- `raw` (127.0.0.1) — `.raw_url`: `GET /O/R/<sha or branch>/<path>` from a repository snapshot.
- `web` (127.0.0.1) — like github.com: `GET /O/R/releases/download/TAG/NAME` -> 302 to storage
  (public repositories only).
- `storage` (127.0.0.2, another host) — serves the bytes under signed URLs (`?sig=...`) and,
  like S3, answers 400 to any request carrying `Authorization`.

A private repository (`add_repo(..., private=True)`) is visible only with
`Authorization: Bearer <token>` (or `token <token>`) equal to `FakeGitHub(token=...)`;
without it the API, raw and web hosts answer 404, as GitHub does.

Records: every server's `.requests`; `.auth_log()` lists `(server name, path, Authorization
or None)` for all of them. Faults: `.queue_api(*replies)` makes the next API requests
answer the given `servers.Reply`s (status, body, headers only) before normal service
(rate limits, 5xx). `.env(monkeypatch)` points `PKGMGR_GITHUB_API_URL`/`_RAW_URL` at it.

Build it with `FakeGitHub(workdir, token=...)`; `add_repo(owner, repo, files)` returns the
commit sha, `commit(...)` moves a branch to a new snapshot, `add_release(owner, repo, tag,
assets={name: bytes}, draft=, prerelease=)` publishes a release (its source tarball is
built from the snapshot the tag points to).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.support.builders import tar_gz
from tests.support.servers import LoopbackServer, Reply, respond


@dataclass
class _Repo:
    owner: str
    name: str
    private: bool
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> files
    refs: dict[str, str] = field(default_factory=dict)  # branch/tag -> sha
    releases: list[dict[str, Any]] = field(default_factory=list)  # oldest first


class _Host(LoopbackServer):
    def __init__(self, fake: FakeGitHub, host: str, name: str, route: str) -> None:
        super().__init__(host, name=name)
        self._fake = fake
        self._route = route

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        getattr(self._fake, self._route)(h)


class FakeGitHub:
    """See the module docstring."""

    def __init__(self, workdir: Path, *, token: str | None = None) -> None:
        self.workdir = Path(workdir)
        self.token = token
        self._lock = threading.Lock()
        self._repos: dict[tuple[str, str], _Repo] = {}
        self._blobs: dict[str, bytes] = {}  # storage key -> bytes
        self._api_faults: deque[Reply] = deque()
        self._next_id = 1
        self.api = _Host(self, "127.0.0.1", "api", "_api")
        self.raw = _Host(self, "127.0.0.1", "raw", "_raw")
        self.web = _Host(self, "127.0.0.1", "web", "_web")
        self.storage = _Host(self, "127.0.0.2", "storage", "_storage")
        self.servers = (self.api, self.raw, self.web, self.storage)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeGitHub:
        for server in self.servers:
            server.start()
        return self

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        return self.api.url

    @property
    def raw_url(self) -> str:
        return self.raw.url

    def env(self, monkeypatch: Any) -> None:
        monkeypatch.setenv("PKGMGR_GITHUB_API_URL", self.api_url)
        monkeypatch.setenv("PKGMGR_GITHUB_RAW_URL", self.raw_url)

    # ------------------------------------------------------------------ content
    def add_repo(self, owner: str, repo: str, files: Mapping[str, bytes | str] | None = None, *,
                 branch: str = "main", private: bool = False) -> str:
        with self._lock:
            self._repos[(owner.lower(), repo.lower())] = _Repo(owner, repo, private)
        return self.commit(owner, repo, files or {"README.md": b"# " + repo.encode()}, branch=branch)

    def commit(self, owner: str, repo: str, files: Mapping[str, bytes | str], *, branch: str = "main") -> str:
        """A new snapshot of the repository on `branch`; returns its sha."""
        data = {k: v.encode() if isinstance(v, str) else v for k, v in files.items()}
        digest = hashlib.sha1()
        for name in sorted(data):
            digest.update(name.encode() + b"\0" + data[name] + b"\0")
        with self._lock:
            r = self._repos[(owner.lower(), repo.lower())]
            digest.update(str(len(r.commits)).encode())
            sha = digest.hexdigest()
            r.commits[sha] = data
            r.refs[branch] = sha
        return sha

    def add_release(self, owner: str, repo: str, tag: str, *, assets: Mapping[str, bytes] | None = None,
                    draft: bool = False, prerelease: bool = False, name: str | None = None,
                    branch: str = "main") -> dict[str, Any]:
        """Publish a release of the snapshot `branch` points to (the tag is created)."""
        with self._lock:
            r = self._repos[(owner.lower(), repo.lower())]
            sha = r.refs.get(tag) or r.refs[branch]
            r.refs.setdefault(tag, sha)
            files = r.commits[sha]
        top = f"{owner}-{repo}-{sha[:7]}"
        archive = tar_gz(self.workdir / f"src-{top}.tar.gz", files, prefix=f"{top}/")
        base = f"/repos/{owner}/{repo}"
        downloads = f"{self.web.url}/{owner}/{repo}/releases/download/{quote(tag)}"
        with self._lock:
            self._blobs[f"tarball/{owner}/{repo}/{tag}"] = archive.read_bytes()
            items = []
            for asset_name, content in (assets or {}).items():
                asset_id = self._next_id
                self._next_id += 1
                self._blobs[f"assets/{asset_id}"] = content
                items.append({
                    "id": asset_id,
                    "name": asset_name,
                    "size": len(content),
                    "content_type": "application/gzip" if asset_name.endswith("gz") else "application/octet-stream",
                    "url": f"{self.api_url}{base}/releases/assets/{asset_id}",
                    "browser_download_url": f"{downloads}/{quote(asset_name)}",
                })
            release = {
                "id": self._next_id,
                "tag_name": tag,
                "name": name or tag,
                "draft": draft,
                "prerelease": prerelease,
                "html_url": f"{self.web.url}/{owner}/{repo}/releases/tag/{quote(tag)}",
                "tarball_url": f"{self.api_url}{base}/tarball/{quote(tag)}",
                "zipball_url": f"{self.api_url}{base}/zipball/{quote(tag)}",
                "assets": items,
            }
            self._next_id += 1
            r.releases.append(release)
        return release

    def queue_api(self, *replies: Reply) -> None:
        with self._lock:
            self._api_faults.extend(replies)

    # ------------------------------------------------------------------ records
    def auth_log(self) -> list[tuple[str, str, str | None]]:
        return [(r.server, r.path, r.headers.get("authorization")) for s in self.servers for r in s.requests]

    # ------------------------------------------------------------------ handlers
    def _authorized(self, h: BaseHTTPRequestHandler) -> bool:
        value = h.headers.get("Authorization") or ""
        scheme, _, given = value.partition(" ")
        return bool(self.token) and scheme.lower() in ("bearer", "token") and given == self.token

    def _visible(self, owner: str, repo: str, h: BaseHTTPRequestHandler) -> _Repo | None:
        r = self._repos.get((owner.lower(), repo.lower()))
        if r is None or (r.private and not self._authorized(h)):
            return None
        return r

    def _json(self, h: BaseHTTPRequestHandler, status: int, data: Any,
              headers: Mapping[str, str] | None = None) -> None:
        headers = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        respond(h, status, json.dumps(data).encode(), headers)

    def _json_or_404(self, h: BaseHTTPRequestHandler, data: Any) -> None:
        if data is None:
            self._not_found(h)
        else:
            self._json(h, 200, data)

    def _not_found(self, h: BaseHTTPRequestHandler) -> None:
        self._json(h, 404, {"message": "Not Found"})

    def _redirect_to_storage(self, h: BaseHTTPRequestHandler, key: str) -> None:
        signature = hashlib.sha256(key.encode()).hexdigest()[:16]
        respond(h, 302, b"", {"Location": f"{self.storage.url}/{key}?sig={signature}&X-Amz-Expires=300"})

    def _api(self, h: BaseHTTPRequestHandler) -> None:
        with self._lock:
            fault = self._api_faults.popleft() if self._api_faults else None
        if fault is not None:
            respond(h, fault.status, fault.body, fault.headers)
            return
        parts = urlsplit(h.path)
        segs = [unquote(s) for s in parts.path.strip("/").split("/")]
        if len(segs) < 4 or segs[0] != "repos":
            self._not_found(h)
            return
        r = self._visible(segs[1], segs[2], h)
        if r is None:
            self._not_found(h)
            return
        kind, rest = segs[3], segs[4:]
        if kind == "commits" and rest:
            self._api_commit(h, r, "/".join(rest))
        elif kind == "releases":
            self._api_releases(h, r, rest, parse_qs(parts.query))
        elif kind == "tarball" and len(rest) == 1:
            self._redirect_to_storage(h, f"tarball/{r.owner}/{r.name}/{rest[0]}")
        else:
            self._not_found(h)

    def _api_commit(self, h: BaseHTTPRequestHandler, r: _Repo, ref: str) -> None:
        sha = r.refs.get(ref) or (ref if ref in r.commits else None)
        if sha is None:
            self._json(h, 422, {"message": f"No commit found for SHA: {ref}"})
            return
        etag = f'"{sha}"'
        if h.headers.get("Accept") != "application/vnd.github.sha":
            self._json(h, 200, {"sha": sha}, {"ETag": etag})
        elif h.headers.get("If-None-Match") == etag:
            respond(h, 304, b"", {"ETag": etag})
        else:
            respond(h, 200, sha.encode(), {"ETag": etag, "Content-Type": "application/vnd.github.sha"})

    def _api_releases(self, h: BaseHTTPRequestHandler, r: _Repo, rest: list[str], query: dict[str, list[str]]) -> None:
        newest_first = list(reversed(r.releases))
        if not rest:
            per_page = int(query.get("per_page", ["30"])[0])
            self._json(h, 200, newest_first[:per_page])
        elif rest == ["latest"]:
            self._json_or_404(h, next((x for x in newest_first if not x["draft"] and not x["prerelease"]), None))
        elif len(rest) == 2 and rest[0] == "tags":
            self._json_or_404(h, next((x for x in newest_first if x["tag_name"] == rest[1]), None))
        elif len(rest) == 2 and rest[0] == "assets":
            asset = next((a for x in r.releases for a in x["assets"] if str(a["id"]) == rest[1]), None)
            if asset is None:
                self._not_found(h)
            elif h.headers.get("Accept") == "application/octet-stream":
                self._redirect_to_storage(h, f"assets/{asset['id']}")
            else:
                self._json(h, 200, asset)
        else:
            self._not_found(h)

    def _raw(self, h: BaseHTTPRequestHandler) -> None:
        segs = [unquote(s) for s in urlsplit(h.path).path.strip("/").split("/")]
        r = self._visible(segs[0], segs[1], h) if len(segs) >= 4 else None
        if r is None:
            respond(h, 404, b"404: Not Found")
            return
        sha = r.refs.get(segs[2]) or segs[2]
        content = r.commits.get(sha, {}).get("/".join(segs[3:]))
        if content is None:
            respond(h, 404, b"404: Not Found")
            return
        etag = '"' + hashlib.sha256(content).hexdigest()[:40] + '"'
        if h.headers.get("If-None-Match") == etag:
            respond(h, 304, b"", {"ETag": etag})
        else:
            respond(h, 200, content, {"ETag": etag, "Content-Type": "text/plain; charset=utf-8"})

    def _web(self, h: BaseHTTPRequestHandler) -> None:
        segs = [unquote(s) for s in urlsplit(h.path).path.strip("/").split("/")]
        if len(segs) == 6 and segs[2:4] == ["releases", "download"]:
            r = self._repos.get((segs[0].lower(), segs[1].lower()))
            if r is not None and not r.private:  # github.com ignores API tokens here
                for release in r.releases:
                    for asset in release["assets"]:
                        if release["tag_name"] == segs[4] and asset["name"] == segs[5]:
                            self._redirect_to_storage(h, f"assets/{asset['id']}")
                            return
        respond(h, 404, b"Not Found")

    def _storage(self, h: BaseHTTPRequestHandler) -> None:
        if h.headers.get("Authorization"):
            respond(h, 400, b"<Error><Code>InvalidArgument</Code>Only one auth mechanism allowed</Error>",
                    {"Content-Type": "application/xml"})
            return
        key = unquote(urlsplit(h.path).path.lstrip("/"))
        blob = self._blobs.get(key)
        if blob is None:
            respond(h, 404, b"NoSuchKey")
            return
        respond(h, 200, blob, {"Content-Type": "application/octet-stream"})
