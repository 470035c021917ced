"""cli.bundle_cmds: the rendering helpers (schedules, resource counts, the confirmed column, the
inventory tables), the human output of preview, activate, confirm, show, list, deactivate and
`resources list`, the lookup of an activation across scopes, and argument checks."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.cli.bundle_cmds import _confirmed_cell, _resource_counts, _schedule_text, render_inventory
from pkgmgr.cli.output import Printer
from tests.cli.helpers import FIXTURES, fail, human, install, ok, tree
from tests.support.builders import write_extension
from tests.support.stores import store_root
from tests.workspace.helpers import crew_files


def lines_of(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


# --- pure helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("schedule, text", [
    ({"mode": "cron", "expr": "0 9 * * 1-5"}, "cron 0 9 * * 1-5"),
    ({"mode": "every", "interval": "24h"}, "every 24h"),
    ({"mode": "at", "time": "2026-01-01T09:00:00Z"}, "at 2026-01-01T09:00:00Z"),
    ({"mode": "every"}, "every"),
])
def test_schedule_text(schedule: dict, text: str) -> None:
    assert _schedule_text(schedule) == text


def test_resource_counts() -> None:
    kinds = ["job", "agent", "agent", "channel", "agent.soul"]
    assert _resource_counts([SimpleNamespace(kind=k) for k in kinds]) == \
        "5 (2 agent, 1 agent.soul, 1 channel, 1 job)"
    assert _resource_counts([]) == "0"


@pytest.mark.parametrize("activation, cell", [
    ({"confirmed_at": "2026-01-01T00:00:00Z", "confirmed_version": 2, "confirmed_by": "alice",
      "status": "active"}, "v2 by alice"),
    ({"confirmed_at": None, "status": "awaiting_confirmation"}, "no"),
    ({"confirmed_at": None, "status": "active"}, "-"),  # nothing to confirm
])
def test_confirmed_cell(activation: dict, cell: str) -> None:
    assert _confirmed_cell(activation) == cell


def test_render_inventory_prints_only_what_the_profile_has() -> None:
    empty = {"agents": [], "channels": {"primary": None, "items": []}, "jobs": [], "triggers": [], "layouts": []}
    stream = io.StringIO()
    render_inventory(Printer(stream), empty)
    assert stream.getvalue() == ""
    inventory = {**empty,
                 "agents": [{"name": "planner", "model": None, "soul": True, "heartbeat": False, "path": "agents/p"}],
                 "channels": {"primary": "ops", "items": [{"name": "ops", "description": "Ops"},
                                                          {"name": "dev", "description": "Dev"}]},
                 "jobs": [{"name": "sync", "agent": "planner", "enabled": False,
                           "schedule": {"mode": "every", "interval": "1h"}}]}
    render_inventory(Printer(stream), inventory)
    table = lines_of(stream.getvalue())
    assert table == [[], ["AGENT", "MODEL", "SOUL", "HEARTBEAT", "PATH"], ["planner", "-", "yes", "no", "agents/p"],
                     [], ["CHANNEL", "PRIMARY", "DESCRIPTION"], ["ops", "yes", "Ops"], ["dev", "Dev"],
                     [], ["JOB", "AGENT", "SCHEDULE", "ENABLED"], ["sync", "planner", "every", "1h", "no"]]


# --- through the command line ---------------------------------------------------------------------


def crew(root: Path, name: str = "crew-ext", agent: str | None = None) -> Path:
    """An extension with one bundle (profile default, one agent), no network requirement."""
    files = crew_files(name, "0.1.0")
    if agent is not None:
        files["agents/planner/AGENT.md"] = f"---\nname: {agent}\n---\n\nPlan.\n"
    return write_extension(root, files=files)


@pytest.fixture
def crew_installed(tmp_path: Path) -> str:
    install(crew(tmp_path / "crew"))
    return "crew-ext"


def test_preview_of_a_profile_without_network_requirement(crew_installed: str, home: Path) -> None:
    before = tree(home)
    result = human("bundle", "preview", crew_installed)
    lines = result.stdout.splitlines()
    kv = dict(line.split(":", 1) for line in lines[:6])
    assert kv["target"].strip() == "crew-ext 0.1.0: bundle crew-ext, profile default"
    assert kv["network digest"].strip() == "(none)" and kv["resources"].strip() == "1 (1 agent)"
    assert "no confirmation needed: activating projects the resources at once" in lines
    assert lines[-1] == "to activate: pkgmgr bundle activate crew-ext"
    assert tree(home) == before  # a preview writes nothing
    document = ok("bundle", "preview", crew_installed)
    assert (document["exists"], document["confirmation_required"], document["network_requirement"]) == \
        (False, False, None)
    assert document["activation"]["status"] == "active" and document["activation"]["version"] == 1
    assert [r["kind"] for r in document["resources"]] == ["agent"]


def test_preview_of_an_existing_activation(crew_installed: str) -> None:
    act = ok("bundle", "activate", crew_installed)["activation"]["id"]
    result = human("bundle", "preview", crew_installed)
    assert result.stdout.splitlines()[0].endswith(f"{act} (already activated: version 1, active)")
    assert f"already activated; 'pkgmgr bundle show {act}' shows it" in result.stdout
    assert ok("bundle", "preview", crew_installed)["exists"] is True


def test_preview_lists_conflicts(tmp_path: Path) -> None:
    install(crew(tmp_path / "a", "crew-ext", agent="planner"), crew(tmp_path / "b", "rival-ext", agent="planner"))
    ok("bundle", "activate", "crew-ext")
    result = human("bundle", "preview", "rival-ext")
    assert "conflict [agent_conflict]: " in result.stdout
    assert result.stdout.splitlines()[-1] == "activation would fail until the conflicts above are resolved"
    assert [c["code"] for c in ok("bundle", "preview", "rival-ext")["conflicts"]] == ["agent_conflict"]
    fail("agent_conflict", "bundle", "activate", "rival-ext")


def test_preview_in_a_workspace_names_the_scope_options(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    where = ["--scope", "workspace", "--workspace", str(ws)]
    install(crew(tmp_path / "crew"), extra=tuple(where))
    result = human(*where, "bundle", "preview", "crew-ext")
    assert result.stdout.splitlines()[-1] == f"to activate: pkgmgr --scope workspace --workspace {ws} " \
                                             "bundle activate crew-ext"
    assert f"scope:             workspace ({ws})" in result.stdout


def test_activate_and_deactivate_human_output(crew_installed: str) -> None:
    result = human("bundle", "activate", crew_installed)
    lines = result.stdout.splitlines()
    act = lines[0].split()[1].rstrip(":")
    assert lines[0] == f"activated {act}: 1 resource(s) projected"
    assert "confirmed:         not needed (no network requirement)" in lines
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["KIND", "NAME"])
    assert lines[header + 1].split()[:3] == ["agent", "crew-ext-planner", lines[header + 1].split()[2]]
    result = human("bundle", "deactivate", act.upper())  # ids match case-insensitively
    assert result.stdout == f"deactivated {act} and removed 1 resource(s)\n"
    fail("not_found", "bundle", "deactivate", act)


def test_awaiting_confirmation_then_confirm(tmp_path: Path) -> None:
    install(FIXTURES / "release-crew")
    result = human("bundle", "activate", "release-crew", "--as", "alice", code=8)
    lines = result.stdout.splitlines()
    act = lines[0].split()[1].rstrip(",")
    assert lines[0] == f"created {act}, awaiting confirmation of its network requirement"
    assert lines[-1] == "nothing is projected until the activation is confirmed (the command is below)"
    assert "error[confirmation_required]" in result.stderr
    assert (result.stdout + result.stderr).count(f"pkgmgr bundle confirm {act} --expected-version 1") == 1
    listing = lines_of(human("bundle", "list").stdout)
    assert listing[0] == ["ID", "EXTENSION", "BUNDLE/PROFILE", "SCOPE", "VERSION", "STATUS", "CONFIRMED"]
    assert listing[1] == [act, "release-crew", "0.1.0", "release-crew/default", "global", "1",
                          "awaiting_confirmation", "no"]
    confirmed = human("bundle", "confirm", act, "--expected-version", "1", "--as", "alice").stdout.splitlines()
    assert confirmed[0] == f"confirmed {act} version 1: 3 resource(s) projected"
    again = human("bundle", "confirm", act, "--expected-version", "1").stdout.splitlines()
    assert again[0] == f"{act} version 1 was already confirmed"
    assert lines_of(human("bundle", "list").stdout)[1][-3:] == ["v1", "by", "alice"]
    assert [a["id"] for a in ok("bundle", "list", "--status", "active")["activations"]] == [act]
    assert ok("bundle", "list", "--status", "awaiting_confirmation")["activations"] == []


def test_show_from_a_workspace_finds_a_global_activation(crew_installed: str, tmp_path: Path) -> None:
    act = ok("bundle", "activate", crew_installed)["activation"]["id"]
    ws = tmp_path / "ws"
    ws.mkdir()
    shown = ok("--scope", "workspace", "--workspace", ws, "bundle", "show", act)
    assert shown["activation"]["scope"] == "global" and len(shown["resources"]) == 1
    text = human("bundle", "show", act).stdout
    assert text.startswith(f"activation:        {act}\n")  # no headline for show
    assert not store_root(ws).exists()
    fail("not_found", "bundle", "show", "act_0000000000000000")


def test_empty_lists(home: Path) -> None:
    assert human("bundle", "list").stdout == "no activations\n"
    assert human("resources", "list").stdout == "no resources projected\n"
    assert ok("bundle", "list") == {"activations": []} and ok("resources", "list") == {"resources": []}
    assert not home.exists()


def test_resources_list_table_and_kind_filter(home: Path) -> None:
    install(FIXTURES / "release-crew")
    act = fail("confirmation_required", "bundle", "activate", "release-crew")["activation"]["id"]
    ok("bundle", "confirm", act, "--expected-version", "1")
    table = lines_of(human("resources", "list").stdout)
    assert table[0] == ["KIND", "NAME", "SCOPE", "OWNER", "ID", "SOURCE"]
    assert sorted((r[0], r[1], r[3]) for r in table[1:]) == [("agent", "release-captain", act),
                                                              ("channel", "release", act),
                                                              ("trigger", "release-tagged", act)]
    assert [r["name"] for r in ok("resources", "list", "--kind", "trigger")["resources"]] == ["release-tagged"]
    assert ok("resources", "list", "--kind", "window_layout")["resources"] == []


@pytest.mark.parametrize("argv", [
    ["resources", "list", "--kind", "widget"],
    ["bundle", "list", "--status", "sleeping"],
    ["bundle", "confirm", "act_x"],
    ["bundle", "confirm", "act_x", "--expected-version", "two"],
    ["bundle", "activate"],
])
def test_argument_checks(argv: list[str], home: Path) -> None:
    fail("usage", *argv)
    assert not home.exists()
