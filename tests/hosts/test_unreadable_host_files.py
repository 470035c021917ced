"""A host's own file that pkgmgr may not read (EACCES) is `io_error` (exit 9), naming it and the
OS's message (SPEC 11: "local storage failure (disk full, read-only, permission denied, I/O
error)"), never `invalid_config` or `invalid_manifest` (its content is not at fault), never a file
taken for missing and written over, and nothing moves: for every host of `hosts.HOSTS`.

Tests run as root, whom a mode of 000 does not stop: the read-only opens of that file are made to
fail as the kernel fails them for another user (`tests/support/faults.py`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pkgmgr import hosts
from tests.hosts.conftest import _host_homes, homes  # noqa: F401 - the host homes under tmp_path
from tests.hosts.helpers import UNVERIFIED, Homes, claude_plugin, eva_script, ok
from tests.support.cli import run_cli
from tests.support.faults import deny_reading


def snapshot(*roots: Path) -> dict[str, bytes | None]:
    """Every file and directory under `roots` with its bytes (None for a directory)."""
    found: dict[str, bytes | None] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs:
                found[os.path.join(folder, name)] = None
            for name in files:
                path = os.path.join(folder, name)
                found[path] = os.readlink(path).encode() if os.path.islink(path) else Path(path).read_bytes()
    return found


def _global(host: str, file: Callable[[Homes, Path], Path], verb: str) -> Callable[..., Any]:
    def setup(tmp_path: Path, homes: Homes) -> tuple[list[str], Path, list[Path], Path | None]:
        ok("ext", "new", "my-ext", "--host", host, "--path", tmp_path / "src")
        [installed] = ok("ext", "install", tmp_path / "src", *UNVERIFIED)["installed"]
        place = Path(installed.get("path") or homes.pkgmgr / "extensions" / "my-ext" / "0.1.0")
        command = ["ext", verb, installed["name"]]
        return command, file(homes, place), [homes.tmp / "pkgmgr-home", homes.tmp / "user-home", homes.terva,
                                              homes.vera, homes.gemini, homes.claude], None
    return setup


def _eva_project(tmp_path: Path, homes: Homes) -> tuple[list[str], Path, list[Path], Path | None]:
    """Eva's own file is its trust file (`~/.eva/trust.json`), read before a project folder changes
    (its approvals kept, the new hash recorded with --approve-host-trust)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")
    ok("--scope", "workspace", "ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED,
       "--approve-host-trust", cwd=project)
    assert (homes.eva / "trust.json").is_file()
    command = ["--scope", "workspace", "ext", "install", eva_script(tmp_path / "src2", "tasks"), *UNVERIFIED,
               "--approve-host-trust"]
    return [str(a) for a in command], homes.eva / "trust.json", [project, homes.user], project


# host -> what sets it up: (the command, the host's file it reads, what must not move, where it runs)
CASES: dict[str, Callable[..., Any]] = {
    "compozy": _global("compozy", lambda h, place: place / "extension.toml", "verify"),
    "terva": _global("terva", lambda h, place: place / "extension.json", "disable"),
    "eva": _eva_project,
    "vera": _global("vera", lambda h, place: h.vera / "extensions.json", "disable"),
    "gemini": _global("gemini", lambda h, place: h.gemini_extensions / "extension-enablement.json", "disable"),
    "claude": _global("claude", lambda h, place: h.claude / "plugins" / "installed_plugins.json", "disable"),
}


def test_every_host_has_a_case() -> None:
    assert sorted(CASES) == sorted(hosts.HOSTS)


@pytest.mark.parametrize("host", list(hosts.HOSTS))
def test_a_host_file_that_cannot_be_read_is_io_error_and_nothing_moves(
        host: str, tmp_path: Path, homes: Homes, monkeypatch: pytest.MonkeyPatch) -> None:
    command, file, roots, cwd = CASES[host](tmp_path, homes)
    assert file.is_file()
    listed = ok("ext", "list", cwd=cwd)
    before = snapshot(*[r for r in roots if r.exists() and r != homes.pkgmgr])
    with monkeypatch.context() as patch:
        denied = deny_reading(patch, file)  # the one change
        result = run_cli([*command, "-o", "json"], cwd=cwd)

    assert denied, f"{file} was never read"
    assert result.code == 9 and "Traceback" not in result.stderr, result
    error = result.json["error"]
    assert error["code"] == "io_error" and error["details"]["errno"] == "EACCES", error
    assert error["details"]["path"] == str(file) and error["details"]["os_message"] == "Permission denied"
    assert f"{file}: Permission denied" in result.stderr and "check the permissions" in result.stderr
    assert snapshot(*[r for r in roots if r.exists() and r != homes.pkgmgr]) == before  # nothing moved
    assert ok("ext", "list", cwd=cwd) == listed


def test_pkgmgrs_claude_marketplace_that_cannot_be_read_is_never_rewritten_without_its_plugins(
        tmp_path: Path, homes: Homes, monkeypatch: pytest.MonkeyPatch) -> None:
    """pkgmgr's own marketplace file (`<home>/claude/.claude-plugin/marketplace.json`) is written
    whole from what it lists: one it may not read was taken for an empty one, and the next install
    rewrote it with the new plugin alone, so Claude Code lost the others. Now `io_error`."""
    ok("ext", "install", claude_plugin(tmp_path / "src" / "hello", "hello"), *UNVERIFIED)
    market = homes.pkgmgr / "claude" / ".claude-plugin" / "marketplace.json"
    before = snapshot(homes.pkgmgr / "claude", homes.claude)
    second = claude_plugin(tmp_path / "src" / "other", "other")
    with monkeypatch.context() as patch:
        denied = deny_reading(patch, market)  # the one change
        result = run_cli(["ext", "install", str(second), *UNVERIFIED, "-o", "json"])
    assert denied and result.code == 9, result
    assert result.json["error"]["code"] == "io_error" and result.json["error"]["details"]["path"] == str(market)
    assert snapshot(homes.pkgmgr / "claude", homes.claude) == before  # nothing moved
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["hello"]
