"""The scope rules checked at activation (SPEC 8, 9.3): agent references of jobs and triggers,
the layout's scope binding, agent conflicts and already_active. Each failure writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.activation.checks import VisibleAgents, raise_findings, static_agent_names
from pkgmgr.errors import PkgmgrError, Problem
from tests.bundles.helpers import agent_md, job, trigger

from .helpers import NAME, activate, fail, install, installed, make_ext, ok, profile, resources, state


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def refused(code: str, exit_code: int, home: Path, *args: str, workspace: Path | None = None) -> dict:
    """The command fails with `code` and leaves every scope's state exactly as it was."""
    before = (state(home), state(home, workspace) if workspace else None)
    document = fail(code, exit_code, *args, workspace=workspace)
    assert (state(home), state(home, workspace) if workspace else None) == before
    return document


# --- agent references --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["job", "trigger"])
def test_a_reference_to_an_unknown_agent_is_refused(kind: str, tmp_path: Path, home: Path) -> None:
    items = {"jobs": [job("daily", "ghost")]} if kind == "job" else {"triggers": [trigger("on-issue", "ghost")]}
    make_ext(tmp_path / "src", scopes=None, profiles=[profile(**items)])
    installed(tmp_path / "src")
    document = refused("agent_reference_not_found", 3, home, "bundle", "activate", NAME)
    (problem,) = document["error"]["details"]["problems"]
    assert problem["code"] == "agent_reference_not_found" and problem["kind"] == kind
    assert "'ghost'" in problem["message"] and problem["file"] == "bundles/main.toml"
    assert problem["key"] == f"profiles[0].{kind}s[0].agent"
    # preview reports it without failing
    preview = ok("bundle", "preview", NAME)
    assert [c["code"] for c in preview["conflicts"]] == ["agent_reference_not_found"]


def test_a_reference_to_a_visible_agent_is_accepted(tmp_path: Path, home: Path) -> None:
    """Packaged elsewhere and projected, or declared statically: the reference resolves (any case)."""
    make_ext(tmp_path / "helper", name="helper-ext", scopes=None, agents=("ghost",),
             profiles=[profile(agents=("ghost",), jobs=[], triggers=[], layouts=())])
    installed(tmp_path / "helper")
    make_ext(tmp_path / "src", scopes=None, profiles=[profile(jobs=[job("daily", "GHOST")])])
    installed(tmp_path / "src")
    fail("agent_reference_not_found", 3, "bundle", "activate", NAME)
    activate("helper-ext")
    assert activate()["activation"]["status"] == "active"


def test_a_reference_to_a_static_agent_is_accepted(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "static", name="static-ext", scopes=None, with_bundle=False, static_agents=("ghost",))
    installed(tmp_path / "static")
    make_ext(tmp_path / "src", scopes=None, profiles=[profile(triggers=[trigger("on-issue", "ghost")])])
    installed(tmp_path / "src")
    assert activate()["activation"]["status"] == "active"


# --- layout scope binding ------------------------------------------------------------------------


def test_a_layout_bound_to_a_workspace_does_not_install(tmp_path: Path, home: Path, workspace: Path) -> None:
    # Compozy decodes a bundled layout in the global scope (loadBundleLayout): a workspace_id is
    # refused when the bundle loads, in either scope, before any activation
    for value, where in (("/somewhere", None), (str(workspace), workspace)):
        make_ext(tmp_path / "src", scopes=None, layout_workspace=value)
        result = install(tmp_path / "src", workspace=where)
        assert result.code == 3, result
        (problem,) = result.json["error"]["details"]["problems"]
        assert (problem["code"], problem["file"], problem["key"]) == (
            "invalid_layout", "layouts/two-up.json", "document.workspace_id")
    make_ext(tmp_path / "src", scopes=None, layout_workspace="")
    installed(tmp_path / "src", workspace=workspace)
    assert activate(workspace=workspace)["activation"]["status"] == "active"


# --- agent conflicts -----------------------------------------------------------------------------


def test_conflict_with_another_activations_agent_in_the_same_scope(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "first", name="first-ext", scopes=None)
    make_ext(tmp_path / "src", scopes=None, agents=("Planner",), profiles=[profile(agents=("Planner",))])
    installed(tmp_path / "first")
    installed(tmp_path / "src")
    first = activate("first-ext")["activation"]["id"]
    document = refused("agent_conflict", 6, home, "bundle", "activate", NAME)
    (problem,) = document["error"]["details"]["problems"]
    assert problem["name"] == "Planner" and first in problem["message"]  # case-insensitive
    ok("bundle", "deactivate", first)
    assert activate()["activation"]["status"] == "active"


def test_activation_needs_a_generation_with_bundles(tmp_path: Path, home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "src")
    monkeypatch.setenv("PKGMGR_COMPOZY_GENERATION", "v0.3")
    document = refused("incompatible_host", 4, home, "bundle", "activate", NAME)
    assert document["error"]["details"]["compozy_generation"] == "v0.3"
    monkeypatch.setenv("PKGMGR_COMPOZY_GENERATION", "v0.3-beta.3")
    assert activate()["activation"]["status"] == "active"


@pytest.mark.parametrize("spelling", ["Coordinator", "coord\u200binator", "ｃｏｏｒｄｉｎａｔｏｒ", "co\u043erdinator",
                                      "coordinato\u0301r"])
def test_a_reserved_agent_name_installs_but_is_refused_at_activation(spelling: str, tmp_path: Path,
                                                                      home: Path) -> None:
    # Compozy loads a bundle whose agent takes a reserved name and refuses it when it activates;
    # a look-alike spelling (a zero-width space, fullwidth letters, a Cyrillic о, a combining
    # mark) is the reserved name too (issue 13 item 13: `agent_key`)
    make_ext(tmp_path / "src", scopes=None, agents=(spelling,), profiles=[profile(agents=(spelling,))])
    installed(tmp_path / "src")
    document = refused("agent_conflict", 6, home, "bundle", "activate", NAME)
    (problem,) = document["error"]["details"]["problems"]
    assert problem["name"] == spelling and "reserved by the host" in problem["message"]


@pytest.mark.parametrize("spelling", ["planner\u0578", "p\u04cfanner", "St\u03b5\u03bbios", "rev\u0456ewer"])
def test_an_agent_name_mixing_scripts_is_refused_at_activation(spelling: str, tmp_path: Path, home: Path) -> None:
    # a look-alike no mapping lists (Armenian ո, Cyrillic palochka ӏ): a name that mixes Latin with
    # another script is refused (pkgmgr's rule, issue 13 item 13), and nothing is projected
    make_ext(tmp_path / "src", scopes=None, agents=(spelling,), profiles=[profile(agents=(spelling,))])
    installed(tmp_path / "src")
    document = refused("agent_conflict", 6, home, "bundle", "activate", NAME)
    (problem,) = document["error"]["details"]["problems"]
    assert problem["name"] == spelling and "mixes scripts" in problem["message"]
    assert ok("bundle", "list")["activations"] == []


@pytest.mark.parametrize("spelling", ["\u03a3\u03c4\u03ad\u03bb\u03b9\u03bf\u03c2", "\u65e5\u672c\u8a9e\u306e\u30a8\u30fc\u30b8\u30a7\u30f3\u30c8",
                                      "agent-\u65e5\u672c", "\u00e9quipe"])
def test_an_agent_name_in_one_writing_system_activates(spelling: str, tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src", scopes=None, agents=(spelling,), profiles=[profile(agents=(spelling,))])
    installed(tmp_path / "src")
    assert activate()["activation"]["status"] == "active"


def test_an_awaiting_activation_projects_no_agent_so_it_does_not_conflict(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "first", name="first-ext")
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "first")
    installed(tmp_path / "src")
    fail("confirmation_required", 8, "bundle", "activate", "first-ext")
    assert activate()["activation"]["status"] == "active"
    # ... but confirming it later is refused: its agent is now taken
    first = ok("bundle", "list", "--status", "awaiting_confirmation")["activations"][0]["id"]
    refused("agent_conflict", 6, home, "bundle", "confirm", first, "--expected-version", "1")


def test_conflict_with_a_static_agent_of_an_enabled_extension_only(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "static", name="static-ext", scopes=None, with_bundle=False, static_agents=("planner",))
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "static")
    installed(tmp_path / "src")
    document = refused("agent_conflict", 6, home, "bundle", "activate", NAME)
    assert "static agent 'planner' of extension static-ext" in document["error"]["message"]
    ok("ext", "disable", "static-ext")
    assert activate()["activation"]["status"] == "active"  # a disabled extension's agents are not visible


def test_a_static_agent_is_named_by_its_front_matter(tmp_path: Path) -> None:
    root = tmp_path / "ext"
    (root / "static" / "folder-name").mkdir(parents=True)
    (root / "static" / "folder-name" / "AGENT.md").write_text(agent_md("front-name"), encoding="utf-8")
    (root / "single").mkdir()
    (root / "single" / "AGENT.md").write_text(agent_md("solo"), encoding="utf-8")
    manifest = {"resources": {"agents": ["static", "single"]}}
    assert static_agent_names(root, manifest) == ["front-name", "solo"]
    assert static_agent_names(root, {"resources": {"bundles": ["b"]}}) == []


def test_workspace_sees_global_activations(tmp_path: Path, home: Path, workspace: Path) -> None:
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "src")
    installed(tmp_path / "src", workspace=workspace)
    global_act = activate()["activation"]["id"]
    document = refused("agent_conflict", 6, home, "bundle", "activate", NAME, workspace=workspace)
    assert f"{global_act}" in document["error"]["message"] and "global scope" in document["error"]["message"]
    preview = ok("bundle", "preview", NAME, workspace=workspace)
    assert [c["code"] for c in preview["conflicts"]] == ["agent_conflict"]
    ok("bundle", "deactivate", global_act)
    assert activate(workspace=workspace)["activation"]["scope"] == "workspace"
    # global does not see workspaces
    assert activate()["activation"]["scope"] == "global"


def test_workspace_sees_global_static_agents_unless_it_shadows_their_extension(tmp_path: Path, home: Path,
                                                                                workspace: Path) -> None:
    make_ext(tmp_path / "static", name="static-ext", scopes=None, with_bundle=False, static_agents=("planner",))
    installed(tmp_path / "static")
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "src", workspace=workspace)
    refused("agent_conflict", 6, home, "bundle", "activate", NAME, workspace=workspace)
    make_ext(tmp_path / "static", name="static-ext", version="0.2.0", scopes=None, with_bundle=False,
             static_agents=("other",))
    installed(tmp_path / "static", workspace=workspace)  # shadows the global static-ext
    assert activate(workspace=workspace)["activation"]["status"] == "active"


def test_already_active(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    fail("confirmation_required", 8, "bundle", "activate", NAME)
    document = refused("already_active", 6, home, "bundle", "activate", NAME)
    assert document["error"]["details"]["activation"]["status"] == "awaiting_confirmation"
    act = document["error"]["details"]["activation"]["id"]
    ok("bundle", "confirm", act, "--expected-version", "1")
    refused("already_active", 6, home, "bundle", "activate", NAME.upper(), "--confirm-network-requirement",
            "0" * 64)
    assert len(resources(home)) == 6


def test_the_most_severe_finding_decides_the_code() -> None:
    findings = [Problem.scope_rule("invalid_layout", "window_layout", "l", "layout"),
                Problem.scope_rule("agent_reference_not_found", "job", "j", "ref"),
                Problem.scope_rule("agent_conflict", "agent", "a", "conflict")]
    with pytest.raises(PkgmgrError) as info:
        raise_findings(findings, "cannot activate x")
    assert info.value.code == "agent_conflict" and info.value.exit_code == 6
    assert [p["code"] for p in info.value.details["problems"]] == ["agent_conflict", "agent_reference_not_found",
                                                                   "invalid_layout"]
    with pytest.raises(PkgmgrError) as info:
        raise_findings(findings[:2], "cannot activate x")
    assert info.value.code == "agent_reference_not_found" and info.value.exit_code == 3
    raise_findings([], "nothing")


def test_visible_agents_exclude_only_the_named_activation() -> None:
    visible = VisibleAgents()
    visible.add("Planner", "act_a", "a's planner")
    visible.add("planner", None, "static planner")
    assert visible.owner("PLANNER") == "a's planner"
    assert visible.owner("planner", exclude="act_a") == "static planner"
    visible.replace("act_a", ["writer"], lambda name: f"a's {name}")
    assert visible.owner("writer") == "a's writer" and visible.owner("planner") == "static planner"
    visible.replace("act_a")
    assert not visible.has("writer")


@pytest.mark.parametrize("spelling", ["pl\u0430nner", "plan\u200bner", "ｐｌａｎｎｅｒ", "pla\u0301nner"])
def test_a_look_alike_of_a_visible_agent_conflicts(spelling: str, tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "first", name="first-ext", scopes=None)  # its agent: planner
    make_ext(tmp_path / "src", scopes=None, agents=(spelling,), profiles=[profile(agents=(spelling,))])
    installed(tmp_path / "first")
    installed(tmp_path / "src")
    first = activate("first-ext")["activation"]["id"]
    document = refused("agent_conflict", 6, home, "bundle", "activate", NAME)
    (problem,) = document["error"]["details"]["problems"]
    assert problem["name"] == spelling and first in problem["message"]
