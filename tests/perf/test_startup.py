"""Start-up fast paths: `--version` answered before anything is imported, and only the
modules of the invoked top-level command registered — with exactly the full parser's result
(or error) either way."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pkgmgr import __version__
from pkgmgr.cli import commands
from pkgmgr.cli.app import UsageError, build_parser, parse
from tests.cli.test_contract import walk
from tests.support.cli import run_cli


def shape(parser: argparse.ArgumentParser) -> dict[tuple[str, ...], list[tuple[str, ...]]]:
    return {path: sorted(tuple(a.option_strings) or (a.dest,) for a in sub._actions) for path, sub in walk(parser)}


def test_modules_declare_exactly_the_commands_they_are_listed_for() -> None:
    full = shape(build_parser())
    tops = {path[0] for path in full if path}
    assert tops == set(commands.MODULES)
    assert {m for modules in commands.MODULES.values() for m in modules} == set(commands.ORDER)
    for top in commands.MODULES:
        partial = shape(build_parser(top))
        mine = {path: value for path, value in partial.items() if path[:1] == (top,)}
        assert mine == {path: value for path, value in full.items() if path[:1] == (top,)}, top


@pytest.mark.parametrize(("argv", "words"), [
    (["ext", "list"], ("ext", "list")),
    (["-o", "json", "--home", "/h", "ext", "--scope", "workspace", "list", "x"], ("ext", "list")),
    (["--home", "ext", "sync"], ("sync", None)),
    (["--json", "--offline", "registry", "list"], ("registry", "list")),
    (["--workspace=/w", "trust"], ("trust", None)),
    (["--help", "ext"], (None, None)),
    (["ext", "-h", "list"], ("ext", None)),
    (["ext", "list", "-h"], ("ext", "list")),  # the command's own help: its parser is complete
    (["bogus", "list"], (None, None)),
    (["--", "ext"], (None, None)),
    ([], (None, None)),
])
def test_command_words(argv: list[str], words: tuple[str | None, str | None]) -> None:
    assert commands.command_words(argv) == words


def test_a_short_parser_has_only_the_command_named() -> None:
    parser = build_parser("ext", "list")
    ext = dict(walk(parser))[("ext",)]
    assert [path for path, _ in walk(ext)] == [(), ("list",)]
    assert {path[0] for path, _ in walk(parser) if path} == {"ext"}


@pytest.mark.parametrize("argv", [
    ["ext", "list", "-o", "json"],
    ["--home", "/h", "-q", "ext", "install", "a", "b@1.0", "--yes", "--pin"],
    ["--workspace", "/w", "sync", "--locked", "--allow-unverified"],
    ["registry", "add", "team", "https://example.org/r/", "--priority", "5"],
    ["bundle", "activate", "x", "--confirm-network-requirement", "abc"],
    ["resources", "list", "--json"],
    ["doctor", "--check"],
    ["ext"],  # a group without its command: the full parser (the group's help lists every command)
    ["--home", "sync", "ext", "list"],  # the guess is wrong: the full parser takes over
])
def test_the_short_parser_gives_the_full_parsers_result(argv: list[str]) -> None:
    expected = vars(build_parser().parse_args(argv))
    actual = vars(parse(argv))
    expected.pop("group_parser", None), actual.pop("group_parser", None)  # parser objects differ
    assert actual == expected


@pytest.mark.parametrize("argv", [["ext", "bogus"], ["ext", "list", "--bogus"], ["sync", "--locked", "--frozen"],
                                  ["--lock-timeout", "x", "ext", "list"]])
def test_errors_are_the_full_parsers(argv: list[str]) -> None:
    with pytest.raises(UsageError) as full:
        build_parser().parse_args(argv)
    with pytest.raises(UsageError) as short:
        parse(argv)
    assert short.value.message == full.value.message


def test_version_imports_nothing_else() -> None:
    code = ("import sys; before = set(sys.modules); from pkgmgr.cli import main; main(['--version']); "
            "print(sorted(m for m in set(sys.modules) - before if m.startswith(('pkgmgr', 'argparse', 'typing'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    version, loaded = proc.stdout.splitlines()
    assert version.startswith("pkgmgr ")
    assert json.loads(loaded.replace("'", '"')) == ["pkgmgr", "pkgmgr.cli"]


ROOT = Path(__file__).resolve().parents[2]


def _imported(*args: str) -> set[str]:
    """The modules a fresh interpreter running `args` imports (`-X importtime`, which names each
    module whatever its cache holds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=env,
                          check=True, cwd=ROOT)
    return {line.rpartition("|")[2].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:") and not line.rstrip().endswith("imported package")}


def test_the_command_imports_nothing_before_pkgmgr() -> None:
    """The installed `pkgmgr` is `scripts/pkgmgr` (SPEC 12: `--version` <= 1.5x `python -c pass`):
    beyond what the interpreter imports for `pass`, it loads pkgmgr's two modules and nothing else
    (an installer's generated entry-point script imports `re` first, ~60 % of that start-up)."""
    script = ROOT / "scripts" / "pkgmgr"
    assert _imported(str(script), "--version") - _imported("-c", "pass") == {"pkgmgr", "pkgmgr.cli"}
    proc = subprocess.run([sys.executable, str(script), "--version"], capture_output=True, text=True, check=True,
                          cwd=ROOT)
    assert proc.stdout == f"pkgmgr {__version__}\n" and proc.stderr == ""


def test_the_wheel_installs_that_script_and_no_generated_one() -> None:
    """An entry point under `[project.scripts]` would make the installer write its own `pkgmgr`
    over ours; hatchling rewrites the script's python shebang to `#!python`, which the
    installer replaces with its interpreter."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "scripts" not in project["project"] and "gui-scripts" not in project["project"]
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-scripts"] == {"scripts/pkgmgr": "pkgmgr"}
    assert "scripts" in project["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    first = (ROOT / "scripts" / "pkgmgr").read_text(encoding="utf-8").splitlines()[0]
    assert re.fullmatch(r"#!.*python3?", first)


def test_version_anywhere_else_still_goes_through_argparse() -> None:
    result = run_cli(["-o", "json", "--version"])
    assert result.code == 0 and result.stdout == run_cli(["--version"]).stdout
