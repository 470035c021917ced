"""End-to-end: the workspace scope — its store, shadowing of global installs, discovery from
the current directory, and reads that never create anything."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, fail, human, install, ok, tree
from tests.support.cli import run_cli
from tests.support.stores import store_root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "user-home" / "projects" / "site"
    path.mkdir(parents=True)
    return path


def at(workspace: Path) -> tuple[str, ...]:
    return ("--scope", "workspace", "--workspace", str(workspace))


def bumped_review_pack(tmp_path: Path, version: str) -> Path:
    copy = tmp_path / f"review-pack-{version}"
    shutil.copytree(FIXTURES / "review-pack", copy)
    manifest = copy / "extension.toml"
    manifest.write_text(manifest.read_text().replace('version = "0.1.0"', f'version = "{version}"'))
    return copy


def test_workspace_install_creates_a_store_outside_the_work_tree(workspace: Path, home: Path) -> None:
    [entry] = install(FIXTURES / "review-pack", extra=at(workspace))["installed"]
    assert entry["scope"] == "workspace"
    store = store_root(workspace, home)
    assert store.parent == home / "workspaces" and not (workspace / ".pkgmgr").exists()
    assert (store / "state.db").is_file()
    assert (store / "extensions" / "review-pack" / "0.1.0" / "extension.toml").is_file()
    assert ok("ext", "list")["extensions"] == []  # the global scope does not see it
    fail("not_found", "ext", "status", "review-pack")


def test_workspace_install_shadows_the_global_one(tmp_path: Path, workspace: Path, home: Path) -> None:
    install(FIXTURES / "review-pack", FIXTURES / "prompt-enhancer")
    install(bumped_review_pack(tmp_path, "0.2.0"), extra=at(workspace))
    seen = [(e["name"], e["version"], e["scope"]) for e in ok("ext", "list", *at(workspace))["extensions"]]
    assert seen == [("prompt-enhancer", "0.1.0", "global"), ("review-pack", "0.2.0", "workspace")]
    assert [(e["name"], e["version"], e["scope"]) for e in ok("ext", "list")["extensions"]] == [
        ("prompt-enhancer", "0.1.0", "global"), ("review-pack", "0.1.0", "global")]
    status = ok("ext", "status", "review-pack", *at(workspace))
    assert (status["version"], status["scope"]) == ("0.2.0", "workspace")
    assert status["path"] == str(store_root(workspace) / "extensions" / "review-pack" / "0.2.0")
    assert ok("ext", "status", "prompt-enhancer", *at(workspace))["scope"] == "global"
    assert ok("ext", "status", "review-pack")["version"] == "0.1.0"
    verified = ok("ext", "verify", "--all", *at(workspace))["verified"]
    assert [(v["name"], v["version"], v["ok"]) for v in verified] == [
        ("prompt-enhancer", "0.1.0", True), ("review-pack", "0.2.0", True)]
    # writes act on the workspace's own store only
    ok("ext", "remove", "review-pack", *at(workspace))
    assert [(e["name"], e["scope"]) for e in ok("ext", "list", *at(workspace))["extensions"]] == [
        ("prompt-enhancer", "global"), ("review-pack", "global")]
    fail("not_found", "ext", "remove", "prompt-enhancer", *at(workspace))
    assert human("ext", "list", *at(workspace)).stdout.count("global") == 2


def test_reads_never_create_a_store(tmp_path: Path, workspace: Path, home: Path) -> None:
    reads = [
        ["ext", "list"],
        ["ext", "list", *at(workspace)],
        ["ext", "verify", "--all"],
        ["ext", "verify", "--all", *at(workspace)],
        ["doctor", "--check"],
        ["doctor", "--check", *at(workspace)],
        ["doctor"],
    ]
    for args in reads:
        for mode in ([], ["-o", "json"]):
            result = run_cli([*args, *mode], cwd=workspace)
            assert result.code == 0, (args, result)
    for args in (["ext", "status", "review-pack"], ["ext", "status", "review-pack", *at(workspace)]):
        fail("not_found", *args)
    assert not home.exists()
    assert not store_root(workspace).exists()
    assert tree(tmp_path / "user-home") == ["projects", "projects/site"]


def test_writes_that_find_nothing_create_nothing(workspace: Path, home: Path) -> None:
    for args in (["ext", "remove", "review-pack"], ["ext", "enable", "review-pack"],
                 ["ext", "disable", "review-pack"]):
        fail("not_found", *args)
        fail("not_found", *args, *at(workspace))
    assert not home.exists() and not store_root(workspace).exists()


def test_workspace_is_discovered_from_a_subdirectory(workspace: Path) -> None:
    (workspace / "pkgmgr.toml").write_text("")
    deep = workspace / "src" / "lib"
    deep.mkdir(parents=True)
    result = run_cli(["--scope", "workspace", "ext", "install", FIXTURES / "review-pack", "--allow-unverified",
                      "--yes", "-o", "json"], cwd=deep)
    assert result.code == 0, result
    assert (store_root(workspace) / "extensions" / "review-pack").is_dir()
    assert not store_root(deep).exists()
    listed = run_cli(["ext", "list", "--scope", "workspace", "-o", "json"], cwd=deep)
    assert [(e["name"], e["scope"]) for e in listed.json["extensions"]] == [("review-pack", "workspace")]
    # only pkgmgr.toml marks a workspace: the store is not in the work tree to mark it
    (workspace / "pkgmgr.toml").unlink()
    listed = run_cli(["ext", "list", "--scope", "workspace", "-o", "json"], cwd=deep)
    assert listed.json["extensions"] == []


def test_without_a_marker_there_is_no_workspace_to_install_into(workspace: Path) -> None:
    """Issue 29: a store for a folder without pkgmgr.toml was invisible to the reads run there.
    The write is refused before anything is created; --save makes the folder a workspace."""
    result = run_cli(["ext", "install", FIXTURES / "review-pack", "--scope", "workspace", "--allow-unverified",
                      "--yes", "-q"], cwd=workspace)
    assert result.code == 5 and f"{workspace} is not in a workspace" in result.stderr, result
    assert "--save" not in result.stderr  # pkgmgr.toml cannot declare a directory outside the folder
    assert not store_root(workspace).exists() and list(workspace.iterdir()) == []
    (workspace / "pkgmgr.toml").write_text("", encoding="utf-8")  # the folder is a workspace
    result = run_cli(["ext", "install", FIXTURES / "review-pack", "--scope", "workspace", "--allow-unverified",
                      "--yes", "-q"], cwd=workspace)
    assert result.code == 0, result
    assert (store_root(workspace) / "state.db").is_file()


def test_doctor_checks_the_discovered_workspace(workspace: Path) -> None:
    install(FIXTURES / "review-pack", extra=at(workspace))
    leftover = store_root(workspace) / ".staging" / "tx-crashed"
    leftover.mkdir(parents=True)
    result = run_cli(["doctor", "--check", "-o", "json"], cwd=workspace)
    assert result.code == 4, result
    assert [(p["scope"], p["check"]) for p in result.json["error"]["details"]["problems"]] == [
        ("workspace", "leftover")]
    assert [s["scope"] for s in result.json["scopes"]] == ["global", "workspace"]
    assert leftover.exists()
    repaired = run_cli(["doctor", "-o", "json"], cwd=workspace)
    assert repaired.code == 0, repaired
    assert [r["message"] for r in repaired.json["repaired"]] == ["removed .staging/tx-crashed"]
    assert not leftover.exists()


def test_a_workspace_that_does_not_exist_is_not_created(tmp_path: Path, home: Path) -> None:
    missing = tmp_path / "typo" / "project"
    fail("not_found", "ext", "install", FIXTURES / "review-pack", "--allow-unverified", "--yes", *at(missing))
    fail("not_found", "ext", "list", *at(missing))
    assert not (tmp_path / "typo").exists()
