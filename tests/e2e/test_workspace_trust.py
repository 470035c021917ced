"""End-to-end: trust and the workspace store (SPEC 10) — approvals in the global state, stores
that pkgmgr did not create here (copied, committed) refused until adopted, path extensions
covered by the digest, and the registries of an approved pkgmgr.toml."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.registry.helpers import RegistryDir
from tests.support.servers import StaticFileServer
from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import (BUNDLED, LOCAL, STORY_MANIFEST, Team, activations, cli, crew_archive, fail,
                                     installed, ok)


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
    local = sqlite3.connect(team.ws / ".pkgmgr" / "state.db")
    assert local.execute("SELECT count(*) FROM trust_approvals").fetchone() == (0,)
    local.close()


def test_copied_workspace_is_refused_until_trusted(team: Team, tmp_path: Path) -> None:
    synced(team)
    copy = tmp_path / "user-home" / "src" / "copy"
    shutil.copytree(team.ws, copy)  # .pkgmgr/ included, its store id with it
    assert (copy / ".pkgmgr" / "store-id").read_text() == (team.ws / ".pkgmgr" / "store-id").read_text()
    for args in (["sync"], ["--scope", "workspace", "ext", "list"], ["--scope", "workspace", "bundle", "list"]):
        fail("trust_required", *args, "--workspace", copy)
    shown = ok("trust", "--show", "--workspace", copy)
    assert shown["store"]["known"] is False and shown["approved"] is False
    adopted = ok("trust", "--workspace", copy)
    assert adopted["adopted_store"] is True
    assert not (copy / ".pkgmgr").exists()  # nothing of the copy is believed
    team.server.clear()
    done = ok("sync", "--workspace", copy)
    assert {e["name"]: e["action"] for e in done["plan"]["extensions"]} == {BUNDLED: "install", LOCAL: "install"}
    assert team.archive_requests() == []  # from the download cache, checked against the lock
    assert installed(copy) == {BUNDLED: "0.1.0", LOCAL: "0.1.0"}
    assert [a[2] for a in activations(copy)] == ["active"]
    assert (copy / ".pkgmgr" / "store-id").read_text() != (team.ws / ".pkgmgr" / "store-id").read_text()
    assert ok("--scope", "workspace", "ext", "list", "--workspace", copy)["extensions"]
    # the original is untouched and still trusted
    assert ok("sync", "--workspace", team.ws)["plan"]["empty"] is True


@pytest.mark.parametrize("store_id", [None, "0123456789abcdef0123456789abcdef"])
def test_committed_store_is_refused(team: Team, store_id: str | None) -> None:
    team.write_manifest(STORY_MANIFEST)
    store = team.ws / ".pkgmgr"
    store.mkdir()
    conn = sqlite3.connect(store / "state.db")  # a fake state, as a repository could commit it
    conn.execute("CREATE TABLE extensions (name TEXT)")
    conn.execute("INSERT INTO extensions VALUES ('evil')")
    conn.commit()
    conn.close()
    if store_id is not None:
        (store / "store-id").write_text(store_id + "\n")
    ok("trust", "--show", "--workspace", team.ws)  # reading it shows the store as unknown
    for args in (["sync"], ["--scope", "workspace", "ext", "list"]):
        error = fail("trust_required", *args, "--workspace", team.ws)["error"]
        assert "not created by pkgmgr" in error["message"]
    result = cli("--scope", "workspace", "ext", "list", cwd=team.ws)  # discovered from the current directory
    assert result.code == 4 and "trust_required" in result.stderr
    assert ok("trust", "--workspace", team.ws)["adopted_store"] is True
    ok("sync", "--workspace", team.ws)
    assert installed(team.ws) == {BUNDLED: "0.1.0", LOCAL: "0.1.0"}


def test_store_only_workspace_is_adopted_by_trust(team: Team) -> None:
    store = team.ws / ".pkgmgr"
    store.mkdir(parents=True)
    (store / "state.db").write_bytes(b"")
    fail("trust_required", "--scope", "workspace", "ext", "list", "--workspace", team.ws)
    shown = ok("trust", "--show", "--workspace", team.ws)
    assert shown["store"] == {"path": str(store), "known": False, "adopted": False}
    assert ok("trust", "--workspace", team.ws)["store"]["adopted"] is True
    assert ok("--scope", "workspace", "ext", "list", "--workspace", team.ws)["extensions"] == []
    ok("--scope", "workspace", "ext", "install", team.ws / "tools" / "local-tool", "--allow-unverified", "--yes",
       "--workspace", team.ws)  # a fresh store, registered
    assert ok("trust", "--workspace", team.ws)["store"] == {"path": str(store), "known": True, "adopted": False}
    assert installed(team.ws) == {LOCAL: "0.1.0"}


def test_a_committed_dangling_store_link_is_refused_then_adopted(team: Team, tmp_path: Path) -> None:
    (team.ws / ".pkgmgr").symlink_to(tmp_path / "nowhere" / "store")  # git stores links as they are
    args = ["--scope", "workspace", "ext", "install", team.ws / "tools" / "local-tool", "--allow-unverified",
            "--yes", "--workspace", team.ws]
    fail("trust_required", *args)  # not an internal error
    fail("usage", "trust", "--digest", "0" * 64, "--workspace", team.ws)  # no digest covers a store alone
    assert ok("trust", "--workspace", team.ws)["store"]["adopted"] is True
    ok(*args)
    assert installed(team.ws) == {LOCAL: "0.1.0"} and not (tmp_path / "nowhere").exists()


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
