"""Attacks on a signed registry (SPEC 5.4a), after python-tuf's own
tests/test_updater_top_level_update.py: a simulated signed registry (made by `registry init
--sign` and `registry publish`, signed with the test-only keys) served over loopback; change one
thing, run the client, assert the error code, then assert that nothing was installed and nothing
was cached (installed extensions, the registry memory, the download cache, the registry file
cache and the trusted targets metadata)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.publish.helpers import packed
from tests.registry.helpers import state_snapshot
from tests.support.cli import run_cli
from tests.support.servers import FaultServer, Reply, StaticFileServer
from tests.support.signed import TEST_ONLY_ED25519_KEYS, SignedIndex, past, signed_index


def _files(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


class Client:
    """The installed client and what must not move when it is attacked."""

    def __init__(self, home: Path, url: str) -> None:
        self.home = home
        self.url = url

    def run(self, *args: Any) -> Any:
        return run_cli([*map(str, args), "-o", "json"])

    def ok(self, *args: Any) -> dict:
        result = self.run(*args)
        assert result.code == 0, result
        return result.json

    def snapshot(self) -> dict:
        """Installed extensions and registry memory; the download cache; the cached registry
        files (metadata aside); the trusted targets metadata."""
        files = {k: v for k, v in _files(self.home / "cache" / "registries").items() if "/metadata/" not in k}
        trusted = {k: v for k, v in _files(self.home / "tuf").items() if k.endswith("targets.json")}
        return {"state": state_snapshot(self.home), "downloads": _files(self.home / "cache" / "downloads" / "sha256"),
                "registry_files": files, "trusted_targets": trusted}

    def refused(self, code: str, *args: Any, exit_code: int = 4, metadata_moves: bool = False) -> dict:
        """Run a command that must fail with `code`, moving nothing: nothing installed or
        remembered, nothing added to a cache (a file may be forgotten). `metadata_moves`: the
        attack is on an archive, so genuine newer metadata and entry files may be trusted, cached
        and remembered on the way; only the archive must not enter the download cache."""
        before = self.snapshot()
        result = self.run(*args)
        assert result.code == exit_code, result
        assert result.json["error"]["code"] == code, result
        assert "Traceback" not in result.stderr
        after = self.snapshot()
        if metadata_moves:  # the genuine entry's versions may be remembered, nothing installed
            assert after["state"].get("extensions") == before["state"].get("extensions"), "installed under attack"
        else:
            assert after["state"] == before["state"], "installed or remembered under attack"
        for cache in ("downloads",) + (() if metadata_moves else ("registry_files", "trusted_targets")):
            added = set(after[cache].items()) - set(before[cache].items())
            assert not added, f"{cache} gained {sorted(added)} under attack"
        return result.json


@pytest.fixture
def index(tmp_path: Path) -> SignedIndex:
    idx = signed_index(tmp_path / "index")
    idx.publish(packed(tmp_path, version="0.1.0"))
    return idx


@pytest.fixture
def server(index: SignedIndex) -> Iterator[StaticFileServer]:
    with StaticFileServer(index.path) as srv:
        yield srv


@pytest.fixture
def client(home: Path, index: SignedIndex, server: StaticFileServer) -> Client:
    c = Client(home, server.url + "/")
    c.ok("registry", "add", "acme", c.url, "--root", index.root_file)
    return c


def installed(client: Client) -> list[tuple[str, str]]:
    return [(e["name"], e["version"]) for e in client.ok("ext", "list")["extensions"]]


# --- the happy path ---------------------------------------------------------------------------


def test_a_signed_registry_installs_verified_and_says_so(client: Client, index: SignedIndex) -> None:
    added = client.ok("registry", "list")["registries"][0]
    assert added["signed"] is True and added["root_sha256"] == index.root_sha256()
    assert added["expires"]
    client.ok("ext", "install", "review-pack")
    assert installed(client) == [("review-pack", "0.1.0")]
    status = client.ok("ext", "status", "review-pack")
    assert status["provenance"]["signed"] is True
    assert status["provenance"]["root_sha256"] == index.root_sha256()
    info = client.ok("ext", "info", "review-pack")
    assert info["signed"] is True


def test_root_sha256_pins_the_first_root(home: Path, index: SignedIndex, server: StaticFileServer) -> None:
    client = Client(home, server.url + "/")
    wrong = "0" * 64
    client.refused("registry_signature_invalid", "registry", "add", "acme", client.url, "--root-sha256", wrong)
    assert client.ok("registry", "list")["registries"][0]["name"] == "default"  # nothing recorded
    added = client.ok("registry", "add", "acme", client.url, "--root-sha256", index.root_sha256())["added"]
    assert added["signed"] is True and added["root_sha256"] == index.root_sha256()
    client.ok("ext", "install", "review-pack")


def test_offline_reads_the_trusted_metadata_from_the_cache(client: Client) -> None:
    client.ok("ext", "info", "review-pack")
    result = client.run("--offline", "ext", "install", "review-pack")
    assert result.code == 7 and result.json["error"]["code"] == "network_error"  # the archive is not cached
    client.ok("ext", "install", "review-pack")
    client.ok("--offline", "ext", "info", "review-pack")


# --- arbitrary software -----------------------------------------------------------------------


def test_arbitrary_software_a_tampered_entry_file(client: Client, index: SignedIndex, tmp_path: Path) -> None:
    evil = packed(tmp_path, version="0.1.0", files={"evil.txt": "rm -rf ~"})
    entry = index.path / "extensions" / "re" / "review-pack.toml"
    shutil.copy(evil, index.path / "archives" / "evil.tar.gz")
    text = entry.read_text("utf-8")
    old_sha = hashlib.sha256((index.path / "archives" / "review-pack-0.1.0.tar.gz").read_bytes()).hexdigest()
    entry.write_text(text.replace(old_sha, hashlib.sha256(evil.read_bytes()).hexdigest())
                     .replace("archives/review-pack-0.1.0.tar.gz", "archives/evil.tar.gz"), "utf-8")
    doc = client.refused("registry_signature_invalid", "ext", "install", "review-pack")
    assert "extensions/re/review-pack.toml" in doc["error"]["message"]
    assert installed(client) == []


def test_arbitrary_software_a_tampered_archive(client: Client, index: SignedIndex) -> None:
    archive = index.path / "archives" / "review-pack-0.1.0.tar.gz"
    data = archive.read_bytes()
    archive.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    client.refused("checksum_mismatch", "ext", "install", "review-pack", metadata_moves=True)


def test_an_archive_target_the_signed_metadata_does_not_name(client: Client, index: SignedIndex) -> None:
    assert "archives/review-pack-0.1.0.tar.gz" in index.signed_targets()
    (index.path / "archives" / "review-pack-0.1.0.tar.gz").unlink()
    index.sign()  # the maintainer's keys sign an index whose entry names a missing archive
    doc = client.refused("registry_signature_invalid", "ext", "install", "review-pack", metadata_moves=True)
    assert "archives/review-pack-0.1.0.tar.gz" in doc["error"]["message"]


# --- rollback, freeze, mix-and-match ----------------------------------------------------------


def test_rollback_attack_an_older_timestamp(client: Client, index: SignedIndex, tmp_path: Path) -> None:
    old = index.saved()
    index.publish(packed(tmp_path, version="0.2.0"))
    client.ok("registry", "refresh", "acme")  # the client has seen the newer timestamp
    index.put("timestamp.json", old["timestamp.json"])
    client.refused("registry_rollback", "ext", "install", "review-pack")


def test_rollback_attack_an_older_snapshot(client: Client, index: SignedIndex, tmp_path: Path) -> None:
    old = index.saved()
    index.publish(packed(tmp_path, version="0.2.0"))
    client.ok("registry", "refresh", "acme")  # the client trusts the newer snapshot
    index.put("snapshot.json", old["snapshot.json"])  # a timestamp naming the older one
    index.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=index.version("timestamp.json") + 1,
                           snapshot=old["snapshot.json"])
    client.refused("registry_rollback", "ext", "install", "review-pack")


def test_indefinite_freeze_an_expired_timestamp(client: Client, index: SignedIndex) -> None:
    index.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=index.version("timestamp.json") + 1,
                           expires=past())
    client.refused("registry_expired", "ext", "install", "review-pack")


def test_indefinite_freeze_a_short_timestamp_expiry_option(client: Client, index: SignedIndex) -> None:
    signed = index.sign("--timestamp-expiry", "168h")["signed"]
    assert signed["expires"]["timestamp"] < signed["expires"]["targets"]
    client.ok("ext", "install", "review-pack")


def test_mix_and_match_snapshot_and_targets_of_different_versions(client: Client, index: SignedIndex,
                                                                  tmp_path: Path) -> None:
    old = index.saved()
    index.publish(packed(tmp_path, version="0.2.0"))
    index.put("targets.json", old["targets.json"])  # new timestamp and snapshot, old targets
    doc = client.refused("registry_signature_invalid", "ext", "install", "review-pack")
    # targets.json is not the one the snapshot names (in hashed bins it keeps its length: its hash differs)
    assert "length" in doc["error"]["message"] or "hash" in doc["error"]["message"]


# --- endless data and slow retrieval ----------------------------------------------------------


def test_endless_data_metadata_longer_than_its_declared_length(client: Client, index: SignedIndex,
                                                               tmp_path: Path) -> None:
    index.publish(packed(tmp_path, version="0.2.0"))  # a targets.json the client must fetch
    index.put("targets.json", index.metadata("targets.json") + b" " * 4096)
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")


def test_endless_data_a_timestamp_over_its_cap(client: Client, index: SignedIndex) -> None:
    index.put("timestamp.json", index.metadata("timestamp.json") + b" " * 20_000)
    doc = client.refused("registry_signature_invalid", "ext", "install", "review-pack")
    assert "length" in doc["error"]["message"]


def test_slow_retrieval_of_the_timestamp(home: Path, index: SignedIndex) -> None:
    with FaultServer() as fault:
        for path in sorted(p for p in index.path.rglob("*") if p.is_file()):
            rel = "/" + path.relative_to(index.path).as_posix()
            replies = [Reply(200, path.read_bytes())]
            if rel == "/metadata/timestamp.json":
                replies = [Reply(200, path.read_bytes(), drip=(16, 0.01))]
            fault.script(rel, *replies)
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text("[network]\nmin_rate = 0\ndeadline = 0.05\ndeadline_rate = 1000000\n")
        client = Client(home, fault.url + "/")
        result = client.run("registry", "add", "acme", client.url, "--root", index.root_file)
        assert result.code == 7 and result.json["error"]["code"] == "network_error", result
        assert "not received within" in result.json["error"]["message"]
        assert client.ok("registry", "list")["registries"][0]["name"] == "default"
        assert not (home / "tuf").exists() or not any((home / "tuf").iterdir())


# --- keys: rotation, compromise, a root not signed by its predecessor ----------------------------


def test_fast_forward_recovery_after_a_timestamp_key_rotation(client: Client, index: SignedIndex) -> None:
    # an attacker holding the timestamp key fast-forwards the client to version 1000
    genuine = index.metadata("timestamp.json")
    index.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=1000)
    client.ok("registry", "refresh", "acme")
    index.put("timestamp.json", genuine)  # the maintainers notice and rotate the key
    client.ok("registry", "rotate-key", index.path, "timestamp", "--keys", index.keys)
    assert index.version("timestamp.json") < 1000
    client.ok("ext", "install", "review-pack")  # the new key's lower version is trusted again
    assert client.ok("registry", "list")["registries"][0]["root_version"] == 2


def test_a_compromised_timestamp_key_after_rotation(client: Client, index: SignedIndex) -> None:
    client.ok("registry", "rotate-key", index.path, "timestamp", "--keys", index.keys)
    client.ok("registry", "refresh", "acme")
    index.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=index.version("timestamp.json") + 1)
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")


def test_a_root_rotation_is_followed(client: Client, index: SignedIndex) -> None:
    client.ok("registry", "rotate-key", index.path, "root", "--keys", index.keys)
    client.ok("ext", "install", "review-pack")
    listed = client.ok("registry", "list")["registries"][0]
    assert listed["root_version"] == 2
    assert listed["root_sha256"] == hashlib.sha256(index.metadata("2.root.json")).hexdigest()


def test_a_root_not_signed_by_its_predecessor(client: Client, index: SignedIndex) -> None:
    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import Metadata
    from tuf.api.serialization.json import JSONSerializer

    root = Metadata.from_bytes(index.metadata("1.root.json"))
    mallory = CryptoSigner.generate_ed25519()
    for role in ("root", "targets", "snapshot", "timestamp"):
        for keyid in list(root.signed.roles[role].keyids):
            root.signed.revoke_key(keyid, role)
        root.signed.add_key(mallory.public_key, role)
    root.signed.version = 2
    root.sign(mallory)  # signed by the new key only
    index.put("2.root.json", root.to_bytes(JSONSerializer()))
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")


# --- downgrade to unsigned ----------------------------------------------------------------------


def test_a_signed_registry_later_served_unsigned(client: Client, index: SignedIndex) -> None:
    client.ok("ext", "info", "review-pack")
    shutil.rmtree(index.metadata_dir)
    doc = client.refused("registry_signature_invalid", "ext", "install", "review-pack")
    assert "served unsigned" in doc["error"]["message"]


def test_a_directory_registry_is_verified_too(home: Path, index: SignedIndex) -> None:
    client = Client(home, str(index.path))
    client.ok("registry", "add", "local", index.path, "--root", index.root_file)
    entry = index.path / "extensions" / "re" / "review-pack.toml"
    entry.write_text(entry.read_text("utf-8").replace('tier = "community"', 'tier = "official"'), "utf-8")
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")
    index.sign()
    client.ok("ext", "install", "review-pack")


# --- policy -------------------------------------------------------------------------------------


def test_require_signed_refuses_unsigned_registries_but_not_the_shipped_one(home: Path, tmp_path: Path) -> None:
    from tests.publish.helpers import init_index

    plain = init_index(tmp_path / "plain")
    client = Client(home, str(plain))
    client.ok("registry", "add", "plain", plain)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.toml"
    config.write_text(config.read_text("utf-8") + "\n[policy]\nrequire_signed = true\n", "utf-8")
    doc = client.refused("registry_signature_invalid", "ext", "install", "review-pack")
    assert "plain" in doc["error"]["message"]
    client.refused("registry_signature_invalid", "registry", "add", "other", plain)
    listed = {r["name"]: r for r in client.ok("registry", "list")["registries"]}
    assert listed["default"]["signed"] is False and listed["default"]["shipped"] is True
    client.ok("registry", "remove", "plain")
    client.ok("ext", "install", "review-pack")  # from the shipped registry, exempt
    assert [name for name, _ in installed(client)] == ["review-pack"]


# --- a GitHub registry, read at one commit ------------------------------------------------------


def test_a_signed_github_registry(home: Path, index: SignedIndex, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.fakegithub import FakeGitHub

    def files() -> dict[str, bytes]:
        return {p.relative_to(index.path).as_posix(): p.read_bytes() for p in index.path.rglob("*") if p.is_file()}

    (tmp_path / "gh").mkdir()
    with FakeGitHub(tmp_path / "gh") as github:
        github.env(monkeypatch)
        github.add_repo("acme", "index", files())
        client = Client(home, "github:acme/index")
        client.ok("registry", "add", "acme", "github:acme/index", "--root-sha256", index.root_sha256())
        client.ok("ext", "install", "review-pack")
        index.publish(packed(tmp_path, version="0.2.0"))
        github.commit("acme", "index", files())
        assert client.ok("ext", "update", "review-pack")["updated"][0]["version"] == "0.2.0"
        entry = index.path / "extensions" / "re" / "review-pack.toml"
        entry.write_text(entry.read_text("utf-8").replace("0.2.0", "0.3.0"), "utf-8")  # pushed unsigned
        github.commit("acme", "index", files())
        assert client.ok("ext", "update", "review-pack")["updated"] == []  # the signed entry is the cached one
        shutil.rmtree(home / "cache" / "registries")  # a client that has to fetch the entry again
        client.refused("registry_signature_invalid", "ext", "install", "review-pack@0.3.0", metadata_moves=True)
        assert not list((home / "cache" / "registries").rglob("review-pack.toml"))  # the tampered entry


def test_registry_remove_forgets_the_trusted_metadata(client: Client) -> None:
    client.ok("ext", "info", "review-pack")
    assert any((client.home / "tuf").rglob("timestamp.json"))
    client.ok("registry", "remove", "acme")
    assert not (client.home / "tuf").exists() or not any((client.home / "tuf").iterdir())


def test_an_offline_add_pins_the_root_and_reads_it_later(home: Path, index: SignedIndex,
                                                          server: StaticFileServer) -> None:
    client = Client(home, server.url + "/")
    added = client.ok("--offline", "registry", "add", "acme", client.url, "--root", index.root_file)["added"]
    assert added["signed"] is True and server.count() == 0
    client.ok("ext", "install", "review-pack")


def test_a_root_file_that_is_not_a_valid_root(home: Path, tmp_path: Path, server: StaticFileServer) -> None:
    client = Client(home, server.url + "/")
    forged = tmp_path / "root.json"
    forged.write_text('{"signed": {"_type": "root"}, "signatures": []}', "utf-8")
    client.refused("registry_signature_invalid", "registry", "add", "acme", client.url, "--root", forged)
    client.refused("not_found", "registry", "add", "acme", client.url, "--root", tmp_path / "missing.json",
                   exit_code=5)
    assert [r["name"] for r in client.ok("registry", "list")["registries"]] == ["default"]


def test_a_renewed_root_is_followed(client: Client, index: SignedIndex) -> None:
    index.sign("--root")
    client.ok("ext", "install", "review-pack")
    assert client.ok("registry", "list")["registries"][0]["root_version"] == 2


def test_a_signed_registry_s_refusal_names_the_registry_once(client: Client, index: SignedIndex) -> None:
    """Its reader's errors already say `registry NAME: ...` (`NamedRegistryError`): the registry
    does not prefix them again, as it prefixes the errors of a plain reader."""
    client.ok("ext", "search", "review", "--registry", "acme")
    for cached in (client.home / "cache" / "registries").rglob("index.json*"):
        cached.unlink()
    index_json = index.path / "index.json"
    index_json.write_text(index_json.read_text("utf-8").replace("review-pack", "review-pwn"), "utf-8")
    message = client.refused("registry_signature_invalid", "ext", "search", "--registry", "acme")["error"]["message"]
    assert message.startswith("registry acme: ") and message.count("registry acme") == 1, message


def test_search_reads_a_signed_index_json(client: Client, index: SignedIndex) -> None:
    found = client.ok("ext", "search", "review", "--registry", "acme")
    assert "review-pack" in json.dumps(found)
    for cached in (client.home / "cache" / "registries").rglob("index.json*"):
        cached.unlink()  # a client that has to fetch index.json again
    index_json = index.path / "index.json"
    index_json.write_text(index_json.read_text("utf-8").replace("review-pack", "review-pwn"), "utf-8")
    client.refused("registry_signature_invalid", "ext", "search", "--registry", "acme")


# --- the hashed bins (PEP 458, TAP 15 succinct delegation) -------------------------------------------
#
# After python-tuf's tests/test_updater_delegation_graphs.py and test_updater_top_level_update.py:
# the same simulated registry, one delegated bin changed, the code asserted, nothing moved.

ENTRY = "extensions/re/review-pack.toml"


def bin_of(index: SignedIndex, rel: str) -> str:
    from tuf.api.metadata import Metadata

    targets = Metadata.from_bytes(index.metadata("targets.json"))
    return targets.signed.delegations.succinct_roles.get_role_for_target(rel) + ".json"


def sign_bin(index: SignedIndex, name: str, key_pem: str, *, version: int | None = None,
             expires: Any = None, edit: Any = None) -> bytes:
    """Re-sign the bin `name` by hand with `key_pem` (version and expiry as given), `edit` applied
    to its signed part first; returns its bytes (also written)."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import Metadata
    from tuf.api.serialization.json import JSONSerializer

    md = Metadata.from_bytes(index.metadata(name))
    if edit is not None:
        edit(md.signed)
    if version is not None:
        md.signed.version = version
    if expires is not None:
        md.signed.expires = expires
    md.signatures.clear()
    md.sign(CryptoSigner(load_pem_private_key(key_pem.encode(), None)))
    data = md.to_bytes(JSONSerializer(compact=True))
    index.put(name, data)
    return data


def test_a_publish_re_signs_only_the_bins_it_changed(index: SignedIndex, tmp_path: Path) -> None:
    before = index.saved()
    published = index.publish(packed(tmp_path, version="0.2.0"))
    after = index.saved()
    changed = sorted(name for name in after if after[name] != before.get(name))
    bins = [name for name in changed if name.startswith("bins-")]
    assert bins == sorted({bin_of(index, rel) for rel in (ENTRY, "registry.toml", "index.json",
                                                           "archives/review-pack-0.2.0.tar.gz")})
    assert sorted(set(changed) - set(bins)) == ["snapshot.json", "targets.json", "timestamp.json"]
    assert published["signed"]["bins"] == {"bins": 16, "resigned": len(bins)}


def test_a_bin_signed_by_a_key_it_is_not_delegated_to(client: Client, index: SignedIndex) -> None:
    sign_bin(index, bin_of(index, ENTRY), TEST_ONLY_ED25519_KEYS["targets"])  # not the bins key
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")


def test_a_bin_that_names_another_entry_file(client: Client, index: SignedIndex) -> None:
    """A tampered entry whose bin was edited without the bins key: arbitrary software."""
    entry = index.path / ENTRY
    entry.write_text(entry.read_text().replace('tier = "community"', 'tier = "official"'))

    def edit(signed: Any) -> None:
        from tuf.api.metadata import TargetFile

        signed.targets[ENTRY] = TargetFile.from_file(ENTRY, str(entry), ["sha256"])

    sign_bin(index, bin_of(index, ENTRY), TEST_ONLY_ED25519_KEYS["snapshot"], version=99, edit=edit)
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")


def test_rollback_attack_an_older_bin(client: Client, index: SignedIndex, tmp_path: Path) -> None:
    old = index.saved()
    index.publish(packed(tmp_path, version="0.2.0"))
    name = bin_of(index, ENTRY)
    assert old[name] != index.metadata(name)
    index.put(name, old[name])  # the snapshot names the newer bin: a mix of versions
    # the genuine registry.toml (another bin) may be read and cached on the way; the entry never is
    client.refused("registry_rollback", "ext", "install", "review-pack", metadata_moves=True)
    assert not any(p.name == "review-pack.toml" for p in (client.home / "cache" / "registries").rglob("*"))


def test_indefinite_freeze_an_expired_bin(client: Client, index: SignedIndex) -> None:
    import hashlib as _hashlib

    from tuf.api.metadata import Metadata, MetaFile

    name = bin_of(index, ENTRY)
    version = index.version(name) + 1
    sign_bin(index, name, TEST_ONLY_ED25519_KEYS["bins"], version=version, expires=past())
    # the maintainers' snapshot and timestamp name the expired bin
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from securesystemslib.signer import CryptoSigner
    from tuf.api.serialization.json import JSONSerializer

    snapshot = Metadata.from_bytes(index.metadata("snapshot.json"))
    snapshot.signed.meta[name] = MetaFile(version)
    snapshot.signed.version += 1
    snapshot.signatures.clear()
    snapshot.sign(CryptoSigner(load_pem_private_key(TEST_ONLY_ED25519_KEYS["snapshot"].encode(), None)))
    data = snapshot.to_bytes(JSONSerializer(compact=True))
    index.put("snapshot.json", data)
    index.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=index.version("timestamp.json") + 1,
                           snapshot=data)
    assert _hashlib.sha256(data).hexdigest()
    client.refused("registry_expired", "ext", "install", "review-pack")


def test_endless_data_a_bin_over_its_cap(client: Client, index: SignedIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.registry import signed as signed_module

    monkeypatch.setattr(signed_module.CONFIG, "targets_max_length", 64 * 1024)
    name = bin_of(index, ENTRY)
    index.put(name, index.metadata(name) + b" " * (100 * 1024))  # still signed: whitespace outside it
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")


def test_a_missing_bin(client: Client, index: SignedIndex) -> None:
    (index.metadata_dir / bin_of(index, ENTRY)).unlink()
    client.refused("registry_signature_invalid", "ext", "install", "review-pack")
