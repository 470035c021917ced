"""The maintainer's side of a signed registry (SPEC 5.4a): `registry init --sign`, re-signing
by publish/yank/unyank/build, `registry sign`, `registry rotate-key`, expiries, and `registry
validate` checking the signatures."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pkgmgr.registry.layout import entry_path, shard_of, summary_path
from tests.publish.helpers import fail, ok, packed
from tests.support.cli import run_cli
from tests.support.signed import signed_index, signed_targets

ROLES = ("root", "targets", "snapshot", "timestamp")


def versions(index: Path) -> dict[str, int]:
    return {role: json.loads((index / "metadata" / f"{role}.json").read_bytes())["signed"]["version"]
            for role in ROLES}


def problems(index: Path) -> list[dict]:
    result = run_cli(["registry", "validate", str(index), "-o", "json"])
    if result.code == 0:
        return []
    assert result.code == 3 and result.json["error"]["code"] == "invalid_index", result
    return result.json["error"]["details"]["problems"]


def test_init_sign_creates_the_roles_and_keys_outside_the_index(tmp_path: Path) -> None:
    index = tmp_path / "acme-index"
    doc = ok("registry", "init", index, "--name", "acme", "--sign")["initialized"]
    keys = tmp_path / "acme-keys"
    assert doc["signing"]["keys"] == str(keys) and doc["signing"]["generated_keys"] == [*ROLES, "bins"]
    bins = [f"bins-{i:x}.json" for i in range(16)]  # PEP 458 hashed bins: 2^4 for a small index
    assert sorted(p.name for p in (index / "metadata").iterdir()) == sorted([
        "1.root.json", "root.json", "snapshot.json", "targets.json", "timestamp.json", *bins])
    assert doc["signing"]["bins"] == {"bins": 16, "resigned": 16}
    for role in (*ROLES, "bins"):
        key = keys / f"{role}.key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8 PEM, unencrypted
        assert (keys / f"{role}.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert not any(p.suffix == ".key" for p in index.rglob("*"))
    targets = json.loads((index / "metadata" / "targets.json").read_bytes())["signed"]
    assert targets["targets"] == {} and targets["delegations"]["succinct_roles"]["bit_length"] == 4
    assert sorted(signed_targets(index)) == ["index/shards.json", "registry.toml"]  # format 2, the default
    assert problems(index) == []


def test_a_signed_index_of_the_default_format_is_published_validated_searched_and_installed(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index", format=2)
    published = idx.publish(packed(tmp_path, version="0.1.0"))
    assert published["published"]["version"] == "0.1.0"
    entry = entry_path("review-pack", 2)
    assert entry in idx.signed_targets() and summary_path(shard_of("review-pack")) in idx.signed_targets()
    assert problems(idx.path) == []
    ok("registry", "add", "acme", idx.path, "--root-sha256", idx.root_sha256())
    found = ok("ext", "search", "review", "--registry", "acme")["results"]
    assert [(r["name"], r["latest"]) for r in found] == [("review-pack", "0.1.0")]
    installed = ok("ext", "install", "review-pack", "--registry", "acme", "--yes")["installed"]
    assert [(i["name"], i["version"], i["verified"]) for i in installed] == [("review-pack", "0.1.0", True)]
    (idx.path / entry).write_bytes((idx.path / entry).read_bytes().replace(b"0.1.0", b"0.1.1"))  # unsigned edit
    assert [p["code"] for p in problems(idx.path)].count("registry_signature_invalid") >= 1


def test_keys_inside_the_index_are_refused(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    fail("usage", "registry", "init", index, "--sign", "--keys", index / "keys")
    assert not index.exists()


def test_init_refuses_a_bad_expiry_before_writing(tmp_path: Path) -> None:
    fail("usage", "registry", "init", tmp_path / "idx", "--sign", "--timestamp-expiry", "a week")
    assert not (tmp_path / "idx").exists()


def test_publish_yank_unyank_and_build_re_sign(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    start = versions(idx.path)
    published = idx.publish(packed(tmp_path, version="0.1.0"))
    assert published["signed"]["versions"]["targets"] == start["targets"] + 1
    assert "archives/review-pack-0.1.0.tar.gz" in idx.signed_targets()
    # one publish re-signs the bins of the files it changed (archive, registry.toml, entry, index.json)
    assert 1 <= published["signed"]["bins"]["resigned"] <= 4
    assert problems(idx.path) == []
    for command in (["yank", idx.path, "review-pack", "0.1.0"], ["unyank", idx.path, "review-pack", "0.1.0"]):
        before = versions(idx.path)["timestamp"]
        assert ok("registry", *command, "--keys", idx.keys)["signed"]["versions"]["timestamp"] == before + 1
        assert problems(idx.path) == []
    (idx.path / "index.json").write_text("{}", encoding="utf-8")
    assert ok("registry", "build", idx.path, "--keys", idx.keys)["signed"] is not None
    assert problems(idx.path) == []


def test_validate_reports_a_hand_edit_and_sign_repairs_it(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    registry = idx.path / "registry.toml"
    registry.write_text(registry.read_text("utf-8").replace('description = ""', 'description = "Acme"'), "utf-8")
    found = problems(idx.path)
    assert [(p["code"], p["file"]) for p in found] == [("registry_signature_invalid", "registry.toml")]
    ok("registry", "sign", idx.path, "--keys", idx.keys)
    assert problems(idx.path) == []


def test_validate_reports_a_forged_signature(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    doc = json.loads(idx.metadata("targets.json"))
    doc["signed"]["expires"] = "2099-01-01T00:00:00Z"  # changed after signing
    idx.put("targets.json", json.dumps(doc).encode())
    [problem] = problems(idx.path)
    assert problem["code"] == "registry_signature_invalid" and problem["file"] == "metadata"


def test_sign_with_the_wrong_keys_is_refused(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    other = tmp_path / "other-keys"
    ok("registry", "init", tmp_path / "other", "--sign", "--keys", other)
    fail("registry_signature_invalid", "registry", "sign", idx.path, "--keys", other)
    fail("not_found", "registry", "sign", idx.path, "--keys", tmp_path / "nowhere")
    assert problems(idx.path) == []


def test_signing_keys_from_the_environment(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    result = run_cli(["registry", "sign", str(idx.path), "-o", "json"], env={"PKGMGR_SIGNING_KEYS": str(idx.keys)})
    assert result.code == 0, result


def test_timestamp_only_needs_only_the_timestamp_key(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    ci = tmp_path / "ci-keys"
    ci.mkdir()
    (ci / "timestamp.key").write_bytes((idx.keys / "timestamp.key").read_bytes())
    before = versions(idx.path)
    signed = ok("registry", "sign", idx.path, "--timestamp-only", "--keys", ci, "--timestamp-expiry", "72h")["signed"]
    assert signed["versions"] == {**before, "timestamp": before["timestamp"] + 1}
    expires = datetime.strptime(signed["expires"]["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert expires - datetime.now(UTC) < timedelta(hours=73)
    assert problems(idx.path) == []
    fail("not_found", "registry", "sign", idx.path, "--keys", ci)  # targets needs its own key


def test_an_expired_timestamp_is_a_validation_problem(tmp_path: Path) -> None:
    from tests.support.signed import TEST_ONLY_ED25519_KEYS, past

    idx = signed_index(tmp_path / "index")
    idx.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=idx.version("timestamp.json") + 1,
                         expires=past())
    [problem] = problems(idx.path)
    assert problem["code"] == "registry_signature_invalid" and "expired" in problem["message"]


def test_rotate_the_root_key(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    old_root_key = (idx.keys / "root.key").read_bytes()
    rotated = ok("registry", "rotate-key", idx.path, "root", "--keys", idx.keys)
    assert rotated["signed"]["versions"]["root"] == 2
    assert (idx.keys / "root.key").read_bytes() != old_root_key
    root2 = json.loads(idx.metadata("2.root.json"))
    assert len(root2["signatures"]) == 2  # the old and the new root key
    assert idx.metadata("root.json") == idx.metadata("2.root.json")
    assert problems(idx.path) == []  # verified from 1.root.json through the rotation


def test_rotate_key_of_an_unsigned_index_or_an_unknown_role(tmp_path: Path) -> None:
    ok("registry", "init", tmp_path / "plain")
    fail("usage", "registry", "rotate-key", tmp_path / "plain", "timestamp")
    fail("usage", "registry", "sign", tmp_path / "plain")
    idx = signed_index(tmp_path / "index")
    fail("usage", "registry", "rotate-key", idx.path, "mirror", "--keys", idx.keys)


def test_an_unsigned_index_stays_unsigned(tmp_path: Path) -> None:
    index = tmp_path / "plain"
    ok("registry", "init", index)
    published = ok("registry", "publish", packed(tmp_path), "--index", index)
    assert published["signed"] is None and not (index / "metadata").exists()


def test_sign_root_extends_the_root_before_it_expires(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    signed = ok("registry", "sign", idx.path, "--root", "--expiry", "17520h", "--keys", idx.keys)["signed"]
    assert signed["versions"]["root"] == 2 and signed["expires"]["root"] > "2028"
    assert problems(idx.path) == []


def test_a_change_without_the_keys_changes_nothing(tmp_path: Path) -> None:
    from tests.publish.helpers import snapshot

    idx = signed_index(tmp_path / "index")
    idx.publish(packed(tmp_path, version="0.1.0"))
    before = snapshot(idx.path)
    fail("not_found", "registry", "publish", packed(tmp_path, version="0.2.0"), "--index", idx.path,
         "--keys", tmp_path / "nowhere")
    fail("not_found", "registry", "yank", idx.path, "review-pack", "0.1.0", "--keys", tmp_path / "nowhere")
    assert snapshot(idx.path) == before


def _flatten(idx) -> None:  # noqa: ANN001
    """Make `idx` an index signed the way pkgmgr signed before hashed bins: every target listed in
    targets.json, a snapshot naming targets.json alone (TEST-ONLY keys)."""
    import hashlib

    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from securesystemslib.signer import CryptoSigner
    from tuf.api.metadata import Metadata, MetaFile, Snapshot, TargetFile
    from tuf.api.serialization.json import JSONSerializer

    from pkgmgr.registry.signing import target_files
    from tests.support.signed import TEST_ONLY_ED25519_KEYS

    def signer(role: str) -> CryptoSigner:
        return CryptoSigner(load_pem_private_key(TEST_ONLY_ED25519_KEYS[role].encode(), None))

    pretty = JSONSerializer(compact=False)
    targets = Metadata.from_bytes(idx.metadata("targets.json"))
    targets.signed.delegations = None
    targets.signed.targets = {rel: TargetFile.from_file(rel, str(idx.path / rel), ["sha256"])
                              for rel in target_files(idx.path)}
    targets.signed.version += 1
    targets.signatures.clear()
    targets.sign(signer("targets"))
    data = targets.to_bytes(pretty)
    idx.put("targets.json", data)
    for path in idx.metadata_dir.glob("bins-*.json"):
        path.unlink()
    old = Metadata.from_bytes(idx.metadata("snapshot.json"))
    snapshot = Metadata(Snapshot(version=old.signed.version + 1, expires=old.signed.expires, meta={
        "targets.json": MetaFile(targets.signed.version, len(data), {"sha256": hashlib.sha256(data).hexdigest()})}))
    snapshot.sign(signer("snapshot"))
    snapshot_bytes = snapshot.to_bytes(pretty)
    idx.put("snapshot.json", snapshot_bytes)
    idx.resign_timestamp(TEST_ONLY_ED25519_KEYS["timestamp"], version=idx.version("timestamp.json") + 1,
                         snapshot=snapshot_bytes)


def test_an_index_signed_before_hashed_bins_migrates_and_its_clients_follow(tmp_path: Path,
                                                                           monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("PKGMGR_HOME", str(tmp_path / "home"))
    idx = signed_index(tmp_path / "index")
    idx.publish(packed(tmp_path, version="0.1.0"))
    _flatten(idx)
    (idx.keys / "bins.key").unlink()  # an old keys directory: four keys
    assert problems(idx.path) == []
    ok("registry", "add", "acme", idx.path, "--root", idx.root_file)
    assert ok("ext", "info", "review-pack")["latest"] == "0.1.0"  # the old layout reads

    doc = idx.sign()["signed"]  # the migration: same root, targets delegate to 16 bins
    assert doc["generated_keys"] == ["bins"] and doc["bins"] == {"bins": 16, "resigned": 16}
    assert (idx.keys / "bins.key").is_file() and doc["versions"]["root"] == 1
    assert problems(idx.path) == []
    assert sorted(signed_targets(idx.path)) == sorted(
        ["index.json", "registry.toml", "extensions/re/review-pack.toml", "archives/review-pack-0.1.0.tar.gz"])
    idx.publish(packed(tmp_path, version="0.2.0"))  # and publishing goes on in bins
    assert ok("ext", "info", "review-pack")["latest"] == "0.2.0"  # the same client, the same root
    assert ok("ext", "install", "review-pack")["installed"][0]["version"] == "0.2.0"


def test_validate_reports_a_bin_that_does_not_match_its_files(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    idx.publish(packed(tmp_path, version="0.1.0"))
    entry = idx.path / "extensions" / "re" / "review-pack.toml"
    entry.write_text("# reviewed by hand\n" + entry.read_text())  # its bin still names the old bytes
    found = [(p["code"], p["file"]) for p in problems(idx.path)]
    assert found == [("registry_signature_invalid", "extensions/re/review-pack.toml")]
    idx.sign()
    assert problems(idx.path) == []


def test_rotating_the_bins_key_re_signs_every_bin(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("PKGMGR_HOME", str(tmp_path / "home"))
    idx = signed_index(tmp_path / "index")
    idx.publish(packed(tmp_path, version="0.1.0"))
    ok("registry", "add", "acme", idx.path, "--root", idx.root_file)
    old_key = (idx.keys / "bins.key").read_bytes()
    doc = ok("registry", "rotate-key", idx.path, "bins", "--keys", idx.keys)
    assert doc["signed"]["bins"] == {"bins": 16, "resigned": 16} and doc["signed"]["versions"]["root"] == 1
    assert (idx.keys / "bins.key.old").read_bytes() == old_key != (idx.keys / "bins.key").read_bytes()
    assert problems(idx.path) == []
    idx.publish(packed(tmp_path, version="0.2.0"))
    assert ok("ext", "info", "review-pack")["latest"] == "0.2.0"


def test_a_missing_bins_key_is_an_error_never_a_new_key(tmp_path: Path) -> None:
    idx = signed_index(tmp_path / "index")
    (idx.keys / "bins.key").unlink()
    before = {p.name: p.read_bytes() for p in (idx.path / "metadata").iterdir()}
    doc = fail("not_found", "registry", "publish", packed(tmp_path, version="0.1.0"), "--index", idx.path,
               "--keys", idx.keys)
    assert "bins" in doc["error"]["message"]
    fail("not_found", "registry", "sign", idx.path, "--keys", idx.keys)
    assert {p.name: p.read_bytes() for p in (idx.path / "metadata").iterdir()} == before
    assert not (idx.keys / "bins.key").exists()
