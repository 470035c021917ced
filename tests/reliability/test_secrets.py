"""Secrets (SPEC 6): a planted GITHUB_TOKEN / GH_TOKEN is sent to the GitHub hosts and nowhere
else, and never appears in stdout, stderr, state.db, the config, the caches or the workspace —
after installs (a GitHub release, a `github:` registry through the raw host, a registry over
plain HTTP, a workspace sync), updates, and failures (auth_required, checksum_mismatch, network
errors, a malformed token, an exception of requests that quotes the header, and a bug whose
message carries the request headers, with and without -v)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.registry.helpers import RegistryDir, archive_bytes
from tests.reliability.helpers import record
from tests.support.cli import Result, run_cli
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import Reply, StaticFileServer, closed_port_url

UNVERIFIED = ("--allow-unverified", "--yes")


class Scan:
    """Every output of the test's commands, kept to be searched for the token."""

    def __init__(self, token: str, env: dict[str, str | None]) -> None:
        self.token = token
        self.env = env
        self.outputs: list[str] = []
        self.commands = 0

    def run(self, *args: Any, code: int | None = 0, error: str | None = None, env: dict | None = None,
            cwd: Path | None = None, human: bool = False) -> Result:
        """Run in JSON mode (and first in human mode when `human`: commands that change nothing);
        each run must exit `code` (and JSON show `error`)."""
        result = None
        for mode in ([[]] if human else []) + [["-o", "json"]]:
            result = run_cli([*map(str, args), *mode], env={**self.env, **(env or {})}, cwd=cwd)
            self.outputs.append(result.stdout + result.stderr)
            self.commands += 1
            if code is not None:
                assert result.code == code, result
            if error is not None and mode:
                assert result.json["error"]["code"] == error, result
        assert result is not None
        return result

    def assert_clean(self, *roots: Path) -> int:
        """The token — as it is, base64-encoded (HTTP basic auth) or hex-encoded — is in no output
        and in no file under `roots`; returns how many files were read."""
        import base64

        forms = [self.token.encode(), base64.b64encode(self.token.encode()), self.token.encode().hex().encode(),
                 base64.b64encode(f"x-access-token:{self.token}".encode())]
        assert not any(form.decode() in text for text in self.outputs for form in forms)
        files = 0
        for root in roots:
            for path in root.rglob("*"):
                if path.is_file() and not path.is_symlink():
                    files += 1
                    data = path.read_bytes()
                    assert not any(form in data for form in forms), path
        return files


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[FakeGitHub]:
    work = tmp_path / "gh"
    work.mkdir()
    with FakeGitHub(work, token=request.param) as fake:
        fake.env(monkeypatch)
        yield fake


def _index(regdir: RegistryDir) -> dict[str, bytes]:
    return {p.relative_to(regdir.root).as_posix(): p.read_bytes() for p in regdir.root.rglob("*") if p.is_file()}


def _token() -> str:
    return "ghp_" + secrets.token_hex(18)  # unique per run: found only if something copied it


TOKEN_A, TOKEN_B = _token(), _token()
VARIANTS = [("GITHUB_TOKEN", TOKEN_A), ("GH_TOKEN", TOKEN_B)]


@pytest.mark.parametrize("github, variable, token", [(t, v, t) for v, t in VARIANTS], indirect=["github"],
                         ids=[v for v, _ in VARIANTS])
def test_the_token_never_leaves_the_github_hosts(github: FakeGitHub, variable: str, token: str, home: Path,
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = "GH_TOKEN" if variable == "GITHUB_TOKEN" else "GITHUB_TOKEN"
    scan = Scan(token, {variable: token, other: None})
    index = RegistryDir(tmp_path / "index", "acme")
    index.publish("demo-ext", "0.1.0")
    github.add_repo("acme", "index", _index(index), private=True)
    github.add_repo("acme", "tool", private=True)
    github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": archive_bytes("gh-tool", "1.0.0")})
    plain = RegistryDir(tmp_path / "plain", "plain")
    plain.publish("plain-ext", "0.1.0")
    with StaticFileServer(plain.root) as static:
        # installs: a github: registry (API + raw host), a plain HTTP registry, a release
        scan.run("registry", "add", "acme", "github:acme/index")
        scan.run("registry", "add", "plain", static.url)
        scan.run("ext", "install", "demo-ext")
        scan.run("ext", "install", "plain-ext")
        scan.run("ext", "install", "github:acme/tool", *UNVERIFIED)
        # updates
        index.publish("demo-ext", "0.2.0")
        github.commit("acme", "index", _index(index))
        github.add_release("acme", "tool", "v1.1.0", assets={"tool.tar.gz": archive_bytes("gh-tool", "1.1.0")})
        scan.run("ext", "update", "--all", "--check", human=True)
        scan.run("-v", "ext", "update", "--all", *UNVERIFIED)
        scan.run("ext", "status", "gh-tool", human=True)
        scan.run("registry", "list", human=True)
        scan.run("ext", "search", human=True)
        # a workspace declaring a private release and the private registry
        ws = tmp_path / "user-home" / "project"
        ws.mkdir(parents=True)
        (ws / "pkgmgr.toml").write_text('[extensions]\ngh-tool = { github = "acme/tool" }\n'
                                        'demo-ext = { version = "*", registry = "acme" }\n', encoding="utf-8")
        scan.run("trust", "--workspace", ws)
        scan.run("sync", "--workspace", ws)
        assert all("authorization" not in r.headers for r in static.requests)
    _failures(scan, github, tmp_path, monkeypatch)
    files = scan.assert_clean(home, ws, tmp_path / "user-home")
    for server, path, auth in github.auth_log():
        if server in ("storage", "web"):
            assert auth is None, (server, path)
    assert any(auth for server, _, auth in github.auth_log() if server in ("api", "raw"))
    record("secrets", variable=variable, commands=scan.commands, files=files)


def _failures(scan: Scan, github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # auth_required: the API refuses the token
    github.queue_api(*[Reply(401, b'{"message": "Bad credentials"}', {"Content-Type": "application/json"})] * 2)
    scan.run("ext", "install", "github:acme/tool@v1.0.0", "--force", *UNVERIFIED, code=4, error="auth_required",
             human=True)
    # checksum_mismatch: a release whose SHA256SUMS disagrees
    github.add_repo("acme", "bad", private=True)
    github.add_release("acme", "bad", "v1.0.0", assets={"bad.tar.gz": archive_bytes("bad-tool", "1.0.0"),
                                                        "SHA256SUMS": b"0" * 64 + b"  bad.tar.gz\n"})
    scan.run("-v", "ext", "install", "github:acme/bad", *UNVERIFIED, code=4, error="checksum_mismatch",
             human=True)
    # network errors: a server error that stays, and an API nobody answers
    github.queue_api(*[Reply(502, b"bad gateway")] * 2)  # retries = 2
    scan.run("-v", "ext", "install", "github:acme/tool@v1.0.0", "--force", *UNVERIFIED, code=7,
             env={"PKGMGR_CONFIG": str(_fast_config(tmp_path))})
    scan.run("-v", "ext", "install", "github:acme/tool@v1.0.0", "--force", *UNVERIFIED, code=7,
             env={"PKGMGR_GITHUB_API_URL": closed_port_url(), "PKGMGR_CONFIG": str(_fast_config(tmp_path))})
    # a malformed token is refused without being quoted
    scan.run("ext", "install", "github:acme/tool", *UNVERIFIED, code=3, error="invalid_config",
             env={name: f"{scan.token} \n{scan.token}" for name in ("GITHUB_TOKEN", "GH_TOKEN") if name in scan.env
                  and scan.env[name]})
    # http.client's own exceptions quote header values too (putheader's ValueError): the stdlib
    # first hop steps aside, and requests, whose connections are http.client's, meets it again
    import http.client

    real_putheader = http.client.HTTPConnection.putheader

    def quoting_putheader(self: Any, header: str, *values: Any) -> None:
        if header.lower() == "authorization":
            raise ValueError(f"Invalid header value {values!r}")
        real_putheader(self, header, *values)

    monkeypatch.setattr(http.client.HTTPConnection, "putheader", quoting_putheader)
    scan.run("-v", "ext", "install", "github:acme/tool@v1.0.0", "--force", *UNVERIFIED, code=7, error="network_error")
    monkeypatch.setattr(http.client.HTTPConnection, "putheader", real_putheader)
    # requests' own exceptions quote header values (InvalidHeader does): every request through it
    import requests.adapters
    import requests.exceptions

    from pkgmgr.net.http import HttpClient

    monkeypatch.setattr(HttpClient, "_plain_first", lambda self: False)

    real_send = requests.adapters.HTTPAdapter.send

    def quoting_send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if "Authorization" in request.headers:
            raise requests.exceptions.InvalidHeader(f"Invalid header value {request.headers['Authorization']!r}")
        return real_send(self, request, *args, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", quoting_send)
    scan.run("-v", "ext", "install", "github:acme/tool@v1.0.0", "--force", *UNVERIFIED, code=7, error="network_error")

    # a bug (not a network error) whose message carries the request's headers: exit 70
    def buggy_send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"injected bug while sending {request.url}: headers {dict(request.headers)}")

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", buggy_send)
    for verbose in ([], ["-v"]):
        result = scan.run(*verbose, "ext", "install", "github:acme/tool@v1.0.0", "--force", *UNVERIFIED, code=70,
                          error="internal", human=True)
        assert "injected bug" in result.stderr
    assert any("Traceback" in text for text in scan.outputs[-2:])
    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", real_send)


def _fast_config(tmp_path: Path) -> Path:
    path = tmp_path / "fast-config.toml"
    path.write_text("[network]\nbackoff_base = 0.001\nretries = 2\nconnect_timeout = 2\n", encoding="utf-8")
    return path
