"""End to end: the checked-in bundle fixtures (marketing-linear, release-crew) through the CLI,
in the global scope and in a workspace: install, preview, activate, confirm, show, resources,
deactivate, remove."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.stores import store_root

REPO = Path(__file__).resolve().parents[2]
SEED_DIGEST = "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4"

MARKETING = {
    "default": [("agent", "campaign-planner"), ("agent", "content-writer"), ("agent.heartbeat", "campaign-planner"),
                ("agent.soul", "campaign-planner"), ("agent.soul", "content-writer"), ("channel", "launches"),
                ("channel", "marketing"), ("job", "daily-campaign-sync"), ("job", "weekday-content-brief"),
                ("trigger", "campaign-issue-created"), ("window_layout", "two-up")],
    "lean": [("agent", "campaign-planner"), ("agent.heartbeat", "campaign-planner"),
             ("agent.soul", "campaign-planner"), ("channel", "marketing")],
}
RELEASE = [("agent", "release-captain"), ("channel", "release"), ("trigger", "release-tagged")]


@pytest.fixture(params=["global", "workspace"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The global options selecting the scope under test."""
    if request.param == "global":
        return []
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    return ["--scope", "workspace", "--workspace", str(workspace)]


def run(where: list[str], *args: str, expect: int = 0) -> dict:
    result = run_cli([*where, *args, "-o", "json"])
    assert result.code == expect, result
    return result.json


def scope_root(home: Path, where: list[str]) -> Path:
    return store_root(Path(where[-1]), home) if where else home


def test_marketing_linear_end_to_end(where: list[str], home: Path) -> None:
    run(where, "ext", "install", str(REPO / "fixtures" / "marketing-linear"), "--allow-unverified", "--yes")
    preview = run(where, "bundle", "preview", "marketing-linear")
    assert preview["activation"]["network_digest"] == SEED_DIGEST
    assert preview["confirmation_required"] is True and preview["conflicts"] == []
    assert preview["network_requirement"]["channel_scopes"] == ["builders", "release"]
    assert sorted((r["kind"], r["name"]) for r in preview["resources"]) == MARKETING["default"]
    human = run_cli([*where, "bundle", "preview", "marketing-linear"])
    assert f"network digest:    {SEED_DIGEST}" in human.stdout
    act = preview["activation"]["id"]

    awaiting = run(where, "bundle", "activate", "marketing-linear", expect=8)
    assert awaiting["activation"]["id"] == act and awaiting["resources"] == []
    scope_flags = " --scope workspace --workspace " + where[-1] if where else ""
    command = f"pkgmgr{scope_flags} bundle confirm {act} --expected-version 1"
    assert awaiting["error"]["details"]["commands"] == [command]

    confirmed = run(where, "bundle", "confirm", act, "--expected-version", "1", "--as", "operator")
    assert confirmed["activation"]["status"] == "active" and confirmed["activation"]["confirmed_digest"] == SEED_DIGEST
    assert sorted((r["kind"], r["name"]) for r in confirmed["resources"]) == MARKETING["default"]
    shown = run(where, "bundle", "show", act)
    assert shown["activation"]["confirmed_by"] == "operator"
    assert shown["activation"]["scope"] == ("workspace" if where else "global")
    assert shown["activation"]["workspace"] == (where[-1] if where else "")
    root = scope_root(home, where)
    souls = run(where, "resources", "list", "--kind", "agent.soul")["resources"]
    assert {r["source_path"] for r in souls} == {f"{root}/bundles/{act}/agents/{agent}/SOUL.md"
                                                for agent in ("campaign-planner", "content-writer")}
    assert not (root / "bundles").exists()  # nothing is copied or written there

    # the lean profile shares campaign-planner: it conflicts while default is active
    lean = run(where, "bundle", "preview", "marketing-linear:marketing-linear/lean")
    assert [c["name"] for c in lean["conflicts"]] == ["campaign-planner"]
    run(where, "bundle", "activate", "marketing-linear:marketing-linear/lean", "--confirm-network-requirement",
        SEED_DIGEST, expect=6)

    run(where, "ext", "remove", "marketing-linear", expect=6)
    run(where, "bundle", "deactivate", act)
    assert run(where, "resources", "list")["resources"] == []
    lean_act = run(where, "bundle", "activate", "marketing-linear:marketing-linear/lean",
                   "--confirm-network-requirement", SEED_DIGEST)
    assert sorted((r["kind"], r["name"]) for r in lean_act["resources"]) == MARKETING["lean"]
    removed = run(where, "ext", "remove", "marketing-linear", "--deactivate")
    assert [a["id"] for a in removed["deactivated"]] == [lean_act["activation"]["id"]]
    assert run(where, "bundle", "list")["activations"] == []
    assert run([], "doctor", "--check", *(["--workspace", where[-1]] if where else []))["ok"] is True


def test_release_crew_end_to_end(where: list[str], home: Path) -> None:
    run(where, "ext", "install", str(REPO / "fixtures" / "release-crew"), "--allow-unverified", "--yes")
    preview = run(where, "bundle", "preview", "release-crew")
    digest = preview["activation"]["network_digest"]
    assert preview["confirmation_required"] is True and len(digest) == 64
    assert [t["agent"] for t in preview["inventory"]["triggers"]] == ["release-captain"]
    run(where, "bundle", "activate", "release-crew", "--confirm-network-requirement", "f" * 64, expect=6)
    activated = run(where, "bundle", "activate", "release-crew", "--confirm-network-requirement", digest)
    assert activated["activation"]["status"] == "active"
    assert sorted((r["kind"], r["name"]) for r in activated["resources"]) == RELEASE
    listed = run(where, "bundle", "list")["activations"]
    assert [a["extension"] for a in listed] == ["release-crew"]
    run(where, "bundle", "deactivate", activated["activation"]["id"])
    assert run(where, "bundle", "list")["activations"] == []


def test_both_fixtures_together_and_a_workspace_seeing_global(tmp_path: Path, home: Path) -> None:
    workspace = ["--scope", "workspace", "--workspace", str(tmp_path)]
    for name in ("marketing-linear", "release-crew"):
        run([], "ext", "install", str(REPO / "fixtures" / name), "--allow-unverified", "--yes")
    run([], "bundle", "activate", "marketing-linear", "--confirm-network-requirement", SEED_DIGEST)
    release_digest = run([], "bundle", "preview", "release-crew")["activation"]["network_digest"]
    run([], "bundle", "activate", "release-crew", "--confirm-network-requirement", release_digest)
    assert len(run([], "resources", "list")["resources"]) == len(MARKETING["default"]) + len(RELEASE)
    # the workspace sees both global activations (and their resources) but owns none
    assert [a["scope"] for a in run(workspace, "bundle", "list")["activations"]] == ["global", "global"]
    assert {r["scope"] for r in run(workspace, "resources", "list")["resources"]} == {"global"}
    run(workspace, "ext", "install", str(REPO / "fixtures" / "marketing-linear"), "--allow-unverified", "--yes")
    conflict = run(workspace, "bundle", "activate", "marketing-linear:marketing-linear/lean",
                   "--confirm-network-requirement", SEED_DIGEST, expect=6)
    assert conflict["error"]["code"] == "agent_conflict" and "global scope" in conflict["error"]["message"]
