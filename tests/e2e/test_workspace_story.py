"""End-to-end: the declarative workspace story of SPEC 10 through the CLI — declare, trust, sync,
lock, --locked, edit, trust again, sync, remove a declaration, and a re-sync that does nothing —
against a team registry served over HTTP on loopback."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path

from pkgmgr.manifest import network_digest
from tests.support.stores import store_root
from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import (
    BUNDLED,
    LOCAL,
    STORY_MANIFEST,
    Team,
    activations,
    cli,
    copy_release_crew,
    fail,
    installed,
    ok,
    resource_count,
)

RELEASE_DIGEST = network_digest({"required": True, "mode": "live", "channel_scopes": ["release"]})


def story_manifest() -> str:
    # release-crew belongs in [extensions]: put its line right after local-tool's
    text = STORY_MANIFEST.replace('local-tool = { path = "tools/local-tool" }\n',
                                  'local-tool = { path = "tools/local-tool" }\n'
                                  'release-crew = { path = "tools/release-crew" }\n')
    return text + f"""
[[activations]]
extension = "release-crew"
confirm_network_requirement = "{RELEASE_DIGEST}"  # reviewed: it joins the release channel
"""


def global_rows(home: Path, query: str) -> list[tuple]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def test_the_full_story(team: Team, home: Path) -> None:
    ws = team.ws
    copy_release_crew(ws / "tools" / "release-crew")
    team.write_manifest(story_manifest())
    W = ("--workspace", ws)

    # 1. nothing a repository declares runs before it is approved
    refused = fail("trust_required", "sync", *W)
    assert refused["error"]["exit_code"] == 4
    assert not store_root(ws).exists() and not (ws / "pkgmgr.lock").exists()
    assert team.server.requests == []  # not even a registry read

    # 2. trust --show: what the approval covers, approving nothing
    shown = ok("trust", "--show", *W)
    assert shown["approved"] is False
    assert shown["registries"] == [{"name": "team", "source": team.url, "priority": 100, "insecure": False,
                                    "tree_sha256": None, "root_sha256": None}]  # not a directory inside the workspace
    by_name = {e["name"]: e for e in shown["extensions"]}
    assert by_name[BUNDLED]["source"] == "registry" and by_name[BUNDLED]["requirement"] == "<0.2"
    assert by_name[LOCAL]["source"] == "path" and by_name[LOCAL]["path"] == "tools/local-tool"
    assert by_name[LOCAL]["permissions"] == ["session.read"]
    assert by_name[LOCAL]["subprocess"] == "./bin/serve --stdio"
    assert by_name["release-crew"]["network_requirement"] == {"required": True, "mode": "live",
                                                              "channel_scopes": ["release"]}
    assert by_name["release-crew"]["network_digest"] == RELEASE_DIGEST
    assert {a["extension"] for a in shown["activations"]} == {BUNDLED, "release-crew"}
    digest = shown["digest"]
    text = cli("trust", "--show", *W)
    assert text.code == 0
    for needle in (digest, team.url, "session.read", "./bin/serve --stdio", RELEASE_DIGEST,
                   f"pkgmgr trust --digest {digest}"):
        assert needle in text.stdout, needle
    fail("trust_required", "sync", *W)  # --show approved nothing

    # 3. --digest approves only what was shown
    wrong = "0" * 64
    assert fail("trust_required", "trust", "--digest", wrong, *W)["error"]["details"]["digest"] == digest
    fail("trust_required", "sync", *W)
    assert ok("trust", "--digest", digest, *W)["approved"] is True

    # 4. sync: installs into $PKGMGR_HOME/workspaces/<id>/, writes the lock, activates
    done = ok("sync", *W)
    assert {e["name"]: e["action"] for e in done["plan"]["extensions"]} == {
        BUNDLED: "install", LOCAL: "install", "release-crew": "install"}
    assert installed(ws) == {BUNDLED: "0.1.0", LOCAL: "0.1.0", "release-crew": "0.1.0"}
    assert not (ws / ".pkgmgr").exists()  # nothing of the store in the work tree
    assert global_rows(home, "SELECT id, path FROM workspace_stores") == [(store_root(ws, home).name, str(ws))]
    assert sorted(activations(ws)) == [("release-crew", "default", "active"), (BUNDLED, "default", "active")]
    assert done["lock"]["written"] is True
    lock = tomllib.loads((ws / "pkgmgr.lock").read_text())
    assert [(e["name"], e["version"]) for e in lock["extension"]] == [
        (LOCAL, "0.1.0"), ("release-crew", "0.1.0"), (BUNDLED, "0.1.0")]
    # the approval lives in the global state, not in the workspace
    assert len(global_rows(home, "SELECT digest FROM trust_approvals")) == 1
    assert not (store_root(ws) / "trust").exists()
    assert sqlite3.connect(store_root(ws) / "state.db").execute(
        "SELECT count(*) FROM trust_approvals").fetchone() == (0,)

    # 5. --locked: the lock matches the declaration (the lock pkgmgr wrote kept the approval)
    assert ok("sync", "--locked", *W)["plan"]["empty"] is True
    shown = {e["name"]: e for e in ok("trust", "--show", *W)["extensions"]}
    assert shown[BUNDLED]["locked_version"] == "0.1.0" and shown[BUNDLED]["permissions"] == []  # from the install

    # 6. a hand edit asks for approval again; then sync moves to the newly allowed version
    manifest = (ws / "pkgmgr.toml").read_text()
    (ws / "pkgmgr.toml").write_text(manifest.replace('team-crew = "<0.2"', 'team-crew = ">=0.2"'))
    fail("trust_required", "sync", *W)
    fail("trust_required", "sync", "--locked", *W)
    ok("trust", *W)
    fail("lock_outdated", "sync", "--locked", *W)
    before = (ws / "pkgmgr.lock").read_bytes()
    moved = ok("sync", *W)
    assert [(e["name"], e["action"], e["version"]) for e in moved["plan"]["extensions"] if e["name"] == BUNDLED] == [
        (BUNDLED, "switch", "0.2.0")]
    assert installed(ws)[BUNDLED] == "0.2.0"
    after = (ws / "pkgmgr.lock").read_bytes()
    assert after != before and 'version = "0.2.0"' in after.decode()
    crew = [a for a in moved["activations"] if a["extension"] == BUNDLED]
    assert crew and crew[0]["status"] == "active" and crew[0]["version"] == 2  # re-projected: new prompt
    ok("sync", "--locked", *W)

    # 7. remove a declaration: sync removes the extension and its activation
    resources_before = resource_count(ws)
    manifest = (ws / "pkgmgr.toml").read_text()
    manifest = manifest.replace('team-crew = ">=0.2"  # the 0.1 series for now\n', "")
    manifest = manifest.replace('[[activations]]\nextension = "team-crew"\nprofile = "default"\n', "")
    (ws / "pkgmgr.toml").write_text(manifest)
    fail("trust_required", "sync", *W)
    ok("trust", *W)
    removed = ok("sync", *W)
    assert [r["name"] for r in removed["plan"]["remove"]] == [BUNDLED]
    assert [(a["extension"], a["status"]) for a in removed["activations"]] == [(BUNDLED, "deactivated")]
    assert BUNDLED not in installed(ws)
    assert not (store_root(ws) / "extensions" / BUNDLED).exists()
    assert activations(ws) == [("release-crew", "default", "active")]
    assert resource_count(ws) < resources_before
    assert BUNDLED not in (ws / "pkgmgr.lock").read_text()

    # 8. re-running sync does nothing: no download, no registry request at all
    team.server.clear()
    lock_before = (ws / "pkgmgr.lock").read_bytes()
    again = ok("sync", *W)
    assert again["plan"]["empty"] is True and again["installed"] == [] and again["lock"]["written"] is False
    assert team.server.requests == []
    assert (ws / "pkgmgr.lock").read_bytes() == lock_before
    human = cli("sync", *W)
    assert human.code == 0 and "nothing to do" in human.stdout
    assert ok("doctor", "--check", *W)["ok"] is True


def test_resync_of_registry_extensions_sends_no_request(team: Team) -> None:
    """Registry extensions kept from the lock are not even looked up: no request at all."""
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    ok("sync", "--workspace", team.ws)
    assert len(team.archive_requests()) == 1
    team.server.clear()
    for _ in range(2):
        assert ok("sync", "--workspace", team.ws)["plan"]["empty"] is True
    assert team.server.requests == []


def test_plan_is_printed_before_acting(team: Team) -> None:
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    result = cli("sync", "--workspace", team.ws)
    assert result.code == 0, result
    out = result.stdout
    assert out.index("sync plan for") < out.index(f"+ install {BUNDLED} 0.1.0") < out.index(f"installed {BUNDLED}")
    assert out.index("+ activate") < out.index("activated act_")
    assert out.rstrip().endswith("pkgmgr.lock")
    dry = cli("sync", "--dry-run", "--workspace", team.ws)
    assert dry.code == 0 and "nothing to do" in dry.stdout


def test_dry_run_changes_nothing(team: Team) -> None:
    team.write_manifest(STORY_MANIFEST)
    ok("trust", "--workspace", team.ws)
    planned = ok("sync", "--dry-run", "--workspace", team.ws)
    assert planned["dry_run"] is True
    assert {e["name"]: e["action"] for e in planned["plan"]["extensions"]} == {BUNDLED: "install", LOCAL: "install"}
    assert planned["plan"]["activate"] == [{"extension": BUNDLED, "bundle": None, "profile": "default"}]
    assert not store_root(team.ws).exists() and not (team.ws / "pkgmgr.lock").exists()
    assert team.archive_requests() == []
