"""cli.output: the JSON document, the error lines on stderr, and the human Printer."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pkgmgr.cli.output import Printer, error_document, print_error, write_json
from pkgmgr.errors import PkgmgrError, Problem, ValidationFailed


def test_error_document_keeps_partial_results_beside_the_error() -> None:
    error = PkgmgrError("gone", code="not_found", details={"name": "x"})
    document = error_document(error, {"installed": [{"name": "a"}]})
    assert document == {"installed": [{"name": "a"}],
                        "error": {"code": "not_found", "message": "gone", "exit_code": 5, "details": {"name": "x"}}}
    assert error_document(error) == {"error": error.to_json()}


def test_write_json_is_one_document_with_utf8() -> None:
    stream = io.StringIO()
    write_json({"name": "café", "path": Path("/x")}, stream)
    assert json.loads(stream.getvalue()) == {"name": "café", "path": "/x"}
    assert stream.getvalue().endswith("}\n") and "café" in stream.getvalue()


def test_print_error_lines() -> None:
    stream = io.StringIO()
    print_error(PkgmgrError("first line\nsecond line", code="locked", hint="wait"), stream)
    assert stream.getvalue() == "error[locked]: first line\n  second line\nhint: wait\n"
    stream = io.StringIO()
    print_error(ValidationFailed([Problem("invalid_manifest", "extension.toml", "a", "m1"),
                                  Problem("invalid_manifest", "extension.toml", "b", "m2")]), stream)
    assert stream.getvalue() == ("error[invalid_manifest]: extension.toml: a: m1\n"
                                 "  extension.toml: b: m2\n")


def test_printer_kv_and_lines() -> None:
    stream = io.StringIO()
    printer = Printer(stream)
    printer.kv([("name", "x"), ("tree sha256", "abc"), ("none", None)])
    printer.lines(["a", "b"])
    assert stream.getvalue() == "name:        x\ntree sha256: abc\nnone:        \na\nb\n"


def test_done_lines_are_dropped_when_quiet() -> None:
    stream = io.StringIO()
    Printer(stream, quiet=True).done(["installed x"])
    Printer(stream).done(["removed y"])
    assert stream.getvalue() == "removed y\n"


def test_table_without_a_terminal_is_plain_and_unwrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    stream = io.StringIO()
    long_path = "/very/long/" + "x" * 300
    Printer(stream).table(["NAME", "PATH"], [("a", long_path), ("[bold]b[/bold]", None)])
    lines = stream.getvalue().splitlines()
    assert lines[0].split() == ["NAME", "PATH"]
    assert lines[1].split() == ["a", long_path]  # a pipe gets whole lines
    assert lines[2].split() == ["[bold]b[/bold]"]  # cells are text, never markup
    assert "\x1b[" not in stream.getvalue()


# --- a narrow terminal: no line wider than it where the words allow ----------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> Terminal:
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("NO_COLOR", "1")
    return Terminal()


DIGEST = "884e12e90219f5ea6d75d52448adb137"  # 32 characters: fits 40 columns alone, not after a key


def test_kv_puts_a_word_too_wide_below_its_key_and_wraps_prose(narrow: Terminal) -> None:
    Printer(narrow).kv([("name", "x"), ("network digest", DIGEST), ("target", "marketing-linear 0.1.0: bundle "
                                                                              "marketing-linear, profile default"),
                        ("path", "/" + "p" * 50)])
    assert narrow.getvalue().splitlines() == [
        "name:           x",
        "network digest:",
        f"  {DIGEST}",
        "target:         marketing-linear 0.1.0:",
        "                bundle marketing-linear,",
        "                profile default",
        "path:           /" + "p" * 50,  # wider than any line: whole, where the terminal folds it
    ]
    piped = io.StringIO()
    Printer(piped).kv([("network digest", DIGEST)])
    assert piped.getvalue() == f"network digest: {DIGEST}\n"  # off a terminal: whole lines


def test_a_suggested_command_too_wide_is_continued_as_a_shell_reads_it(narrow: Terminal) -> None:
    import shlex

    Printer(narrow).suggest("approve with:", f"pkgmgr trust --digest {DIGEST}")
    lines = narrow.getvalue().splitlines()
    assert lines[0] == "approve with:" and all(len(line) <= 40 for line in lines)
    assert shlex.split(" ".join(lines[1:]).replace("\\", "")) == ["pkgmgr", "trust", "--digest", DIGEST]
    piped = io.StringIO()
    Printer(piped).suggest("approve with:", f"pkgmgr trust --digest {DIGEST}")
    assert piped.getvalue() == f"approve with: pkgmgr trust --digest {DIGEST}\n"


def test_prose_and_done_lines_wrap_between_words(narrow: Terminal) -> None:
    Printer(narrow).done([f"  Eva's approval of /p: approved hash {DIGEST}, now changed"])
    assert narrow.getvalue().splitlines() == ["  Eva's approval of /p: approved hash",
                                              f"  {DIGEST}, now", "  changed"]


def test_records_is_a_table_where_it_fits_and_blocks_where_not(narrow: Terminal) -> None:
    Printer(narrow).records(["HOST", "MANAGED"], [("terva", 1)])
    Printer(narrow).records(["HOST", "GLOBAL", "MANAGED"], [("terva", "/home/me/.local/state/terva", 1),
                                                            ("vera", "", 0)])
    assert narrow.getvalue().splitlines() == [
        "HOST   MANAGED", "terva  1",
        "terva", "  global:  /home/me/.local/state/terva", "  managed: 1",
        "vera", "  global:  -", "  managed: 0"]
