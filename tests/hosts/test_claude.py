"""Claude Code end to end: a plugin lands in pkgmgr's own directory marketplace of its scope
(`$PKGMGR_HOME/claude/plugins/<name>/`, marketplace `pkgmgr`; a workspace's `pkgmgr-<id>` at
Claude's `local` scope) and is recorded as Claude records its installs: `known_marketplaces.json`,
`installed_plugins.json` (version 2) and `enabledPlugins`, a settings file edited member by member;
Claude's runtime files are not tampering; Claude's own disable and uninstall are what pkgmgr shows."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.helpers import UNVERIFIED, Homes, claude_plugin, fail, human, ok, tree

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _install(tmp_path: Path, version: str | None = "1.0.0", *extra: str, cwd: Path | None = None,
             **fields: Any) -> Path:
    source = claude_plugin(tmp_path / "src" / "hello", version=version, **fields)
    ok(*extra, "ext", "install", source, *UNVERIFIED, cwd=cwd)
    return source


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def test_install_puts_the_plugin_in_pkgmgrs_marketplace_and_records_it_as_claude_does(
        tmp_path: Path, homes: Homes) -> None:
    source = _install(tmp_path)
    market = homes.pkgmgr / "claude"
    target = market / "plugins" / "hello"
    assert tree(target) == tree(source)
    assert (market / ".claude-plugin" / "marketplace.json").read_text() == json.dumps(
        {"name": "pkgmgr", "owner": {"name": "pkgmgr"}, "description": "Plugins installed by pkgmgr",
         "plugins": [{"name": "hello", "source": "./plugins/hello", "description": "says hello"}]}, indent=2) + "\n"
    known = (homes.claude / "plugins" / "known_marketplaces.json").read_text()
    assert not known.endswith("\n") and list(_json(homes.claude / "plugins" / "known_marketplaces.json")) == ["pkgmgr"]
    entry = json.loads(known)["pkgmgr"]
    assert list(entry) == ["source", "installLocation", "lastUpdated"] and TIME.fullmatch(entry["lastUpdated"])
    assert entry["source"] == {"source": "directory", "path": str(market)} and entry["installLocation"] == str(market)
    installed = (homes.claude / "plugins" / "installed_plugins.json").read_text()
    assert not installed.endswith("\n")
    [record] = json.loads(installed)["plugins"]["hello@pkgmgr"]
    assert list(record) == ["scope", "installPath", "version", "installedAt", "lastUpdated"]
    assert (record["scope"], record["installPath"], record["version"]) == ("user", str(target), "1.0.0")
    settings = (homes.claude / "settings.json").read_text()
    assert settings == json.dumps({"extraKnownMarketplaces": {"pkgmgr": {"source": {
        "source": "directory", "path": str(market)}}}, "enabledPlugins": {"hello@pkgmgr": True}}, indent=2) + "\n"
    assert not (homes.claude / "plugins" / "cache").exists()  # Claude reads the folder itself
    [listed] = ok("ext", "list")["extensions"]
    assert (listed["host"], listed["path"], listed["enabled"]) == ("claude", str(target), True)


def test_a_plugin_without_a_version_is_recorded_as_claude_records_it(tmp_path: Path, homes: Homes) -> None:
    _install(tmp_path, version=None)
    [record] = _json(homes.claude / "plugins" / "installed_plugins.json")["plugins"]["hello@pkgmgr"]
    assert record["version"] == "unknown"


def test_the_settings_file_keeps_every_byte_pkgmgr_does_not_own(tmp_path: Path, homes: Homes) -> None:
    homes.claude.mkdir(parents=True)
    settings = homes.claude / "settings.json"
    before = ('\ufeff{\n\t"permissions": {"allow": ["Bash(ls:*)"], "deny": []},\n\t"model": "opus",\n'
              '\t"cleanupPeriodDays": 1.0e2,\n\t"enabledPlugins": {"other@market": false}\n}')
    settings.write_text(before, encoding="utf-8")
    _install(tmp_path)
    after = settings.read_text(encoding="utf-8")
    assert after.startswith('\ufeff{\n\t"permissions": {"allow": ["Bash(ls:*)"], "deny": []},\n\t"model": "opus",\n'
                            '\t"cleanupPeriodDays": 1.0e2,\n\t"enabledPlugins": {"other@market": false, '
                            '"hello@pkgmgr": true}')
    assert not after.endswith("\n")
    ok("ext", "disable", "hello")
    assert '"hello@pkgmgr": false' in settings.read_text(encoding="utf-8")
    ok("ext", "remove", "hello")
    after = settings.read_text(encoding="utf-8")
    assert after.startswith(before[:-2]) and after[len(before) - 2:].startswith(',\n\t"extraKnownMarketplaces": {\n')
    assert json.loads(after.lstrip("\ufeff"))["enabledPlugins"] == {"other@market": False}


def test_disable_enable_and_remove_write_only_what_claude_would(tmp_path: Path, homes: Homes) -> None:
    _install(tmp_path)
    settings = homes.claude / "settings.json"
    ok("ext", "disable", "hello")
    assert _json(settings)["enabledPlugins"] == {"hello@pkgmgr": False}
    assert ok("ext", "list")["extensions"][0]["enabled"] is False
    ok("ext", "enable", "hello")
    assert _json(settings)["enabledPlugins"] == {"hello@pkgmgr": True}
    ok("ext", "remove", "hello")
    assert _json(settings)["enabledPlugins"] == {}
    assert "pkgmgr" in _json(settings)["extraKnownMarketplaces"]  # the marketplace stays known
    assert _json(homes.claude / "plugins" / "installed_plugins.json") == {"version": 2, "plugins": {}}
    assert _json(homes.pkgmgr / "claude" / ".claude-plugin" / "marketplace.json")["plugins"] == []
    assert not (homes.pkgmgr / "claude" / "plugins" / "hello").exists()


def test_claudes_own_disable_and_uninstall_are_what_ext_list_shows(tmp_path: Path, homes: Homes) -> None:
    _install(tmp_path)
    settings = homes.claude / "settings.json"
    document = _json(settings)
    document["enabledPlugins"]["hello@pkgmgr"] = False  # claude plugin disable hello@pkgmgr
    settings.write_text(json.dumps(document, indent=2) + "\n")
    assert ok("ext", "list")["extensions"][0]["enabled"] is False
    ok("ext", "enable", "hello")
    assert _json(settings)["enabledPlugins"] == {"hello@pkgmgr": True}
    # claude plugin uninstall hello@pkgmgr: its entry and its flag go, the folder stays
    (homes.claude / "plugins" / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": {}},
                                                                                indent=2))
    del document["enabledPlugins"]["hello@pkgmgr"]
    settings.write_text(json.dumps(document, indent=2) + "\n")
    assert ok("ext", "list")["extensions"][0]["enabled"] is False
    ok("ext", "enable", "hello")  # puts Claude's records back
    [record] = _json(homes.claude / "plugins" / "installed_plugins.json")["plugins"]["hello@pkgmgr"]
    assert record["scope"] == "user" and _json(settings)["enabledPlugins"] == {"hello@pkgmgr": True}


def test_an_update_keeps_installed_at_and_claudes_enabled_state(tmp_path: Path, homes: Homes) -> None:
    _install(tmp_path)
    ok("ext", "disable", "hello")
    [first] = _json(homes.claude / "plugins" / "installed_plugins.json")["plugins"]["hello@pkgmgr"]
    _install(tmp_path, "1.1.0")
    [record] = _json(homes.claude / "plugins" / "installed_plugins.json")["plugins"]["hello@pkgmgr"]
    assert (record["version"], record["installedAt"]) == ("1.1.0", first["installedAt"])
    assert _json(homes.claude / "settings.json")["enabledPlugins"] == {"hello@pkgmgr": False}
    assert _json(homes.pkgmgr / "claude" / "plugins" / "hello" / ".claude-plugin" / "plugin.json")["version"] == \
        "1.1.0"


@pytest.mark.parametrize("runtime", [".in_use/4242", ".in_use-links/x", ".orphaned_at"])
def test_claudes_runtime_files_are_not_tampering(tmp_path: Path, homes: Homes, runtime: str) -> None:
    _install(tmp_path)
    path = homes.pkgmgr / "claude" / "plugins" / "hello" / runtime
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("1767225600000")
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True
    (homes.pkgmgr / "claude" / "plugins" / "hello" / "commands" / "evil.md").write_text("---\n---\nrm -rf\n")
    assert fail("tree_modified", "ext", "verify", "hello")["verified"][0]["added"] == ["commands/evil.md"]


def test_a_workspace_install_is_claudes_local_scope(tmp_path: Path, homes: Homes) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")
    _install(tmp_path, "1.0.0", "--scope", "workspace", cwd=project)
    [listed] = ok("--scope", "workspace", "ext", "list", cwd=project)["extensions"]
    market = Path(listed["path"]).parent.parent
    store_id = market.parent.name
    name = f"pkgmgr-{store_id[:8]}"
    assert market == homes.pkgmgr / "workspaces" / store_id / "claude"
    assert _json(market / ".claude-plugin" / "marketplace.json")["name"] == name
    assert list(_json(homes.claude / "plugins" / "known_marketplaces.json")) == [name]
    [record] = _json(homes.claude / "plugins" / "installed_plugins.json")["plugins"][f"hello@{name}"]
    assert (record["scope"], record["projectPath"]) == ("local", str(project))
    assert list(record) == ["scope", "installPath", "version", "installedAt", "lastUpdated", "projectPath"]
    local = project / ".claude" / "settings.local.json"
    assert local.read_text() == json.dumps({"enabledPlugins": {f"hello@{name}": True}}, indent=2) + "\n"
    assert not (homes.claude / "settings.json").exists()  # nothing in the user's settings
    assert not (project / ".claude" / "settings.json").exists()  # nothing in the committed file
    ok("--scope", "workspace", "ext", "disable", "hello", cwd=project)
    assert _json(local)["enabledPlugins"] == {f"hello@{name}": False}
    ok("--scope", "workspace", "ext", "remove", "hello", cwd=project)
    assert _json(local)["enabledPlugins"] == {}
    assert _json(homes.claude / "plugins" / "installed_plugins.json")["plugins"] == {}


def test_a_record_claude_keeps_without_pkgmgrs_is_a_conflict(tmp_path: Path, homes: Homes) -> None:
    """`claude plugin install hello@pkgmgr` of a plugin pkgmgr once listed: Claude's entry is there."""
    (homes.claude / "plugins").mkdir(parents=True)
    entry = {"scope": "user", "installPath": "/x", "version": "1.0.0", "installedAt": "2026-01-01T00:00:00.000Z",
             "lastUpdated": "2026-01-01T00:00:00.000Z"}
    (homes.claude / "plugins" / "installed_plugins.json").write_text(json.dumps(
        {"version": 2, "plugins": {"hello@pkgmgr": [entry]}}, indent=2))
    before = tree(homes.claude)
    fail("source_conflict", "ext", "install", claude_plugin(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert tree(homes.claude) == before
    ok("ext", "install", tmp_path / "src" / "hello", *UNVERIFIED, "--force")
    [record] = _json(homes.claude / "plugins" / "installed_plugins.json")["plugins"]["hello@pkgmgr"]
    assert record["installPath"] == str(homes.pkgmgr / "claude" / "plugins" / "hello")


def test_another_marketplaces_plugin_is_not_adopted(tmp_path: Path, homes: Homes) -> None:
    (homes.claude / "plugins").mkdir(parents=True)
    entry = {"scope": "user", "installPath": "/c/hello", "version": "1.0.0",
             "installedAt": "2026-01-01T00:00:00.000Z", "lastUpdated": "2026-01-01T00:00:00.000Z"}
    (homes.claude / "plugins" / "installed_plugins.json").write_text(json.dumps(
        {"version": 2, "plugins": {"hello@their-market": [entry]}}, indent=2))
    result = human("adopt", "--host", "claude", "hello")
    assert result.code == 2 and "'claude plugin uninstall hello@their-market'" in result.stderr


@pytest.mark.parametrize("file, content", [
    ("settings.json", "{\n  // a comment\n}\n"), ("settings.json", '{"enabledPlugins": []}'),
    ("plugins/installed_plugins.json", '{"version": 1, "plugins": {}}'),
    ("plugins/known_marketplaces.json", "[]")])
def test_a_file_claude_cannot_read_is_never_written_over(tmp_path: Path, homes: Homes, file: str,
                                                         content: str) -> None:
    path = homes.claude / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    result = fail("invalid_config", "ext", "install", claude_plugin(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert str(path) in result["error"]["message"]
    assert path.read_text() == content
    assert ok("ext", "list")["extensions"] == []
    assert not (homes.pkgmgr / "claude" / "plugins" / "hello").exists()


def test_a_settings_file_that_is_a_link_is_edited_where_it_points(tmp_path: Path, homes: Homes) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir(parents=True)
    dotfiles.write_text('{"model": "opus"}\n')
    homes.claude.mkdir(parents=True)
    os.symlink(dotfiles, homes.claude / "settings.json")
    _install(tmp_path)
    assert os.path.islink(homes.claude / "settings.json")
    assert _json(dotfiles)["enabledPlugins"] == {"hello@pkgmgr": True} and _json(dotfiles)["model"] == "opus"


@pytest.mark.parametrize("name", ["claude-helper", "my plugin", "a@b"])
def test_a_name_claude_or_pkgmgrs_marketplace_cannot_take_is_refused(tmp_path: Path, homes: Homes,
                                                                      name: str) -> None:
    fail("invalid_manifest", "ext", "install", claude_plugin(tmp_path / "src" / "p", name=name), *UNVERIFIED)
    assert not homes.claude.exists()


def test_scaffold_validates_and_installs(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "new", "greeter", "--host", "claude", cwd=tmp_path)
    validated = ok("ext", "validate", tmp_path / "greeter")
    assert validated["valid"] is True and validated["host"] == "claude" and validated["warnings"] == []
    ok("ext", "install", tmp_path / "greeter", *UNVERIFIED)
    assert (homes.pkgmgr / "claude" / "plugins" / "greeter" / "commands" / "hello.md").is_file()


def test_a_plugin_whose_only_file_is_its_manifest_is_found(tmp_path: Path, homes: Homes) -> None:
    """`.claude-plugin/plugin.json` is a manifest in a folder: the archive's root is the level
    holding `.claude-plugin/`, not `.claude-plugin/` itself."""
    source = tmp_path / "src" / "bare"
    (source / ".claude-plugin").mkdir(parents=True)
    (source / ".claude-plugin" / "plugin.json").write_text('{"name": "bare", "version": "1.0.0"}')
    packed = ok("ext", "pack", source, "--output", tmp_path / "bare-1.0.0.tar.gz")
    assert packed["host"] == "claude"
    ok("ext", "install", tmp_path / "bare-1.0.0.tar.gz", *UNVERIFIED)
    assert tree(homes.pkgmgr / "claude" / "plugins" / "bare") == tree(source)


def test_remove_drops_claudes_records_before_the_folder(tmp_path: Path, homes: Homes) -> None:
    """Claude's own uninstall drops its records and leaves the folder; pkgmgr's removal does the
    same first, so a kill after the records went and before the folder left leaves Claude no
    record of a missing folder (a load error): it lists nothing, and `doctor` settles the
    interrupted removal back to the install (records and all), which `ext remove` then takes."""
    from tests.support.cli import run_subprocess

    _install(tmp_path)
    plugin = homes.pkgmgr / "claude" / "plugins" / "hello"
    installed = homes.claude / "plugins" / "installed_plugins.json"
    settings = homes.claude / "settings.json"
    records_before = (installed.read_bytes(), _json(settings)["enabledPlugins"])
    killed = run_subprocess(["ext", "remove", "hello"], env={"PKGMGR_TEST_CRASH_AT": "host.remove.after_host_records"})
    assert killed.code == -9, killed
    assert plugin.is_dir()  # the folder stays; no record names it
    assert _json(installed)["plugins"] == {} and _json(settings)["enabledPlugins"] == {}
    assert any(p["check"] == "leftover" for p in fail("state_inconsistent", "doctor", "--check")["problems"])
    ok("doctor")
    assert _json(installed)["plugins"]["hello@pkgmgr"][0]["installPath"] == str(plugin)
    assert _json(settings)["enabledPlugins"] == records_before[1] == {"hello@pkgmgr": True}
    assert ok("ext", "list")["extensions"][0]["enabled"] is True and ok("doctor", "--check")["ok"] is True
    ok("ext", "remove", "hello")
    assert not plugin.exists() and _json(installed)["plugins"] == {}
