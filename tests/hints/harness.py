"""What a hint scenario works with: a home, a scratch folder and a workspace; the command that
printed a hint, and the command the hint printed, run the way a user runs them (the real entry
point, in-process)."""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.cli import Result, run_cli

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
UNVERIFIED = ("--allow-unverified", "--yes")
MARKETING_DIGEST = "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4"
MARKETING_ACT = "act_712b93dfeb2df097"


@dataclass
class H:
    home: Path
    tmp: Path

    @property
    def ws(self) -> Path:
        """A workspace under $HOME (its pkgmgr.toml written by `declare`)."""
        root = self.tmp / "user-home" / "project"
        root.mkdir(parents=True, exist_ok=True)
        return root

    def fast_retries(self) -> None:
        """A configuration whose retries wait a millisecond, not a second (a scenario with a
        registry that is down would otherwise sleep through the backoff: ~3-9 s)."""
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text("[network]\nbackoff_base = 0.001\n", encoding="utf-8")

    def declare(self, text: str, *, trust: bool = True) -> Path:
        (self.ws / "pkgmgr.toml").write_text(text, encoding="utf-8")
        if trust:
            self.ok("trust", cwd=self.ws)
        return self.ws

    def run(self, *args: Any, code: int | None = None, cwd: Path | None = None,
            env: dict[str, str | None] | None = None, answer: str | None = None) -> Result:
        """Run pkgmgr; with `answer`, as at a terminal where the user types it at the prompt."""
        if answer is None:
            result = run_cli([str(a) for a in args], cwd=cwd, env=env)
        else:
            from unittest import mock

            with mock.patch("pkgmgr.cli.context.isatty", lambda stream: True):
                result = run_cli([str(a) for a in args], cwd=cwd, env=env, stdin=answer + "\n")
            assert "[y/N]" in result.stderr, result  # it did ask
        assert "Traceback" not in result.stderr, result
        assert_suggested_options_exist([str(a) for a in args], result)
        if code is not None:
            assert result.code == code, result
        return result

    def ok(self, *args: Any, cwd: Path | None = None, env: dict[str, str | None] | None = None) -> Result:
        return self.run(*args, code=0, cwd=cwd, env=env)

    def fixture(self, name: str) -> Path:
        """A copy of a fixture extension (to edit) under the scratch folder."""
        target = self.tmp / "src" / name
        if not target.exists():
            shutil.copytree(FIXTURES / name, target)
        return target

    # --- the hint and what it says to run ---------------------------------------------------

    @staticmethod
    def hinted(result: Result, prefix: str) -> str:
        """The command starting with `prefix` that `result` printed (quoted, or to the end of a
        line after `run:`/`with:`/`next:`), exactly as printed."""
        text = result.stderr + result.stdout
        quoted = [m for m in re.findall(r"'(pkgmgr [^']*)'", text) if m.startswith(prefix)]
        if quoted:
            return quoted[0]
        for line in text.splitlines():
            at = line.find(prefix)
            if at >= 0:
                return line[at:].rstrip()
        raise AssertionError(f"no {prefix!r} in {result!r}")

    def follow(self, result: Result, prefix: str, *, code: int | None = 0, cwd: Path | None = None,
               replace: dict[str, str] | None = None, answer: str | None = None) -> Result:
        """Run the command `result` suggested (its placeholders, e.g. NAME, filled by `replace`)."""
        command = self.hinted(result, prefix)
        for placeholder, value in (replace or {}).items():
            command = command.replace(placeholder, value)
        argv = shlex.split(command)
        assert argv[0] == "pkgmgr", command
        return self.run(*argv[1:], code=code, cwd=cwd, answer=answer)


# --- an option a message suggests on its own is one of the command that printed it ----------------

SUGGESTED = re.compile(r"(?:\bpass |\bwith |\bwithout |\bor |'|\()(--[a-z][a-z0-9-]*(?:=[a-z]+)?)")
# a command a message names is checked by parsing it (tests/hints/test_hints.py), not here
NAMED_COMMAND = re.compile(r"(?<![A-Za-z])'(?:pkgmgr|[a-z]+) [^']*'|`[^`]*`|\bpkgmgr [^'\n]*")


def parser_of_run(argv: list[str]) -> Any:
    """The parser of the command `argv` runs (its deepest subcommand), global options skipped."""
    from pkgmgr.cli.app import _subparsers, build_parser, expand_aliases
    from pkgmgr.cli.commands import VALUE_OPTIONS

    parser, skip = build_parser(), False
    for word in expand_aliases(argv):
        if skip or word.startswith("-"):
            skip = not skip and word in VALUE_OPTIONS
            continue
        children = _subparsers(parser)
        if word not in children:
            break
        parser = children[word]
    return parser


def suggested_options(text: str) -> set[str]:
    """The options `text` suggests on their own ("pass --x", "without --x", "'--x'"), outside the
    commands it names."""
    return set(SUGGESTED.findall(NAMED_COMMAND.sub("", text)))


def assert_suggested_options_exist(argv: list[str], result: Result) -> None:
    """No message suggests an option the command that printed it lacks (SPEC 11: a hint names no
    option the command does not have)."""
    if "--help" in argv or "-h" in argv or (argv and argv[0] == "help"):
        return
    known = parser_of_run(argv)._option_string_actions
    for option in sorted(suggested_options(result.stderr + result.stdout)):
        bare = option.partition("=")[0]  # --x=VALUE: an option taking a value
        assert option in known or (bare in known and known[bare].nargs != 0), (
            f"pkgmgr {shlex.join(argv)} suggests {option}, an option it does not have:\n{result.stderr}")
