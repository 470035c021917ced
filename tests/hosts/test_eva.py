"""Eva end to end: scripts and directories land where Eva's loader looks (`~/.eva/extensions/`,
`<project>/.eva/extensions/`), disabling moves them out of the scanned folder, and a project
install shows the content hash of trust.ex and changes Eva's approval only when asked."""

from __future__ import annotations

import json
from pathlib import Path

from pkgmgr.hosts.eva import Eva, content_hash
from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    eva_directory,
    eva_module,
    eva_script,
    fail,
    human,
    ok,
    tree,
    trust_ex_hash,
)


def eva_loads(folder: Path) -> list[str]:
    """The names Eva's loader would find in `folder` (loader.ex candidates_in_dir)."""
    return [found.name for found in Eva().scan(folder)]


def test_a_script_installs_as_name_exs(tmp_path: Path, homes: Homes) -> None:
    script = eva_script(tmp_path / "src", "notes")
    [installed] = ok("ext", "install", script, *UNVERIFIED)["installed"]
    target = homes.eva / "extensions" / "notes.exs"
    assert installed["host"] == "eva" and installed["path"] == str(target)
    assert target.read_bytes() == script.read_bytes()
    assert eva_loads(homes.eva / "extensions") == ["notes"]
    status = ok("ext", "status", "notes")
    assert (status["host"], status["layout"], status["version"]) == ("eva", "script", None)


def test_a_directory_installs_as_name_extension_exs(tmp_path: Path, homes: Homes) -> None:
    source = eva_directory(tmp_path / "src" / "tasks", "tasks")
    ok("ext", "install", source, *UNVERIFIED)
    assert tree(homes.eva / "extensions" / "tasks") == tree(source)
    assert eva_loads(homes.eva / "extensions") == ["tasks"]


def test_a_packed_directory_keeps_its_name(tmp_path: Path, homes: Homes) -> None:
    source = eva_directory(tmp_path / "src" / "tasks", "tasks")
    archive = tmp_path / "tasks.tar.gz"
    fail("usage", "ext", "pack", source, "--output", archive)  # Eva extensions carry no version
    assert ok("ext", "pack", source, "--output", archive, "--release", "0.3.0")["version"] == "0.3.0"
    ok("ext", "install", archive, *UNVERIFIED)
    assert (homes.eva / "extensions" / "tasks" / "extension.exs").is_file()


def test_disable_moves_it_out_of_the_scanned_folder_and_back(tmp_path: Path, homes: Homes) -> None:
    script = eva_script(tmp_path / "src", "notes")
    ok("ext", "install", script, *UNVERIFIED)
    [disabled] = ok("ext", "disable", "notes")["disabled"]
    assert eva_loads(homes.eva / "extensions") == []
    assert Path(disabled["path"]).read_bytes() == script.read_bytes()
    assert not Path(disabled["path"]).is_relative_to(homes.eva / "extensions")
    assert ok("ext", "verify", "notes")["verified"][0]["ok"] is True
    ok("ext", "enable", "notes")
    assert eva_loads(homes.eva / "extensions") == ["notes"]
    assert ok("ext", "list")["extensions"][0]["enabled"] is True


def test_a_wrong_module_installs_nothing(tmp_path: Path, homes: Homes) -> None:
    script = tmp_path / "src" / "impostor.exs"
    script.parent.mkdir(parents=True)
    script.write_text(eva_module("victim"))
    error = fail("invalid_manifest", "ext", "install", script, *UNVERIFIED)["error"]
    assert "must define Eva.Extension.Impostor" in error["message"]
    assert not (homes.eva / "extensions").exists() or eva_loads(homes.eva / "extensions") == []


def test_a_hand_installed_script_blocks_a_directory_of_its_name(tmp_path: Path, homes: Homes) -> None:
    mine = eva_script(homes.eva / "extensions", "tasks")
    fail("source_conflict", "ext", "install", eva_directory(tmp_path / "src" / "tasks", "tasks"), *UNVERIFIED)
    assert mine.read_text() == eva_module("tasks")
    assert not (homes.eva / "extensions" / "tasks").exists()
    [adopted] = ok("adopt", "--host", "eva", "tasks")["adopted"]
    assert adopted["path"] == str(mine)


def test_project_install_shows_the_trust_hash_and_leaves_approval_alone(tmp_path: Path, homes: Homes) -> None:
    project = tmp_path / "project"
    folder = project / ".eva" / "extensions"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")  # a workspace (issue 29: --scope workspace needs one)
    [installed] = ok("--scope", "workspace", "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED,
                     cwd=project)["installed"]
    assert installed["path"] == str(folder / "notes.exs")
    trust = installed["trust"]
    assert trust == {"folder": str(folder), "approved_hash": None, "content_hash": trust_ex_hash(folder),
                     "approved": False, "updated": False, "covers": ["notes.exs"], "not_installed_by_pkgmgr": [],
                     "unhashed": [], "unreadable": [], "refused": None}
    assert content_hash(folder) == trust_ex_hash(folder)
    assert not (homes.eva / "trust.json").exists()  # never approved without --approve-host-trust
    result = human("--scope", "workspace", "ext", "disable", "notes", cwd=project)
    assert "Eva will ask again" in result.stdout, result


def test_approve_host_trust_records_the_new_hash(tmp_path: Path, homes: Homes) -> None:
    project = tmp_path / "project"
    folder = project / ".eva" / "extensions"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")  # a workspace (issue 29: --scope workspace needs one)
    homes.eva.mkdir(parents=True)
    other = {"/elsewhere/.eva/extensions": {"content_hash": "ab" * 32, "approved_at": "2025-08-07T14:22:10.123456Z"}}
    (homes.eva / "trust.json").write_text(json.dumps({"extension_dirs": other, "kept": True}))
    ok("--scope", "workspace", "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED,
       "--approve-host-trust", cwd=project)
    document = json.loads((homes.eva / "trust.json").read_text())
    entry = document["extension_dirs"][str(folder)]
    assert entry["content_hash"] == trust_ex_hash(folder)
    assert entry["approved_at"].endswith("Z") and len(entry["approved_at"]) == len("2025-08-07T14:22:10.123456Z")
    assert document["extension_dirs"]["/elsewhere/.eva/extensions"] == other["/elsewhere/.eva/extensions"]
    assert document["kept"] is True
    status = ok("--scope", "workspace", "ext", "status", "notes", cwd=project)
    assert status["trust"]["approved_hash"] == status["trust"]["content_hash"]
    # a second extension changes the hash: shown, and approved again only when asked
    [second] = ok("--scope", "workspace", "ext", "install", eva_directory(tmp_path / "src" / "tasks", "tasks"),
                  *UNVERIFIED, cwd=project)["installed"]
    assert second["trust"]["approved_hash"] == entry["content_hash"] != second["trust"]["content_hash"]
    assert json.loads((homes.eva / "trust.json").read_text())["extension_dirs"][str(folder)] == entry


def test_remove(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", eva_directory(tmp_path / "src" / "tasks", "tasks"), *UNVERIFIED)
    ok("ext", "remove", "tasks")
    assert not (homes.eva / "extensions" / "tasks").exists()
    assert ok("ext", "list")["extensions"] == []


def test_two_extensions_of_one_module_are_refused_at_install(tmp_path: Path, homes: Homes) -> None:
    """loader.ex load_into_acc: Eva loads the first extension of a module and refuses the others
    ("already claimed by another extension"); `my-ext` and `my_ext` both name Eva.Extension.MyExt."""
    first = eva_script(tmp_path / "a", "my-ext")
    second = tmp_path / "b" / "my_ext.exs"
    second.parent.mkdir()
    second.write_text(eva_module("my_ext"))
    ok("ext", "install", first, *UNVERIFIED)
    for extra in ((), ("--force",)):
        error = fail("source_conflict", "ext", "install", second, *UNVERIFIED, *extra)["error"]
        assert "already defines Eva.Extension.MyExt" in error["message"] and str(homes.eva) in error["message"]
    assert eva_loads(homes.eva / "extensions") == ["my-ext"]
    ok("ext", "install", first, *UNVERIFIED, "--force")  # its own module again: no conflict with itself
    ok("ext", "remove", "my-ext")
    ok("ext", "install", second, *UNVERIFIED)
    assert eva_loads(homes.eva / "extensions") == ["my_ext"]


def test_a_hand_installed_extension_claims_its_module_too(tmp_path: Path, homes: Homes) -> None:
    mine = homes.eva / "extensions" / "mcp.exs"
    mine.parent.mkdir(parents=True)
    mine.write_text(eva_module("mcp").replace("Eva.Extension.Mcp", "Eva.Extension.MCP"))
    other = tmp_path / "src" / "Mcp.exs"
    other.parent.mkdir()
    other.write_text(eva_module("mcp").replace("Eva.Extension.Mcp", "Eva.Extension.MCP"))
    error = fail("source_conflict", "ext", "install", other, *UNVERIFIED)["error"]
    assert str(mine) in error["message"]
    assert mine.read_text().count("MCP") == 1 and not (homes.eva / "extensions" / "Mcp.exs").exists()
