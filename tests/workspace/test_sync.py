"""`pkgmgr.workspace.sync` driven directly: the plan before acting, activations matched to this
workspace, and the errors raised before anything is done."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from pkgmgr.config import load_config
from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.session import Session
from pkgmgr.workspace import trust
from pkgmgr.workspace.sync import Resolver, SyncOptions, SyncPlan, Workspace, make_plan, sync
from tests.support.builders import write_extension
from tests.support.stores import store_root
from tests.workspace.helpers import crew_files

MANIFEST = '[extensions]\ncrew-ext = { path = "tools/crew" }\n\n[[activations]]\nextension = "crew-ext"\n'


def workspace(root: Path, home: Path) -> Path:
    files = crew_files("crew-ext", "0.1.0")
    write_extension(root / "tools" / "crew", files.pop("extension.toml"), files)
    (root / "pkgmgr.toml").write_text(MANIFEST)
    approve(root, home)
    return root


def approve(root: Path, home: Path) -> None:
    trust.approve(home, root, Workspace(root, home).trust_state().digest, by="test")


def run(root: Path, home: Path, **options) -> object:
    return sync(root, home=home, config=load_config(home), options=SyncOptions(**options))


def test_the_plan_is_shown_before_anything_changes(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    states = []

    def on_plan(plan: SyncPlan) -> None:
        states.append((store_root(ws, home).exists(), (ws / "pkgmgr.lock").exists()))

    result = sync(ws, home=home, config=load_config(home), options=SyncOptions(), on_plan=on_plan)
    assert states == [(False, False)] and result.error is None
    assert [a["change"] for a in result.activations] == ["activated"]
    assert result.plan.to_json()["activate"] == [{"extension": "crew-ext", "bundle": None, "profile": "default"}]


def test_a_copy_of_the_workspace_starts_from_an_empty_store(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    assert run(ws, home).error is None
    moved = tmp_path / "moved"
    shutil.copytree(ws, moved)
    moved_ws = Workspace(moved, home)
    session = Session(home, load_config(home))
    try:
        plan = make_plan(moved_ws, Resolver(moved_ws, session, SyncOptions()), SyncOptions())
    finally:
        session.close()
    assert plan.deactivate == [] and [a.extension for a in plan.activate] == ["crew-ext"]  # nothing of ws's store
    assert [i.action for i in plan.items] == ["install"]


def test_upgrade_of_an_undeclared_name_is_a_usage_error(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    with pytest.raises(PkgmgrError) as caught:
        run(ws, home, upgrade=("crew-ext", "ghost-ext"))
    assert caught.value.code == "usage" and "ghost-ext" in caught.value.message
    assert not store_root(ws, home).exists()


def test_a_path_extension_whose_manifest_names_another_extension(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    (ws / "pkgmgr.toml").write_text(MANIFEST.replace("crew-ext", "other-ext"))
    approve(ws, home)
    with pytest.raises(PkgmgrError) as caught:
        run(ws, home)
    assert caught.value.code == "invalid_config" and caught.value.details["key"] == "extensions.other-ext.path"


def test_a_missing_path_extension(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    shutil.rmtree(ws / "tools" / "crew")
    approve(ws, home)
    with pytest.raises(PkgmgrError) as caught:
        run(ws, home)
    assert caught.value.code == "not_found"


def test_errors_while_acting_come_back_with_what_was_done(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    (ws / "pkgmgr.toml").write_text(MANIFEST + 'profile = "nope"\n')
    approve(ws, home)
    result = run(ws, home)
    assert result.error is not None and result.error.code == "not_found"
    assert "pkgmgr.toml activations[0]" in result.error.message
    assert [r.outcome.installed.name for r in result.installed] == ["crew-ext"]
    assert result.lock_written  # the extensions are locked whatever happened to the activation


def test_a_path_extension_with_an_escaping_link(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    (tmp_path / "secret").write_text("outside")
    (ws / "tools" / "crew" / "leak").symlink_to(tmp_path / "secret")
    approve(ws, home)
    with pytest.raises(PkgmgrError) as caught:
        run(ws, home)
    assert caught.value.code == "path_escapes_root"
    assert not store_root(ws, home).exists()


def test_the_result_renders_its_rows(tmp_path: Path, home: Path) -> None:
    ws = workspace(tmp_path / "ws", home)
    result = run(ws, home)
    doc = result.to_json(dry_run=False)
    assert doc["workspace"] == str(ws) and doc["dry_run"] is False and doc["plan"] == result.plan.to_json()
    [row] = doc["installed"]
    assert {k: row[k] for k in ("name", "version", "scope", "source", "action")} == {
        "name": "crew-ext", "version": "0.1.0", "scope": "workspace", "source": "path", "action": "installed"}
    assert doc["failed"] == [] and doc["lock"] == {"path": str(ws / "pkgmgr.lock"), "written": True}
    assert result.to_json(dry_run=True, planned={"as": "planned"})["plan"] == {"as": "planned"}
    assert result.final_error() is None


def test_the_final_error_asks_for_confirmation_when_activations_await(tmp_path: Path, home: Path) -> None:
    from pkgmgr.errors import Code
    from pkgmgr.workspace.sync import SyncResult

    ws = workspace(tmp_path / "ws", home)
    result = run(ws, home)
    awaiting = dict(result.activations[0], status="awaiting_confirmation")
    error = SyncResult(result.plan, activations=[awaiting]).final_error()
    assert error is not None and error.code == Code.CONFIRMATION_REQUIRED
    first = PkgmgrError("boom", code=Code.NOT_FOUND)
    assert SyncResult(result.plan, activations=[awaiting], error=first).final_error() is first
    failed = dataclasses.replace(result.installed[0], outcome=None, error=first)
    assert SyncResult(result.plan, installed=[failed]).failed_rows() == [{"ref": failed.ref, "error": first.to_json()}]
