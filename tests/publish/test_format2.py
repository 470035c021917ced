"""Registry index format 2 (docs/registry-format.md): hashed entry paths, summary shards, the
shard list and the changes log — written by init, publish, yank/unyank and build, migrated to
by `build --format 2`, checked by validate, read by the client."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest

from pkgmgr.registry.layout import chunk_path, entry_path, shard_of, summary_path
from pkgmgr.registry.summary import parse_chunk, parse_shard, parse_shards
from tests.publish.helpers import fail, ok, packed, snapshot


def init2(root: Path, name: str = "acme") -> Path:
    ok("registry", "init", root, "--name", name, "--format", "2")
    return root


@pytest.fixture
def index2(tmp_path: Path) -> Path:
    return init2(tmp_path / "index")


def changes(index: Path, chunk: int = 0) -> list[tuple[int, str, str | None]]:
    rel = chunk_path(chunk)
    return [(c.serial, c.op, c.name) for c in parse_chunk((index / rel).read_bytes(), rel, chunk)]


def shard_names(index: Path, name: str) -> list[str]:
    shard = shard_of(name)
    rel = summary_path(shard)
    return [r.name for r in parse_shard((index / rel).read_bytes(), rel, shard)]


def test_init_writes_a_format_2_index(index2: Path) -> None:
    files = sorted(snapshot(index2))
    assert "index.json" not in files and "index/shards.json" in files
    assert tomllib.loads((index2 / "registry.toml").read_text())["registry"]["format"] == 2
    listed = parse_shards((index2 / "index/shards.json").read_bytes())
    assert (listed.serial, listed.extensions, listed.shards) == (0, 0, {})
    assert ok("registry", "validate", index2)["valid"] is True
    workflow = (index2 / ".github/workflows/validate.yml").read_text()
    assert "registry validate . --changed-since" in workflow  # a big index's CI checks what changed


def test_publish_writes_the_hashed_entry_its_shard_and_one_change(tmp_path: Path, index2: Path) -> None:
    doc = ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index2)
    rel = entry_path("review-pack", 2)
    assert doc["published"]["entry"] == rel and doc["serial"] == 1
    assert (index2 / rel).is_file() and rel.count("/") == 3
    assert shard_names(index2, "review-pack") == ["review-pack"]
    assert changes(index2) == [(1, "publish", "review-pack")]
    listed = parse_shards((index2 / "index/shards.json").read_bytes())
    assert listed.serial == 1 and listed.extensions == 1 and set(listed.shards) == {shard_of("review-pack")}
    assert ok("registry", "validate", index2)["valid"] is True
    assert ok("registry", "build", index2)["changed"] is False  # what publish wrote is what build writes

    ok("registry", "publish", packed(tmp_path, version="0.2.0"), "--index", index2)
    ok("registry", "yank", index2, "review-pack", "0.1.0")
    ok("registry", "unyank", index2, "review-pack", "0.1.0")
    assert changes(index2) == [(1, "publish", "review-pack"), (2, "publish", "review-pack"),
                               (3, "yank", "review-pack"), (4, "unyank", "review-pack")]
    assert ok("registry", "validate", index2)["valid"] is True
    assert ok("registry", "build", index2)["changed"] is False


def test_publish_reads_no_other_entry(tmp_path: Path, index2: Path) -> None:
    """O(what changed): a broken entry elsewhere does not stop a publish (a full read would)."""
    other = index2 / entry_path("zz-broken", 2)
    other.parent.mkdir(parents=True)
    other.write_text("this is not toml =\n")
    before = other.read_bytes()
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index2)
    assert other.read_bytes() == before
    report = fail("invalid_index", "registry", "validate", index2)
    assert {p["file"] for p in report["error"]["details"]["problems"]} >= {entry_path("zz-broken", 2)}


def test_republish_repairs_an_interrupted_summary(tmp_path: Path, index2: Path) -> None:
    archive = packed(tmp_path, version="0.1.0")
    ok("registry", "publish", archive, "--index", index2)
    shard = index2 / summary_path(shard_of("review-pack"))
    good = shard.read_bytes()
    shard.unlink()  # as if killed after the entry, before the shard
    assert fail("invalid_index", "registry", "validate", index2)
    again = ok("registry", "publish", archive, "--index", index2)
    assert again["changed"] is False and again["repaired_index"] is True and again["serial"] == 1
    assert shard.read_bytes() == good
    assert changes(index2) == [(1, "publish", "review-pack")]
    assert ok("registry", "validate", index2)["valid"] is True


def test_build_logs_hand_edits_under_a_new_serial(tmp_path: Path, index2: Path) -> None:
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index2)
    path = index2 / entry_path("review-pack", 2)
    path.write_text(path.read_text().replace('tier = "community"', 'tier = "official"'))
    problems = fail("invalid_index", "registry", "validate", index2)["error"]["details"]["problems"]
    assert [p["file"] for p in problems] == [summary_path(shard_of("review-pack"))]
    doc = ok("registry", "build", index2)
    assert doc["changed"] is True and doc["serial"] == 2 and doc["changed_extensions"] == 1
    assert changes(index2)[-1] == (2, "build", "review-pack")
    assert ok("registry", "validate", index2)["valid"] is True


def test_misplaced_entry_is_reported_by_build_and_validate(tmp_path: Path, index2: Path) -> None:
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index2)
    right = index2 / entry_path("review-pack", 2)
    wrong = index2 / "extensions/re/review-pack.toml"  # the format-1 place
    wrong.parent.mkdir(parents=True)
    right.rename(wrong)
    before = snapshot(index2)
    problems = fail("invalid_index", "registry", "build", index2)["error"]["details"]["problems"]
    assert any(entry_path("review-pack", 2) in p["message"] for p in problems)
    assert snapshot(index2) == before
    problems = fail("invalid_index", "registry", "validate", index2)["error"]["details"]["problems"]
    assert any(p["file"] == "extensions/re/review-pack.toml" for p in problems)


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_validate_reads_no_entry_through_a_link_or_a_fifo(tmp_path: Path, index2: Path, kind: str) -> None:
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index2)
    assert ok("registry", "validate", index2)["valid"] is True
    rel = entry_path("review-pack", 2)
    entry = index2 / rel
    outside = tmp_path / "outside.toml"
    outside.write_bytes(entry.read_bytes())
    entry.unlink()
    if kind == "symlink":
        entry.symlink_to(outside)  # the same bytes, from outside the index
    else:
        import os

        os.mkfifo(entry)  # would block a plain open()
    before = snapshot(index2)
    problems = fail("invalid_index", "registry", "validate", index2)["error"]["details"]["problems"]
    assert [p["file"] for p in problems] == [rel]
    assert ("a symbolic link" if kind == "symlink" else "a FIFO") in problems[0]["message"]
    assert snapshot(index2) == before


def test_build_migrates_a_format_1_index(tmp_path: Path, index: Path) -> None:
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index)
    ok("registry", "publish", packed(tmp_path, name="other-pack", version="1.0.0"), "--index", index)
    old_index = json.loads((index / "index.json").read_text())
    doc = ok("registry", "build", index, "--format", "2")
    assert doc["migrated"] is True and doc["format"] == 2 and doc["serial"] == 3 and doc["extensions"] == 2
    assert not (index / "index.json").exists() and not (index / "extensions/re").exists()
    for name in ("review-pack", "other-pack"):
        assert (index / entry_path(name, 2)).is_file()
    assert changes(index) == [(3, "reset", None)]
    records = [r for name in ("other-pack", "review-pack") for r in json.loads(
        (index / summary_path(shard_of(name))).read_text())["extensions"] if r["name"] == name]
    assert records == old_index["extensions"]  # the same summary, sharded
    assert ok("registry", "validate", index)["valid"] is True
    assert ok("registry", "build", index, "--format", "2")["changed"] is False
    assert fail("usage", "registry", "build", index, "--format", "1")


def test_migration_refuses_an_invalid_index_and_moves_nothing(tmp_path: Path, index: Path) -> None:
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index)
    (index / "extensions/zz").mkdir()
    (index / "extensions/zz/zz-bad.toml").write_text("name = 1\n")
    before = snapshot(index)
    fail("invalid_index", "registry", "build", index, "--format", "2")
    assert snapshot(index) == before


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root), "PATH": "/usr/bin:/bin"})


def test_changed_since_checks_only_the_changed_entries(tmp_path: Path, index2: Path) -> None:
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index2)
    broken = index2 / entry_path("zz-broken", 2)  # broken at the base: not this change's fault
    broken.parent.mkdir(parents=True)
    broken.write_text("this is not toml =\n")
    _git(index2, "init", "-q")
    _git(index2, "add", "-A")
    _git(index2, "commit", "-qm", "base")
    ok("registry", "publish", packed(tmp_path, name="other-pack", version="1.0.0"), "--index", index2)
    doc = ok("registry", "validate", index2, "--changed-since", "HEAD")
    assert doc["checked"]["entries"] == 1 and doc["checked"]["base"] == "HEAD"
    assert fail("invalid_index", "registry", "validate", index2, "--base", "HEAD")  # the whole index

    path = index2 / entry_path("review-pack", 2)  # a published version changed in this change
    path.write_text(path.read_text().replace("size = ", "size = 1"))
    problems = fail("invalid_index", "registry", "validate", index2, "--changed-since", "HEAD")
    messages = [p["message"] for p in problems["error"]["details"]["problems"]]
    assert any("changed since" in m for m in messages)


def test_the_client_installs_from_a_format_2_index(tmp_path: Path, index2: Path, monkeypatch) -> None:
    monkeypatch.setenv("PKGMGR_HOME", str(tmp_path / "home"))
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index2)
    ok("registry", "add", "acme", str(index2))
    info = ok("ext", "info", "review-pack", "--registry", "acme")
    assert info["latest"] == "0.1.0" and info["registry"] == "acme"


def test_build_refuses_an_index_json_over_the_cap_readers_enforce(tmp_path: Path, index: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """One set of caps: build never writes the index.json that validate and clients refuse."""
    from pkgmgr.registry import publish as publish_module

    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index)
    monkeypatch.setattr(publish_module, "INDEX_MAX_BYTES", 64)
    before = snapshot(index)
    doc = fail("invalid_index", "registry", "build", index)
    assert "--format 2" in doc["error"]["message"] and snapshot(index) == before
    doc = fail("invalid_index", "registry", "publish", packed(tmp_path, version="0.2.0"), "--index", index)
    assert "--format 2" in doc["error"]["message"] and snapshot(index) == before
