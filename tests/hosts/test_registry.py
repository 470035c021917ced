"""Registries of host extensions (SPEC 13): an entry names its `host`, `registry validate` checks
each version by that host's rules, and a name installs into its host's folder and updates there."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tests.hosts.helpers import (
    Homes,
    claude_plugin,
    eva_directory,
    fail,
    gemini_extension,
    ok,
    terva_extension,
    vera_extension,
)


def index(tmp_path: Path) -> Path:
    root = tmp_path / "team-index"
    ok("registry", "init", root, "--name", "team", "--format", "1")
    return root


def publish(root: Path, source: Path, tmp_path: Path, *extra: str) -> dict:
    dist = tmp_path / "dist"
    dist.mkdir(exist_ok=True)
    archive = dist / f"{source.name}-{len(list(dist.iterdir()))}.tar.gz"
    ok("ext", "pack", source, "--output", archive, *extra)
    return ok("registry", "publish", archive, "--index", root, "--tier", "community")["published"]


def entry(root: Path, name: str) -> dict:
    return tomllib.loads((root / "extensions" / name[:2] / f"{name}.toml").read_text())


def test_publish_validate_install_and_update_each_host(tmp_path: Path, homes: Homes) -> None:
    root = index(tmp_path)
    terva = terva_extension(tmp_path / "src" / "hello")
    eva = eva_directory(tmp_path / "src" / "tasks", "tasks")
    vera = vera_extension(tmp_path / "src" / "ctx", ext_id="context-tools")
    assert publish(root, terva, tmp_path)["host"] == "terva"
    assert publish(root, eva, tmp_path, "--release", "0.1.0")["host"] == "eva"
    published = publish(root, vera, tmp_path)
    assert (published["host"], published["permissions"]) == ("vera", ["commands.register", "models.complete"])
    assert (entry(root, "hello")["host"], entry(root, "tasks")["host"], entry(root, "context-tools")["host"]) == (
        "terva", "eva", "vera")
    for name in ("hello", "tasks", "context-tools"):  # Compozy's field is not another host's (issue 26)
        assert all("min_compozy_version" not in v for v in entry(root, name)["versions"])
    listed = {e["name"]: e for e in json.loads((root / "index.json").read_text())["extensions"]}
    assert {name: e.get("host") for name, e in listed.items()} == {"hello": "terva", "tasks": "eva",
                                                                   "context-tools": "vera"}
    assert ok("registry", "validate", root, "--fetch")["valid"] is True

    ok("registry", "add", "team", root)
    assert ok("ext", "info", "tasks")["host"] == "eva"
    assert {r["name"]: r["host"] for r in ok("ext", "search")["results"]}["hello"] == "terva"
    installed = ok("ext", "install", "hello", "tasks", "context-tools")["installed"]
    assert [(i["host"], i["verified"], i["source"]) for i in installed] == [
        ("terva", True, "registry"), ("eva", True, "registry"), ("vera", True, "registry")]
    assert (homes.terva / "extensions" / "hello" / "run.sh").is_file()
    assert (homes.eva / "extensions" / "tasks" / "extension.exs").is_file()
    assert (homes.vera / "extensions" / "context-tools" / "extension.ts").is_file()
    assert ok("ext", "status", "tasks")["version"] == "0.1.0"  # Eva's format has none: the registry's

    terva_extension(terva, version="0.2.0")
    publish(root, terva, tmp_path)
    check = ok("ext", "update", "--all", "--check")
    assert [(a["name"], a["latest"]) for a in check["available"]] == [("hello", "0.2.0")]
    assert sorted(u["name"] for u in check["unchanged"]) == ["context-tools", "tasks"]
    updated = ok("ext", "update", "hello")["updated"]
    assert [(u["name"], u["previous_version"], u["version"]) for u in updated] == [("hello", "0.1.0", "0.2.0")]
    assert json.loads((homes.terva / "extensions" / "hello" / "extension.json").read_text())["version"] == "0.2.0"


def test_validate_judges_each_version_by_its_hosts_rules(tmp_path: Path) -> None:
    root = index(tmp_path)
    publish(root, vera_extension(tmp_path / "src" / "ctx", ext_id="context-tools"), tmp_path)
    path = root / "extensions" / "co" / "context-tools.toml"
    path.write_text(path.read_text().replace('host = "vera"', 'host = "terva"'))
    document = fail("invalid_index", "registry", "validate", root, "--fetch")
    messages = " ".join(p["message"] for p in document["error"]["details"]["problems"])
    assert "terva" in messages


def test_an_entry_may_not_understate_a_vera_extensions_capabilities(tmp_path: Path) -> None:
    root = index(tmp_path)
    publish(root, vera_extension(tmp_path / "src" / "ctx", ext_id="context-tools"), tmp_path)
    path = root / "extensions" / "co" / "context-tools.toml"
    path.write_text(path.read_text().replace('permissions = ["commands.register", "models.complete"]',
                                             'permissions = ["commands.register"]'))
    ok("registry", "build", root)
    ok("registry", "add", "team", root)
    fail("metadata_mismatch", "ext", "install", "context-tools")


def test_an_older_host_entry_with_compozy_fields_stays_readable(tmp_path: Path, homes: Homes) -> None:
    """Entries written before host fields belonged to the host carry min_compozy_version = "0.0.0"."""
    root = index(tmp_path)
    publish(root, terva_extension(tmp_path / "src" / "hello"), tmp_path)
    path = root / "extensions" / "he" / "hello.toml"
    path.write_text(path.read_text().replace('size = ', 'min_compozy_version = "0.0.0"\nsize = '))
    ok("registry", "build", root)
    assert entry(root, "hello")["versions"][0]["min_compozy_version"] == "0.0.0"
    assert ok("registry", "validate", root, "--fetch")["valid"] is True
    ok("registry", "add", "team", root)
    assert ok("ext", "install", "hello")["installed"][0]["host"] == "terva"


def test_every_command_for_gemini_and_claude(tmp_path: Path, homes: Homes) -> None:
    """validate, pack, registry publish/validate, search and info showing the host, install by
    name, status, verify, update, disable/enable, remove: the same commands as for every host."""
    root = index(tmp_path)
    gemini = gemini_extension(tmp_path / "src" / "context", name="context")
    claude = claude_plugin(tmp_path / "src" / "standup", name="standup")
    assert ok("ext", "validate", gemini)["host"] == "gemini"
    assert ok("ext", "validate", claude)["host"] == "claude"
    assert publish(root, gemini, tmp_path)["host"] == "gemini"
    assert publish(root, claude, tmp_path)["host"] == "claude"
    listed = {e["name"]: e.get("host") for e in json.loads((root / "index.json").read_text())["extensions"]}
    assert listed == {"context": "gemini", "standup": "claude"}
    assert ok("registry", "validate", root, "--fetch")["valid"] is True

    ok("registry", "add", "team", root)
    hosts = {r["name"]: r["host"] for r in ok("ext", "search")["results"]}
    assert (hosts["context"], hosts["standup"]) == ("gemini", "claude")
    assert ok("ext", "info", "standup")["host"] == "claude"
    installed = ok("ext", "install", "context", "standup")["installed"]
    assert [(i["host"], i["verified"], i["source"]) for i in installed] == [
        ("gemini", True, "registry"), ("claude", True, "registry")]
    assert (homes.gemini_extensions / "context" / "GEMINI.md").is_file()
    assert (homes.pkgmgr / "claude" / "plugins" / "standup" / ".claude-plugin" / "plugin.json").is_file()
    for name in ("context", "standup"):
        assert ok("ext", "status", name)["version"] == "1.0.0"
        assert ok("ext", "verify", name)["verified"][0]["ok"] is True
        ok("ext", "disable", name)
        assert ok("ext", "list", "--host", ok("ext", "status", name)["host"])["extensions"][0]["enabled"] is False
        ok("ext", "enable", name)

    gemini_extension(gemini, name="context", version="1.1.0")
    claude_plugin(claude, name="standup", version="1.1.0")
    publish(root, gemini, tmp_path)
    publish(root, claude, tmp_path)
    updated = ok("ext", "update", "--all")["updated"]
    assert sorted((u["name"], u["previous_version"], u["version"]) for u in updated) == [
        ("context", "1.0.0", "1.1.0"), ("standup", "1.0.0", "1.1.0")]
    installed_plugins = json.loads((homes.claude / "plugins" / "installed_plugins.json").read_text())
    assert installed_plugins["plugins"]["standup@pkgmgr"][0]["version"] == "1.1.0"
    for name in ("context", "standup"):
        ok("ext", "remove", name)
    assert ok("ext", "list")["extensions"] == []
    assert json.loads((homes.claude / "plugins" / "installed_plugins.json").read_text())["plugins"] == {}
