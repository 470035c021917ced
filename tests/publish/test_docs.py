"""docs/publishing.md: every `pkgmgr` command it shows parses, and its walkthrough runs."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.publish.helpers import REPO
from tests.support.cli import run_cli

DOC = REPO / "docs" / "publishing.md"
BLOCK = re.compile(r"(<!-- test: run[^>]*-->\s*)?```sh\n(.*?)```", re.S)


def blocks() -> list[tuple[bool, list[str]]]:
    found = []
    for match in BLOCK.finditer(DOC.read_text("utf-8")):
        lines = [line.strip() for line in match.group(2).splitlines() if line.strip()]
        found.append((bool(match.group(1)), lines))
    return found


def pkgmgr_lines() -> list[str]:
    return [line for _, lines in blocks() for line in lines if line.startswith("pkgmgr ")]


def test_the_doc_shows_the_commands_of_both_workflows() -> None:
    shown = " ".join(pkgmgr_lines())
    for command in ("ext validate", "ext pack", "registry init", "registry publish github:", "registry validate",
                    "--base", "--fetch", "registry yank", "registry unyank", "registry build", "registry add"):
        assert command in shown, command
    assert sum(1 for runnable, _ in blocks() if runnable) == 1


@pytest.mark.parametrize("line", pkgmgr_lines())
def test_every_command_parses(line: str) -> None:
    from pkgmgr.cli.app import build_parser

    args = build_parser().parse_args(shlex.split(line)[1:])
    assert args.handler is not None, line


def test_the_walkthrough_runs(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    shutil.copytree(REPO / "fixtures" / "review-pack", tmp_path / "fixtures" / "review-pack")
    (runnable,) = [lines for run, lines in blocks() if run]
    for line in runnable:
        result = run_cli(shlex.split(line)[1:], cwd=tmp_path)
        assert result.code == 0, (line, result)
    assert "already published" in run_cli(shlex.split(runnable[4])[1:], cwd=tmp_path).stdout
    listed = run_cli(["ext", "list", "-o", "json"], cwd=tmp_path).json["extensions"]
    assert [(e["name"], e["verified"]) for e in listed] == [("review-pack", True)]
