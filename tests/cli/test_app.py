"""cli.app: global options into the Context, the one place failures become exit statuses, and
the help texts' examples (what tests/cli/test_contract.py does not already pin down)."""

from __future__ import annotations

import argparse
import json
import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.cli.app import GLOBAL_DEFAULTS, Parser, Skipped, UsageError, _prescan, build_parser, make_context, parse
from pkgmgr.cli.commands import command_words
from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output
from pkgmgr.errors import PkgmgrError
from tests.cli.helpers import ERROR_KEYS, one_document
from tests.cli.test_contract import walk
from tests.support.cli import run_cli
from tests.test_errors import SPEC_TABLE  # SPEC 11, transcribed once

CODES = [(code, status) for status, codes in SPEC_TABLE.items() for code in codes]
TOKEN = "ghp_appTestToken0123456789abcdefXYZ"


class Seen:
    """What the stand-in handler of `ext list` received."""

    ctx: Context | None = None
    args: argparse.Namespace | None = None


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - returns a setter
    """Replace `ext list` with `fn(ctx, args)`; returns the `Seen` record of the last call."""
    from pkgmgr.cli import ext_cmds

    seen = Seen()

    def install(fn: Any) -> Seen:
        def wrapper(ctx: Context, args: argparse.Namespace) -> Output:
            seen.ctx, seen.args = ctx, args
            return fn(ctx, args)

        monkeypatch.setattr(ext_cmds, "cmd_list", wrapper)
        return seen

    return install


def raising(exc: BaseException) -> Any:
    def fn(ctx: Context, args: argparse.Namespace) -> Output:
        raise exc

    return fn


# --- global options become the Context --------------------------------------------------------------


@pytest.mark.parametrize("position", ["before", "between", "after"])
@pytest.mark.parametrize("option, attribute, value", [
    (["-o", "json"], "output", "json"),
    (["--json"], "output", "json"),
    (["--scope", "workspace"], "scope", "workspace"),
    (["-q"], "quiet", True),
    (["--quiet"], "quiet", True),
    (["-v"], "verbose", True),
    (["--verbose"], "verbose", True),
    (["--no-progress"], "no_progress", True),
    (["--offline"], "offline", True),
    (["--yes"], "yes", True),
    (["--lock-timeout", "2.5"], "lock_timeout", 2.5),
    (["--lock-timeout", "0"], "lock_timeout", 0.0),
])
def test_each_global_option_reaches_the_context(position: str, option: list[str], attribute: str,
                                                value: Any) -> None:
    argv = {"before": [*option, "ext", "list"], "between": ["ext", *option, "list"],
            "after": ["ext", "list", *option]}[position]
    ctx = make_context(parse(argv))
    assert getattr(ctx, attribute) == value
    for other, default in GLOBAL_DEFAULTS.items():  # and nothing else moved
        if other not in (attribute, "home", "workspace"):
            assert getattr(ctx, other) == default, other


def test_defaults(home: Path) -> None:
    ctx = make_context(parse(["ext", "list"]))
    assert (ctx.output, ctx.scope, ctx.quiet, ctx.verbose, ctx.no_progress, ctx.offline, ctx.yes, ctx.lock_timeout) \
        == ("human", "global", False, False, False, False, False, 30.0)
    assert ctx.home == home and ctx.workspace_arg is None and not ctx.json


def test_the_last_occurrence_wins() -> None:
    ctx = make_context(parse(["-o", "json", "--lock-timeout", "1", "ext", "--scope", "workspace", "list",
                              "-o", "human", "--lock-timeout", "2", "--scope", "global"]))
    assert (ctx.output, ctx.lock_timeout, ctx.scope) == ("human", 2.0, "global")


def test_combined_short_flags() -> None:
    ctx = make_context(parse(["ext", "list", "-qv"]))
    assert ctx.quiet and ctx.verbose


def test_home_and_workspace_are_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ctx = make_context(parse(["--home", "rel-home", "ext", "list", "--workspace", "ws"]))
    assert ctx.home == tmp_path / "rel-home" and ctx.workspace_arg == tmp_path / "ws"
    ctx = make_context(parse(["ext", "list", "--home", "~/h", "--workspace", "~/w"]))
    assert ctx.home == tmp_path / "user-home" / "h" and ctx.workspace_arg == tmp_path / "user-home" / "w"


def test_home_option_beats_the_environment(tmp_path: Path) -> None:
    ctx = make_context(parse(["--home", str(tmp_path / "opt"), "ext", "list"]))
    assert ctx.home == tmp_path / "opt"


@pytest.mark.parametrize("argv, needle", [
    (["-o", "xml", "ext", "list"], "invalid choice: 'xml'"),
    (["ext", "list", "--lock-timeout", "abc"], "'abc' is not a number of seconds"),
    (["ext", "list", "--lock-timeout", "-0.5"], "must not be negative"),
    (["ext", "list", "--scope", "everywhere"], "invalid choice: 'everywhere'"),
    (["ext", "list", "--home"], "expected one argument"),
])
def test_bad_global_option_values_are_usage_errors(argv: list[str], needle: str) -> None:
    result = run_cli(argv)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith("error[usage]: ") and needle in result.stderr
    assert "hint: run 'pkgmgr" in result.stderr and "--help' for usage" in result.stderr


def test_parser_errors_raise_usage_with_the_commands_own_help_hint() -> None:
    with pytest.raises(UsageError) as caught:
        parse(["ext", "install", "--frob"])
    assert caught.value.code == "usage" and caught.value.exit_code == 2
    assert caught.value.message.startswith("pkgmgr ext install: ")
    assert caught.value.hint == "run 'pkgmgr ext install --help' for usage"
    assert isinstance(build_parser(), Parser)


@pytest.mark.parametrize("argv, expected", [
    (["ext", "list"], (False, False)),
    (["--json"], (True, False)),
    (["-ojson"], (True, False)),
    (["-o", "json"], (True, False)),
    (["-o", "human"], (False, False)),
    (["-o"], (False, False)),  # nothing after it
    (["-v", "--verbose"], (False, True)),
    (["ext", "--", "--json", "-v"], (False, False)),  # after `--` they are arguments
])
def test_prescan_knows_json_and_verbosity_before_parsing(argv: list[str], expected: tuple[bool, bool]) -> None:
    assert _prescan(argv) == expected


def test_skipped_ignores_everything_declared_on_it() -> None:
    skipped = Skipped()
    group = skipped.add_mutually_exclusive_group(required=True)
    assert group is skipped and group.add_argument("--x", action="store_true") is skipped
    assert skipped.set_defaults(handler=None) is skipped


# --- rendering the handler's Output -----------------------------------------------------------------


def test_json_output_is_the_handlers_data(handler: Any) -> None:
    handler(lambda ctx, args: Output({"extensions": [{"name": "café"}]}, "human text"))
    result = run_cli(["ext", "list", "--json"])
    assert result.code == 0 and result.stderr == ""
    assert one_document(result) == {"extensions": [{"name": "café"}]}
    assert "café" in result.stdout  # UTF-8, not \u escapes


def test_human_text_and_quiet(handler: Any) -> None:
    handler(lambda ctx, args: Output({"x": 1}, "did the thing"))
    assert run_cli(["ext", "list"]).stdout == "did the thing\n"
    assert run_cli(["ext", "list", "-q"]).stdout == ""  # a success line is what -q drops


def test_quiet_drops_done_lines_but_keeps_plain_ones(handler: Any) -> None:
    handler(lambda ctx, args: Output({}, lambda p: (p.line("table row"), p.done(["installed x"]))))
    assert run_cli(["ext", "list"]).stdout == "table row\ninstalled x\n"
    assert run_cli(["ext", "list", "-q"]).stdout == "table row\n"


def test_an_output_error_keeps_partial_results_and_its_exit_status(handler: Any) -> None:
    error = PkgmgrError("two of three failed", code="not_found", hint="try again")
    handler(lambda ctx, args: Output({"removed": [{"name": "a"}]}, "removed a", error))
    result = run_cli(["ext", "list", "-o", "json"])
    assert result.code == 5
    assert one_document(result) == {"removed": [{"name": "a"}], "error": error.to_json()}
    assert result.stderr == "error[not_found]: two of three failed\nhint: try again\n"
    human = run_cli(["ext", "list", "-q"])  # a failure is shown even with -q
    assert human.code == 5 and human.stdout == "removed a\n" and human.stderr.startswith("error[not_found]")


def test_a_raised_error_carries_its_partial_results(handler: Any) -> None:
    handler(raising(PkgmgrError("late failure", code="locked", partial={"installed": [{"name": "a"}]})))
    result = run_cli(["ext", "list", "-o", "json"])
    assert result.code == 6
    document = one_document(result)
    assert document["installed"] == [{"name": "a"}] and document["error"]["code"] == "locked"


@pytest.mark.parametrize("code, status", CODES, ids=[c for c, _ in CODES])
def test_every_error_code_exits_with_its_spec_status(code: str, status: int, handler: Any) -> None:
    handler(raising(PkgmgrError(f"failed with {code}\nsecond line", code=code, details={"k": [1]})))
    result = run_cli(["ext", "list", "-o", "json"])
    assert result.code == status
    document = one_document(result)
    assert set(document) == {"error"} and set(document["error"]) == ERROR_KEYS
    assert document["error"] == {"code": code, "message": f"failed with {code}\nsecond line", "exit_code": status,
                                 "details": {"k": [1]}}
    assert result.stderr == f"error[{code}]: failed with {code}\n  second line\n"
    human = run_cli(["ext", "list"])
    assert (human.code, human.stdout, human.stderr) == (status, "", result.stderr)


def test_the_spec_table_has_every_code_once() -> None:
    from pkgmgr.errors import EXIT_CODES

    assert len(CODES) == len({c for c, _ in CODES}) == len(EXIT_CODES)


# --- failures that are not PkgmgrErrors -------------------------------------------------------------


def test_an_exception_without_a_message(handler: Any) -> None:
    handler(raising(ValueError()))
    result = run_cli(["ext", "list"])
    assert result.code == 70
    assert result.stderr == "error[internal]: internal error: ValueError: no message (run with -v for the traceback)\n"


def test_a_damaged_database_is_state_inconsistent_not_a_bug(handler: Any) -> None:
    handler(raising(sqlite3.DatabaseError("database disk image is malformed")))
    result = run_cli(["ext", "list", "-o", "json"])
    assert result.code == 4
    error = one_document(result)["error"]
    assert error["code"] == "state_inconsistent" and "database disk image is malformed" in error["message"]
    assert "pkgmgr doctor --check" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("exc", [sqlite3.OperationalError("database is locked"),
                                 sqlite3.IntegrityError("UNIQUE constraint failed")])
def test_other_sqlite_errors_remain_bugs(exc: Exception, handler: Any) -> None:
    handler(raising(exc))
    result = run_cli(["ext", "list"])
    assert result.code == 70 and f"internal error: {type(exc).__name__}: " in result.stderr


def test_an_os_error_without_a_file_name(handler: Any) -> None:
    handler(raising(OSError(28, "No space left on device")))
    result = run_cli(["ext", "list", "-o", "json"])
    assert result.code == 9
    error = one_document(result)["error"]
    assert error["code"] == "io_error" and error["message"] == "local storage: No space left on device"
    assert error["details"] == {"path": None, "errno": "ENOSPC", "os_message": "No space left on device"}


@pytest.mark.parametrize("exc, name", [(OSError(30, "Read-only file system", "/ro/state.db"), "EROFS"),
                                       (OSError(5, "Input/output error", "/disk/f"), "EIO"),
                                       (OSError(122, "Disk quota exceeded", "/q/f"), "EDQUOT"),
                                       (PermissionError(1, "Operation not permitted", "/p/f"), "EPERM")])
def test_each_storage_failure_is_io_error_with_its_path(exc: OSError, name: str, handler: Any) -> None:
    handler(raising(exc))
    result = run_cli(["ext", "list", "-o", "json"])
    error = one_document(result)["error"]
    assert (result.code, error["code"], error["details"]["errno"]) == (9, "io_error", name)
    assert error["message"] == f"{exc.filename}: {exc.strerror}" and "Traceback" not in result.stderr


def test_other_os_errors_remain_bugs(handler: Any) -> None:
    handler(raising(OSError(9, "Bad file descriptor")))
    result = run_cli(["ext", "list", "-o", "json"])
    assert result.code == 70 and one_document(result)["error"]["message"] == "cannot access: Bad file descriptor"


def test_an_os_error_shows_its_traceback_only_under_verbose(handler: Any) -> None:
    handler(raising(PermissionError(13, "Permission denied", "/some/where")))
    assert "Traceback" not in run_cli(["ext", "list"]).stderr
    verbose = run_cli(["ext", "list", "-v"])
    assert verbose.code == 9 and "Traceback (most recent call last)" in verbose.stderr
    assert "error[io_error]: /some/where: Permission denied" in verbose.stderr


def test_a_broken_pipe_is_a_quiet_success(handler: Any) -> None:
    handler(raising(BrokenPipeError(32, "Broken pipe")))
    result = run_cli(["ext", "list"])
    assert (result.code, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize("env_name", ["GITHUB_TOKEN", "GH_TOKEN"])
def test_a_token_quoted_by_a_bug_is_masked_everywhere(env_name: str, handler: Any) -> None:
    handler(raising(RuntimeError(f"request failed: Authorization: token {TOKEN}")))
    env = {env_name: TOKEN}
    for args in (["ext", "list"], ["ext", "list", "-v"], ["ext", "list", "-o", "json", "-v"]):
        result = run_cli(args, env=env)
        assert result.code == 70
        assert TOKEN not in result.stdout + result.stderr and "token ***" in result.stderr
    document = json.loads(run_cli(["ext", "list", "--json"], env=env).stdout)
    assert "token ***" in document["error"]["message"]


def test_a_token_of_several_words_is_masked_the_same_way_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole value and each of its words are secrets; the longest is masked first, so the
    result does not depend on the order a set happens to give them in."""
    from pkgmgr.cli.secrets import scrub_secrets

    monkeypatch.setenv("GITHUB_TOKEN", "  first-part-abc second-part-xyz ")
    monkeypatch.setenv("GH_TOKEN", "second-part-xyz")
    text = "a: first-part-abc second-part-xyz; b: second-part-xyz; c: first-part-abc"
    assert scrub_secrets(text) == "a: ***; b: ***; c: ***"


def test_a_group_without_its_command_prints_the_groups_help_on_stderr() -> None:
    result = run_cli(["registry"])
    assert result.code == 2 and result.stdout == ""
    help_text, _, error = result.stderr.rpartition("error[usage]: ")
    assert error == "pkgmgr registry: a command is required\n"
    for command in ("add", "list", "remove", "refresh", "init", "publish", "validate", "build", "yank", "unyank"):
        assert f"\n    {command} " in help_text, command
    top = run_cli([])
    assert top.code == 2 and "examples:" in top.stderr and "error[usage]: pkgmgr: a command is required" in top.stderr


def test_a_group_in_json_mode_puts_only_the_document_on_stdout() -> None:
    result = run_cli(["bundle", "-o", "json"])
    assert result.code == 2 and one_document(result)["error"]["message"] == "pkgmgr bundle: a command is required"
    assert "commands:" in result.stderr


# --- help texts ----------------------------------------------------------------------------------


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    epilog = parser.epilog or ""
    if "examples:" not in epilog:
        return []
    block = epilog.split("examples:", 1)[1]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("pkgmgr ")]


FULL = build_parser()
NODES = [(path, parser) for path, parser in walk(FULL) if path]  # the top level's list is prose


@pytest.mark.parametrize("path, parser", NODES, ids=[" ".join(p) for p, _ in NODES])
def test_every_example_in_the_help_parses_to_its_command(path: tuple[str, ...], parser: argparse.ArgumentParser
                                                          ) -> None:
    examples = _examples(parser)
    assert examples, path
    own = 0
    for line in examples:
        words = shlex.split(line, comments=True)[1:]
        args = FULL.parse_args(words)  # a usage error fails the test
        assert args.handler is not None, line
        if command_words(words)[:len(path)] == path[:2]:
            own += 1
            if parser.get_default("handler") is not None:  # a command (not a group): its own handler
                assert args.handler is parser.get_default("handler"), line
    assert own, path  # some example shows the command itself (others may show a step before it)


def test_a_groups_help_lists_the_first_example_of_each_command() -> None:
    ext = dict(walk(FULL))[("ext",)]
    examples = _examples(ext)
    commands = {line.split()[2] for line in examples}
    assert commands == {"new", "validate", "pack", "install", "list", "status", "verify", "enable", "disable", "remove",
                        "update", "info", "search", "rollback", "link", "unlink"}  # ext_remote_cmds, ext_switch_cmds add theirs
    assert "pkgmgr ext update --all --check" in examples
    assert len(examples) == len(commands)  # one each


def test_a_command_alias_has_the_same_help() -> None:
    remove, uninstall = run_cli(["ext", "remove", "--help"]), run_cli(["ext", "uninstall", "--help"])
    assert remove.code == uninstall.code == 0 and "--deactivate" in remove.stdout
    assert remove.stdout == uninstall.stdout
