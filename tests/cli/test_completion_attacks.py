"""Completion on hostile names (issue 25 point 9). The bash script gave the installed names to
`compgen -W`, which expands every word (command substitution, parameters, braces, tildes,
arithmetic) before the result is split and globbed: an installed name `$(touch${IFS}PWNED)` —
terva accepts such a name — would run `touch` in the user's shell at the press of TAB. Now the
script matches names literally and never expands one, and `completion names` offers only names
that are plain shell words."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from pkgmgr.cli.completion_cmds import completable
from tests.support.cli import run_cli

HOSTILE = ["$(touch${IFS}PWNED-subst)", "`touch PWNED-backtick`", "${HOME}", "~root", "{a,b}", "*", "a b", "x;y",
           "$((6*7))", "-rf", "'quoted'", "back\\slash"]


def complete(script: str, words: list[str], cwd: Path, bin_dir: Path | None = None) -> list[str]:
    line = " ".join(shlex.quote(w) for w in words)
    program = f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _pkgmgr; printf "%s\\n" "${{COMPREPLY[@]}}"'
    path = [str(bin_dir)] if bin_dir is not None else []
    env = {**os.environ, "PATH": os.pathsep.join([*path, str(Path(sys.executable).parent), os.environ["PATH"]])}
    proc = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True, env=env, timeout=60,
                          check=False, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line]


def test_the_bash_script_never_expands_a_name(tmp_path: Path) -> None:
    """The shell side, given hostile names by a stand-in `pkgmgr completion names`: each is offered
    as the literal text it is (or not at all when it does not start with the word typed), nothing
    runs, nothing is globbed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "pkgmgr"
    stand_in.write_text("#!/bin/sh\nprintf '%s\\n' " + " ".join(shlex.quote(n) for n in [*HOSTILE, "plain-tool"])
                        + "\n")
    stand_in.chmod(0o755)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "a-file-a-glob-would-find").write_text("")
    script = run_cli(["completion", "bash"]).stdout
    offered = complete(script, ["pkgmgr", "ext", "remove", ""], cwd, bin_dir)
    assert [word for word in offered if not word.startswith("--")] == [*HOSTILE, "plain-tool"]
    assert complete(script, ["pkgmgr", "ext", "status", "p"], cwd, bin_dir) == ["plain-tool"]
    assert complete(script, ["pkgmgr", "uninstall", "$("], cwd, bin_dir) == ["$(touch${IFS}PWNED-subst)", "$((6*7))"]
    assert complete(script, ["pkgmgr", "ext", "remove", "*"], cwd, bin_dir) == ["*"]  # `*` is a literal prefix
    assert sorted(p.name for p in cwd.iterdir()) == ["a-file-a-glob-would-find"]
    assert not list(tmp_path.rglob("PWNED*"))


def test_only_plain_shell_words_are_offered() -> None:
    assert completable([*HOSTILE, "plain-tool", "acme.context-tools", "my_ext", "tool@2", "c++"]) == [
        "acme.context-tools", "c++", "my_ext", "plain-tool", "tool@2"]


def test_completion_names_still_lists_installed_extensions(home: Path) -> None:
    assert run_cli(["ext", "install", "review-pack", "-o", "json"]).code == 0
    assert run_cli(["completion", "names"]).stdout == "review-pack\n"
