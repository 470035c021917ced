"""The maintainer's side of a signed registry (SPEC 5.4a): `registry init --sign`, re-signing
by publish/yank/unyank/build, `registry sign`, `registry rotate-key`, expiries, and `registry
validate` checking the signatures."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.publish.helpers import fail, ok, packed
from tests.support.cli import run_cli
from tests.support.signed import signed_index

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
    assert doc["signing"]["keys"] == str(keys) and doc["signing"]["generated_keys"] == list(ROLES)
    assert sorted(p.name for p in (index / "metadata").iterdir()) == [
        "1.root.json", "root.json", "snapshot.json", "targets.json", "timestamp.json"]
    for role in ROLES:
        key = keys / f"{role}.key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8 PEM, unencrypted
        assert (keys / f"{role}.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert not any(p.suffix == ".key" for p in index.rglob("*"))
    targets = json.loads((index / "metadata" / "targets.json").read_bytes())["signed"]["targets"]
    assert sorted(targets) == ["index.json", "registry.toml"]
    assert problems(index) == []


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
    assert "archives/review-pack-0.1.0.tar.gz" in json.loads(idx.metadata("targets.json"))["signed"]["targets"]
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
