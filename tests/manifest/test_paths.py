from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.manifest import command_path_problem, relative_path_problem


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ext"
    (root / "skills" / "a").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "tool").write_text("#!/bin/sh\n")
    return root


@pytest.mark.parametrize("rel", ["skills", "skills/a", "./skills", "skills/../skills/a", "."])
def test_paths_inside_the_root(root: Path, rel: str) -> None:
    assert relative_path_problem(root, rel) is None


def test_missing_path(root: Path) -> None:
    assert relative_path_problem(root, "agents") == ("invalid_manifest", '"agents" does not exist')
    assert relative_path_problem(root, "agents", must_exist=False) is None
    assert relative_path_problem(root, "agents", invalid_code="invalid_bundle")[0] == "invalid_bundle"


@pytest.mark.parametrize("rel", ["..", "../outside", "skills/../../outside", "/etc", "\\windows"])
def test_paths_escaping_the_root(root: Path, rel: str) -> None:
    code, _ = relative_path_problem(root, rel)
    assert code == "path_escapes_root"


def test_symlink_out_of_the_root_escapes(root: Path) -> None:
    (root / "link").symlink_to(root.parent / "outside")
    code, message = relative_path_problem(root, "link")
    assert code == "path_escapes_root" and "outside the extension root" in message
    assert relative_path_problem(root, "link/tool")[0] == "path_escapes_root"


def test_symlink_inside_the_root_is_fine(root: Path) -> None:
    (root / "alias").symlink_to("skills/a")
    assert relative_path_problem(root, "alias") is None


def test_dangling_symlink_out_of_the_root_escapes(root: Path) -> None:
    (root / "dangling").symlink_to(root.parent / "nowhere")
    assert relative_path_problem(root, "dangling")[0] == "path_escapes_root"


def test_symlink_loop_is_reported_not_raised(root: Path) -> None:
    (root / "loop").symlink_to("loop")
    code, message = relative_path_problem(root, "loop")
    assert code == "invalid_manifest"


def test_root_reached_through_a_symlink(tmp_path: Path, root: Path) -> None:
    alias = tmp_path / "alias-root"
    alias.symlink_to(root)
    assert relative_path_problem(alias, "skills/a") is None
    assert relative_path_problem(alias, "../outside")[0] == "path_escapes_root"


@pytest.mark.parametrize("rel", ["", "a\x00b", "x" * 5000])
def test_hostile_names_are_problems_not_exceptions(root: Path, rel: str) -> None:
    assert relative_path_problem(root, rel)[0] == "invalid_manifest"


@pytest.mark.parametrize(
    "command",
    ["node", "uvx", "/usr/bin/env", "/../etc/passwd", "bin/tool", "./bin/tool", ".hidden", "{{config_dir}}/bin/tool",
     "bin/not-built-yet", "{{env:TOOLS}}/tool", "../{{env:X}}",
     "bin\\..\\..\\x"],  # a backslash makes it a path, but on POSIX it is one file name inside the root
)
def test_commands_that_are_accepted(root: Path, command: str) -> None:
    assert command_path_problem(root, command) is None


@pytest.mark.parametrize(
    "command", ["../outside/tool", "..", "bin/../../outside/tool", "{{config_dir}}/../outside/tool"])
def test_commands_escaping_the_root(root: Path, command: str) -> None:
    code, message = command_path_problem(root, command)
    assert code == "path_escapes_root" and command in message


def test_command_through_a_symlinked_directory_escapes(root: Path) -> None:
    (root / "vendor").symlink_to(root.parent / "outside")
    assert command_path_problem(root, "vendor/tool")[0] == "path_escapes_root"
    assert command_path_problem(root, "{{config_dir}}/vendor/tool")[0] == "path_escapes_root"
