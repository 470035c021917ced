"""`sync` of a workspace declaring other hosts' extensions (SPEC 13): they install into the
project's host folders, the lock records their host and install path, and a tree changed in
the work tree is put back before sync reports success."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tests.hosts.helpers import Homes, claude_plugin, eva_script, fail, gemini_extension, ok, terva_extension, tree

DECLARATION = """\
[extensions]
hello = { path = "tools/hello" }
notes = { path = "tools/notes", host = "eva" }
"""


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    terva_extension(ws / "tools" / "hello")
    eva_script(ws / "tools" / "notes", "notes")
    (ws / "pkgmgr.toml").write_text(DECLARATION)
    ok("trust", cwd=ws)
    return ws


def test_sync_installs_into_the_project_folders_and_locks_host_and_path(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    document = ok("sync", cwd=ws)
    assert document.get("error") is None
    assert tree(ws / ".terva" / "extensions" / "hello") == tree(ws / "tools" / "hello")
    assert (ws / ".eva" / "extensions" / "notes.exs").read_bytes() == (ws / "tools" / "notes" / "notes.exs").read_bytes()
    lock = tomllib.loads((ws / "pkgmgr.lock").read_text())
    by_name = {e["name"]: e for e in lock["extension"]}
    assert (by_name["hello"]["host"], by_name["hello"]["install_path"]) == ("terva", ".terva/extensions/hello")
    assert (by_name["notes"]["host"], by_name["notes"]["install_path"]) == ("eva", ".eva/extensions/notes.exs")
    assert by_name["hello"]["tree_sha256"] == ok("--scope", "workspace", "ext", "status", "hello",
                                                 cwd=ws)["tree_sha256"]
    again = ok("sync", cwd=ws)
    assert again["plan"]["empty"] is True, again
    assert ok("sync", "--locked", cwd=ws)["plan"]["empty"] is True


def test_a_tree_changed_in_the_work_tree_is_put_back(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ok("sync", cwd=ws)
    installed = ws / ".terva" / "extensions" / "hello" / "run.sh"
    installed.write_text("#!/bin/sh\necho pulled\n")
    document = ok("sync", cwd=ws)
    assert [i["action"] for i in document["plan"]["extensions"] if i["name"] == "hello"] == ["reinstall"]
    assert installed.read_bytes() == (ws / "tools" / "hello" / "run.sh").read_bytes()


def test_an_extension_no_longer_declared_is_removed(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    ok("sync", cwd=ws)
    (ws / "pkgmgr.toml").write_text('[extensions]\nhello = { path = "tools/hello" }\n')
    ok("trust", cwd=ws)
    document = ok("sync", cwd=ws)
    assert [r["name"] for r in document["removed"]] == ["notes"]
    assert not (ws / ".eva" / "extensions" / "notes.exs").exists()
    assert [e["name"] for e in tomllib.loads((ws / "pkgmgr.lock").read_text())["extension"]] == ["hello"]


def test_sync_says_what_each_host_asks_of_the_operator(tmp_path: Path) -> None:
    """sync reports an install the way `ext install` does, for every host: a terva project install
    carries terva's trust note, an Eva one Eva's approval of the folder (issue 26)."""
    from tests.hosts.helpers import human

    ws = workspace(tmp_path)
    document = ok("sync", cwd=ws)
    by_name = {row["name"]: row for row in document["installed"]}
    assert by_name["hello"]["host"] == "terva" and any("terva trust" in note for note in by_name["hello"]["notes"])
    assert by_name["notes"]["trust"]["folder"] == str(ws / ".eva" / "extensions")
    (ws / "tools" / "hello" / "run.sh").write_text("#!/bin/sh\nexit 0\n")
    ok("trust", cwd=ws)
    assert "terva trust" in human("sync", cwd=ws).stdout


def test_a_claude_plugin_syncs_into_the_workspaces_marketplace_and_a_gemini_one_is_refused(
        tmp_path: Path, homes: Homes) -> None:
    """Claude Code: the workspace's own marketplace, at Claude's local scope of the project (its
    .claude/settings.local.json); the lock records host and path. Gemini CLI has no project
    folder: a workspace entry for it is usage, and nothing is installed."""
    ws = tmp_path / "ws"
    claude_plugin(ws / "tools" / "standup")
    (ws / "pkgmgr.toml").write_text('[extensions]\nhello = { path = "tools/standup", host = "claude" }\n')
    ok("trust", cwd=ws)
    assert ok("sync", cwd=ws).get("error") is None
    [listed] = ok("--scope", "workspace", "ext", "list", cwd=ws)["extensions"]
    assert (listed["host"], listed["enabled"]) == ("claude", True)
    assert tree(Path(listed["path"])) == tree(ws / "tools" / "standup")
    settings = json.loads((ws / ".claude" / "settings.local.json").read_text())
    [plugin_id] = settings["enabledPlugins"]
    assert plugin_id.startswith("hello@pkgmgr-") and settings["enabledPlugins"][plugin_id] is True
    [entry] = json.loads((homes.claude / "plugins" / "installed_plugins.json").read_text())["plugins"][plugin_id]
    assert (entry["scope"], entry["installPath"], entry["projectPath"]) == ("local", listed["path"], str(ws))
    [locked] = tomllib.loads((ws / "pkgmgr.lock").read_text())["extension"]
    assert (locked["host"], locked["install_path"]) == ("claude", "")  # the store's path is this machine's
    assert locked["tree_sha256"] == ok("--scope", "workspace", "ext", "status", "hello",
                                                                     cwd=ws)["tree_sha256"]
    assert ok("sync", "--locked", cwd=ws)["plan"]["empty"] is True

    gemini_extension(ws / "tools" / "context", name="context")
    (ws / "pkgmgr.toml").write_text('[extensions]\ncontext = { path = "tools/context", host = "gemini" }\n')
    ok("trust", cwd=ws)
    result = fail("usage", "sync", cwd=ws)
    assert "gemini" in result["error"]["message"]
    assert not homes.gemini_extensions.exists()
