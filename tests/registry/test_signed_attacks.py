"""More attacks on signed registries (issue 25 point 9), after python-tuf's own: change one
thing in a simulated signed registry, run the client, assert the error code, assert nothing moved.

- A delegated role whose name escapes (`../../../../victim`): ngclient asks pkgmgr's fetcher for
  `metadata/..%2F..%2F..%2F..%2Fvictim.json`; the fetcher used the unquoted path as a registry
  cache path, so the registry's own signed metadata could read, delete (on a 404) or overwrite
  (once accepted) any `*.json` file outside the cache. A registry's files are named only below it.
- The shipped-default exemption under `require_signed`: only the registry inside the package is
  exempt — not a configured `default`, nor the shipped directory added under another name.
- A root that rotates keys and lowers the threshold to zero, or names no key for a role.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.publish.helpers import init_index
from tests.registry.test_signed import Client, client, index, installed, server  # noqa: F401 - fixtures
from tests.support.servers import StaticFileServer, respond
from tests.support.signed import TEST_ONLY_ED25519_KEYS, SignedIndex


def _signer(role: str):  # noqa: ANN202 - securesystemslib's CryptoSigner
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from securesystemslib.signer import CryptoSigner

    return CryptoSigner(load_pem_private_key(TEST_ONLY_ED25519_KEYS[role].encode(), None))


def _later() -> datetime:
    return (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)


def delegate(index: SignedIndex, role_name: str) -> bytes:
    """Move the entry files from the top-level targets (or the hashed bins) to a role `role_name` they
    delegate to (paths `extensions/...`, the bins' other files to the top-level targets), signed with the index's own keys, with a
    snapshot and timestamp naming it; returns the delegated role's signed metadata."""
    from tuf.api.metadata import DelegatedRole, Delegations, Metadata, MetaFile, Snapshot, Targets
    from tuf.api.serialization.json import JSONSerializer

    signer = _signer("targets")
    key = signer.public_key
    targets = Metadata[Targets].from_bytes(index.metadata("targets.json"))
    moved = {path: target for path, target in targets.signed.targets.items() if path.startswith("extensions/")}
    succinct = targets.signed.delegations.succinct_roles if targets.signed.delegations else None
    for bin_name in succinct.get_roles() if succinct is not None else ():  # hashed bins (PEP 458): theirs too
        if (index.metadata_dir / f"{bin_name}.json").is_file():
            signed_bin = Metadata[Targets].from_bytes(index.metadata(f"{bin_name}.json"))
            for path, target in signed_bin.signed.targets.items():  # the entries to the role, the rest to targets
                (moved if path.startswith("extensions/") else targets.signed.targets)[path] = target
    assert moved
    for path in [p for p in targets.signed.targets if p.startswith("extensions/")]:
        del targets.signed.targets[path]
    targets.signed.delegations = Delegations(keys={key.keyid: key}, roles={
        role_name: DelegatedRole(role_name, [key.keyid], 1, False, paths=["extensions/*", "extensions/*/*", "extensions/*/*/*"])})
    targets.signed.version += 1
    targets.signed.expires = _later()
    targets.signatures.clear()
    targets.sign(signer)
    index.put("targets.json", targets.to_bytes(JSONSerializer(compact=False)))
    delegated = Metadata(Targets(version=1, expires=_later(), targets=moved))
    delegated.sign(signer)
    snapshot = Metadata[Snapshot].from_bytes(index.metadata("snapshot.json"))
    snapshot.signed.meta["targets.json"] = MetaFile(targets.signed.version)
    snapshot.signed.meta[f"{role_name}.json"] = MetaFile(1)
    snapshot.signed.version += 1
    snapshot.signatures.clear()
    snapshot.sign(_signer("snapshot"))
    snapshot_bytes = snapshot.to_bytes(JSONSerializer(compact=False))
    index.put("snapshot.json", snapshot_bytes)
    index.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=index.version("timestamp.json") + 1,
                           snapshot=snapshot_bytes)
    return delegated.to_bytes(JSONSerializer(compact=False))


class RawPathServer(StaticFileServer):
    """The index, and `raw` bodies by the request's path exactly as sent (still percent-encoded)."""

    def __init__(self, root: Path, raw: dict[str, bytes]) -> None:
        super().__init__(root)
        self.raw = raw

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        if h.path in self.raw:
            respond(h, 200, self.raw[h.path], {"Content-Type": "application/json"})
            return
        super().handle(h)


@pytest.mark.parametrize("served", [True, False], ids=["served", "missing"])
def test_a_delegated_role_name_that_escapes_touches_no_file_outside_the_cache(home: Path, index: SignedIndex,
                                                                             served: bool) -> None:
    name = "../../../../victim"
    delegated = delegate(index, name)
    victim = home / "victim.json"  # where cache/registries/<key>/metadata/../../../../victim.json lands
    home.mkdir(parents=True, exist_ok=True)
    victim.write_text('{"precious": true}\n')
    encoded = "/metadata/" + name.replace("/", "%2F") + ".json"
    with RawPathServer(index.path, {encoded: delegated} if served else {}) as srv:
        c = Client(home, srv.url + "/")
        c.ok("registry", "add", "acme", c.url, "--root", index.root_file)
        doc = c.refused("registry_signature_invalid", "ext", "install", "review-pack", "--registry", "acme")
        assert "not a file of the registry" in doc["error"]["message"]
        assert not [r for r in srv.requests if "victim" in r.path]  # never even asked for
    assert victim.read_text() == '{"precious": true}\n'
    assert not list((home / "cache").rglob("*victim*"))


def test_a_delegated_role_with_a_plain_name_is_followed(client: Client, index: SignedIndex,
                                                       server: StaticFileServer) -> None:
    """The control: the same delegation under a plain name is fetched, verified and used."""
    (index.metadata_dir / "bins.json").write_bytes(delegate(index, "bins"))
    client.ok("ext", "install", "review-pack", "--registry", "acme")
    assert any(r.path == "/metadata/bins.json" for r in server.requests)
    assert installed(client) == [("review-pack", "0.1.0")]


# --- the shipped default's exemption -------------------------------------------------------------


def _require_signed(home: Path, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.toml"
    text = config.read_text("utf-8") if config.exists() else ""
    config.write_text(text + "\n[policy]\nrequire_signed = true\n" + extra, "utf-8")


def test_a_configured_default_does_not_borrow_the_shipped_exemption(home: Path, tmp_path: Path) -> None:
    hostile = init_index(tmp_path / "hostile")
    with StaticFileServer(hostile) as srv:
        _require_signed(home, f'\n[registries.default]\nsource = "{srv.url}/"\n')
        client = Client(home, srv.url + "/")
        client.ok("ext", "install", "review-pack")  # from the shipped registry inside the package
        assert not srv.requests  # the configured `default` is never read
        listed = {r["name"]: r for r in client.ok("registry", "list")["registries"]}
        assert listed["default"]["shipped"] is True and listed["default"]["source"] != srv.url + "/"


def test_the_shipped_directory_under_another_name_is_not_exempt(home: Path) -> None:
    from pkgmgr.resources_data import default_registry_dir

    _require_signed(home)
    client = Client(home, str(default_registry_dir()))
    before = client.snapshot()
    result = client.run("registry", "add", "copy", default_registry_dir())
    assert result.code == 4 and result.json["error"]["code"] == "registry_signature_invalid", result
    assert "copy" not in {r["name"] for r in client.ok("registry", "list")["registries"]}
    assert client.snapshot() == before


# --- key rotation abuse ----------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["threshold-zero", "no-keys"])
def test_a_new_root_that_disarms_a_role_is_refused(client: Client, index: SignedIndex, change: str) -> None:
    """A root v2, signed by the root key (as a compromised maintainer could), that sets the
    timestamp threshold to 0 or names no timestamp key, so that any timestamp would do."""
    from tuf.api.metadata import Metadata, Root
    from tuf.api.serialization.json import JSONSerializer

    client.ok("registry", "refresh")
    root = Metadata[Root].from_bytes(index.metadata("1.root.json"))
    if change == "threshold-zero":
        root.signed.roles["timestamp"].threshold = 0
    else:
        root.signed.roles["timestamp"].keyids = []
    root.signed.version = 2
    root.signatures.clear()
    root.sign(_signer("root"))
    data = root.to_bytes(JSONSerializer(compact=False))
    index.put("2.root.json", data)
    index.put("root.json", data)
    result = client.run("ext", "install", "review-pack", "--registry", "acme")
    assert result.code == 4 and result.json["error"]["code"] == "registry_signature_invalid", result
    assert "acme" in result.json["error"]["message"]
    trusted = json.loads(next((client.home / "tuf").rglob("root.json")).read_bytes())
    # a threshold of 0 is no valid root; a root naming no timestamp key is validly signed (TUF
    # trusts the root key), so it becomes the trusted root — and then no timestamp verifies
    assert trusted["signed"]["version"] == (1 if change == "threshold-zero" else 2)
    assert hashlib.sha256(index.metadata("1.root.json")).hexdigest() == index.root_sha256()
    assert installed(client) == []


# --- files the signed metadata does not name -----------------------------------------------------


def test_an_unsigned_entry_file_is_a_file_the_registry_does_not_have(client: Client, index: SignedIndex) -> None:
    """An entry file dropped into the index without re-signing (a push that bypassed the
    signing step): never read, so the extension is not found — whatever the file says."""
    entry = next((index.path / "extensions").rglob("review-pack.toml"))
    evil = entry.parent.parent / "ev" / "evil-ext.toml"
    evil.parent.mkdir(parents=True, exist_ok=True)
    evil.write_text(entry.read_text().replace("review-pack", "evil-ext"))
    for args in (("ext", "install", "evil-ext", "--registry", "acme"), ("ext", "info", "evil-ext", "--registry", "acme")):
        result = client.run(*args)
        assert result.code == 5 and result.json["error"]["code"] == "not_found", result
    assert installed(client) == []
    assert not [p for p in (client.home / "cache").rglob("*evil*")]
