"""`pkgmgr registry yank/unyank` and `pkgmgr registry build`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pkgmgr.registry.index_format import build_index
from tests.publish.helpers import entry_text, fail, ok, packed, set_entry_text, snapshot


@pytest.fixture
def published(tmp_path: Path, index: Path) -> Path:
    for version in ("0.1.0", "0.2.0"):
        ok("registry", "publish", packed(tmp_path, version=version), "--index", index)
    return index


def versions(index: Path) -> dict[str, bool]:
    data = tomllib.loads(entry_text(index, "review-pack"))
    return {v["version"]: v["yanked"] for v in data["versions"]}


def index_json(index: Path) -> dict:
    return json.loads((index / "index.json").read_text("utf-8"))


def test_yank_and_unyank(published: Path) -> None:
    doc = ok("registry", "yank", published, "review-pack", "0.2.0")
    assert doc == {"name": "review-pack", "version": "0.2.0", "yanked": True, "changed": True, "serial": 3,
                   "entry": "extensions/re/review-pack.toml", "signed": None}
    assert versions(published) == {"0.1.0": False, "0.2.0": True}
    (extension,) = index_json(published)["extensions"]
    assert extension["latest"] == "0.1.0" and index_json(published)["serial"] == 3
    assert (published / "index.json").read_bytes() == build_index(published)

    before = snapshot(published)
    again = ok("registry", "yank", published, "review-pack", "0.2.0")
    assert again["changed"] is False and again["serial"] == 3
    assert snapshot(published) == before

    assert ok("registry", "unyank", published, "review-pack", "0.2.0")["serial"] == 4
    assert versions(published) == {"0.1.0": False, "0.2.0": False}
    assert index_json(published)["extensions"][0]["latest"] == "0.2.0"
    assert ok("registry", "unyank", published, "review-pack", "0.2.0")["changed"] is False


def test_yank_keeps_comments_and_matches_pep440_versions(tmp_path: Path, index: Path) -> None:
    ok("registry", "publish", packed(tmp_path, version="1.0.0-rc.1"), "--index", index)
    set_entry_text(index, "review-pack", "# keep me\n" + entry_text(index, "review-pack"))
    ok("registry", "build", index)
    doc = ok("registry", "yank", index, "review-pack", "1.0.0-rc1")
    assert doc["version"] == "1.0.0-rc.1" and doc["yanked"] is True
    assert entry_text(index, "review-pack").startswith("# keep me\n")



def test_an_index_whose_files_start_with_a_byte_order_mark_is_published_and_yanked(tmp_path: Path,
                                                                                   index: Path) -> None:
    """The client and `registry validate` accept a UTF-8 BOM in registry.toml and entries (issue
    13's over-strict fix); publish and yank edit them with tomlkit, which refuses one (was exit 70)."""
    registry = index / "registry.toml"
    registry.write_bytes(b"\xef\xbb\xbf" + registry.read_bytes())
    ok("registry", "publish", packed(tmp_path, version="0.1.0"), "--index", index)
    set_entry_text(index, "review-pack", "\ufeff" + entry_text(index, "review-pack"))
    ok("registry", "publish", packed(tmp_path, version="0.2.0"), "--index", index)
    set_entry_text(index, "review-pack", "\ufeff" + entry_text(index, "review-pack"))
    assert ok("registry", "yank", index, "review-pack", "0.1.0")["serial"] == 3
    assert versions(index) == {"0.1.0": True, "0.2.0": False}
    assert ok("registry", "validate", index)

def test_yank_refusals(published: Path) -> None:
    before = snapshot(published)
    fail("not_found", "registry", "yank", published, "no-such-ext", "0.1.0")
    doc = fail("version_not_found", "registry", "yank", published, "review-pack", "9.9.9")
    assert doc["error"]["details"]["versions"] == ["0.1.0", "0.2.0"]
    fail("usage", "registry", "unyank", published, "review-pack", "latest")
    fail("not_found", "registry", "yank", published.parent / "elsewhere", "review-pack", "0.1.0")
    assert snapshot(published) == before


def test_build_is_deterministic(published: Path) -> None:
    first = (published / "index.json").read_bytes()
    doc = ok("registry", "build", published)
    assert doc["changed"] is False and doc["serial"] == 2 and doc["extensions"] == 1
    (published / "index.json").unlink()
    assert ok("registry", "build", published)["changed"] is True
    assert (published / "index.json").read_bytes() == first
    assert ok("registry", "build", published)["changed"] is False
    assert (published / "index.json").read_bytes() == first


def test_build_follows_a_hand_edit_and_refuses_a_broken_entry(published: Path) -> None:
    text = entry_text(published, "review-pack")
    set_entry_text(published, "review-pack", text.replace('description = "Review skills, hooks, and MCP helpers"',
                                                          'description = "Reviews"'))
    assert ok("registry", "build", published)["changed"] is True
    assert index_json(published)["extensions"][0]["description"] == "Reviews"
    set_entry_text(published, "review-pack", text.replace('tier = "community"', 'tier = "gold"'))
    before = snapshot(published)
    doc = fail("invalid_index", "registry", "build", published)
    assert doc["error"]["details"]["problems"][0]["key"] == "tier"
    assert snapshot(published) == before


def test_build_refuses_a_committed_lock_file_link(published: Path, tmp_path: Path) -> None:
    """A `.pkgmgr-registry.lock` committed as a symbolic link never creates what it points at."""
    from tests.publish.helpers import LOCK_FILE

    target = tmp_path / "outside" / "planted"
    target.parent.mkdir()
    lock = published / LOCK_FILE
    if lock.exists() or lock.is_symlink():
        lock.unlink()
    lock.symlink_to(target)
    before = snapshot(published)
    doc = fail("invalid_index", "registry", "build", published)
    assert "symbolic link" in doc["error"]["message"]
    assert not target.exists() and snapshot(published) == before
