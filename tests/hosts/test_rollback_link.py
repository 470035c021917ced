"""`ext rollback`, `ext link` and `ext unlink` for every host, run as the user runs them: the
install an update replaced is kept (one per extension), switched back to atomically and pinned;
a development link makes the host load the working folder, is skipped by `verify`, and never
takes the folder with it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    claude_plugin,
    eva_script,
    fail,
    gemini_extension,
    human,
    ok,
    terva_extension,
    tree,
    vera_extension,
)
from tests.support.builders import minimal_manifest, write_extension


def _compozy(root: Path, version: str) -> Path:
    return write_extension(root, minimal_manifest(name="demo-ext", version=version), files={"note.txt": version})


def _terva(root: Path, version: str) -> Path:
    return terva_extension(root, "hello", version)


def _vera(root: Path, version: str) -> Path:
    return vera_extension(root, "acme.word", version)


def _eva(root: Path, version: str) -> Path:  # Eva's scripts carry no version: the content changes
    script = eva_script(root, "notes")
    script.write_text(script.read_text(encoding="utf-8") + f"# {version}\n", encoding="utf-8")
    return script


def _gemini(root: Path, version: str) -> Path:
    return gemini_extension(root, "hello", version)


def _claude(root: Path, version: str) -> Path:
    return claude_plugin(root, "hello", version)


Make = Callable[[Path, str], Path]
HOSTS: dict[str, tuple[str, Make, Callable[[Homes], Path]]] = {
    "compozy": ("demo-ext", _compozy, lambda h: h.pkgmgr / "extensions" / "demo-ext"),
    "terva": ("hello", _terva, lambda h: h.terva / "extensions"),
    "eva": ("notes", _eva, lambda h: h.eva / "extensions"),
    "vera": ("acme.word", _vera, lambda h: h.vera / "extensions"),
    "gemini": ("hello", _gemini, lambda h: h.gemini_extensions),
    "claude": ("hello", _claude, lambda h: h.pkgmgr / "claude" / "plugins"),
}
EDITED = {"compozy": "note.txt", "terva": "run.sh", "vera": "extension.ts", "gemini": "GEMINI.md",
          "claude": "commands/hi.md"}  # a file of the working folder an author edits


def _source(tmp_path: Path, host: str, version: str) -> Path:
    name, make, _ = HOSTS[host]
    return make(tmp_path / "src" / (name if host != "eva" else ""), version)


def _version(host: str, entry: dict) -> str | None:
    return entry["version"] if host != "eva" else entry["tree_sha256"]


@pytest.mark.parametrize("host", HOSTS)
def test_rollback_switches_back_pins_and_rolls_forward_again(host: str, tmp_path: Path, homes: Homes) -> None:
    name = HOSTS[host][0]
    source = _source(tmp_path, host, "1.0.0")
    ok("ext", "install", source, *UNVERIFIED)
    first = ok("ext", "status", name)
    _source(tmp_path, host, "1.1.0")
    ok("ext", "install", source, *UNVERIFIED, *(["--force"] if host == "eva" else []))
    second = ok("ext", "status", name)
    assert second["previous"]["version"] == first["version"] and second["previous"]["tree_sha256"] == first["tree_sha256"]
    assert "previous:" in human("ext", "status", name).stdout

    done = ok("ext", "rollback", name)
    [entry] = done["rolled_back"]
    assert (entry["name"], entry.get("host", "compozy"), entry["pinned"]) == (name, host, True)
    assert (entry["version"], entry["previous_version"]) == (first["version"], second["version"] or None) or host == "eva"
    now = ok("ext", "status", name)
    assert now["tree_sha256"] == first["tree_sha256"] and now["provenance"]["pinned"] is True
    assert now["previous"]["tree_sha256"] == second["tree_sha256"]  # one kept: the one rolled back from
    assert [r["ok"] for r in ok("ext", "verify", name)["verified"]] == [True]
    assert ok("doctor", "--check")["ok"] is True
    assert ok("ext", "update", "--all")["pinned"][0]["name"] == name

    again = ok("ext", "rollback", name)  # rolling back twice switches back again
    assert again["rolled_back"][0]["pinned"] is True
    assert ok("ext", "status", name)["tree_sha256"] == second["tree_sha256"]
    assert ok("ext", "verify", name)["verified"][0]["ok"] is True


@pytest.mark.parametrize("host", HOSTS)
def test_one_previous_install_is_kept_and_cache_clean_removes_it(host: str, tmp_path: Path, homes: Homes) -> None:
    name, _, where = HOSTS[host]
    source = _source(tmp_path, host, "1.0.0")
    ok("ext", "install", source, *UNVERIFIED)
    for version in ("1.1.0", "1.2.0", "1.3.0"):
        _source(tmp_path, host, version)
        ok("ext", "install", source, *UNVERIFIED, *(["--force"] if host == "eva" else []))
    kept = ok("ext", "status", name)["previous"]
    assert Path(kept["path"]).exists()
    if host == "compozy":
        assert sorted(p.name for p in where(homes).iterdir()) == ["1.2.0", "1.3.0"]
    else:
        assert [p.name for p in (where(homes).parent / ".pkgmgr-previous").iterdir()] == [Path(kept["path"]).name]
    cleaned = ok("cache", "clean")
    assert [(k["name"], k["host"]) for k in cleaned["kept_removed"]] == [(name, host)]
    assert not Path(kept["path"]).exists() and ok("ext", "status", name)["previous"] is None
    assert fail("not_found", "ext", "rollback", name)["error"]["message"].startswith(f"{name}")
    assert ok("ext", "verify", name)["verified"][0]["ok"] is True


@pytest.mark.parametrize("host", HOSTS)
def test_nothing_to_roll_back_to_is_not_found_and_changes_nothing(host: str, tmp_path: Path, homes: Homes) -> None:
    name, _, where = HOSTS[host]
    ok("ext", "install", _source(tmp_path, host, "1.0.0"), *UNVERIFIED)
    before = tree(where(homes))
    error = fail("not_found", "ext", "rollback", name)["error"]
    assert "no previous version to roll back to" in error["message"]
    assert "install the version you want from its source" in error["message"]  # a path install: no registry hint
    assert tree(where(homes)) == before and ok("ext", "status", name)["provenance"]["pinned"] is False


@pytest.mark.parametrize("host", HOSTS)
def test_a_changed_kept_tree_is_refused_and_doctor_forgets_it(host: str, tmp_path: Path, homes: Homes) -> None:
    name = HOSTS[host][0]
    source = _source(tmp_path, host, "1.0.0")
    ok("ext", "install", source, *UNVERIFIED)
    _source(tmp_path, host, "1.1.0")
    ok("ext", "install", source, *UNVERIFIED, *(["--force"] if host == "eva" else []))
    status = ok("ext", "status", name)
    kept = Path(status["previous"]["path"])
    # a file of the extension (not one the host writes into an install itself: Gemini's install record)
    victim = kept if kept.is_file() else next(p for p in sorted(kept.rglob("*")) if p.is_file()
                                              and not p.name.startswith("."))
    victim.write_bytes(victim.read_bytes() + b"\n# changed\n")
    fail("tree_modified", "ext", "rollback", name)
    assert ok("ext", "status", name)["tree_sha256"] == status["tree_sha256"]  # nothing moved
    [problem] = fail("state_inconsistent", "doctor", "--check")["problems"]
    assert problem["check"] == "kept"
    ok("doctor")
    assert ok("ext", "status", name)["previous"] is None and not kept.exists()
    assert ok("doctor", "--check")["ok"] is True


@pytest.mark.parametrize("host", HOSTS)
def test_link_loads_the_working_folder_and_unlink_restores_the_install(host: str, tmp_path: Path,
                                                                        homes: Homes) -> None:
    name, make, where = HOSTS[host]
    installed = _source(tmp_path, host, "1.0.0")
    ok("ext", "install", installed, *UNVERIFIED)
    work = make(tmp_path / "work" / (name if host != "eva" else ""), "2.0.0-dev")
    before = tree(work)
    [entry] = ok("ext", "link", work)["linked"]
    assert (entry["name"], entry["linked_to"]) == (name, str(work.absolute()))
    [listed] = ok("ext", "list")["extensions"]
    assert listed["linked"] == str(work.absolute())
    assert re.search(rf"^{re.escape(name)} .* linked ", human("ext", "list").stdout, re.M)
    # the host loads the folder as it is: an edit shows without installing again
    loaded = Path(listed["path"])
    edited = work if work.is_file() else work / EDITED[host]
    edited.write_text(edited.read_text(encoding="utf-8") + "\n// edited\n", encoding="utf-8")
    if host == "gemini":  # Gemini's own link: its install record names the folder it loads instead
        assert sorted(p.name for p in loaded.iterdir()) == [".gemini-extension-install.json"]
        loaded = Path(json.loads((loaded / ".gemini-extension-install.json").read_text())["source"])
    seen = loaded if loaded.is_file() or loaded.is_symlink() and work.is_file() else loaded / edited.relative_to(work)
    assert seen.read_text(encoding="utf-8").endswith("// edited\n")
    [verified] = ok("ext", "verify", name)["verified"]
    assert (verified["ok"], verified["skipped"]) == (True, "linked")
    assert "skipped (linked to" in human("ext", "verify", name).stdout
    assert ok("doctor", "--check")["ok"] is True

    [unlinked] = ok("ext", "unlink", name)["unlinked"]
    assert unlinked["restored"]["name"] == name and unlinked["linked_to"] == str(work.absolute())
    now = ok("ext", "status", name)
    assert now["linked"] is None and ok("ext", "verify", name)["verified"][0]["ok"] is True
    restored = Path(now["path"]) if Path(now["path"]).is_file() else Path(now["path"]) / edited.relative_to(work)
    assert "// edited" not in restored.read_text(encoding="utf-8")
    assert tree(work) != before and work.exists()  # the user's folder stays, edits and all
    if host == "vera":  # Vera's records name the restored install again
        records = json.loads((homes.vera / "extensions.json").read_text(encoding="utf-8"))["extensions"]
        assert [r["id"] for r in records] == [name]


@pytest.mark.parametrize("host", HOSTS)
def test_remove_of_a_link_never_deletes_the_folder(host: str, tmp_path: Path, homes: Homes) -> None:
    name, make, where = HOSTS[host]
    work = make(tmp_path / "work" / (name if host != "eva" else ""), "1.0.0")
    before = tree(work)
    [entry] = ok("ext", "link", work)["linked"]
    assert entry["kept_version"] is None
    assert f"'pkgmgr ext unlink {name}' removes the link" in human("ext", "link", work).stdout
    ok("ext", "remove", name)
    assert tree(work) == before
    assert ok("ext", "list")["extensions"] == []
    assert ok("doctor", "--check")["ok"] is True


@pytest.mark.parametrize("host", HOSTS)
def test_unlink_without_an_install_removes_the_link_only(host: str, tmp_path: Path, homes: Homes) -> None:
    name, make, _ = HOSTS[host]
    work = make(tmp_path / "work" / (name if host != "eva" else ""), "1.0.0")
    before = tree(work)
    ok("ext", "link", work)
    [unlinked] = ok("ext", "unlink", name)["unlinked"]
    assert unlinked["restored"] is None
    assert tree(work) == before and ok("ext", "list")["extensions"] == []


def test_unlink_of_an_install_that_is_not_linked_is_refused(tmp_path: Path) -> None:
    ok("ext", "install", _source(tmp_path, "terva", "1.0.0"), *UNVERIFIED)
    error = fail("usage", "ext", "unlink", "hello")["error"]
    assert error["message"].startswith("hello 1.0.0 (terva) is not linked")


def test_a_link_is_not_replaced_by_an_install_without_force(tmp_path: Path) -> None:
    ok("ext", "install", _source(tmp_path, "terva", "1.0.0"), *UNVERIFIED)
    work = terva_extension(tmp_path / "work" / "hello", "hello", "2.0.0")
    ok("ext", "link", work)
    fail("source_conflict", "ext", "install", tmp_path / "src" / "hello", *UNVERIFIED)
    refused = human("ext", "install", tmp_path / "src" / "hello", *UNVERIFIED).stderr
    assert "hint: 'pkgmgr ext unlink hello' removes the link and restores 1.0.0" in refused
    fail("source_conflict", "ext", "rollback", "hello")
    assert ok("ext", "status", "hello")["linked"] == str(work)


def test_gemini_link_is_the_install_record_gemini_link_writes(tmp_path: Path, homes: Homes) -> None:
    """`gemini extensions link PATH` makes `extensions/<name>/` holding only its install record,
    `{"source": PATH, "type": "link"}` (JSON.stringify(v, null, 2)); pkgmgr writes the same bytes,
    copies nothing, and its removal takes that folder only."""
    ok("ext", "install", _gemini(tmp_path / "src" / "hello", "1.0.0"), *UNVERIFIED)
    work = _gemini(tmp_path / "work" / "hello", "2.0.0-dev")
    before = tree(work)
    ok("ext", "link", work)
    place = homes.gemini_extensions / "hello"
    assert tree(place) == {".gemini-extension-install.json":
                           json.dumps({"source": str(work), "type": "link"}, indent=2).encode()}
    assert ok("ext", "list")["extensions"][0]["version"] == "2.0.0-dev"
    ok("ext", "remove", "hello")
    assert not place.exists() and tree(work) == before
    assert not (homes.gemini / ".gemini" / ".pkgmgr-previous").exists() or \
        not any((homes.gemini / ".gemini" / ".pkgmgr-previous").iterdir())


def test_a_kept_tree_is_staged_without_the_hosts_runtime_files(tmp_path: Path, homes: Homes) -> None:
    """Gemini's install record in the kept tree names the place it was installed at, and `.env`
    holds the user's settings values: neither is part of what was installed, so neither makes
    the kept tree `tree_modified`; the rollback writes the record for its place again and
    carries the current settings values over, as an update does."""
    source = _gemini(tmp_path / "src" / "hello", "1.0.0")
    ok("ext", "install", source, *UNVERIFIED)
    _gemini(source, "1.1.0")
    ok("ext", "install", source, *UNVERIFIED)
    place = homes.gemini_extensions / "hello"
    (place / ".env").write_text("TOKEN=kept\n")
    kept = Path(ok("ext", "status", "hello")["previous"]["path"])
    assert json.loads((kept / ".gemini-extension-install.json").read_text())["source"] == str(place)
    [entry] = ok("ext", "rollback", "hello")["rolled_back"]
    assert entry["version"] == "1.0.0"
    assert json.loads((place / "gemini-extension.json").read_text())["version"] == "1.0.0"
    assert (place / ".gemini-extension-install.json").read_bytes() == \
        json.dumps({"source": str(place), "type": "local"}, indent=2).encode()
    assert (place / ".env").read_text() == "TOKEN=kept\n"
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True and ok("doctor", "--check")["ok"] is True


def test_claude_link_is_recorded_where_claude_loads_plugins(tmp_path: Path, homes: Homes) -> None:
    """Claude Code loads only what its records name: the link (pkgmgr's marketplace folder
    `plugins/<name>` a symbolic link to the working folder) is listed in pkgmgr's marketplace,
    recorded in installed_plugins.json and enabled; `ext remove` drops the records and the link,
    never the folder."""
    work = _claude(tmp_path / "work" / "hello", "2.0.0-dev")
    before = tree(work)
    ok("ext", "link", work)
    plugin = homes.pkgmgr / "claude" / "plugins" / "hello"
    assert plugin.is_symlink() and Path(plugin.readlink()) == work
    installed = json.loads((homes.claude / "plugins" / "installed_plugins.json").read_text())
    [entry] = installed["plugins"]["hello@pkgmgr"]
    assert (entry["installPath"], entry["version"]) == (str(plugin), "2.0.0-dev")
    assert json.loads((homes.claude / "settings.json").read_text())["enabledPlugins"] == {"hello@pkgmgr": True}
    market = json.loads((homes.pkgmgr / "claude" / ".claude-plugin" / "marketplace.json").read_text())
    assert [p["name"] for p in market["plugins"]] == ["hello"]
    ok("ext", "remove", "hello")
    assert not plugin.exists() and not plugin.is_symlink() and tree(work) == before
    installed = json.loads((homes.claude / "plugins" / "installed_plugins.json").read_text())
    assert installed["plugins"] == {}


@pytest.mark.parametrize("command, label", [(["ext", "unlink", "hello"], "host.install.after_rename"),
                                            (["ext", "remove", "hello"], "host.remove.after_host_records")])
def test_a_claude_link_a_killed_command_left_is_recorded_again_by_doctor(command: list[str], label: str,
                                                                         tmp_path: Path, homes: Homes) -> None:
    """Claude's records name a link as they name an install. An `ext unlink` killed after it wrote
    the restored install's entry (version 1.0.0) over the link's, or an `ext remove` killed after
    it dropped the link's records, and then `doctor`: the link stands, so Claude's entry is the
    link's again, enabled (before: `doctor` left the unlink's 1.0.0 beside the linked 2.0.0-dev, and
    no entry at all after the remove — Claude loaded nothing while pkgmgr listed the link)."""
    from tests.support.cli import run_subprocess

    ok("ext", "install", _claude(tmp_path / "src" / "hello", "1.0.0"), *UNVERIFIED)
    ok("ext", "link", _claude(tmp_path / "work" / "hello", "2.0.0-dev"))
    installed = homes.claude / "plugins" / "installed_plugins.json"
    settings = homes.claude / "settings.json"
    before = (json.loads(installed.read_text())["plugins"], json.loads(settings.read_text())["enabledPlugins"])
    assert before[0]["hello@pkgmgr"][0]["version"] == "2.0.0-dev"
    assert run_subprocess(command, env={"PKGMGR_TEST_CRASH_AT": label}).code == -9
    assert json.loads(installed.read_text())["plugins"] != before[0]  # the killed command changed them
    ok("doctor")
    [entry] = json.loads(installed.read_text())["plugins"]["hello@pkgmgr"]
    assert (entry["installPath"], entry["version"]) == (str(homes.pkgmgr / "claude" / "plugins" / "hello"), "2.0.0-dev")
    assert json.loads(settings.read_text())["enabledPlugins"] == before[1] == {"hello@pkgmgr": True}
    assert ok("ext", "status", "hello")["linked"] == str(tmp_path / "work" / "hello")
    assert ok("doctor", "--check")["ok"] is True
