"""terva end to end: installs land where terva's loader looks (`$TERVA_HOME/extensions/<name>/`,
`<project>/.terva/extensions/<name>/`), and `ext enable/disable` rewrites `enabled` exactly as
`terva ext enable/disable` does."""

from __future__ import annotations

import json
import os
import stat
import tarfile
from pathlib import Path

import pytest

from pkgmgr.hosts.terva import terva_home
from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    fail,
    human,
    ok,
    terva_extension,
    tree,
)


def test_install_from_a_directory_lands_in_terva_home(tmp_path: Path, homes: Homes) -> None:
    source = terva_extension(tmp_path / "src" / "hello")
    document = ok("ext", "install", source, *UNVERIFIED)
    [installed] = document["installed"]
    target = homes.terva / "extensions" / "hello"
    assert installed["host"] == "terva" and installed["path"] == str(target)
    assert tree(target) == tree(source)  # byte for byte: terva reads what the author wrote
    assert os.stat(target / "run.sh").st_mode & stat.S_IXUSR  # the execute bit terva's spawn needs
    assert not any((homes.terva / "extensions").glob(".*"))  # staging never inside the scanned folder
    [entry] = ok("ext", "list")["extensions"]
    assert entry | {"path": None} == {"name": "hello", "version": "0.1.0", "scope": "global", "enabled": True,
                                      "source": "path", "verified": False, "path": None, "pinned": False,
                                      "host": "terva"}


def test_install_from_a_packed_archive(tmp_path: Path, homes: Homes) -> None:
    source = terva_extension(tmp_path / "src" / "hello")
    archive = tmp_path / "hello.tar.gz"
    packed = ok("ext", "pack", source, "--output", archive)
    assert packed["host"] == "terva" and packed["version"] == "0.1.0"
    with tarfile.open(archive) as tar:
        assert sorted(m.name for m in tar.getmembers() if m.isfile()) == ["hello-0.1.0/extension.json",
                                                                          "hello-0.1.0/run.sh"]
    ok("ext", "install", archive, *UNVERIFIED)
    assert tree(homes.terva / "extensions" / "hello") == tree(source)
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True


def test_disable_rewrites_enabled_as_terva_does(tmp_path: Path, homes: Homes) -> None:
    source = terva_extension(tmp_path / "src" / "hello", args=["--x", "<&>"])
    ok("ext", "install", source, *UNVERIFIED)
    manifest = homes.terva / "extensions" / "hello" / "extension.json"
    ok("ext", "disable", "hello")
    # json.MarshalIndent of map[string]any: keys sorted, two spaces, HTML escaped, final newline
    assert manifest.read_text() == (
        '{\n  "args": [\n    "--x",\n    "\\u003c\\u0026\\u003e"\n  ],\n  "description": "says hello",\n'
        '  "enabled": false,\n  "exec": "./run.sh",\n  "language": "sh",\n  "name": "hello",\n'
        '  "version": "0.1.0"\n}\n')
    assert stat.S_IMODE(os.stat(manifest).st_mode) == 0o644
    assert ok("ext", "status", "hello")["enabled"] is False
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True  # `enabled` is not part of the tree
    ok("ext", "enable", "hello")
    assert json.loads(manifest.read_text())["enabled"] is True
    assert ok("ext", "list")["extensions"][0]["enabled"] is True


def test_an_update_keeps_the_disabled_state(tmp_path: Path, homes: Homes) -> None:
    source = terva_extension(tmp_path / "src" / "hello")
    ok("ext", "install", source, *UNVERIFIED)
    ok("ext", "disable", "hello")
    terva_extension(source, version="0.2.0")
    [installed] = ok("ext", "install", source, *UNVERIFIED)["installed"]
    assert (installed["action"], installed["previous_version"]) == ("switched", "0.1.0")
    manifest = json.loads((homes.terva / "extensions" / "hello" / "extension.json").read_text())
    assert (manifest["version"], manifest["enabled"]) == ("0.2.0", False)
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True


def test_verify_sees_a_changed_file_but_not_a_hand_toggled_enabled(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    folder = homes.terva / "extensions" / "hello"
    manifest = json.loads((folder / "extension.json").read_text())
    (folder / "extension.json").write_text(json.dumps({**manifest, "enabled": False}, indent=4))
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True
    (folder / "run.sh").write_text("#!/bin/sh\nrm -rf ~\n")
    [result] = fail("tree_modified", "ext", "verify", "hello")["error"]["details"]["extensions"]
    assert result["modified"] == ["run.sh"]


def test_theme_only_extension(tmp_path: Path, homes: Homes) -> None:
    source = tmp_path / "src" / "nord"
    source.mkdir(parents=True)
    (source / "extension.json").write_text('{"name": "nord", "version": "1.0.0"}')
    (source / "theme.json").write_text("{}")
    [installed] = ok("ext", "install", source, *UNVERIFIED)["installed"]
    assert installed["summary"]["kind"] == "terva theme"
    assert (homes.terva / "extensions" / "nord" / "theme.json").is_file()


def test_remove_takes_the_folder_away(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert ok("ext", "remove", "hello")["removed"][0]["host"] == "terva"
    assert not (homes.terva / "extensions" / "hello").exists()
    assert ok("ext", "list")["extensions"] == []
    fail("not_found", "ext", "remove", "hello")


def test_a_hand_installed_folder_is_never_overwritten(tmp_path: Path, homes: Homes) -> None:
    mine = terva_extension(homes.terva / "extensions" / "hello", description="mine")
    before = tree(mine)
    result = human("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert result.code == 6 and "adopt --host terva hello" in result.stderr, result
    assert tree(mine) == before
    assert ok("hosts")["hosts"][1]["unmanaged"] == 1
    [adopted] = ok("adopt", "--host", "terva")["adopted"]
    assert adopted["name"] == "hello" and adopted["source"] == "unknown"
    assert tree(mine) == before  # adopting moves nothing
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True
    assert ok("hosts")["hosts"][1] | {"homes": None} == {"name": "terva", "homes": None, "managed": 1,
                                                         "unmanaged": 0}


def test_force_replaces_a_hand_installed_folder(tmp_path: Path, homes: Homes) -> None:
    terva_extension(homes.terva / "extensions" / "hello", description="mine")
    source = terva_extension(tmp_path / "src" / "hello")
    ok("ext", "install", source, *UNVERIFIED, "--force")
    assert tree(homes.terva / "extensions" / "hello") == tree(source)


def test_project_install_lands_in_the_work_tree_and_says_terva_trust(tmp_path: Path, homes: Homes) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")
    source = terva_extension(tmp_path / "src" / "hello")
    result = human("--scope", "workspace", "ext", "install", source, *UNVERIFIED, cwd=project)
    assert result.code == 0, result
    assert "terva trust" in result.stdout
    assert tree(project / ".terva" / "extensions" / "hello") == tree(source)
    assert not (homes.terva / "extensions" / "hello").exists()
    [entry] = ok("--scope", "workspace", "ext", "list", "--host", "terva", cwd=project)["extensions"]
    assert entry["scope"] == "workspace" and entry["path"] == str(project / ".terva" / "extensions" / "hello")
    assert ok("ext", "list")["extensions"] == []  # the global scope does not see a project's install
    hosts = {h["name"]: h for h in ok("hosts", cwd=project)["hosts"]}
    assert hosts["terva"]["homes"]["project"] == str(project / ".terva" / "extensions")
    assert hosts["terva"]["managed"] == 1


def test_default_terva_home_follows_terva(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, homes: Homes) -> None:
    monkeypatch.delenv("TERVA_HOME")
    assert terva_home() == homes.user / ".local" / "state" / "terva"
    (homes.user / ".local" / "state" / "zot").mkdir(parents=True)
    assert terva_home() == homes.user / ".local" / "state" / "zot"  # an install from before the rename
    (homes.user / ".local" / "state" / "terva").mkdir(parents=True)
    assert terva_home() == homes.user / ".local" / "state" / "terva"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert terva_home() == tmp_path / "state" / "terva"
    monkeypatch.setenv("TERVA_HOME", "")  # set but empty: the default
    monkeypatch.setenv("ZOT_HOME", str(tmp_path / "zot"))
    assert terva_home() == tmp_path / "state" / "terva"
    monkeypatch.delenv("TERVA_HOME")
    assert terva_home() == tmp_path / "zot"
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert (tmp_path / "zot" / "extensions" / "hello" / "extension.json").is_file()


def test_a_symlink_on_the_way_is_refused(tmp_path: Path, homes: Homes) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    homes.terva.mkdir()
    (homes.terva / "extensions").symlink_to(elsewhere)
    fail("path_escapes_root", "ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's directory needs root")
def test_another_users_directory_on_the_way_is_refused(tmp_path: Path, homes: Homes) -> None:
    (homes.terva / "extensions").mkdir(parents=True)
    os.chown(homes.terva, 4242, 4242)
    fail("path_escapes_root", "ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert list((homes.terva / "extensions").iterdir()) == []


def test_an_invalid_extension_installs_nothing(tmp_path: Path, homes: Homes) -> None:
    source = terva_extension(tmp_path / "src" / "core", name="core")
    error = fail("invalid_manifest", "ext", "install", source, *UNVERIFIED)
    assert "reserved" in error["error"]["message"]
    assert not (homes.terva / "extensions").exists() or list((homes.terva / "extensions").iterdir()) == []


def test_two_hosts_manifests_need_host(tmp_path: Path, homes: Homes) -> None:
    source = terva_extension(tmp_path / "src" / "both")
    (source / "vera.extension.json").write_text(json.dumps({"id": "both", "version": "1.0.0", "sdk": "1",
                                                            "entrypoint": "./run.sh", "capabilities": []}))
    error = fail("invalid_archive", "ext", "install", source, *UNVERIFIED)["error"]
    assert "extension.json (terva)" in error["message"] and "vera.extension.json (vera)" in error["message"]
    ok("ext", "install", source, *UNVERIFIED, "--host", "vera")
    assert (homes.vera / "extensions" / "both" / "vera.extension.json").is_file()
    assert not (homes.terva / "extensions" / "both").exists()


def test_an_enabled_state_terva_itself_wrote_is_what_pkgmgr_shows_and_changes(tmp_path: Path, homes: Homes) -> None:
    """`terva ext disable` rewrites the manifest's `enabled` behind pkgmgr's back: `ext list` and
    `ext status` show it, and `ext enable` enables it again (issue 26)."""
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    manifest = homes.terva / "extensions" / "hello" / "extension.json"
    document = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**document, "Enabled": False}, indent=2) + "\n")  # Go folds the key's case
    assert [e["enabled"] for e in ok("ext", "list")["extensions"]] == [False]
    assert ok("ext", "status", "hello")["enabled"] is False
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True  # `enabled` is not part of the tree
    ok("ext", "enable", "hello")
    assert json.loads(manifest.read_text())["enabled"] is True
    assert [e["enabled"] for e in ok("ext", "list")["extensions"]] == [True]
