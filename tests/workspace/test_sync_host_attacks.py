"""`sync` with `host = ...` entries from a pkgmgr.toml the user did not write (issue 25 point 9).

A cloned repository's pkgmgr.toml chooses which host each extension installs for. Each attack
changes one thing from a declaration that syncs, runs `sync` as a user would, asserts the code,
and asserts that nothing moved: no host folder in the project, nothing in the user's own host
homes (`~/.eva`, TERVA_HOME, VERA_HOME), no lock written, no approval recorded on Eva's side.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts.helpers import Homes, eva_script, ok, terva_extension, vera_extension
from tests.support.cli import run_cli


@pytest.fixture(autouse=True)
def _host_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERVA_HOME", str(tmp_path / "terva-home"))
    monkeypatch.setenv("VERA_HOME", str(tmp_path / "vera-home"))


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()} \
        if root.exists() else {}


def project(tmp_path: Path, declaration: str, *, trusted: bool = True) -> Path:
    ws = tmp_path / "user-home" / "ws"
    terva_extension(ws / "tools" / "hello")
    eva_script(ws / "tools" / "notes", "notes")
    vera_extension(ws / "tools" / "ctx", ext_id="ctx-tools")
    (ws / "pkgmgr.toml").write_text(declaration)
    if trusted:
        ok("trust", cwd=ws)
    return ws


class Moved:
    """What a refused sync must leave as it was."""

    def __init__(self, tmp_path: Path, ws: Path) -> None:
        homes = Homes(tmp_path)
        self.roots = [homes.eva, homes.terva, homes.vera, ws / ".eva", ws / ".terva", ws / ".vera"]
        self.ws = ws
        self.before = self.snapshot()

    def snapshot(self) -> dict:
        return {"hosts": [files(root) for root in self.roots], "lock": files(self.ws / "pkgmgr.lock"),
                "project": sorted(p.name for p in self.ws.iterdir())}

    def assert_nothing(self) -> None:
        assert self.snapshot() == self.before


def refused(ws: Path, code: str) -> dict:
    result = run_cli(["sync", "-o", "json"], cwd=ws)
    assert result.code != 0 and result.json["error"]["code"] == code, result
    assert "Traceback" not in result.stderr
    return result.json


def test_the_control_syncs_into_the_project_folders_only(tmp_path: Path) -> None:
    ws = project(tmp_path, '[extensions]\nhello = { path = "tools/hello", host = "terva" }\n'
                           'notes = { path = "tools/notes", host = "eva" }\n')
    homes = Homes(tmp_path)
    ok("sync", cwd=ws)
    assert (ws / ".terva" / "extensions" / "hello").is_dir() and (ws / ".eva" / "extensions" / "notes.exs").exists()
    assert files(homes.terva) == {} and files(homes.vera) == {} and files(homes.eva) == {}  # no approval either


def test_a_host_entry_before_the_workspace_is_trusted_is_never_acted_on(tmp_path: Path) -> None:
    ws = project(tmp_path, '[extensions]\nnotes = { path = "tools/notes", host = "eva" }\n', trusted=False)
    moved = Moved(tmp_path, ws)
    refused(ws, "trust_required")
    moved.assert_nothing()


def test_a_pulled_change_of_host_needs_the_users_approval_again(tmp_path: Path) -> None:
    ws = project(tmp_path, '[extensions]\nhello = { path = "tools/hello", host = "terva" }\n')
    ok("sync", cwd=ws)
    (ws / "pkgmgr.toml").write_text('[extensions]\nhello = { path = "tools/notes", host = "eva" }\n')
    moved = Moved(tmp_path, ws)
    refused(ws, "trust_required")
    moved.assert_nothing()


@pytest.mark.parametrize("host, at, code", [("vera", "sync", "usage"), ("../../evil", "trust", "invalid_config"),
                                            ("Eva", "trust", "invalid_config"), ("compozy", "sync", "invalid_manifest")])
def test_a_host_the_project_cannot_hold_or_that_does_not_exist(tmp_path: Path, host: str, at: str, code: str) -> None:
    """Vera has no project scope: never its global home instead; a name that is no host is the
    declaration's error (refused before it is approved); a host the extension is not for is the
    manifest's."""
    name, path = ("ctx-tools", "tools/ctx") if host == "vera" else ("hello", "tools/hello")
    ws = project(tmp_path, f'[extensions]\n{name} = {{ path = "{path}", host = "{host}" }}\n', trusted=False)
    result = run_cli(["trust", "-o", "json"], cwd=ws)
    if at == "trust":
        assert result.code == 3 and result.json["error"]["code"] == code, result
        return
    assert result.code == 0, result
    moved = Moved(tmp_path, ws)
    refused(ws, code)
    moved.assert_nothing()


def test_a_declared_host_the_archive_is_not_for_installs_nothing(tmp_path: Path) -> None:
    ws = project(tmp_path, '[extensions]\nnotes = { path = "tools/hello", host = "eva" }\n')
    moved = Moved(tmp_path, ws)
    document = refused(ws, "invalid_archive")
    assert "no extension manifest of eva" in document["error"]["message"]
    moved.assert_nothing()
