"""cli.workspace_cmds: the sync plan's lines (`_plan_lines`), the human output of `sync` and of
`trust` (its summary tables, the store-only case, --digest matching), with path extensions only
(no registry, no network). The flows themselves are in tests/e2e/test_workspace_*.py."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.cli.workspace_cmds import _plan_lines
from tests.cli.helpers import fail, human, ok, tree
from tests.support.builders import write_extension
from tests.support.cli import run_cli
from tests.support.stores import store_root
from tests.workspace.helpers import crew_files, write_local_tool

# --- _plan_lines ----------------------------------------------------------------------------------


def item(name: str, action: str, version: str | None = "1.0.0", kind: str = "registry",
         current: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(name=name, action=action, version=version, declared=SimpleNamespace(kind=kind),
                           current=SimpleNamespace(version=current) if current else None)


def plan(**fields) -> SimpleNamespace:  # noqa: ANN003
    base = {"workspace": Path("/w"), "items": [], "remove": [], "deactivate": [], "activate": [], "confirm": [],
            "lock_update": False}
    base.update(fields)
    base["empty"] = (all(i.action == "unchanged" for i in base["items"]) and not base["remove"]
                     and not base["activate"] and not base["deactivate"] and not base["confirm"]
                     and not base["lock_update"])
    return SimpleNamespace(**base)


def test_plan_lines_of_every_kind_of_step() -> None:
    row = {"id": "act_1", "extension": "a-ext", "bundle": "a-ext", "profile": "default", "network_digest": "d" * 64}
    lines = _plan_lines(plan(
        items=[item("a-ext", "install", kind="path"), item("b-ext", "switch", "2.0.0", current="1.0.0"),
               item("c-ext", "reinstall"), item("d-ext", "install", version=None), item("e-ext", "unchanged")],
        remove=[SimpleNamespace(name="old-ext", version="0.1.0")],
        deactivate=[{"id": "act_2", "extension": "old-ext", "bundle": "old", "profile": "lean"}],
        activate=[SimpleNamespace(label="a-ext:*/default")],
        confirm=[row],
        lock_update=True,
    ))
    assert lines == [
        "sync plan for /w:",
        "  + install a-ext 1.0.0 (path)",
        "  ~ switch b-ext 1.0.0 -> 2.0.0",
        "  ~ reinstall c-ext 1.0.0 (other content or source)",
        "  + install d-ext latest (registry)",  # resolved while installing
        "  - remove old-ext 0.1.0",
        "  - deactivate act_2 (old-ext:old/lean)",
        "  + activate a-ext:*/default",
        f"  + confirm act_1 (a-ext:a-ext/default, network requirement {'d' * 64})",
        "  ~ write pkgmgr.lock",
        "  = 1 extension(s) up to date",
    ]


def test_plan_lines_of_nothing_to_do() -> None:
    assert _plan_lines(plan(items=[item("a-ext", "unchanged"), item("b-ext", "unchanged")])) == [
        "sync plan for /w:", "  nothing to do (2 extension(s) up to date)"]
    assert _plan_lines(plan()) == ["sync plan for /w:", "  nothing to do (0 extension(s) up to date)"]


def test_plan_lines_without_unchanged_items_have_no_count() -> None:
    assert _plan_lines(plan(lock_update=True)) == ["sync plan for /w:", "  ~ write pkgmgr.lock"]


# --- a workspace of path extensions ------------------------------------------------------------------


MANIFEST = """\
[extensions]
local-tool = { path = "tools/local-tool" }
crew-ext = { path = "tools/crew" }

[[activations]]
extension = "crew-ext"
"""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "user-home" / "ws"
    write_local_tool(root / "tools" / "local-tool")
    write_extension(root / "tools" / "crew", files=crew_files("crew-ext", "0.1.0"))
    (root / "pkgmgr.toml").write_text(MANIFEST)
    return root


def test_sync_human_output(ws: Path) -> None:
    ok("trust", "--workspace", ws)
    dry = human("sync", "--dry-run", "--workspace", ws).stdout.splitlines()
    assert dry[0] == f"sync plan for {ws}:" and dry[-1] == "dry run: nothing was changed"
    assert "  + install local-tool 0.1.0 (path)" in dry and "  + activate crew-ext:*/default" in dry
    assert not store_root(ws).exists()
    result = human("sync", "--workspace", ws)
    lines = result.stdout.splitlines()
    assert "installed local-tool 0.1.0" in lines
    progress = result.stderr.splitlines()  # what is about to be installed is progress: stderr
    assert "installing local-tool 0.1.0 (subprocess extension, source path, unverified)" in progress
    assert "  subprocess:  ./bin/serve --stdio" in progress
    [activated] = [line for line in lines if line.startswith("activated act_")]
    assert activated.endswith("(crew-ext:crew-ext/default)")
    assert lines[-1] == f"wrote {ws / 'pkgmgr.lock'}"
    again = human("sync", "--workspace", ws).stdout
    assert again == f"sync plan for {ws}:\n  nothing to do (2 extension(s) up to date)\n"


def test_sync_json_carries_no_human_lines(ws: Path) -> None:
    ok("trust", "--workspace", ws)
    document = ok("sync", "--workspace", ws)  # one document: the plan is inside it, not printed
    assert set(document) == {"workspace", "dry_run", "plan", "installed", "removed", "failed", "activations",
                             "lock"}
    assert {i["name"]: i["action"] for i in document["installed"]} == {"local-tool": "installed",
                                                                       "crew-ext": "installed"}
    assert all(i["scope"] == "workspace" and i["source"] == "path" for i in document["installed"])
    assert [e["action"] for e in document["plan"]["extensions"]] == ["install", "install"]  # as planned


def test_sync_quiet_prints_nothing_on_success(ws: Path) -> None:
    ok("trust", "--workspace", ws)
    assert human("sync", "--workspace", ws, "-q").stdout == ""


def test_trust_show_renders_what_it_covers(ws: Path) -> None:
    result = human("trust", "--show", "--workspace", ws)
    lines = result.stdout.splitlines()
    digest = ok("trust", "--show", "--workspace", ws)["digest"]
    assert lines[:4] == [f"workspace: {ws}", f"digest:    {digest}", "approved:  no",
                         f"store:     {store_root(ws)} (not created yet)"]
    table = [line.split() for line in lines]
    assert ["EXTENSION", "HOST", "SOURCE", "VERSION", "PERMISSIONS", "SUBPROCESS", "NETWORK", "DIGEST"] in table
    assert ["local-tool", "compozy", "path", "tools/local-tool", "0.1.0", "session.read", "./bin/serve", "--stdio",
            "-"] in table
    assert ["crew-ext", "compozy", "path", "tools/crew", "0.1.0", "none", "-", "-"] in table
    assert ["ACTIVATE", "BUNDLE", "PROFILE", "CONFIRMS"] in table
    assert ["crew-ext", "(only", "bundle)", "default", "-"] in table
    assert lines[-1] == f"approve exactly this with: pkgmgr trust --digest {digest}"
    fail("trust_required", "sync", "--workspace", ws)  # --show approved nothing


def test_trust_digest_is_matched_case_and_space_insensitively(ws: Path) -> None:
    digest = ok("trust", "--show", "--workspace", ws)["digest"]
    result = human("trust", "--digest", f"  {digest.upper()} ", "--workspace", ws)
    assert result.stdout.splitlines()[-1] == f"approved {ws} at digest {digest}"
    assert ok("trust", "--show", "--workspace", ws)["approved"] is True


def test_trust_of_a_directory_with_nothing_to_trust(tmp_path: Path, home: Path) -> None:
    empty = tmp_path / "user-home" / "empty"
    empty.mkdir(parents=True)
    document = fail("not_found", "trust", "--workspace", empty)
    assert "nothing to trust" in document["error"]["message"]
    assert not store_root(empty).exists()


def test_trust_of_a_left_over_store_without_pkgmgr_toml(tmp_path: Path) -> None:
    root = tmp_path / "user-home" / "copied"
    store = root / ".pkgmgr"
    (store / "extensions").mkdir(parents=True)
    result = run_cli(["trust", "--workspace", str(root), "-o", "json"])
    assert result.code == 5 and "nothing to trust" in result.stdout  # a store alone is nothing to approve
    assert result.stderr.count("warning: ") == 1 and str(store) in result.stderr
    assert store.is_dir() and tree(store) == ["extensions"]  # ignored, not deleted


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
@pytest.mark.parametrize("foreign", ["root", "pkgmgr.toml"])
def test_sync_and_trust_refuse_a_workspace_of_another_user(ws: Path, home: Path, foreign: str) -> None:
    ok("trust", "--workspace", ws)  # approved while it was ours
    os.chown(ws if foreign == "root" else ws / "pkgmgr.toml", 12345, 12345)
    approvals = tree(home)
    for args in (["trust"], ["trust", "--show"], ["sync"]):
        error = fail("trust_required", *args, "--workspace", ws)["error"]
        assert "owned by uid 12345" in error["message"]
    assert tree(home) == approvals and not store_root(ws).exists()  # nothing approved, nothing installed


def test_a_link_planted_in_the_workspace_store_is_refused(ws: Path, tmp_path: Path) -> None:
    ok("trust", "--workspace", ws)
    ok("sync", "--workspace", ws)
    store = store_root(ws)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "precious").mkdir(parents=True)
    (store / ".staging").rmdir()
    (store / ".staging").symlink_to(elsewhere)  # a cleanup through it would empty elsewhere
    (ws / "tools" / "local-tool" / "extension.toml").write_text(
        (ws / "tools" / "local-tool" / "extension.toml").read_text().replace('version = "0.1.0"', 'version = "0.2.0"'))
    ok("trust", "--workspace", ws)
    before = tree(store)
    error = fail("path_escapes_root", "sync", "--workspace", ws)
    assert str(store / ".staging") in error["error"]["message"]
    assert tree(store) == before and tree(elsewhere) == ["precious"]
    problems = fail("state_inconsistent", "doctor", "--check", "--workspace", ws)["problems"]
    assert [(p["scope"], p["check"]) for p in problems] == [("workspace", "layout")]
    fail("state_inconsistent", "doctor", "--workspace", ws)  # repairs nothing through the link
    assert tree(elsewhere) == ["precious"]
