"""Network faults through the CLI (SPEC 5.4, 6, 11): `ext install NAME` against a registry whose
archive (or whose registry file) a loopback server serves wrongly on purpose.

Each fault gets its SPEC code, installs nothing, leaves no leftover, and leaves the download cache
unpoisoned — every file under `cache/downloads/sha256/` hashes to its name and no partial
download stays in `tmp/` — after which the same install, served properly, works. Retries wait
`[network] backoff_base` (tiny here); a `Retry-After` is honoured.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from tests.registry.helpers import RegistryDir, archive_bytes
from tests.reliability.helpers import cli_json, doctor_problems, record
from tests.support.servers import FaultServer, Reply, StaticFileServer, closed_port_url

NAME = "demo-ext"
ARCHIVE = f"/{NAME}-0.1.0.tar.gz"
# ~20 KiB that gzip cannot shrink much, so that a drip lasts
DATA = archive_bytes(NAME, "0.1.0", files={"padding.txt": random.Random(7).randbytes(15000).hex()})
HTML = b"<!doctype html><html><head><title>Sign in</title></head><body>Please sign in.</body></html>\n"
FAST = "[network]\nbackoff_base = 0.001\nretries = 3\nconnect_timeout = 5\nread_timeout = 10\n"
# a status line and headers that would go on for ever, each byte well within the read timeout
ENDLESS_HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nX-Slow: " + b"a" * 20_000


@dataclass
class Fault:
    name: str
    replies: list[Reply] = field(default_factory=list)  # scripted for the archive's path
    code: str | None = None  # None: the retries succeed and it installs
    requests: int | None = None  # archive requests expected
    config: str = ""  # more [network] settings
    refused: bool = False  # the entry points at a port nothing listens on
    redirect_loop: bool = False
    min_seconds: float = 0.0


FAULTS = [
    Fault("connection-refused", code="network_error", refused=True),
    Fault("reset-mid-body", [Reply(200, DATA, reset_after=len(DATA) // 2)], "network_error", requests=3),
    Fault("body-shorter-than-content-length", [Reply(200, DATA[: len(DATA) // 2], declared_length=len(DATA))],
          "network_error", requests=3),
    Fault("500-then-success", [Reply(500, b"oops"), Reply(200, DATA)], None, requests=2),
    Fault("503-retry-after-then-success", [Reply(503, b"busy", {"Retry-After": "1"}), Reply(200, DATA)], None,
          requests=2, min_seconds=1.0),
    Fault("503-always", [Reply(503, b"busy", {"Retry-After": "0"})], "http_error", requests=3),
    Fault("drip-below-min-rate", [Reply(200, DATA, drip=(256, 0.05))], "network_error", requests=1,
          config="min_rate = 20000\nmin_rate_after = 0.5\n"),
    Fault("headers-dripped", [Reply(raw=ENDLESS_HEADERS, drip=(1, 0.01))], "network_error", requests=3,
          config="read_timeout = 0.3\n"),
    Fault("endless-body", [Reply(200, endless=True)], "archive_too_large", requests=1),
    Fault("longer-than-size", [Reply(200, DATA + b"\0" * 512)], "archive_too_large", requests=1),
    Fault("html-instead-of-archive", [Reply(200, HTML, {"Content-Type": "text/html"})], "checksum_mismatch",
          requests=1),
    Fault("same-size-garbage", [Reply(200, bytes(len(DATA)))], "checksum_mismatch", requests=1),
    Fault("404", [Reply(404, b"gone")], "not_found", requests=1),
    Fault("redirect-loop", code="network_error", redirect_loop=True),
]


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    with FaultServer() as server:
        yield server
    assert server.errors == []  # every scripted misbehaviour was carried out


def configure(home: Path, registries: dict[str, str], extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    settings = dict(line.split(" = ", 1) for line in (FAST + extra).splitlines() if " = " in line)
    text = "[network]\n" + "".join(f"{key} = {value}\n" for key, value in settings.items())  # extra overrides
    for priority, (name, url) in enumerate(registries.items(), start=1):
        text += f'\n[registries.{name}]\nsource = "{url}"\npriority = {priority * 10}\n'
    (home / "config.toml").write_text(text, encoding="utf-8")


def assert_cache_unpoisoned(home: Path) -> int:
    """Every cached download hashes to its name; no partial download is left. Returns how many."""
    root = home / "cache" / "downloads"
    entries = [p for p in (root / "sha256").rglob("*") if p.is_file()] if (root / "sha256").exists() else []
    for path in entries:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.name, path
    assert not (root / "tmp").exists() or not any((root / "tmp").iterdir())
    return len(entries)


def assert_nothing_installed(home: Path) -> None:
    code, document = cli_json("ext", "list")
    assert code == 0 and [e["name"] for e in document["extensions"]] == [], document
    assert doctor_problems() == []
    staging = home / ".staging"
    assert not staging.exists() or not any(staging.iterdir())


@pytest.mark.parametrize("case", FAULTS, ids=[f.name for f in FAULTS])
def test_archive_fault(case: Fault, fault: FaultServer, home: Path, tmp_path: Path) -> None:
    registry = RegistryDir(tmp_path / "index", "acme")
    if case.refused:
        url = closed_port_url() + ARCHIVE
    elif case.redirect_loop:
        fault.script("/loop-a", Reply.redirect("/loop-b"))
        fault.script("/loop-b", Reply.redirect("/loop-a"))
        url = fault.url + "/loop-a"
    else:
        url = fault.script(ARCHIVE, *case.replies)
    registry.publish(NAME, "0.1.0", data=DATA, url=url)
    with StaticFileServer(registry.root) as static:
        configure(home, {"acme": static.url + "/"}, case.config)
        start = time.monotonic()
        code, document = cli_json("ext", "install", NAME)
        elapsed = time.monotonic() - start
        if case.requests is not None:
            assert fault.count(ARCHIVE) == case.requests, fault.requests
        if case.code is None:
            assert code == 0, document
            assert [i["name"] for i in document["installed"]] == [NAME]
            assert elapsed >= case.min_seconds
            assert assert_cache_unpoisoned(home) == 1
            record("network_fault", fault=case.name, code="installed after retries", requests=case.requests)
            return
        assert code == document["error"]["exit_code"] != 0, document
        assert document["error"]["code"] == case.code, document
        assert_nothing_installed(home)
        assert_cache_unpoisoned(home)
        # served properly now: the same install works
        registry.change(NAME, "0.1.0", url=fault.script(ARCHIVE, Reply(200, DATA)), bump=True)
        code, document = cli_json("ext", "install", NAME)
        assert code == 0, document
        assert assert_cache_unpoisoned(home) == 1
    record("network_fault", fault=case.name, code=case.code, requests=case.requests)


def test_html_from_a_url_install_is_an_invalid_archive(fault: FaultServer, home: Path) -> None:
    """Without a registry checksum the page is downloaded, found not to be an archive, and kept
    in the cache only under its own sha256."""
    configure(home, {})
    url = fault.script("/download/latest.tar.gz", Reply(200, HTML, {"Content-Type": "text/html"}))
    code, document = cli_json("ext", "install", url, "--allow-unverified", "--yes")
    assert code == 3 and document["error"]["code"] == "invalid_archive", document
    assert_nothing_installed(home)
    assert assert_cache_unpoisoned(home) <= 1
    fault.script("/download/latest.tar.gz", Reply(200, DATA))
    code, document = cli_json("ext", "install", url, "--allow-unverified", "--yes")
    assert code == 0, document
    assert_cache_unpoisoned(home)
    record("network_fault", fault="html-from-a-url", code="invalid_archive", requests=1)


@pytest.mark.parametrize("broken", ["registry.toml", f"extensions/de/{NAME}.toml"])
def test_registry_file_that_is_not_toml(broken: str, fault: FaultServer, home: Path, tmp_path: Path) -> None:
    """The registry's files come from the fault server: one of them is an HTML page. The
    resolution stops with invalid_index (it does not fall through to another registry), nothing
    bad is cached, and once the file is right the install works."""
    registry = RegistryDir(tmp_path / "index", "acme")
    registry.publish(NAME, "0.1.0", data=DATA, url=fault.url + ARCHIVE)
    fault.script(ARCHIVE, Reply(200, DATA))
    files = ["registry.toml", f"extensions/de/{NAME}.toml"]
    for rel in files:
        body = HTML if rel == broken else (registry.root / rel).read_bytes()
        fault.script("/" + rel, Reply(200, body, {"Content-Type": "text/html" if rel == broken else "text/plain"}))
    other = RegistryDir(tmp_path / "other", "other")
    other.publish(NAME, "0.1.0", data=DATA)
    with StaticFileServer(other.root) as static:
        configure(home, {"acme": fault.url + "/", "other": static.url + "/"})
        code, document = cli_json("ext", "install", NAME)
        assert code == 3 and document["error"]["code"] == "invalid_index", document
        assert_nothing_installed(home)
        cached = list((home / "cache").rglob("*")) if (home / "cache").exists() else []
        assert not any(p.is_file() and b"<html>" in p.read_bytes() for p in cached)
        fault.script("/" + broken, Reply(200, (registry.root / broken).read_bytes()))
        code, document = cli_json("ext", "install", NAME)
        assert code == 0 and document["installed"][0]["name"] == NAME, document
        assert_cache_unpoisoned(home)
    record("network_fault", fault=f"not-toml:{broken}", code="invalid_index", requests=None)
