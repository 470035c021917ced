"""cli.commands: the lazy dispatch — only the modules declaring the command named are imported
and registered, and the full parser takes over (same help, same messages) whenever the short
one cannot answer. tests/perf/test_startup.py checks `command_words` and parse results; this
module checks what gets imported and what a user sees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.cli import commands
from pkgmgr.cli.app import build_parser, global_options
from tests.cli.test_contract import walk
from tests.support.cli import run_cli

FULL = build_parser()
ALL = [f"pkgmgr.cli.{name}" for name in commands.ORDER]


@pytest.fixture
def imported(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every module `register_all` asks for, in order."""
    import importlib

    names: list[str] = []

    def import_module(name: str):  # noqa: ANN202
        names.append(name)
        return importlib.import_module(name)

    monkeypatch.setattr(commands, "importlib", SimpleNamespace(import_module=import_module))
    return names


@pytest.mark.parametrize("argv, modules", [
    (["ext", "list"], ("ext_cmds", "ext_remote_cmds", "ext_switch_cmds")),
    (["-o", "json", "--home", "ext", "ext", "search", "x"], ("ext_cmds", "ext_remote_cmds", "ext_switch_cmds")),
    (["registry", "list"], ("registry_cmds",)),
    (["bundle", "list"], ("bundle_cmds",)),
    (["resources", "list", "--kind", "agent"], ("bundle_cmds",)),
    (["doctor", "--check"], ("doctor_cmds",)),
    (["--workspace", "nowhere", "trust", "--show"], ("workspace_cmds",)),
    (["ext", "list", "--help"], ("ext_cmds", "ext_remote_cmds", "ext_switch_cmds")),  # a command's help: its own parser
    (["ext", "--help"], ("ext_cmds", "ext_remote_cmds", "ext_switch_cmds")),  # a group's help: the group's modules
])
def test_only_the_named_commands_modules_are_registered(argv: list[str], modules: tuple[str, ...],
                                                        imported: list[str]) -> None:
    run_cli(argv)
    assert imported == [f"pkgmgr.cli.{m}" for m in modules]


@pytest.mark.parametrize("argv", [
    ["--help"],  # no command named
    ["frobnicate"],  # an unknown command: the full parser says what exists
    [],
])
def test_without_a_known_command_everything_is_registered_once(argv: list[str], imported: list[str]) -> None:
    run_cli(argv)
    assert imported == ALL


@pytest.mark.parametrize("argv", [
    ["ext", "list", "--bogus"],  # an error of the short parser
    ["ext"],  # a group without its command: its help lists every command
    ["--ho", "sync", "ext", "list"],  # an abbreviated --home: the guess (sync) was wrong
])
def test_the_full_parser_takes_over_when_the_short_one_cannot_answer(argv: list[str], imported: list[str]) -> None:
    run_cli(argv)
    top = commands.command_word(argv)
    assert imported == [f"pkgmgr.cli.{m}" for m in commands.MODULES[top]] + ALL


def test_an_unknown_command_is_reported_by_the_full_parser() -> None:
    result = run_cli(["frobnicate"])
    assert result.code == 2
    assert "invalid choice: 'frobnicate'" in result.stderr
    for top in commands.MODULES:  # the message lists every command, not only some
        assert f"'{top}'" in result.stderr, top


def test_a_group_without_its_command_lists_every_command_of_the_group() -> None:
    result = run_cli(["ext"])
    assert result.code == 2
    for name in ("validate", "install", "remove (uninstall, rm)", "update (upgrade)", "info", "search"):
        assert f"    {name}" in result.stderr, name


NODES = list(walk(FULL))


@pytest.mark.parametrize("path, parser", NODES, ids=[" ".join(p) or "pkgmgr" for p, _ in NODES])
def test_help_is_the_full_parsers_help(path: tuple[str, ...], parser) -> None:  # noqa: ANN001
    result = run_cli([*path, "--help"])
    assert result.code == 0 and result.stdout == parser.format_help()


@pytest.mark.parametrize("argv", [
    ["ext", "install"],  # the required REF is missing
    ["bundle", "confirm", "act_x"],  # the required --expected-version is missing
    ["sync", "--locked", "--frozen"],
    ["registry", "publish", "a.tar.gz", "--tier", "gold", "--index", "."],
    ["ext", "pack", "."] + ["--output"],
])
def test_usage_errors_read_as_the_full_parsers(argv: list[str]) -> None:
    from pkgmgr.cli.app import UsageError

    with pytest.raises(UsageError) as full:
        FULL.parse_args(argv)
    result = run_cli([*argv, "-o", "json"])
    assert result.code == 2
    assert json.loads(result.stdout)["error"]["message"] == full.value.message


def test_top_level_help_lists_the_commands_in_registration_order() -> None:
    text = run_cli(["--help"]).stdout
    section = text.split("commands:", 1)[1].split("examples:", 1)[0]
    listed = [line.split()[0] for line in section.splitlines() if line.startswith("    ") and line[4] != " "]
    assert listed == ["ext", "registry", "bundle", "resources", "sync", "trust", "doctor", "cache", "completion", "hosts", "adopt",
                      "help"]


def test_value_options_are_exactly_the_global_options_that_take_a_value() -> None:
    taking_a_value = {s for action in global_options()._actions if action.option_strings and action.nargs != 0
                      for s in action.option_strings}
    assert taking_a_value == commands.VALUE_OPTIONS


def test_command_word_is_the_first_of_command_words() -> None:
    assert commands.command_word(["--scope", "workspace", "bundle", "list"]) == "bundle"
    assert commands.command_word(["--lock-timeout", "5", "doctor"]) == "doctor"
    assert commands.command_word(["--yes", "nope"]) is None


def test_an_abbreviated_global_option_still_reaches_the_right_command(tmp_path: Path) -> None:
    for argv in (["--ho", str(tmp_path / "elsewhere"), "doctor", "--check"],
                 ["--lock", "3", "--ho", "sync", "doctor", "--check"]):
        result = run_cli([*argv, "-o", "json"], cwd=tmp_path)
        assert result.code == 0, result
        assert json.loads(result.stdout)["scopes"][0]["root"] == str(tmp_path / argv[argv.index("--ho") + 1])


def test_a_fresh_interpreter_imports_only_what_the_command_needs(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from pkgmgr.cli import main\n"
        "def cmds(): return sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('pkgmgr.cli.')"
        " and m.endswith('_cmds'))\n"
        "main(['doctor', '--check', '-o', 'json']); print(cmds())\n"
        "main(['ext', 'list', '-o', 'json']); print(cmds())\n"
    )
    env = {"PKGMGR_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert lines == ["['doctor_cmds']", "['doctor_cmds', 'ext_cmds', 'ext_remote_cmds', 'ext_switch_cmds']"]
