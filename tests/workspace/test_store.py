"""The workspace's store lives under PKGMGR_HOME (SPEC 10): its id, its registration in the
global state, the stores `doctor` walks, and the `.pkgmgr/` earlier versions left behind."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
from pathlib import Path

from pkgmgr.workspace.store import legacy_store, legacy_warning, recorded_stores, store_id, workspace_scope


def rows(home: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute("SELECT id, path FROM workspace_stores ORDER BY path").fetchall()
    finally:
        conn.close()


def test_the_id_is_the_documented_hash_of_the_canonical_path(tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    (tmp_path / "link").symlink_to(ws)
    expected = hashlib.sha256(str(ws.resolve()).encode()).hexdigest()[:32]
    assert store_id(ws) == store_id(tmp_path / "link") == store_id(ws / "sub" / "..") == expected
    shell = subprocess.run(["sh", "-c", 'printf %s "$(pwd -P)" | sha256sum | cut -c1-32'], cwd=tmp_path / "link",
                           capture_output=True, text=True, check=True)
    assert shell.stdout.strip() == expected  # the derivation docs/workspaces.md gives


def test_the_store_is_outside_the_work_tree_and_registered_when_created(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    scope = workspace_scope(ws, home)
    assert scope.root == home / "workspaces" / store_id(ws) and scope.workspace == ws.resolve()
    assert not home.exists()  # naming the store creates nothing
    with scope.writer(1):
        pass
    scope.close()
    assert list(ws.iterdir()) == []  # nothing in the work tree
    assert rows(home) == [(store_id(ws), str(ws.resolve()))]


def test_a_moved_workspace_gets_a_new_empty_store(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    scope = workspace_scope(ws, home)
    with scope.writer(1):
        pass
    scope.close()
    moved = tmp_path / "moved"
    ws.rename(moved)
    fresh = workspace_scope(moved, home)
    assert fresh.root != scope.root and fresh.reader() is None
    assert recorded_stores(home) == []  # the old workspace is gone: its store is not walked


def test_recorded_stores_are_those_whose_workspace_and_store_exist(tmp_path: Path, home: Path) -> None:
    for name in ("b", "a", "never-written"):
        (tmp_path / name).mkdir()
        scope = workspace_scope(tmp_path / name, home)
        if name != "never-written":
            with scope.writer(1):
                pass
            scope.close()
    conn = sqlite3.connect(home / "state.db")  # a row of an earlier version: a random id
    conn.execute("INSERT INTO workspace_stores VALUES ('f00f', ?, 'then')", (str(tmp_path / "a"),))
    conn.commit()
    conn.close()
    assert [(s.workspace, s.root) for s in recorded_stores(home)] == [
        (tmp_path / name, home / "workspaces" / store_id(tmp_path / name)) for name in ("a", "b")]


def test_a_left_over_pkgmgr_directory_is_named_and_never_read(tmp_path: Path) -> None:
    assert legacy_store(tmp_path) is None and legacy_warning(tmp_path) is None
    (tmp_path / ".pkgmgr").symlink_to(tmp_path / "nowhere")  # a dangling link counts too
    assert legacy_store(tmp_path) == tmp_path / ".pkgmgr"
    warning = legacy_warning(tmp_path)
    assert warning is not None and "\n" not in warning and "pkgmgr doctor" in warning
    assert os.path.islink(tmp_path / ".pkgmgr")
