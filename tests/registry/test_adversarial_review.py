"""Review of SPEC 5 (registries), 6 (GitHub) and 10 (workspaces): deviations found by an
adversarial read, each pinned by a test that failed before its fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.registry.index_format import build_index
from pkgmgr.registry.validate_index import validate_index
from tests.registry.helpers import RegistryDir, archive_bytes
from tests.support.cli import run_cli


def _outside_entry(tmp_path: Path, regdir: RegistryDir, name: str) -> Path:
    """An entry file that lives outside the registry, reachable through a symlink inside it."""
    published = regdir.publish("alpha-ext", "0.1.0")
    secret = tmp_path / "outside" / f"{name}.toml"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text(
        f'name = "{name}"\ntier = "official"\n[[versions]]\nversion = "0.1.0"\nurl = "{published.url}"\n'
        f'sha256 = "{published.sha256}"\nsize = {len(published.data)}\nmin_compozy_version = "0.5.0"\n',
        encoding="utf-8")
    link = regdir.root / "extensions" / name[:2] / f"{name}.toml"
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(secret, link)
    return link


@pytest.fixture
def regdir(tmp_path: Path) -> RegistryDir:
    return RegistryDir(tmp_path / "index", "acme")


def test_directory_registry_never_reads_an_entry_outside_its_root(tmp_path: Path, regdir: RegistryDir) -> None:
    _outside_entry(tmp_path, regdir, "beta-ext")
    assert run_cli(["registry", "add", "acme", str(regdir.root)]).code == 0
    result = run_cli(["ext", "info", "beta-ext", "-o", "json"])
    assert result.code == 3, result
    error = result.json["error"]
    assert error["code"] == "invalid_index" and "outside the registry directory" in error["message"]


def test_directory_registry_refuses_a_symlinked_shard_directory(tmp_path: Path, regdir: RegistryDir) -> None:
    regdir.publish("alpha-ext", "0.1.0")
    outside = tmp_path / "outside-shard"
    outside.mkdir()
    (outside / "beta-ext.toml").write_text((regdir.root / "extensions/al/alpha-ext.toml").read_text()
                                           .replace('"alpha-ext"', '"beta-ext"'), encoding="utf-8")
    os.symlink(outside, regdir.root / "extensions" / "be")
    assert run_cli(["registry", "add", "acme", str(regdir.root)]).code == 0
    result = run_cli(["ext", "info", "beta-ext", "-o", "json"])
    assert result.code == 3 and result.json["error"]["code"] == "invalid_index", result


def test_an_entry_that_is_a_symlink_is_refused_even_inside_the_registry(tmp_path: Path,
                                                                         regdir: RegistryDir) -> None:
    """Registry files are opened without following a final link (SPEC 10, issue 13 item 12)."""
    regdir.publish("alpha-ext", "0.1.0")
    moved = regdir.root / "elsewhere.toml"
    os.replace(regdir.root / "extensions/al/alpha-ext.toml", moved)
    os.symlink(moved, regdir.root / "extensions/al/alpha-ext.toml")
    assert run_cli(["registry", "add", "acme", str(regdir.root)]).code == 0
    result = run_cli(["ext", "info", "alpha-ext", "-o", "json"])
    assert result.code == 3 and result.json["error"]["code"] == "invalid_index", result
    assert "a symbolic link" in result.json["error"]["message"]


def test_build_and_validate_refuse_an_entry_outside_the_index(tmp_path: Path, regdir: RegistryDir) -> None:
    _outside_entry(tmp_path, regdir, "beta-ext")
    with pytest.raises(ValidationFailed) as exc:
        build_index(regdir.root)
    assert exc.value.problems[0].file == "extensions/be/beta-ext.toml"
    report = validate_index(regdir.root)
    assert [p.file for p in report.problems if "outside" in p.message] == ["extensions/be/beta-ext.toml"]
    archive = tmp_path / "beta-ext-0.2.0.tar.gz"
    archive.write_bytes(archive_bytes("beta-ext", "0.2.0"))
    before = (tmp_path / "outside" / "beta-ext.toml").read_bytes()
    result = run_cli(["registry", "publish", str(archive), "--index", str(regdir.root), "-o", "json"])
    assert result.code == 3 and result.json["error"]["code"] == "invalid_index", result
    assert (tmp_path / "outside" / "beta-ext.toml").read_bytes() == before


def test_registry_add_reports_the_priority_it_recorded(tmp_path: Path, regdir: RegistryDir) -> None:
    added = run_cli(["registry", "add", "first", str(regdir.root), "--priority", "0", "--offline", "-o", "json"])
    assert added.code == 0 and added.json["added"]["priority"] == 0, added
    listed = run_cli(["registry", "list", "-o", "json"]).json["registries"]
    assert [(r["name"], r["priority"]) for r in listed] == [("first", 0), ("default", 1000)]


@pytest.mark.parametrize("source", ["github:../index", "github:acme/..", "github:-acme/index", "github:acme/..@main"])
def test_registry_add_refuses_what_is_no_github_repository(source: str) -> None:
    from pkgmgr.registry.readers import parse_source

    with pytest.raises(PkgmgrError) as exc:
        parse_source(source)
    assert exc.value.code == "usage"
    result = run_cli(["registry", "add", "acme", source, "--offline", "-o", "json"])
    assert result.code == 2 and result.json["error"]["code"] == "usage", result


def test_pkgmgr_toml_refuses_what_is_no_github_repository(tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "ws"
    ws.mkdir(parents=True)
    (ws / "pkgmgr.toml").write_text('[extensions]\nfoo-ext = { github = "../repo" }\n')
    result = run_cli(["trust", "--show", "--workspace", str(ws), "-o", "json"])
    assert result.code == 3, result
    assert result.json["error"]["details"]["problems"][0]["key"] == "extensions.foo-ext.github"


def _trusted_workspace(tmp_path: Path, text: str) -> Path:
    ws = tmp_path / "user-home" / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "pkgmgr.toml").write_text(text)
    assert run_cli(["trust", "--workspace", str(ws)]).code == 0
    return ws


def test_registry_list_and_refresh_show_the_registries_a_trusted_workspace_declares(tmp_path: Path) -> None:
    team = RegistryDir(tmp_path / "user-home" / "ws" / "index", "team")
    team.publish("alpha-ext", "0.1.0")
    configured = RegistryDir(tmp_path / "configured", "configured")
    assert run_cli(["registry", "add", "mine", str(configured.root), "--priority", "500"]).code == 0
    ws = _trusted_workspace(tmp_path, '[registries]\nteam = { source = "./index", priority = 1 }\n')
    listed = run_cli(["registry", "list", "--scope", "workspace", "-o", "json"], cwd=ws)
    assert listed.code == 0, listed
    rows = [(r["name"], r["workspace"]) for r in listed.json["registries"]]
    assert rows == [("mine", False), ("team", True), ("default", False)]  # after the configured ones
    refreshed = run_cli(["registry", "refresh", "--scope", "workspace", "-o", "json"], cwd=ws)
    assert [r["name"] for r in refreshed.json["refreshed"]] == ["mine", "team", "default"], refreshed
    outside = run_cli(["registry", "list", "-o", "json"], cwd=tmp_path)
    assert [r["name"] for r in outside.json["registries"]] == ["mine", "default"]
    global_inside = run_cli(["registry", "list", "-o", "json"], cwd=ws)  # the global scope's registries
    assert [r["name"] for r in global_inside.json["registries"]] == ["mine", "default"]


def test_sync_json_reports_the_plan_as_planned(tmp_path: Path) -> None:
    team = RegistryDir(tmp_path / "user-home" / "ws" / "index", "team")
    team.publish("alpha-ext", "0.1.0")
    ws = _trusted_workspace(tmp_path, '[registries]\nteam = "./index"\n\n[extensions]\nalpha-ext = "*"\n')
    result = run_cli(["sync", "--workspace", str(ws), "-o", "json"])
    assert result.code == 0, result
    [item] = result.json["plan"]["extensions"]
    assert (item["action"], item["version"], item["current_version"]) == ("install", "0.1.0", None)
