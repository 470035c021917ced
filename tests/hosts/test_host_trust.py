"""`--approve-host-trust` approves only what the operator saw (SPEC 7, 13: issue 25 point 3), as an
attacker who commits files to a repository's `.eva/extensions/` would try it: each test changes one
thing in the project folder, runs the command a user would, asserts the code, then that nothing
moved — no file of the project or of `~/.eva` changed, no install recorded, and `trust.json` byte
for byte what it was.

The rule is the port's (`pkgmgr.hosts.approval`, driven by `FolderHost.trust_inventory`): Eva is
the host that keeps an approval pkgmgr writes today.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.hosts.eva import content_hash
from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    entries,
    eva_directory,
    eva_module,
    eva_script,
    fail,
    human,
    ok,
    trust_ex_hash,
)
from tests.support.cli import run_subprocess

WS = ("--scope", "workspace")


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".eva" / "extensions").mkdir(parents=True)
    (root / "pkgmgr.toml").write_text("")
    return root


def folder_of(root: Path) -> Path:
    return root / ".eva" / "extensions"


def snapshot(root: Path, homes: Homes) -> dict[str, Any]:
    """Everything an approval or an install could move: the project's and Eva's files (links by
    their target) and what pkgmgr lists."""
    files = entries(root, homes.eva)
    files["listed"] = ok(*WS, "ext", "list", cwd=root)["extensions"]
    return files


def approved(homes: Homes, folder: Path) -> str | None:
    trust = homes.eva / "trust.json"
    if not trust.exists():
        return None
    return json.loads(trust.read_text())["extension_dirs"].get(str(folder), {}).get("content_hash")


def install(root: Path, source: Path, *flags: str, code: str | None = None) -> dict[str, Any]:
    args = (*WS, "ext", "install", source, *UNVERIFIED, *flags)
    return fail(code, *args, cwd=root) if code else ok(*args, cwd=root)


# --- the attack: a script pkgmgr did not install ---------------------------------------------------------


def test_a_committed_script_is_never_approved_without_being_named(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    eva_script(folder_of(root), "backdoor")  # committed to the repository
    before = snapshot(root, homes)
    error = install(root, eva_script(tmp_path / "src", "notes"), "--approve-host-trust", code="trust_required")["error"]
    assert "backdoor.exs" in error["message"] and "notes.exs" in error["message"]
    assert "pkgmgr did not install" in error["message"]
    assert error["details"]["not_installed_by_pkgmgr"] == ["backdoor.exs"]
    assert error["details"]["covers"] == ["backdoor.exs", "notes.exs"]  # every file Eva's hash would cover
    assert snapshot(root, homes) == before  # nothing installed, nothing approved


def test_naming_them_all_approves_exactly_the_files_listed(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    eva_script(folder_of(root), "backdoor")
    [installed] = install(root, eva_script(tmp_path / "src", "notes"), "--approve-host-trust=all")["installed"]
    trust = installed["trust"]
    assert trust["updated"] and trust["covers"] == ["backdoor.exs", "notes.exs"]
    assert trust["not_installed_by_pkgmgr"] == ["backdoor.exs"]
    assert approved(homes, folder_of(root)) == trust["content_hash"] == trust_ex_hash(folder_of(root))


def test_the_approval_message_lists_what_was_approved(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    eva_script(folder_of(root), "backdoor")
    result = human(*WS, "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED,
                   "--approve-host-trust=all", cwd=root)
    assert result.code == 0, result
    assert "updated Eva's approval in" in result.stdout
    assert "covering backdoor.exs, notes.exs" in result.stdout
    assert "not installed by pkgmgr: backdoor.exs" in result.stdout


def test_without_the_option_the_note_names_the_scripts_to_review(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    eva_script(folder_of(root), "backdoor")
    result = human(*WS, "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED, cwd=root)
    assert result.code == 0, result
    assert "it holds scripts pkgmgr did not install (backdoor.exs)" in result.stdout
    assert "--approve-host-trust=all" in result.stdout
    assert not (homes.eva / "trust.json").exists()


def test_the_control_only_pkgmgr_s_installs_is_approved(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    install(root, eva_directory(tmp_path / "src" / "tasks", "tasks"))
    [installed] = install(root, eva_script(tmp_path / "src", "notes"), "--approve-host-trust")["installed"]
    assert installed["trust"]["covers"] == ["notes.exs", "tasks/extension.exs"]
    assert installed["trust"]["not_installed_by_pkgmgr"] == []
    assert approved(homes, folder_of(root)) == trust_ex_hash(folder_of(root))


@pytest.mark.parametrize("change", ["edited", "added_inside", "replaced_by_a_link"])
def test_an_installed_tree_changed_since_is_not_pkgmgr_s(tmp_path: Path, homes: Homes, change: str) -> None:
    root = project(tmp_path)
    install(root, eva_directory(tmp_path / "src" / "tasks", "tasks"))
    tasks = folder_of(root) / "tasks"
    if change == "edited":  # a pull that changes what pkgmgr installed
        (tasks / "extension.exs").write_text(eva_module("tasks") + "System.cmd(\"sh\", [\"-c\", \"id\"])\n")
        shown = "tasks/extension.exs"
    elif change == "added_inside":
        (tasks / "helper.exs").write_text("System.cmd(\"sh\", [\"-c\", \"id\"])\n")
        shown = "tasks/helper.exs"
    else:
        outside = tmp_path / "elsewhere.exs"
        outside.write_text(eva_module("tasks") + "# another text, outside the folder\n")
        (tasks / "extension.exs").unlink()
        (tasks / "extension.exs").symlink_to(outside)
        shown = "tasks/extension.exs"
    before = snapshot(root, homes)
    error = install(root, eva_script(tmp_path / "src", "notes"), "--approve-host-trust", code="trust_required")["error"]
    assert error["details"]["not_installed_by_pkgmgr"] == [shown]
    assert snapshot(root, homes) == before


# --- what Eva loads but does not hash: never approved ---------------------------------------------------------


@pytest.mark.parametrize("planted", [".hidden.exs", ".hidden/extension.exs", "tasks/.helper.exs"])
def test_a_dot_named_script_or_folder_is_never_approved(tmp_path: Path, homes: Homes, planted: str) -> None:
    root = project(tmp_path)
    if planted.startswith("tasks/"):
        install(root, eva_directory(tmp_path / "src" / "tasks", "tasks"))
    path = folder_of(root) / planted
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(eva_module("hidden"))
    before = snapshot(root, homes)
    for option in ("--approve-host-trust", "--approve-host-trust=all"):
        error = install(root, eva_script(tmp_path / "src", "notes"), option, code="trust_required")["error"]
        assert "dot-named" in error["message"] and "an approval would not cover" in error["message"]
        shown = planted.split("/extension.exs")[0] + ("/" if planted.startswith(".hidden/") else "")
        assert error["details"]["unhashed"] == [shown]
        assert snapshot(root, homes) == before
    said = human(*WS, "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED, "--approve-host-trust",
                 cwd=root)
    assert said.code == 4 and "hint: remove or rename them" in said.stderr, said
    assert "--approve-host-trust=all" not in said.stderr


# --- every change that may approve: remove, disable, enable ---------------------------------------------------


def test_remove_disable_and_enable_apply_the_same_rule(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    install(root, eva_script(tmp_path / "src", "notes"))
    install(root, eva_script(tmp_path / "src", "todo"))
    eva_script(folder_of(root), "backdoor")
    for command in (("ext", "remove", "notes"), ("ext", "disable", "notes")):
        before = snapshot(root, homes)
        error = fail("trust_required", *WS, *command, "--approve-host-trust", cwd=root)["error"]
        assert error["details"]["not_installed_by_pkgmgr"] == ["backdoor.exs"]
        assert snapshot(root, homes) == before
    ok(*WS, "ext", "disable", "notes", cwd=root)
    before = snapshot(root, homes)
    fail("trust_required", *WS, "ext", "enable", "notes", "--approve-host-trust", cwd=root)
    assert snapshot(root, homes) == before
    [enabled] = ok(*WS, "ext", "enable", "notes", "--approve-host-trust=all", cwd=root)["enabled"]
    assert enabled["trust"]["covers"] == ["backdoor.exs", "notes.exs", "todo.exs"]
    assert approved(homes, folder_of(root)) == trust_ex_hash(folder_of(root))
    (folder_of(root) / "backdoor.exs").unlink()
    [removed] = ok(*WS, "ext", "remove", "notes", "--approve-host-trust", cwd=root)["removed"]
    assert removed["trust"]["covers"] == ["todo.exs"] and removed["trust"]["updated"]


# --- what pkgmgr cannot read as Eva would: no hang, no approval ------------------------------------------------


def test_a_fifo_named_like_a_script_never_hangs_and_is_never_approved(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    os.mkfifo(folder_of(root) / "pipe.exs")
    source = eva_script(tmp_path / "src", "notes")
    env = {"HOME": str(homes.user), "PKGMGR_HOME": str(homes.pkgmgr)}
    refused = run_subprocess([*WS, "ext", "install", source, *UNVERIFIED, "--approve-host-trust", "-o", "json"],
                             env=env, cwd=root, timeout=60)
    assert refused.json["error"]["code"] == "trust_required", refused
    assert "pipe.exs is a FIFO" in refused.json["error"]["message"]
    assert not (folder_of(root) / "notes.exs").exists() and not (homes.eva / "trust.json").exists()
    installed = run_subprocess([*WS, "ext", "install", source, *UNVERIFIED, "-o", "json"], env=env, cwd=root,
                               timeout=60)
    assert installed.code == 0, installed
    assert installed.json["installed"][0]["trust"]["content_hash"] is None
    status = run_subprocess([*WS, "ext", "status", "notes", "-o", "json"], env=env, cwd=root, timeout=60)
    assert status.code == 0 and status.json["trust"]["content_hash"] is None, status


def test_a_directory_link_loop_is_no_internal_error(tmp_path: Path, homes: Homes) -> None:
    """Issue 25 point 5's loop: the hash walk stops at a directory that holds itself."""
    root = project(tmp_path)
    (folder_of(root) / "loop").symlink_to(".")
    before = snapshot(root, homes)
    error = install(root, eva_script(tmp_path / "src", "notes"), "--approve-host-trust", code="trust_required")["error"]
    assert "loop" in error["message"]
    assert snapshot(root, homes) == before
    [installed] = install(root, eva_script(tmp_path / "src", "notes"))["installed"]
    assert installed["trust"]["content_hash"] is None and installed["trust"]["unreadable"]


def test_a_script_over_the_bound_is_not_hashed(tmp_path: Path, homes: Homes, monkeypatch: pytest.MonkeyPatch) -> None:
    import pkgmgr.hosts.eva as eva

    monkeypatch.setattr(eva, "TRUST_SCRIPT_MAX_BYTES", 1024)
    root = project(tmp_path)
    (folder_of(root) / "big.exs").write_bytes(b"#" * 1025)
    assert eva.inventory(folder_of(root)).value is None
    assert "big.exs is larger than" in eva.inventory(folder_of(root)).unreadable[0]
    (folder_of(root) / "big.exs").write_bytes(b"#" * 1024)
    assert eva.inventory(folder_of(root)).value == trust_ex_hash(folder_of(root))


def test_unreadable_paths_enter_the_hash_as_eva_s_error_names(tmp_path: Path) -> None:
    """trust.ex: a path File.read cannot read contributes its error's name (a dangling link:
    enoent; a directory named *.exs: eisdir)."""
    folder = tmp_path / "extensions"
    folder.mkdir()
    (folder / "gone.exs").symlink_to(tmp_path / "missing")
    (folder / "dir.exs").mkdir()
    expected = hashlib.sha256(b"dir.exseisdir" + b"gone.exsenoent").hexdigest()
    assert content_hash(folder) == expected


# --- hostile names in the folder and in messages ---------------------------------------------------------------


def test_a_hostile_name_is_shown_escaped(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    eva_script(folder_of(root), "x\x1b]0;owned\x07\nerror: all good")
    result = human(*WS, "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED, "--approve-host-trust",
                   cwd=root)
    assert result.code == 4, result
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "\nerror: all good" not in result.stderr
    assert r"'x\x1b]0;owned\x07\nerror: all good.exs'" in result.stderr


# --- Eva's trust file ------------------------------------------------------------------------------------------


def test_a_link_planted_at_the_temporary_name_is_never_followed(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    homes.eva.mkdir(parents=True, exist_ok=True)
    (homes.eva / "trust.json.tmp").symlink_to(victim)
    install(root, eva_script(tmp_path / "src", "notes"), "--approve-host-trust")
    assert victim.read_text() == "keep me"
    assert approved(homes, folder_of(root)) == trust_ex_hash(folder_of(root))


def test_an_unreadable_trust_file_refuses_before_anything_moves(tmp_path: Path, homes: Homes) -> None:
    root = project(tmp_path)
    homes.eva.mkdir(parents=True, exist_ok=True)
    (homes.eva / "trust.json").mkdir()  # not a file: pkgmgr neither reads nor replaces it
    before = snapshot(root, homes)
    install(root, eva_script(tmp_path / "src", "notes"), "--approve-host-trust", code="invalid_config")
    assert snapshot(root, homes) == before
