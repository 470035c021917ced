"""The command-line contract of SPEC 11: help everywhere, global options anywhere, one JSON
document per run, stable error objects and exit statuses, no tracebacks."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Iterator

import pytest

from pkgmgr import __version__
from pkgmgr.cli.app import GLOBAL_DEFAULTS, build_parser
from tests.cli.helpers import ERROR_KEYS, FIXTURES, UNVERIFIED, fail, install, ok, one_document
from tests.support.cli import run_cli, run_subprocess

Node = tuple[tuple[str, ...], argparse.ArgumentParser]


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Node]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # aliases share a parser
                    seen.add(id(sub))
                    yield from walk(sub, (*path, name))


COMMANDS = [path for path, _ in walk(build_parser())]


def test_the_tree_has_the_documented_groups() -> None:
    top = {path[0] for path in COMMANDS if path}
    assert {"ext", "registry", "bundle", "resources", "doctor"} <= top
    assert {("ext", name) for name in ("validate", "pack", "install", "list", "status", "verify", "enable",
                                       "disable", "remove")} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) or "pkgmgr" for p in COMMANDS])
def test_every_command_explains_itself_with_an_example(path: tuple[str, ...]) -> None:
    result = run_cli([*path, "--help"])
    assert result.code == 0, result
    assert "examples:" in result.stdout
    assert f"pkgmgr {' '.join(path)}".strip() in result.stdout.split("examples:", 1)[1]
    assert result.stderr == ""


def test_no_command_option_reuses_a_global_option() -> None:
    parser = build_parser()
    global_strings = {s for action in parser._actions for s in action.option_strings}
    for path, sub in walk(parser):
        for action in sub._actions:
            if action.container.title == "global options" or isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._VersionAction) or isinstance(action, argparse._SubParsersAction):
                continue
            assert action.dest not in GLOBAL_DEFAULTS, (path, action.option_strings, action.dest)
            assert not set(action.option_strings) & global_strings, (path, action.option_strings)


# --- global options ---------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["-o", "json", "ext", "list"],
    ["ext", "list", "-o", "json"],
    ["ext", "-o", "json", "list"],
    ["--json", "ext", "list"],
    ["ext", "list", "--json"],
    ["ext", "list", "-ojson"],
    ["-o", "human", "ext", "list", "--json"],
])
def test_output_option_before_or_after_the_subcommand(args: list[str]) -> None:
    install(FIXTURES / "review-pack")
    result = run_cli(args)
    assert result.code == 0, result
    assert [e["name"] for e in one_document(result)["extensions"]] == ["review-pack"]


def test_a_later_global_option_is_not_reset_by_the_subparser(tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    install(FIXTURES / "review-pack", extra=("--home", str(other)))
    assert (other / "extensions" / "review-pack").is_dir()
    for args in (["--home", str(other), "ext", "list"], ["ext", "list", "--home", str(other)],
                 ["ext", "--home", str(other), "list"]):
        result = run_cli([*args, "-o", "json"])
        assert [e["name"] for e in result.json["extensions"]] == ["review-pack"], args
    assert ok("ext", "list")["extensions"] == []


def test_home_defaults_to_the_environment(tmp_path: Path) -> None:
    env_home = tmp_path / "env-home"
    install(FIXTURES / "review-pack", env={"PKGMGR_HOME": str(env_home)})
    assert (env_home / "state.db").is_file()


def test_quiet_silences_success_lines(tmp_path: Path) -> None:
    result = run_cli(["ext", "install", FIXTURES / "review-pack", *UNVERIFIED, "-q"])
    assert result.code == 0 and result.stdout == "" and result.stderr == ""
    result = run_cli(["ext", "remove", "review-pack", "-q"])
    assert result.code == 0 and result.stdout == ""


def test_version() -> None:
    for args in (["--version"], ["--version", "-o", "json"]):
        result = run_cli(args)
        assert result.code == 0 and result.stdout == f"pkgmgr {__version__}\n"


# --- one JSON document, every time ----------------------------------------------------------------------


ERRORS = [
    (["ext", "status", "nothing"], "not_found", 5),
    (["ext", "remove", "nothing"], "not_found", 5),
    (["ext", "install", "./nowhere", *UNVERIFIED], "not_found", 5),
    (["ext", "install", str(FIXTURES / "review-pack")], "unverified_source", 4),
    (["ext", "validate", "/nonexistent/dir"], "not_found", 5),
    (["ext", "verify"], "usage", 2),
    (["ext", "bogus"], "usage", 2),
    (["ext"], "usage", 2),
    ([], "usage", 2),
    (["--scope", "elsewhere", "ext", "list"], "usage", 2),
    (["ext", "list", "--lock-timeout", "-1"], "usage", 2),
    (["ext", "list", "--no-such-option"], "usage", 2),
    (["ext", "install"], "usage", 2),
    (["ext", "install", "Bad_Name"], "usage", 2),
]


@pytest.mark.parametrize("args, code, status", ERRORS, ids=[" ".join(a) or "none" for a, _, _ in ERRORS])
def test_errors_are_one_json_document(args: list[str], code: str, status: int) -> None:
    for mode in (["-o", "json"], ["--json"]):
        result = run_cli([*args, *mode])
        assert result.code == status, result
        document = one_document(result)
        assert set(document["error"]) == ERROR_KEYS
        assert document["error"]["code"] == code and document["error"]["exit_code"] == status
        assert isinstance(document["error"]["message"], str) and isinstance(document["error"]["details"], dict)
        assert f"error[{code}]: " in result.stderr
    human = run_cli(args)
    assert human.code == status and f"error[{code}]: " in human.stderr
    assert "Traceback" not in human.stderr


def test_json_mode_before_a_parse_error_is_still_json() -> None:
    result = run_cli(["--json", "ext", "install", "--no-such-flag"])
    assert result.code == 2 and one_document(result)["error"]["code"] == "usage"
    result = run_cli(["-o", "json", "--scope"])
    assert result.code == 2 and one_document(result)["error"]["code"] == "usage"


def test_success_is_one_json_document_for_each_read_command(tmp_path: Path) -> None:
    install(FIXTURES / "marketing-linear")
    for args in (["ext", "list"], ["ext", "status", "marketing-linear"], ["ext", "verify", "--all"],
                 ["ext", "validate", str(FIXTURES / "review-pack")], ["doctor", "--check"],
                 ["ext", "disable", "marketing-linear"], ["ext", "enable", "marketing-linear"],
                 ["ext", "pack", str(FIXTURES / "review-pack"), "--output", str(tmp_path / "x.tar.gz")],
                 ["ext", "remove", "marketing-linear", "--dry-run"]):
        result = run_cli([*args, "-o", "json"])
        assert result.code == 0, (args, result)
        assert "error" not in one_document(result)


# --- bugs become exit 70 --------------------------------------------------------------------------


def broken(ctx, args):  # noqa: ANN001, ANN201 - stands in for a command handler
    raise RuntimeError("kaboom\nsecond line of the message")


def test_unexpected_exception_is_exit_70_without_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.cli import ext_cmds

    monkeypatch.setattr(ext_cmds, "cmd_list", broken)
    result = run_cli(["ext", "list"])
    assert result.code == 70 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error[internal]: internal error: RuntimeError: kaboom")
    assert "-v" in result.stderr
    document = fail("internal", "ext", "list")
    assert document["error"]["exit_code"] == 70 and "second line" not in document["error"]["message"]


def test_verbose_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.cli import ext_cmds

    monkeypatch.setattr(ext_cmds, "cmd_list", broken)
    for args in (["-v", "ext", "list"], ["ext", "list", "--verbose"], ["ext", "list", "-v", "-o", "json"]):
        result = run_cli(args)
        assert result.code == 70
        assert "Traceback (most recent call last)" in result.stderr and "RuntimeError: kaboom" in result.stderr
    assert "Traceback" not in run_cli(["ext", "list", "-o", "json", "-v"]).stdout


def test_an_os_error_is_reported_without_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.cli import ext_cmds

    def denied(ctx, args):  # noqa: ANN001, ANN202
        raise PermissionError(13, "Permission denied", "/some/where")

    monkeypatch.setattr(ext_cmds, "cmd_list", denied)
    result = run_cli(["ext", "list"])
    assert result.code == 9 and "error[io_error]: /some/where: Permission denied" in result.stderr
    assert "Traceback" not in result.stderr


def test_keyboard_interrupt_is_130(monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.cli import ext_cmds

    def interrupted(ctx, args):  # noqa: ANN001, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(ext_cmds, "cmd_list", interrupted)
    result = run_cli(["ext", "list"])
    assert result.code == 130 and "Traceback" not in result.stderr


# --- human output ---------------------------------------------------------------------------------


def test_no_color_is_honoured() -> None:
    install(FIXTURES / "review-pack")
    colored = run_cli(["ext", "list"], env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"})
    assert colored.code == 0 and "\x1b[" in colored.stdout  # rich believes it is a terminal
    plain = run_cli(["ext", "list"], env={"FORCE_COLOR": "1", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
    assert plain.code == 0 and "\x1b[" not in plain.stdout
    assert plain.stdout.split() == colored.stdout.replace("\x1b[1m", "").replace("\x1b[0m", "").split()


def test_human_error_goes_to_stderr_only() -> None:
    result = run_cli(["ext", "status", "nothing"])
    assert result.stdout == ""
    assert result.stderr == ("error[not_found]: nothing is not installed in the global scope\n"
                             "hint: 'pkgmgr ext list' shows what is installed, 'pkgmgr ext search nothing' what "
                             "the registries offer\n")


# --- through a real process ---------------------------------------------------------------------


def test_subprocess_json_error_and_version(tmp_path: Path) -> None:
    result = run_subprocess(["ext", "status", "nothing", "-o", "json"])
    assert result.code == 5
    assert json.loads(result.stdout)["error"]["code"] == "not_found"
    assert run_subprocess(["--version"]).stdout == f"pkgmgr {__version__}\n"
    usage = run_subprocess(["--json", "frobnicate"])
    assert usage.code == 2 and json.loads(usage.stdout)["error"]["code"] == "usage"


# --- hostile paths never crash --------------------------------------------------------------------


@pytest.mark.parametrize("args, code", [
    (["ext", "install", "./" + "a" * 5000, *UNVERIFIED], "not_found"),
    (["ext", "install", "./" + "/".join(["d" * 200] * 30), *UNVERIFIED], "not_found"),
    (["ext", "install", "~no-such-user-xyz/ext", *UNVERIFIED], "not_found"),
    (["ext", "validate", "./" + "a" * 5000], "not_found"),
    (["ext", "validate", "~no-such-user-xyz/ext"], "not_found"),
    (["ext", "pack", "~no-such-user-xyz/ext"], "not_found"),
    (["ext", "install", "a" * 5000], "usage"),
])
def test_hostile_paths_get_an_error_code(args: list[str], code: str) -> None:
    fail(code, *args)


def test_unknown_user_in_home_and_workspace_options(tmp_path: Path) -> None:
    result = run_cli(["ext", "list", "--home", "~no-such-user-xyz/home", "-o", "json"], cwd=tmp_path)
    assert result.code == 0, result  # a directory literally named so: nothing installed there
    fail("not_found", "ext", "list", "--scope", "workspace", "--workspace", "~no-such-user-xyz/ws")
