"""The README stays true: its quick-start commands are what CI runs, and every `console` example
runs against the real entry point with the output it shows.

In a ```console block, a line starting with `$ pkgmgr` is a command and the lines after it are
its expected standard output (trailing blanks ignored). `...` inside a line matches any text; a
line that is only `...` matches any number of lines. A ```toml block right after
`<!-- file: NAME -->` is written to NAME in the workspace before the next command runs. The
blocks share one PKGMGR_HOME and one workspace directory, in document order.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.support.cli import run_cli

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)


def blocks() -> list[tuple[str, str, str | None]]:
    return [(m["lang"], m["body"], m["file"]) for m in FENCE.finditer(README)]


def test_quick_start_is_two_commands_and_ci_runs_the_test_command() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [body.strip() for lang, body, _ in blocks() if lang == "sh" and body.strip() in quick]
    assert len(commands) == 2, commands
    install, tests = commands
    assert "pip install -q ." in install and "pkgmgr" in install and "ext install" in install
    assert "pip install -q '.[test]'" in tests and "pytest" in tests
    test_command = tests.split("&& ", 2)[-1].replace(".venv/bin/python", "python")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci, f"{test_command!r} is not what .ci/run runs"
    assert "python3 -m venv" in ci and ".[test]" in ci


def _matches(expected: list[str], actual: list[str]) -> bool:
    pattern = ""
    for line in expected:
        if line == "...":
            pattern += r"(?:.*\n)*?"
        else:
            pattern += ".*".join(re.escape(part) for part in line.split("...")) + r"\n"
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


def _examples() -> list[tuple[str, list[str], str | None, str | None]]:
    """(command, expected lines, file to write, its content) in document order."""
    steps: list[tuple[str, list[str], str | None, str | None]] = []
    for lang, body, file in blocks():
        if file is not None:
            steps.append(("", [], file, body))
        if lang != "console":
            continue
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], [], None, None))
            else:
                steps[-1][1].append(line.rstrip())
    return steps


def test_readme_examples_run_as_shown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = tmp_path / "team-repo"
    workspace.mkdir()
    env = {"PKGMGR_HOME": str(home), "NO_COLOR": "1", "HOME": str(tmp_path), "PKGMGR_HOST_VERSION": None}
    ran = 0
    for command, expected, file, content in _examples():
        if file is not None:
            (workspace / file).write_text(content or "", encoding="utf-8")
            continue
        argv = shlex.split(command)
        assert argv[0] == "pkgmgr", command
        result = run_cli(argv[1:], env=env, cwd=workspace)
        actual = [line.rstrip() for line in result.stdout.splitlines()]
        assert _matches(expected, actual), (
            f"$ {command}\n--- README shows:\n" + "\n".join(expected) + "\n--- pkgmgr printed:\n" + "\n".join(actual)
            + f"\n--- stderr:\n{result.stderr}"
        )
        ran += 1
    assert ran >= 10


def test_docs_linked_from_the_readme_exist() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)\)", README)
    assert links
    for link in links:
        assert (REPO / link).is_file(), link
