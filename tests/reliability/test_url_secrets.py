"""Secrets a URL can carry are never echoed (SPEC 6, 11; issue 25 point 6).

A unique secret is planted in each place a URL can come from — a registry source, an entry's
url, an OCI reference (in an entry and as `--push`), a redirect's `Location` (as user-info and
as a signed query), Docker's config — and each command that reads it runs in human and JSON
mode, with and without `-v`. No secret appears in stdout or stderr, nor in any file under
`PKGMGR_HOME`. (A signed query in an entry's url is part of the index: the registry cache keeps
the entry as served, so that case is held to the outputs only.)
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path
from typing import Any

from pkgmgr.redact import redact_url, redact_urls
from tests.publish.helpers import packed
from tests.registry.helpers import RegistryDir, archive_bytes
from tests.reliability.helpers import record
from tests.support.cli import Result, run_cli
from tests.support.ociregistry import PASSWORD, USER, FakeDistribution
from tests.support.servers import FaultServer, Reply, StaticFileServer


def _secret(label: str) -> str:
    return f"S3cr3t{label}{secrets.token_hex(8)}"  # unique per run: found only if something copied it


class Scan:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.outputs: list[str] = []

    def run(self, *args: Any, code: int, error: str | None = None, once: bool = False) -> None:
        """Run in human and JSON mode, each without and with -v (`once`: in human mode with -v, for
        a command that changes something); each must exit `code`."""
        for verbose in ([["-v"]] if once else [[], ["-v"]]):
            for mode in ([[]] if once else [[], ["-o", "json"]]):
                result: Result = run_cli([*verbose, *map(str, args), *mode], env=self.env)
                self.outputs.append(result.stdout + result.stderr)
                assert result.code == code, result
                assert "Traceback" not in result.stderr or verbose, result
                if mode and error is not None:
                    assert result.json["error"]["code"] == error, result

    def assert_clean(self, planted: dict[str, str], home: Path, *, files_too: set[str]) -> int:
        for label, secret in planted.items():
            for text in self.outputs:
                assert secret not in text, (label, text[-3000:])
        files = 0
        for path in home.rglob("*"):
            if path.is_file() and not path.is_symlink():
                files += 1
                data = path.read_bytes()
                for label in files_too:
                    assert planted[label].encode() not in data, (label, path)
        return files


def test_a_secret_in_any_url_is_never_echoed_or_stored(tmp_path: Path, home: Path) -> None:
    planted = {k: _secret(k) for k in ("source", "entry", "entry_query", "oci", "push", "location",
                                        "location_query", "docker")}
    user_home = tmp_path / "user-home"
    scan = Scan({"PKGMGR_HOME": str(home), "HOME": str(user_home)})

    # a registry source with credentials (refused: usage), with --no-check too
    scan.run("registry", "add", "leaky", f"http://alice:{planted['source']}@127.0.0.1:9/reg/", code=2, error="usage")
    scan.run("registry", "add", "leaky", f"https://alice:{planted['source']}@example.com/reg/", "--no-check", code=2,
             error="usage")

    # entries: credentials in a url and in an OCI reference (invalid_index), a signed query (installs)
    index = RegistryDir(tmp_path / "index", "acme")
    index.publish("cred-ext", "0.1.0", url=f"http://alice:{planted['entry']}@127.0.0.1:9/cred.tar.gz")
    index.publish("oci-ext", "0.1.0", url=f"oci://alice:{planted['oci']}@127.0.0.1:9/acme/oci@sha256:{'a' * 64}")
    with FaultServer() as server:
        data = archive_bytes("query-ext", "0.1.0")
        served = server.script("/query.tar.gz", Reply(200, data))
        index.publish("query-ext", "0.1.0", data=data, url=f"{served}?token={planted['entry_query']}")
        moved_data = archive_bytes("moved-ext", "0.1.0")
        target = server.script("/moved-target.tar.gz", Reply(200, moved_data))
        moved = server.script("/moved.tar.gz", Reply.redirect(f"{target}?X-Amz-Signature={planted['location_query']}"))
        index.publish("moved-ext", "0.1.0", data=moved_data, url=moved)
        cred_target = target.replace("http://", f"http://alice:{planted['location']}@")
        creds_data = archive_bytes("redirected-ext", "0.1.0")
        redirected = server.script("/redirected.tar.gz", Reply.redirect(cred_target))
        index.publish("redirected-ext", "0.1.0", data=creds_data, url=redirected)
        with StaticFileServer(index.root) as static:
            scan.run("registry", "add", "acme", static.url, code=0, once=True)
            scan.run("ext", "install", "cred-ext", code=3, error="invalid_index")
            scan.run("ext", "install", "oci-ext", code=3, error="invalid_index")
            scan.run("ext", "info", "cred-ext", code=3, error="invalid_index")
        scan.run("registry", "validate", index.root, code=3, error="invalid_index")
        # a copy of the index without the broken entries: the signed query and the redirects
        clean = RegistryDir(tmp_path / "clean", "clean")
        clean.publish("query-ext", "0.1.0", data=data, url=f"{served}?token={planted['entry_query']}")
        clean.publish("moved-ext", "0.1.0", data=moved_data, url=moved)
        clean.publish("redirected-ext", "0.1.0", data=creds_data, url=redirected)
        with StaticFileServer(clean.root) as static:
            scan.run("registry", "add", "clean", static.url, code=0, once=True)
            scan.run("ext", "install", "query-ext", "--registry", "clean", code=0, once=True)
            scan.run("ext", "install", "moved-ext", "--registry", "clean", code=0, once=True)
            scan.run("ext", "install", "redirected-ext", "--registry", "clean", code=7, error="network_error")
            scan.run("ext", "info", "query-ext", "--registry", "clean", code=0)
            scan.run("ext", "status", "query-ext", code=0)
            scan.run("ext", "list", code=0)
    assert any(r.path.endswith(f"X-Amz-Signature={planted['location_query']}") for r in server.requests)

    # an OCI reference with credentials as --push; Docker's config with a password the registry refuses
    archive = packed(tmp_path, "review-pack", name="acme-oci")
    published = RegistryDir(tmp_path / "oci-index", "ocireg")
    with FakeDistribution(archive.read_bytes(), basic=(USER, PASSWORD)) as registry:
        push = f"oci://alice:{planted['push']}@127.0.0.1:{registry.port}/acme/demo:1.0.0"
        scan.run("registry", "publish", archive, "--index", published.root, "--push", push, code=2, error="usage")
        docker = user_home / ".docker" / "config.json"
        docker.parent.mkdir(parents=True)
        auth = base64.b64encode(f"alice:{planted['docker']}".encode()).decode()
        docker.write_text(json.dumps({"auths": {f"127.0.0.1:{registry.port}": {"auth": auth}}}))
        published.publish("acme-oci", "0.1.0", data=archive.read_bytes(), url=registry.ref())
        scan.run("registry", "add", "ocireg", published.root, code=0, once=True)
        scan.run("ext", "install", "acme-oci", "--registry", "ocireg", code=4, error="auth_required")
        assert any(r.headers.get("authorization") for r in registry.requests)  # the planted password was sent there

    files = scan.assert_clean(planted, home, files_too=set(planted) - {"entry_query"})
    record("url-secrets", places=len(planted), commands=len(scan.outputs), files=files)


def test_redaction_of_urls_in_text() -> None:
    assert redact_url("https://alice:pw@example.com/a?token=x#frag") == "https://example.com/a?<redacted>"
    assert redact_url("oci://u:p@ghcr.io/acme/demo@sha256:" + "a" * 64) == "oci://ghcr.io/acme/demo@sha256:" + "a" * 64
    text = ("fetch 'https://alice:pw@example.com/x.tar.gz' failed; see https://example.com/help?page=2 and "
            "oci://ghcr.io/acme/demo@sha256:" + "b" * 64 + ", then http://h/x?sig=abc.")
    assert redact_urls(text) == ("fetch 'https://example.com/x.tar.gz' failed; see https://example.com/help?page=2 "
                                 "and oci://ghcr.io/acme/demo@sha256:" + "b" * 64 + ", then http://h/x?<redacted>")
    assert redact_urls("no url here: alice@example.com") == "no url here: alice@example.com"
