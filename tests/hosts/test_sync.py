"""`sync` of a workspace declaring other hosts' extensions (SPEC 13): they install into the
project's host folders, the lock records their host and install path, and a tree changed in
the work tree is put back before sync reports success."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.hosts.helpers import eva_script, ok, terva_extension, tree

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
