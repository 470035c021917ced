"""The activation lifecycle through the CLI (SPEC 9.3): preview, activate with and without a
network requirement, confirm, show, list, deactivate, resources list."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.store.switch import login_user
from tests.support.cli import run_cli
from tests.support.stores import store_root

from .helpers import FULL_RESOURCES, NAME, OPS_DIGEST, activate, cli, fail, installed, make_ext, ok, resources, state


@pytest.fixture
def with_requirement(tmp_path: Path, home: Path) -> Path:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    return tmp_path / "src"


@pytest.fixture
def without_requirement(tmp_path: Path, home: Path) -> Path:
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "src")
    return tmp_path / "src"


# --- preview ------------------------------------------------------------------------------------


def test_preview_on_a_fresh_home_creates_nothing(home: Path, tmp_path: Path) -> None:
    fail("not_found", 5, "bundle", "preview", NAME)
    assert not (home / "state.db").exists()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fail("not_found", 5, "bundle", "preview", NAME, workspace=workspace)
    assert not store_root(workspace).exists() and not (home / "state.db").exists()


@pytest.mark.parametrize("argv", [("bundle", "activate", NAME),
                                  ("bundle", "confirm", "act_0123456789abcdef", "--expected-version", "1"),
                                  ("bundle", "deactivate", "act_0123456789abcdef")], ids=lambda a: a[1])
def test_a_refused_command_on_a_fresh_scope_creates_nothing(argv, home: Path, tmp_path: Path) -> None:
    """A scope never written holds nothing to activate, confirm or deactivate: say so without
    creating its store (a stray `.pkgmgr/` would become the workspace of that directory)."""
    fail("not_found", 5, *argv)
    assert not (home / "state.db").exists()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fail("not_found", 5, *argv, workspace=workspace)
    assert not store_root(workspace).exists() and not (home / "state.db").exists()


def test_preview_of_a_global_install_from_a_workspace_hints_at_installing_there(with_requirement: Path,
                                                                                 tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    document = fail("not_found", 5, "bundle", "preview", NAME, workspace=workspace)
    assert "hint: " in document["stderr"] and "installed globally" in document["stderr"]
    assert not store_root(workspace).exists()


def test_preview_shows_everything_and_writes_nothing(with_requirement: Path, home: Path) -> None:
    before = state(home)
    document = ok("bundle", "preview", NAME)
    assert state(home) == before
    activation = document["activation"]
    assert activation["id"].startswith("act_") and activation["version"] == 1
    assert activation["network_digest"] == OPS_DIGEST and len(activation["activation_digest"]) == 64
    assert activation["status"] == "awaiting_confirmation" and document["exists"] is False
    assert document["confirmation_required"] is True and document["conflicts"] == []
    assert document["network_requirement"] == {"required": True, "mode": "live", "channel_scopes": ["ops"]}
    inventory = document["inventory"]
    assert [a["name"] for a in inventory["agents"]] == ["planner"] and inventory["agents"][0]["soul"] is True
    assert inventory["channels"] == {"primary": "ops", "items": [{"name": "ops", "description": "the ops channel"}]}
    assert [(j["name"], j["agent"]) for j in inventory["jobs"]] == [("daily", "planner")]
    assert [(t["name"], t["agent"]) for t in inventory["triggers"]] == [("on-issue", "planner")]
    assert [(lay["id"], lay["display_name"]) for lay in inventory["layouts"]] == [("two-up", "Two up")]
    assert sorted((r["kind"], r["name"]) for r in document["resources"]) == FULL_RESOURCES

    human = run_cli(["bundle", "preview", NAME])
    assert human.code == 0, human
    for text in (activation["id"], OPS_DIGEST, activation["activation_digest"], "AGENT", "CHANNEL", "JOB",
                 "TRIGGER", "LAYOUT", "confirmation required",
                 f"pkgmgr bundle activate {NAME} --confirm-network-requirement {OPS_DIGEST}"):
        assert text in human.stdout
    assert state(home) == before


def test_preview_without_requirement(without_requirement: Path) -> None:
    document = ok("bundle", "preview", NAME)
    assert document["confirmation_required"] is False and document["activation"]["network_digest"] == ""
    assert document["activation"]["status"] == "active" and document["network_requirement"] is None


def test_preview_of_an_existing_activation_shows_it(with_requirement: Path) -> None:
    fail("confirmation_required", 8, "bundle", "activate", NAME)
    document = ok("bundle", "preview", NAME)
    assert document["exists"] is True and document["activation"]["status"] == "awaiting_confirmation"
    assert document["confirmation_required"] is True
    ok("bundle", "confirm", document["activation"]["id"], "--expected-version", "1")
    confirmed = ok("bundle", "preview", NAME)
    assert confirmed["activation"]["status"] == "active" and confirmed["confirmation_required"] is False


@pytest.mark.parametrize("target, code, exit_code", [
    (f"{NAME}:nope", "not_found", 5),
    (f"{NAME}:crew/nope", "not_found", 5),
    (f"{NAME}:", "usage", 2),
    ("other-ext", "not_found", 5),
])
def test_preview_of_what_does_not_exist(without_requirement: Path, target: str, code: str, exit_code: int) -> None:
    fail(code, exit_code, "bundle", "preview", target)


def test_several_bundles_need_a_name(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src", scopes=None, files={"bundles/second.toml": 'name = "second"\n[[profiles]]\n'
                                                   'name = "default"\n'})
    installed(tmp_path / "src")
    document = fail("usage", 2, "bundle", "preview", NAME)
    assert "crew, second" in document["error"]["message"]
    assert ok("bundle", "preview", f"{NAME}:second")["activation"]["bundle"] == "second"


# --- activate -----------------------------------------------------------------------------------


def test_activate_without_requirement_is_active_and_projected(without_requirement: Path, home: Path) -> None:
    document = activate()
    activation = document["activation"]
    assert activation["status"] == "active" and activation["version"] == 1
    assert activation["confirmed_version"] is None and activation["confirmed_by"] is None
    assert activation["extension_version"] == "0.1.0" and activation["scope"] == "global"
    assert sorted((r["kind"], r["name"]) for r in document["resources"]) == FULL_RESOURCES
    assert resources(home) == FULL_RESOURCES
    assert {r["owner"] for r in document["resources"]} == {activation["id"]}


def test_activate_with_requirement_and_no_digest_awaits_confirmation(with_requirement: Path, home: Path) -> None:
    result = cli("bundle", "activate", NAME)
    assert result.code == 8, result
    document = result.json
    act = document["activation"]["id"]
    command = f"pkgmgr bundle confirm {act} --expected-version 1"
    assert document["error"]["code"] == "confirmation_required"
    assert command in document["error"]["message"] and command in result.stderr
    assert document["error"]["details"]["commands"] == [command]
    assert document["activation"]["status"] == "awaiting_confirmation" and document["resources"] == []
    assert resources(home) == []
    assert ok("bundle", "show", act)["activation"]["status"] == "awaiting_confirmation"


def test_activate_with_the_right_digest_is_active(with_requirement: Path, home: Path) -> None:
    document = activate(NAME, "--confirm-network-requirement", OPS_DIGEST.upper(), "--as", "alice")
    activation = document["activation"]
    assert activation["status"] == "active"
    assert (activation["confirmed_version"], activation["confirmed_digest"], activation["confirmed_by"]) == \
        (1, OPS_DIGEST, "alice")
    assert activation["confirmed_at"].endswith("Z")
    assert resources(home) == FULL_RESOURCES


def test_activate_confirmed_by_defaults_to_the_login_user(with_requirement: Path) -> None:
    document = activate(NAME, "--confirm-network-requirement", OPS_DIGEST)
    assert document["activation"]["confirmed_by"] == login_user()


@pytest.mark.parametrize("fixture, digest", [("with_requirement", "0" * 64), ("with_requirement", ""),
                                             ("without_requirement", OPS_DIGEST),
                                             ("without_requirement", "")])
def test_a_wrong_or_unneeded_digest_is_refused_and_writes_nothing(fixture: str, digest: str, home: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    request.getfixturevalue(fixture)
    before = state(home)
    document = fail("network_digest_mismatch", 6, "bundle", "activate", NAME, "--confirm-network-requirement", digest)
    assert state(home) == before
    assert document["error"]["details"]["given"] == digest


# --- confirm ------------------------------------------------------------------------------------


@pytest.fixture
def awaiting(with_requirement: Path) -> str:
    return fail("confirmation_required", 8, "bundle", "activate", NAME)["activation"]["id"]


def test_confirm_with_a_wrong_version_is_stale(awaiting: str, home: Path) -> None:
    before = state(home)
    document = fail("stale_version", 6, "bundle", "confirm", awaiting, "--expected-version", "2")
    assert document["error"]["details"]["current_version"] == 1
    assert "is at version 1, not 2" in document["error"]["message"]
    assert state(home) == before


def test_confirm_projects_records_and_is_idempotent(awaiting: str, home: Path) -> None:
    first = ok("bundle", "confirm", awaiting, "--expected-version", "1", "--as", "alice")
    activation = first["activation"]
    assert activation["status"] == "active"
    assert (activation["confirmed_version"], activation["confirmed_digest"], activation["confirmed_by"]) == \
        (1, OPS_DIGEST, "alice")
    assert sorted((r["kind"], r["name"]) for r in first["resources"]) == FULL_RESOURCES
    before = state(home)
    again = ok("bundle", "confirm", awaiting.upper(), "--expected-version", "1", "--as", "bob")
    assert again["activation"] == activation  # bob changed nothing
    assert state(home) == before
    human = run_cli(["bundle", "confirm", awaiting, "--expected-version", "1"])
    assert human.code == 0 and "was already confirmed" in human.stdout


def test_confirming_an_activation_without_requirement_is_a_no_op(without_requirement: Path, home: Path) -> None:
    act = activate()["activation"]["id"]
    before = state(home)
    document = ok("bundle", "confirm", act, "--expected-version", "1")
    assert document["activation"]["confirmed_by"] is None
    assert state(home) == before


def test_confirm_of_an_unknown_activation(home: Path) -> None:
    fail("not_found", 5, "bundle", "confirm", "act_0000000000000000", "--expected-version", "1")


def test_confirm_refuses_a_tree_that_no_longer_produces_the_version(awaiting: str, home: Path) -> None:
    (installed_dir,) = (home / "extensions" / NAME).iterdir()
    (installed_dir / "agents" / "planner" / "SOUL.md").write_text("# Tampered\n", encoding="utf-8")
    before = state(home)
    fail("tree_modified", 4, "bundle", "confirm", awaiting, "--expected-version", "1")
    assert state(home) == before


# --- show / list / deactivate / resources ----------------------------------------------------------


def test_show_list_deactivate(with_requirement: Path, home: Path) -> None:
    act = activate(NAME, "--confirm-network-requirement", OPS_DIGEST, "--as", "alice")["activation"]["id"]
    shown = ok("bundle", "show", act)
    assert shown["activation"]["confirmed_by"] == "alice"
    assert sorted((r["kind"], r["name"]) for r in shown["resources"]) == FULL_RESOURCES
    assert set(shown["resources"][0]) >= {"id", "kind", "name", "scope", "owner", "digest", "source_path"}
    listed = ok("bundle", "list")["activations"]
    assert [a["id"] for a in listed] == [act]
    assert set(listed[0]) >= {"id", "extension", "extension_version", "bundle", "profile", "scope", "workspace",
                              "version", "status", "network_digest", "activation_digest", "confirmed_version",
                              "confirmed_digest", "confirmed_at", "confirmed_by"}
    assert ok("bundle", "list", "--status", "awaiting_confirmation")["activations"] == []
    assert [a["id"] for a in ok("bundle", "list", "--status", "active")["activations"]] == [act]

    gone = ok("bundle", "deactivate", act)
    assert gone["deactivated"]["id"] == act and len(gone["resources"]) == len(FULL_RESOURCES)
    assert resources(home) == [] and ok("bundle", "list")["activations"] == []
    assert state(home)["activations"] == []
    fail("not_found", 5, "bundle", "show", act)
    fail("not_found", 5, "bundle", "deactivate", act)


def test_deactivating_an_awaiting_activation(awaiting: str, home: Path) -> None:
    assert ok("bundle", "deactivate", awaiting)["resources"] == []
    assert state(home)["activations"] == []


def test_resources_list_and_kind_filter(without_requirement: Path, home: Path) -> None:
    assert ok("resources", "list")["resources"] == []
    act = activate()["activation"]["id"]
    listed = ok("resources", "list")["resources"]
    assert sorted((r["kind"], r["name"]) for r in listed) == FULL_RESOURCES
    assert {(r["scope"], r["owner"]) for r in listed} == {("global", act)}
    souls = ok("resources", "list", "--kind", "agent.soul")["resources"]
    assert [(r["kind"], r["name"]) for r in souls] == [("agent.soul", "planner")]
    assert souls[0]["source_path"] == f"{home}/bundles/{act}/agents/planner/SOUL.md"
    assert not (home / "bundles").exists()  # the diagnostic path is synthetic
    layouts = ok("resources", "list", "--kind", "window_layout")["resources"]
    assert [r["source_path"] for r in layouts] == [f"{NAME}:layouts/two-up.json"]
    assert ok("resources", "list", "--kind", "agent.heartbeat")["resources"] == []
    fail("usage", 2, "resources", "list", "--kind", "nonsense")


def test_activating_a_disabled_extension_is_refused_with_a_hint(without_requirement: Path, home: Path) -> None:
    ok("ext", "disable", NAME)
    document = fail("not_found", 5, "bundle", "activate", NAME)
    assert "disabled" in document["error"]["message"] and f"hint: 'pkgmgr ext enable {NAME}'" in document["stderr"]
    assert state(home)["activations"] == []


# --- the refresh of a version switch is pure (issue 12) ---------------------------------------------


def test_plan_refresh_decides_from_rows_and_bundles_and_writes_nothing(without_requirement: Path,
                                                                       home: Path) -> None:
    from pkgmgr.activation.checks import VisibleAgents
    from pkgmgr.activation.lifecycle import load_installed_bundles, plan_refresh
    from pkgmgr.config import Config
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.store.scope import global_scope
    from pkgmgr.store.switch import get_installed

    act = activate()["activation"]
    before = state(home)
    scope = global_scope(home)
    current = get_installed(scope, NAME)
    assert current is not None
    bundles = load_installed_bundles(current, Config())
    row = {**act, "primary_channel": act.get("primary_channel")}
    [kept] = plan_refresh([row], scope, current, bundles, VisibleAgents(), deactivate_missing=False,
                          confirm_always=False)
    assert (kept.change, kept.row["id"]) == ("unchanged", act["id"])
    [gone] = plan_refresh([row], scope, current, (), VisibleAgents(), deactivate_missing=True, confirm_always=False)
    assert gone.change == "deactivated"
    with pytest.raises(PkgmgrError) as caught:
        plan_refresh([row], scope, current, (), VisibleAgents(), deactivate_missing=False, confirm_always=False)
    assert caught.value.code == "bundle_missing"
    scope.close()
    assert state(home) == before
