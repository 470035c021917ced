"""The real Gemini CLI and Claude Code (npm, pinned in tests/hosts/realcli.py, installed by
.ci/run into the folder PKGMGR_TEST_NPM_PREFIX names): a sample of each conformance corpus is
run through the real CLI again and must get the verdict recorded in verdicts.json (drift: a new
CLI version, or a harness that changed), and the records each host writes on install, disable,
enable and uninstall still have the shapes docs/hosts.md and pkgmgr's design rely on.

Without the CLIs (no npm, no network when CI installed them) every test here skips, saying why.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.hosts import realcli
from tests.hosts.conformance import build


@pytest.fixture(scope="session")
def gemini_cli() -> Path:
    return _cli("gemini")


@pytest.fixture(scope="session")
def claude_cli() -> Path:
    return _cli("claude")


def _cli(host: str) -> Path:
    package, pinned = realcli.PINNED[host]
    path = realcli.executable(host)
    if path is None:
        pytest.skip(f"{package} is not installed: set {realcli.PREFIX_VARIABLE} to an npm prefix holding "
                    f"{package}@{pinned} (.ci/run installs it; it skips when npm is unreachable)")
    version = realcli.installed_version(host)
    assert version == pinned, (f"{package} {version} is installed where {pinned} is pinned: the corpus verdicts "
                               f"were recorded from {pinned} (re-record them with python -m tests.hosts.{host}.record)")
    return path


# --- drift: a sample of each corpus, through the real CLI again ----------------------------------------

# a few of each kind of verdict (each Gemini case starts the CLI three times: ~5 s of CPU)
GEMINI_SAMPLE = ["minimal", "name-refused-0", "name-number", "context-outside", "mcp-server-null", "doc-bom"]
CLAUDE_SAMPLE = ["minimal", "name-only", "no-manifest", "name-refused-0", "name-probe-0", "commands-no-dot-slash",
                 "commands-missing", "hooks-unknown-event", "author-string", "doc-bom", "doc-duplicate-name-last-valid",
                 "version-number", "unknown-field"]


@pytest.mark.parametrize("case_id", GEMINI_SAMPLE)
def test_gemini_cli_still_gives_the_recorded_verdict(gemini_cli: Path, tmp_path: Path, case_id: str) -> None:
    from tests.hosts.gemini.cases import CASES
    from tests.hosts.gemini.record import load

    [case] = [c for c in CASES if c["id"] == case_id]
    source = build(tmp_path / "src" / "ext", case["files"])
    assert realcli.gemini_verdict(gemini_cli, source, tmp_path / "run") == load()["cases"][case_id]


@pytest.mark.parametrize("case_id", CLAUDE_SAMPLE)
def test_claude_code_still_gives_the_recorded_verdict(claude_cli: Path, tmp_path: Path, case_id: str) -> None:
    from tests.hosts.claude.cases import CASES
    from tests.hosts.claude.record import load, record

    [case] = [c for c in CASES if c["id"] == case_id]
    assert record(claude_cli, case) == load()["cases"][case_id]


# --- the records Gemini CLI writes --------------------------------------------------------------------


def _gemini(cli: Path, home: Path, cwd: Path, *args: str) -> realcli.Run:
    result = realcli.run(cli, ["extensions", *args], home=home, cwd=cwd)
    assert result.code == 0, result.out
    return result


def test_gemini_records_install_enable_disable_and_uninstall(gemini_cli: Path, tmp_path: Path) -> None:
    """`.gemini-extension-install.json` and `extension-enablement.json`: JSON.stringify(v, null, 2)
    without a final newline; enablement as path patterns, the last match winning (a user-scope
    disable is `!<home>/*`: it does not reach a workspace outside the home directory)."""
    home = tmp_path / "home"
    work, outside = home / "work", tmp_path / "outside"
    source = build(tmp_path / "src" / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}\n'})
    folder = home / ".gemini" / "extensions"
    enablement = folder / "extension-enablement.json"
    _gemini(gemini_cli, home, work, "install", str(source), "--consent", "--skip-settings")
    assert (folder / "hello" / ".gemini-extension-install.json").read_bytes() == \
        json.dumps({"source": str(source), "type": "local"}, indent=2).encode()
    assert (folder / "hello" / "gemini-extension.json").read_bytes() == (source / "gemini-extension.json").read_bytes()
    assert enablement.read_bytes() == json.dumps({"hello": {"overrides": [f"{home}/*"]}}, indent=2).encode()
    integrity = json.loads((home / ".gemini" / "extension_integrity.json").read_text())
    assert set(integrity) == {"store", "signature"} and set(integrity["store"]["hello"]) == {"hash", "signature"}

    _gemini(gemini_cli, home, work, "disable", "hello")
    assert json.loads(enablement.read_text()) == {"hello": {"overrides": [f"!{home}/*"]}}
    [listed] = _gemini_list(gemini_cli, home, work)
    assert listed["name"] == "hello" and listed["isActive"] is False
    assert _gemini_list(gemini_cli, home, outside)[0]["isActive"] is True
    _gemini(gemini_cli, home, work, "enable", "--scope", "workspace", "hello")
    assert json.loads(enablement.read_text()) == {"hello": {"overrides": [f"!{home}/*", f"{work}/*"]}}
    assert _gemini_list(gemini_cli, home, work)[0]["isActive"] is True

    _gemini(gemini_cli, home, work, "uninstall", "hello")
    assert not (folder / "hello").exists()
    assert enablement.read_bytes() == b"{}"
    assert "hello" in json.loads((home / ".gemini" / "extension_integrity.json").read_text())["store"]  # stays


def _gemini_list(cli: Path, home: Path, cwd: Path) -> list[dict[str, Any]]:
    result = _gemini(cli, home, cwd, "list", "-o", "json")
    value = realcli._json_array(result.out)
    assert value is not None, result.out
    return value


def test_gemini_loads_a_folder_written_as_pkgmgr_writes_it(gemini_cli: Path, tmp_path: Path) -> None:
    """The design of docs/hosts.md: the tree, its install record naming the folder itself as the
    source, an enablement entry; GEMINI_CLI_HOME in place of HOME. Gemini lists it as its own,
    honours the disabled state, and a staging folder beside `extensions/` is never read."""
    home, gemini_home = tmp_path / "home", tmp_path / "gemini-home"
    work = gemini_home / "work"
    folder = gemini_home / ".gemini" / "extensions"
    target = build(folder / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}\n'})
    (target / ".gemini-extension-install.json").write_text(json.dumps({"source": str(target), "type": "local"},
                                                                      indent=2))
    (folder / "extension-enablement.json").write_text(json.dumps({"hello": {"overrides": [f"!{gemini_home}/*"]}},
                                                                 indent=2))
    build(gemini_home / ".gemini" / ".pkgmgr-staging" / "tx-1" / "hello",
          {"gemini-extension.json": '{"name":"hello","version":"2.0.0"}\n'})
    env = {"GEMINI_CLI_HOME": str(gemini_home)}
    result = realcli.run(gemini_cli, ["extensions", "list", "-o", "json"], home=home, cwd=work, env=env)
    assert result.code == 0, result.out
    [listed] = realcli._json_array(result.out) or [{}]
    assert (listed["name"], listed["version"], listed["isActive"]) == ("hello", "1.0.0", False)
    assert listed["installMetadata"] == {"source": str(target), "type": "local"}
    enabled = realcli.run(gemini_cli, ["extensions", "enable", "hello"], home=home, cwd=work, env=env)
    assert enabled.code == 0 and json.loads((folder / "extension-enablement.json").read_text()) == \
        {"hello": {"overrides": [f"{gemini_home}/*"]}}


def test_gemini_loads_nothing_when_two_folders_carry_one_name(gemini_cli: Path, tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    folder = home / ".gemini" / "extensions"
    for dirname in ("hello", "hello-copy"):
        build(folder / dirname, {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}'})
    build(folder / "other", {"gemini-extension.json": '{"name":"other","version":"1.0.0"}'})
    result = realcli.run(gemini_cli, ["extensions", "list", "-o", "json"], home=home, cwd=work)
    assert result.code != 0 and realcli._json_array(result.out) is None


# --- the records Claude Code writes ---------------------------------------------------------------------


def _claude(cli: Path, scratch: Path, cwd: Path, *args: str) -> realcli.Run:
    result = realcli.run(cli, ["plugin", *args], home=scratch / "home", cwd=cwd,
                         env=realcli.claude_env(scratch / "config"))
    assert result.code == 0, result.out
    return result


def test_claude_records_marketplace_install_disable_and_uninstall(claude_cli: Path, tmp_path: Path) -> None:
    """known_marketplaces.json and installed_plugins.json (version 2): JSON.stringify(v, null, 2)
    without a final newline; settings.json with one; a directory marketplace's plugin is read
    from its folder; uninstall leaves the marketplace folder alone."""
    config, work = tmp_path / "config", tmp_path / "work"
    market = realcli.write_marketplace(tmp_path / "market", "pkgmgr", {"hello": "./plugins/hello"})
    build(market / "plugins" / "hello", {".claude-plugin/plugin.json": '{"name":"hello","version":"1.0.0"}'})
    _claude(claude_cli, tmp_path, work, "marketplace", "add", str(market))
    known = json.loads((config / "plugins" / "known_marketplaces.json").read_text())
    assert list(known["pkgmgr"]) == ["source", "installLocation", "lastUpdated"]
    assert known["pkgmgr"]["source"] == {"source": "directory", "path": str(market)}
    settings = (config / "settings.json").read_text()
    assert settings.endswith("}\n") and json.loads(settings) == {
        "extraKnownMarketplaces": {"pkgmgr": {"source": {"source": "directory", "path": str(market)}}}}

    _claude(claude_cli, tmp_path, work, "install", "hello@pkgmgr")
    installed = (config / "plugins" / "installed_plugins.json").read_text()
    assert not installed.endswith("\n")
    [entry] = json.loads(installed)["plugins"]["hello@pkgmgr"]
    assert json.loads(installed)["version"] == 2
    assert list(entry) == ["scope", "installPath", "version", "installedAt", "lastUpdated"]
    assert entry["scope"] == "user" and entry["installPath"] == str(config / "plugins" / "cache" / "pkgmgr" / "hello"
                                                                     / "1.0.0")
    assert json.loads((config / "settings.json").read_text())["enabledPlugins"] == {"hello@pkgmgr": True}
    [listed] = realcli.claude_list(claude_cli, tmp_path)
    assert listed["enabled"] is True and listed["readFromFolder"] == str(market / "plugins" / "hello")

    _claude(claude_cli, tmp_path, work, "disable", "hello@pkgmgr")
    assert json.loads((config / "settings.json").read_text())["enabledPlugins"] == {"hello@pkgmgr": False}
    assert realcli.claude_list(claude_cli, tmp_path)[0]["enabled"] is False

    _claude(claude_cli, tmp_path, work, "uninstall", "hello@pkgmgr")
    assert json.loads((config / "plugins" / "installed_plugins.json").read_text()) == {"version": 2, "plugins": {}}
    assert json.loads((config / "settings.json").read_text())["enabledPlugins"] == {}
    assert (config / "plugins" / "cache" / "pkgmgr" / "hello" / "1.0.0" / ".orphaned_at").is_file()
    assert (market / "plugins" / "hello" / ".claude-plugin" / "plugin.json").is_file()


def _pkgmgr_records(config: Path, market: Path, plugin: str, *, scope: str, project: Path | None) -> None:
    """The records pkgmgr's design writes for a plugin of its own directory marketplace."""
    (config / "plugins").mkdir(parents=True, exist_ok=True)
    name = json.loads((market / ".claude-plugin" / "marketplace.json").read_text())["name"]
    known = {name: {"source": {"source": "directory", "path": str(market)}, "installLocation": str(market),
                    "lastUpdated": "2026-01-01T00:00:00.000Z"}}
    (config / "plugins" / "known_marketplaces.json").write_text(json.dumps(known, indent=2))
    entry: dict[str, Any] = {"scope": scope, "installPath": str(market / "plugins" / plugin), "version": "1.0.0",
                             "installedAt": "2026-01-01T00:00:00.000Z", "lastUpdated": "2026-01-01T00:00:00.000Z"}
    if project is not None:
        entry["projectPath"] = str(project)
    installed = {"version": 2, "plugins": {f"{plugin}@{name}": [entry]}}
    (config / "plugins" / "installed_plugins.json").write_text(json.dumps(installed, indent=2))
    settings = config / "settings.json" if project is None else project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"enabledPlugins": {f"{plugin}@{name}": True}}, indent=2) + "\n")


@pytest.mark.parametrize("scope", ["user", "local"])
def test_claude_lists_a_plugin_recorded_as_pkgmgr_records_it(claude_cli: Path, tmp_path: Path, scope: str) -> None:
    """pkgmgr's own directory marketplace, its plugin read in place (no cache copy), recorded in
    known_marketplaces.json, installed_plugins.json and enabledPlugins: Claude lists it enabled with
    no load error; at the local scope only in the project; Claude's own disable works on it."""
    config, work = tmp_path / "config", tmp_path / "work"
    market = realcli.write_marketplace(tmp_path / "pkgmgr-home" / "claude", "pkgmgr", {"hello": "./plugins/hello"})
    build(market / "plugins" / "hello", {".claude-plugin/plugin.json": '{"name":"hello","version":"1.0.0"}'})
    project = work if scope == "local" else None
    _pkgmgr_records(config, market, "hello", scope=scope, project=project)
    [listed] = realcli.claude_list(claude_cli, tmp_path, cwd=work)
    assert (listed["id"], listed["scope"], listed["enabled"]) == ("hello@pkgmgr", scope, True)
    assert not listed.get("errors") and listed["readFromFolder"] == str(market / "plugins" / "hello")
    if scope == "local":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        assert realcli.claude_list(claude_cli, tmp_path, cwd=elsewhere)[0]["enabled"] is False
    _claude(claude_cli, tmp_path, work, "disable", "hello@pkgmgr", "--scope", scope)
    assert realcli.claude_list(claude_cli, tmp_path, cwd=work)[0]["enabled"] is False
    assert not (config / "plugins" / "cache").exists()  # nothing copied: the folder is what Claude reads


# --- pkgmgr's installs, as the real hosts see them ----------------------------------------------------


def _pkgmgr(*args: Any, cwd: Path | None = None) -> dict[str, Any]:
    from tests.support.cli import run_cli

    result = run_cli([*map(str, args), "-o", "json"], cwd=cwd)
    assert result.code == 0, result
    return result.json


def test_gemini_lists_pkgmgrs_install_disable_enable_and_remove_as_its_own(
        gemini_cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gemini extensions list` after each pkgmgr command: installed and active, inactive after
    `ext disable` (in a workspace under GEMINI_CLI_HOME), active again, gone after `ext remove`;
    and Gemini's own `disable` is what `ext list` shows."""
    gemini_home = tmp_path / "gemini-home"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini_home))
    work = gemini_home / "work"
    env = {"GEMINI_CLI_HOME": str(gemini_home)}

    def listed() -> list[dict[str, Any]]:
        result = realcli.run(gemini_cli, ["extensions", "list", "-o", "json"], home=tmp_path / "home", cwd=work,
                             env=env)
        assert result.code == 0, result.out
        value = realcli._json_array(result.out)
        return value if value is not None else []  # no extension: Gemini prints a sentence, not []

    source = build(tmp_path / "src" / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}\n',
                                                "GEMINI.md": "# hello\n"})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    [seen] = listed()
    folder = gemini_home / ".gemini" / "extensions" / "hello"
    assert (seen["name"], seen["version"], seen["isActive"], seen["path"]) == ("hello", "1.0.0", True, str(folder))
    assert seen["installMetadata"] == {"source": str(folder), "type": "local"}
    _pkgmgr("ext", "disable", "hello")
    assert listed()[0]["isActive"] is False
    _pkgmgr("ext", "enable", "hello")
    assert listed()[0]["isActive"] is True
    gemini_disable = realcli.run(gemini_cli, ["extensions", "disable", "hello"], home=tmp_path / "home", cwd=work,
                                 env=env)
    assert gemini_disable.code == 0, gemini_disable.out
    assert _pkgmgr("ext", "list")["extensions"][0]["enabled"] is False
    assert _pkgmgr("ext", "verify", "hello")["verified"][0]["ok"] is True
    build(tmp_path / "src" / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.1.0"}\n'})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    [updated] = listed()
    assert (updated["version"], updated["isActive"]) == ("1.1.0", False)
    _pkgmgr("ext", "remove", "hello")
    assert listed() == []
    assert not (gemini_home / ".gemini" / "extensions" / "hello").exists()


def test_a_gemini_scaffold_passes_geminis_validate_and_loads(gemini_cli: Path, tmp_path: Path) -> None:
    _pkgmgr("ext", "new", "greeter", "--host", "gemini", cwd=tmp_path)
    result = realcli.run(gemini_cli, ["extensions", "validate", str(tmp_path / "greeter")], home=tmp_path / "home",
                         cwd=tmp_path / "work")
    assert result.code == 0 and not realcli.gemini_warnings(result), result.out
    assert realcli.gemini_verdict(gemini_cli, tmp_path / "greeter", tmp_path / "run") == {
        "validate": "ok", "warnings": [], "install": "ok", "listed": True}


def _claude_listed(cli: Path, tmp_path: Path, cwd: Path) -> list[dict[str, Any]]:
    """`claude plugin list --json` in `cwd` with the config folder tests/hosts/conftest.py gives
    pkgmgr, Claude's built-in plugins left out."""
    result = realcli.run(cli, ["plugin", "list", "--json"], home=tmp_path / "home", cwd=cwd,
                         env=realcli.claude_env(tmp_path / "claude-config"))
    assert result.code == 0, result.out
    value = realcli._json_array(result.out) or []
    return [p for p in value if isinstance(p, dict) and not str(p.get("id", "")).endswith("@builtin")]


def test_claude_lists_pkgmgrs_install_disable_enable_and_remove_as_its_own(
        claude_cli: Path, tmp_path: Path) -> None:
    """`claude plugin list` after each pkgmgr command: installed from pkgmgr's marketplace, enabled
    with no load error, disabled after `ext disable`, enabled again, updated in place, gone after
    `ext remove`; and Claude's own `disable` is what `ext list` shows."""
    config = tmp_path / "claude-config"  # what tests/hosts/conftest.py gives pkgmgr
    work = tmp_path / "work"
    work.mkdir()

    def listed() -> list[dict[str, Any]]:
        return _claude_listed(claude_cli, tmp_path, work)

    source = build(tmp_path / "src" / "hello", {
        ".claude-plugin/plugin.json": '{"name":"hello","version":"1.0.0","description":"says hello"}\n',
        "commands/hi.md": "---\ndescription: Say hi\n---\n\nSay hi.\n"})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    folder = tmp_path / "pkgmgr-home" / "claude" / "plugins" / "hello"
    [seen] = listed()
    assert (seen["id"], seen["scope"], seen["enabled"], seen.get("errors") or []) == ("hello@pkgmgr", "user", True, [])
    assert seen["readFromFolder"] == str(folder)
    _pkgmgr("ext", "disable", "hello")
    assert listed()[0]["enabled"] is False
    _pkgmgr("ext", "enable", "hello")
    assert listed()[0]["enabled"] is True
    claude_disable = realcli.run(claude_cli, ["plugin", "disable", "hello@pkgmgr"], home=tmp_path / "home", cwd=work,
                                 env=realcli.claude_env(config))
    assert claude_disable.code == 0, claude_disable.out
    assert _pkgmgr("ext", "list")["extensions"][0]["enabled"] is False
    assert _pkgmgr("ext", "verify", "hello")["verified"][0]["ok"] is True
    build(source, {".claude-plugin/plugin.json": '{"name":"hello","version":"1.1.0","description":"says hello"}\n'})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    [updated] = listed()
    assert (updated["version"], updated["enabled"], updated.get("errors") or []) == ("1.1.0", False, [])
    _pkgmgr("ext", "remove", "hello")
    assert listed() == []
    assert not folder.exists()


def test_a_claude_scaffold_passes_claudes_validate_and_loads(claude_cli: Path, tmp_path: Path) -> None:
    plugins = tmp_path / "run" / "market" / "plugins"  # where claude_install_verdict's marketplace finds it
    plugins.mkdir(parents=True)
    _pkgmgr("ext", "new", "greeter", "--host", "claude", cwd=plugins)
    for strict in (False, True):
        assert realcli.claude_validate(claude_cli, plugins / "greeter", tmp_path / "validate", strict=strict) == {
            "passed": True, "errors": [], "warnings": []}
    assert realcli.claude_install_verdict(claude_cli, plugins / "greeter", "greeter", tmp_path / "run") == {
        "installed": True, "enabled": True, "load_error": False}


def test_claude_lists_a_workspaces_plugin_enabled_in_its_project_only(claude_cli: Path, tmp_path: Path) -> None:
    """`pkgmgr sync` of a workspace declaring a Claude Code plugin: `claude plugin list` in the
    project shows it enabled at the local scope with no load error, elsewhere not enabled; after
    the entry is dropped and synced again, Claude lists nothing."""
    ws = tmp_path / "ws"
    build(ws / "tools" / "standup", {".claude-plugin/plugin.json": '{"name":"standup","version":"1.0.0"}\n',
                                     "commands/standup.md": "---\ndescription: Stand-up\n---\n\nDraft it.\n"})
    (ws / "pkgmgr.toml").write_text('[extensions]\nstandup = { path = "tools/standup", host = "claude" }\n')
    _pkgmgr("trust", cwd=ws)
    _pkgmgr("sync", cwd=ws)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def listed(cwd: Path) -> list[dict[str, Any]]:
        return _claude_listed(claude_cli, tmp_path, cwd)

    [seen] = listed(ws)
    assert seen["id"].startswith("standup@pkgmgr-") and (seen["scope"], seen["enabled"]) == ("local", True)
    assert not seen.get("errors")
    assert [p["enabled"] for p in listed(elsewhere)] in ([], [False])
    (ws / "pkgmgr.toml").write_text("[extensions]\n")
    _pkgmgr("trust", cwd=ws)
    _pkgmgr("sync", cwd=ws)
    assert listed(ws) == []


# --- rollback, development links, the workspace scope, Gemini's own trust (issues 29 and 31) ---------------


def _gemini_listed(cli: Path, tmp_path: Path, cwd: Path, gemini_home: Path) -> list[dict[str, Any]]:
    result = realcli.run(cli, ["extensions", "list", "-o", "json"], home=tmp_path / "home", cwd=cwd,
                         env={"GEMINI_CLI_HOME": str(gemini_home)})
    assert result.code == 0, result.out
    value = realcli._json_array(result.out)
    return value if value is not None else []  # no extension: Gemini prints a sentence, not []


def test_gemini_sees_rollback_link_and_unlink(gemini_cli: Path, tmp_path: Path) -> None:
    """After `ext rollback` Gemini lists the old version active, from the folder's own local
    install record; after `ext link` it loads the working folder through the record Gemini's own
    `extensions link` writes (byte for byte); after `ext unlink` the installed version is back."""
    gemini_home = tmp_path / "gemini-home"  # GEMINI_CLI_HOME, as tests/hosts/conftest.py sets it
    work = gemini_home / "work"
    folder = gemini_home / ".gemini" / "extensions" / "hello"
    source = build(tmp_path / "src" / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}\n',
                                                "GEMINI.md": "# hello\n"})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    build(source, {"gemini-extension.json": '{"name":"hello","version":"1.1.0"}\n'})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    assert _gemini_listed(gemini_cli, tmp_path, work, gemini_home)[0]["version"] == "1.1.0"

    _pkgmgr("ext", "rollback", "hello")
    [seen] = _gemini_listed(gemini_cli, tmp_path, work, gemini_home)
    assert (seen["version"], seen["isActive"]) == ("1.0.0", True)
    assert seen["installMetadata"] == {"source": str(folder), "type": "local"}

    dev = build(tmp_path / "dev" / "hello", {"gemini-extension.json": '{"name":"hello","version":"2.0.0-dev"}\n',
                                             "GEMINI.md": "# hello, edited\n"})
    _pkgmgr("ext", "link", dev)
    [seen] = _gemini_listed(gemini_cli, tmp_path, work, gemini_home)
    assert (seen["version"], seen["isActive"]) == ("2.0.0-dev", True)
    assert seen["installMetadata"] == {"source": str(dev), "type": "link"}
    own = tmp_path / "own-home"  # what Gemini's own link writes, in a home of its own
    linked = realcli.run(gemini_cli, ["extensions", "link", str(dev), "--consent"], home=own, cwd=own / "work")
    assert linked.code == 0, linked.out
    theirs = own / ".gemini" / "extensions" / "hello"
    assert sorted(p.name for p in theirs.iterdir()) == sorted(p.name for p in folder.iterdir()) == \
        [".gemini-extension-install.json"]
    assert (theirs / ".gemini-extension-install.json").read_bytes() == \
        (folder / ".gemini-extension-install.json").read_bytes()

    _pkgmgr("ext", "unlink", "hello")
    [seen] = _gemini_listed(gemini_cli, tmp_path, work, gemini_home)
    assert (seen["version"], seen["isActive"]) == ("1.0.0", True)
    assert seen["installMetadata"] == {"source": str(folder), "type": "local"}
    assert (dev / "gemini-extension.json").is_file()  # the working folder stays
    _pkgmgr("ext", "remove", "hello")
    assert _gemini_listed(gemini_cli, tmp_path, work, gemini_home) == []


def test_gemini_workspace_disable_is_what_gemini_writes(gemini_cli: Path, tmp_path: Path) -> None:
    """`pkgmgr --scope workspace ext disable` writes what `gemini extensions disable --scope
    workspace` writes (byte for byte, run in a home of its own); Gemini lists the extension
    inactive from that folder and active from another; `--scope workspace ext enable` likewise."""
    gemini_home = tmp_path / "gemini-home"
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    for made in (project, elsewhere):
        made.mkdir()
    source = build(tmp_path / "src" / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}\n'})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    _pkgmgr("--scope", "workspace", "ext", "disable", "hello", cwd=project)
    assert _gemini_listed(gemini_cli, tmp_path, project, gemini_home)[0]["isActive"] is False
    assert _gemini_listed(gemini_cli, tmp_path, elsewhere, gemini_home)[0]["isActive"] is True
    assert _pkgmgr("ext", "list")["extensions"][0]["enabled"] is True  # the user scope is unchanged

    # Gemini's own commands in a home of its own (GEMINI_CLI_HOME another folder): the same file
    own = tmp_path / "own"
    env = {"GEMINI_CLI_HOME": str(own)}
    for args in (["install", str(source), "--consent", "--skip-settings"], ["disable", "--scope", "workspace", "hello"]):
        result = realcli.run(gemini_cli, ["extensions", *args], home=tmp_path / "home", cwd=project, env=env)
        assert result.code == 0, result.out
    ours = gemini_home / ".gemini" / "extensions" / "extension-enablement.json"
    theirs = own / ".gemini" / "extensions" / "extension-enablement.json"
    assert ours.read_text().replace(str(gemini_home), "HOME") == theirs.read_text().replace(str(own), "HOME")

    _pkgmgr("--scope", "workspace", "ext", "enable", "hello", cwd=project)
    result = realcli.run(gemini_cli, ["extensions", "enable", "--scope", "workspace", "hello"], home=tmp_path / "home",
                         cwd=project, env=env)
    assert result.code == 0, result.out
    assert ours.read_text().replace(str(gemini_home), "HOME") == theirs.read_text().replace(str(own), "HOME")
    assert _gemini_listed(gemini_cli, tmp_path, project, gemini_home)[0]["isActive"] is True


def test_gemini_allowed_extensions_is_the_rule_pkgmgr_refuses_by(gemini_cli: Path, tmp_path: Path) -> None:
    """With `security.allowedExtensions` set, Gemini loads only an extension whose install record's
    source matches a pattern: pkgmgr's install (whose source is its folder) is listed while a
    pattern matches that folder and not once none does, and pkgmgr refuses to install what such a
    setting forbids (`incompatible_host`)."""
    gemini_home = tmp_path / "gemini-home"
    work = tmp_path / "work"
    settings = gemini_home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"allowedExtensions": [f"^{gemini_home}/"]}}))
    source = build(tmp_path / "src" / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}\n'})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    assert [e["name"] for e in _gemini_listed(gemini_cli, tmp_path, work, gemini_home)] == ["hello"]
    settings.write_text(json.dumps({"security": {"allowedExtensions": ["^/opt/team/"]}}))
    assert _gemini_listed(gemini_cli, tmp_path, work, gemini_home) == []
    from tests.support.cli import run_cli

    other = build(tmp_path / "src" / "other", {"gemini-extension.json": '{"name":"other","version":"1.0.0"}\n'})
    refused = run_cli(["ext", "install", str(other), "--allow-unverified", "--yes", "-o", "json"])
    assert refused.code != 0 and refused.json["error"]["code"] == "incompatible_host", refused


def test_gemini_stale_integrity_record_is_harmless_to_pkgmgrs_install(gemini_cli: Path, tmp_path: Path) -> None:
    """Gemini's uninstall keeps its signed integrity record, which no longer matches pkgmgr's install
    record of that name. Gemini verifies a record only when its own `update` finds a newer source,
    and the source of pkgmgr's install is the installed folder itself: Gemini lists and loads the
    extension, says it is up to date, and pkgmgr leaves the signed file as it is."""
    gemini_home = tmp_path / "gemini-home"
    work = tmp_path / "work"
    env = {"GEMINI_CLI_HOME": str(gemini_home)}
    source = build(tmp_path / "src" / "hello", {"gemini-extension.json": '{"name":"hello","version":"1.0.0"}\n'})
    for args in (["install", str(source), "--consent", "--skip-settings"], ["uninstall", "hello"]):
        result = realcli.run(gemini_cli, ["extensions", *args], home=tmp_path / "home", cwd=work, env=env)
        assert result.code == 0, result.out
    integrity = gemini_home / ".gemini" / "extension_integrity.json"
    before = integrity.read_bytes()
    assert "hello" in json.loads(before)["store"]
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    build(source, {"gemini-extension.json": '{"name":"hello","version":"1.1.0"}\n'})
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    assert integrity.read_bytes() == before
    [seen] = _gemini_listed(gemini_cli, tmp_path, work, gemini_home)
    assert (seen["name"], seen["version"], seen["isActive"]) == ("hello", "1.1.0", True)
    updated = realcli.run(gemini_cli, ["extensions", "update", "hello"], home=tmp_path / "home", cwd=work, env=env)
    assert updated.code == 0 and "up to date" in updated.out, updated.out


def test_claude_sees_rollback_link_and_unlink(claude_cli: Path, tmp_path: Path) -> None:
    """After `ext rollback` Claude lists the old version enabled with no load error; after `ext link`
    it reads the plugin from the working folder (pkgmgr's marketplace folder a link to it); after
    `ext unlink` the installed version is back."""
    work = tmp_path / "work"
    work.mkdir()

    def listed() -> list[dict[str, Any]]:
        return _claude_listed(claude_cli, tmp_path, work)

    def manifest(version: str) -> dict[str, str]:
        return {".claude-plugin/plugin.json": json.dumps({"name": "hello", "version": version}),
                "commands/hi.md": "---\ndescription: Say hi\n---\n\nSay hi.\n"}

    source = build(tmp_path / "src" / "hello", manifest("1.0.0"))
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    build(source, manifest("1.1.0"))
    _pkgmgr("ext", "install", source, "--allow-unverified", "--yes")
    _pkgmgr("ext", "rollback", "hello")
    [seen] = listed()
    assert (seen["version"], seen["enabled"], seen.get("errors") or []) == ("1.0.0", True, [])

    dev = build(tmp_path / "dev" / "hello", manifest("2.0.0-dev"))
    _pkgmgr("ext", "link", dev)
    [seen] = listed()
    assert (seen["version"], seen["enabled"], seen.get("errors") or []) == ("2.0.0-dev", True, [])
    folder = tmp_path / "pkgmgr-home" / "claude" / "plugins" / "hello"
    assert os.path.realpath(seen["readFromFolder"]) == str(dev) and folder.is_symlink()

    _pkgmgr("ext", "unlink", "hello")
    [seen] = listed()
    assert (seen["version"], seen["enabled"], seen.get("errors") or []) == ("1.0.0", True, [])
    assert (dev / ".claude-plugin" / "plugin.json").is_file()
    _pkgmgr("ext", "remove", "hello")
    assert listed() == []
