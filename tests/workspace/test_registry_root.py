"""A signed team registry pinned in pkgmgr.toml (SPEC 10: `{ source = "...", root_sha256 = "..." }`):
read only through TUF with that root by `sync`, shown by `trust --show`, part of the trust digest;
an unknown key of the table is an error naming it. The registry is a signed index served on
loopback (tests.support.signed, made by `registry init --sign` and `registry publish`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.helpers import fail, human, ok
from tests.publish.helpers import packed
from tests.registry.helpers import state_snapshot
from tests.support.servers import StaticFileServer
from tests.support.signed import SignedIndex, signed_index


@pytest.fixture
def index(tmp_path: Path) -> SignedIndex:
    idx = signed_index(tmp_path / "index", name="team")
    idx.publish(packed(tmp_path, version="0.1.0"))
    return idx


@pytest.fixture
def server(index: SignedIndex) -> Iterator[StaticFileServer]:
    with StaticFileServer(index.path) as srv:
        yield srv


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "user-home" / "project"
    root.mkdir(parents=True)
    return root


def declare(ws: Path, url: str, pin: str, *, extra: str = "") -> None:
    (ws / "pkgmgr.toml").write_text(
        f'[registries]\nteam = {{ source = "{url}", root_sha256 = "{pin}"{extra} }}\n\n'
        '[extensions]\nreview-pack = { version = "*", registry = "team" }\n', encoding="utf-8")


def installed(ws: Path) -> list[tuple[str, str]]:
    return [(e["name"], e["version"]) for e in ok("ext", "list", "--scope", "workspace", cwd=ws)["extensions"]
            if e["scope"] == "workspace"]


def test_sync_reads_a_pinned_registry_through_tuf(ws: Path, index: SignedIndex, server: StaticFileServer,
                                                   home: Path) -> None:
    declare(ws, server.url + "/", index.root_sha256())
    ok("trust", cwd=ws)
    ok("sync", cwd=ws)
    assert installed(ws) == [("review-pack", "0.1.0")]
    served = {request.path for request in server.requests}
    assert {"/metadata/1.root.json", "/metadata/timestamp.json", "/metadata/targets.json"} <= served
    trusted = list((home / "tuf").glob("*/root.json"))
    assert len(trusted) == 1  # the pinned root, kept apart from any `registry add` of that source
    assert json.loads(trusted[0].read_bytes())["signed"]["_type"] == "root"
    server.requests.clear()
    ok("sync", "--upgrade", cwd=ws)  # the trusted root is used from now on: 1.root.json is not fetched again
    assert "/metadata/1.root.json" not in {request.path for request in server.requests}


@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_a_lost_or_damaged_trusted_root_of_a_pinned_registry_is_reestablished_from_the_pin(
        ws: Path, index: SignedIndex, server: StaticFileServer, home: Path, damage: str) -> None:
    """The root pkgmgr.toml pins is what a lost trusted root is fetched again from: a damaged one
    (a power cut, a hand) is re-established the same way — `1.root.json` must still have the
    pinned sha256 and sign itself — never refused with a repair that does not apply to a declared
    registry (`registry remove` knows only configured ones)."""
    declare(ws, server.url + "/", index.root_sha256())
    ok("trust", cwd=ws)
    ok("sync", cwd=ws)
    [link] = list((home / "tuf").glob("*/root.json"))
    target = link.resolve()
    if damage == "missing":
        link.unlink()
    else:
        target.write_bytes(target.read_bytes()[:100])
    server.requests.clear()
    ok("sync", "--upgrade", cwd=ws)
    assert "/metadata/1.root.json" in {request.path for request in server.requests}
    assert json.loads(link.resolve().read_bytes())["signed"]["_type"] == "root"
    assert installed(ws) == [("review-pack", "0.1.0")]


def test_a_pin_that_is_not_the_registry_root_is_refused_and_nothing_installs(ws: Path, index: SignedIndex,
                                                                              server: StaticFileServer,
                                                                              home: Path) -> None:
    declare(ws, server.url + "/", "0" * 64)
    ok("trust", cwd=ws)
    before = state_snapshot(home)
    document = fail("registry_signature_invalid", "sync", cwd=ws)
    assert f"has sha256 {index.root_sha256()}, not the root_sha256 pkgmgr.toml pins" in document["error"]["message"]
    assert state_snapshot(home).get("extensions") == before.get("extensions")
    assert not list((home / "tuf").glob("*/root.json"))  # nothing trusted


def test_a_pinned_registry_served_unsigned_is_refused(ws: Path, index: SignedIndex, tmp_path: Path,
                                                       home: Path) -> None:
    unsigned = tmp_path / "unsigned"
    shutil.copytree(index.path, unsigned)
    shutil.rmtree(unsigned / "metadata")
    with StaticFileServer(unsigned) as plain:
        declare(ws, plain.url + "/", index.root_sha256())
        ok("trust", cwd=ws)
        document = fail("registry_signature_invalid", "sync", cwd=ws)
    assert "served unsigned" in document["error"]["message"]
    assert installed(ws) == []


def test_an_entry_changed_without_signing_is_refused(ws: Path, index: SignedIndex, server: StaticFileServer,
                                                      tmp_path: Path) -> None:
    declare(ws, server.url + "/", index.root_sha256())
    ok("trust", cwd=ws)
    entry = next((index.path / "extensions").rglob("review-pack.toml"))
    entry.write_text(entry.read_text(encoding="utf-8").replace("Review", "Reviewed"), encoding="utf-8")
    fail("registry_signature_invalid", "sync", cwd=ws)
    assert installed(ws) == []


def test_trust_show_prints_the_pin_and_the_digest_covers_it(ws: Path, index: SignedIndex,
                                                            server: StaticFileServer) -> None:
    pin = index.root_sha256()
    declare(ws, server.url + "/", pin)
    shown = ok("trust", "--show", cwd=ws)
    assert shown["registries"][0]["root_sha256"] == pin
    text = human("trust", "--show", cwd=ws).stdout
    assert f"registry team: read only through TUF, with the root whose sha256 is\n  {pin}\n" in text
    assert "REGISTRY  SOURCE" in text and "SIGNED" in text
    ok("trust", cwd=ws)
    declare(ws, server.url + "/", "1" * 64)  # another pin is another approval
    assert ok("trust", "--show", cwd=ws)["digest"] != shown["digest"]
    fail("trust_required", "sync", cwd=ws)


@pytest.mark.parametrize("extra, key", [(', root = "x"', "registries.team.root"),
                                        (', root_sha256_typo = "x"', "registries.team.root_sha256_typo")])
def test_an_unknown_key_of_a_registry_table_is_named(ws: Path, index: SignedIndex, server: StaticFileServer,
                                                     extra: str, key: str) -> None:
    declare(ws, server.url + "/", index.root_sha256(), extra=extra)
    document = fail("invalid_config", "trust", "--show", cwd=ws)
    assert document["error"]["message"] == f"pkgmgr.toml: {key}: unknown key"


def test_a_pin_that_is_not_a_sha256_is_named(ws: Path, server: StaticFileServer) -> None:
    declare(ws, server.url + "/", "B59A")
    document = fail("invalid_config", "trust", "--show", cwd=ws)
    assert document["error"]["message"].startswith("pkgmgr.toml: registries.team.root_sha256: ")
