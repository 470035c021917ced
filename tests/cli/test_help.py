"""Help and the manual (SPEC 11): no help text or message cites a document users do not have,
`--help` is wrapped to the terminal's width without breaking a word, and the manual page is
generated from the same command tree (`pkgmgr help --man`, `man/pkgmgr.1`)."""

from __future__ import annotations

import argparse
import ast
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from pkgmgr.cli.app import _subparsers, build_parser, example_lines
from tests.support.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "pkgmgr"
# the SPEC (a placeholder spelt NAME@SPEC or "SPEC" is not a citation) and the developers' documents;
# README.md and the guides in docs/ (authoring, bundles, publishing, workspaces, hosts) are the users'
CITATION = re.compile(r"(?<![@\"])\bSPEC\b(?!\")|\bSPEC\.md\b|\b(?:STYLE|ORACLES)\.md\b"
                      r"|docs/(?:architecture|compatibility|performance|reliability)\.md")


def parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(command path, parser) of every command and group, aliases included."""
    top = build_parser()
    stack = [("pkgmgr", top)]
    while stack:
        path, parser = stack.pop()
        yield path, parser
        stack += [(f"{path} {name}", sub) for name, sub in _subparsers(parser).items()]


def _texts(parser: argparse.ArgumentParser) -> Iterator[str]:
    yield parser.description or ""
    yield parser.epilog or ""
    for action in parser._actions:
        yield action.help or ""


def test_the_citation_pattern_finds_what_it_must() -> None:
    for cited in ("(default: from its manifest file; SPEC 13)", "see SPEC §10", "the SPEC.", "docs/architecture.md"):
        assert CITATION.search(cited), cited
    for fine in ("NAME@SPEC (PEP 440)", '[extensions] NAME = "SPEC"', "docs/authoring.md describes every field"):
        assert not CITATION.search(fine), fine


def test_no_help_text_cites_a_document_users_do_not_have() -> None:
    cited = [(path, text) for path, parser in parsers() for text in [*_texts(parser), parser.format_help()]
             if CITATION.search(text)]
    assert cited == []


def _literals(tree: ast.AST) -> Iterator[ast.Constant]:
    """The string constants of a module that are not docstrings (f-string parts included)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_no_message_cites_a_document_users_do_not_have() -> None:
    """Every string in pkgmgr's code that can reach a user (messages, hints, the files it writes
    for users: a registry's workflow and registry.toml) — comments and docstrings are the
    developers' and may cite the SPEC."""
    cited = []
    for path in sorted(PKG.rglob("*.py")):
        if "_schemas_generated" in path.parts:
            continue  # the schemas' own text, never shown: pkgmgr.schemas words every message itself
        for node in _literals(ast.parse(path.read_text(encoding="utf-8"))):
            if CITATION.search(node.value):
                cited.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value[:80]!r}")
    assert cited == []


# --- wrapped to the terminal's width ---------------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 120])
def test_help_fits_the_terminal_and_never_breaks_a_word(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    for path, parser in parsers():
        text = parser.format_help()
        words = set(text.split())
        for line in text.splitlines():
            # a line may be wider only when it is one word (a URL, a long option) that cannot be broken
            assert len(line) <= columns or len(line.split()) == 1 or line.split()[-1] == "\\" and len(
                line.split()) == 2, (path, line)
        prose = [parser.description or "", *(a.help or "" for a in parser._actions)]
        for word in " ".join(prose).split():
            if "%(" not in word:
                assert word in words or word.rstrip(".,;:)") in " ".join(words), (path, word)


@pytest.mark.parametrize("columns", [80, 120])
def test_every_example_as_printed_runs_as_a_shell_reads_it(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The examples of every help, the top level's too, read from the printed help as a shell
    reads them (a ` \\` continues the line, `#` starts a comment): each is a command that parses
    (at 80 columns the top level's were once printed as `pkgmgr sync bring a workspace to ...`)."""
    monkeypatch.setenv("COLUMNS", str(columns))
    full = build_parser()
    for path, parser in parsers():
        text = parser.format_help()
        if "\nexamples:\n" not in text:
            continue
        block = text.split("\nexamples:\n", 1)[1].split("\n\n", 1)[0].replace("\\\n", " ")
        commands = [shlex.split(line, comments=True) for line in block.splitlines()]
        commands = [words for words in commands if words]
        assert commands, path
        for words in commands:
            assert words[0] == "pkgmgr", (path, words)
            assert full.parse_args(words[1:]).handler is not None, (path, words)


def test_a_long_description_is_wrapped_where_it_was_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's case: `registry publish --help` in 80 columns."""
    monkeypatch.setenv("COLUMNS", "80")
    result = run_cli(["registry", "publish", "--help"])
    assert result.code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "SPEC" not in result.stdout


def test_an_example_too_wide_is_continued_as_a_shell_would_read_it() -> None:
    line = "  pkgmgr registry init . --description 'Acme extensions' --pkgmgr-requirement 'pkgmgr @ git+https://x'"
    wrapped = example_lines(line, 50)
    assert all(part.endswith(" \\") for part in wrapped[:-1])
    assert " ".join(part.removesuffix(" \\").strip() for part in wrapped) == line.strip()  # quotes never split
    assert example_lines("  pkgmgr sync --locked          # CI: fail if the lock is stale", 30) == [
        "  # CI: fail if the lock is stale", "  pkgmgr sync --locked"]


# --- the manual -----------------------------------------------------------------------------------


def test_help_names_a_command_as_its_help_does() -> None:
    assert run_cli(["help", "ext", "install"]).stdout == run_cli(["ext", "install", "--help"]).stdout
    assert run_cli(["help"]).stdout == run_cli(["--help"]).stdout
    result = run_cli(["help", "ext", "instal"])
    assert result.code == 2 and "did you mean 'install'" in result.stderr


def test_the_man_page_is_the_installed_one_and_names_every_command() -> None:
    page = run_cli(["help", "--man"]).stdout
    assert page == (REPO / "man" / "pkgmgr.1").read_text(encoding="utf-8"), \
        "man/pkgmgr.1 is stale: python -m pkgmgr.cli.manpage > man/pkgmgr.1"
    assert page.startswith(".TH PKGMGR 1 ")
    for path, parser in parsers():
        if path.count(" ") >= 1 and not _subparsers(parser):
            assert path.replace("-", "\\-") in page, path
    for option in ("\\-\\-allow\\-unverified", "\\-\\-confirm\\-network\\-requirement", "PKGMGR_HOME",
                   "confirmation_required"):
        assert option in page


def test_the_man_page_is_installed_with_the_package() -> None:
    import tomllib

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    shared = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared == {"man/pkgmgr.1": "share/man/man1/pkgmgr.1"}


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_the_man_page_is_valid_roff(tmp_path: Path) -> None:
    page = tmp_path / "pkgmgr.1"
    page.write_text(run_cli(["help", "--man"]).stdout, encoding="utf-8")
    result = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stderr == "", result.stderr
