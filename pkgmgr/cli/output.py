"""Rendering of command results: one JSON document in `-o json` mode, rich tables otherwise.

A command handler returns an `Output`: `data` is the JSON document (SPEC 11 shapes), `human`
renders it for people. rich is imported only when something is rendered for a human, so
`-o json` runs never load it.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from pkgmgr.cli.secrets import scrub_secrets
from pkgmgr.errors import PkgmgrError
from pkgmgr.patterns import terminal_text


@dataclass
class Output:
    """What a command produced. With `error` set, the process exits with its status and the
    JSON document carries `error` beside the partial results in `data`."""

    data: dict[str, Any] = field(default_factory=dict)
    human: Callable[["Printer"], None] | str | None = None
    error: PkgmgrError | None = None
    status: int = 0  # the exit status of a success: 10 for `ext update --check --exit-code` with updates


class Printer:
    """Human output on stdout: plain lines, key/value blocks and tables (rich, lazily)."""

    def __init__(self, stream: Any = None, *, quiet: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.quiet = quiet
        self._console: Any = None

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            tty = isatty(self.stream)
            plain = bool(os.environ.get("NO_COLOR"))
            self._console = Console(
                file=self.stream,
                highlight=False,
                no_color=plain or None,
                # rich's no_color still emits bold and the like: NO_COLOR means no escape sequences
                color_system=None if plain else "auto",
                width=None if tty else 1000,  # a pipe or a file gets whole lines, not wrapped cells
            )
        return self._console

    @property
    def width(self) -> int | None:
        """The terminal's width when stdout is one; None for a pipe or a file (whole lines)."""
        return self.console.width if isatty(self.stream) else None

    def fits(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> bool:
        """Whether `table(columns, rows)` fits the terminal (always, off a terminal)."""
        width = self.width
        if width is None:
            return True
        widths = [max([len(column), *(len("" if row[i] is None else str(row[i])) for row in rows)])
                  for i, column in enumerate(columns)]
        return sum(widths) + 2 * (len(widths) - 1) <= width

    def records(self, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """`table(columns, rows)` where it fits the terminal; else one block per row, its first
        cell on a line of its own and the others below it as `key: value` lines (`kv`), so that no
        identifier is folded and no line is wider than the terminal where its values allow."""
        rows = list(rows)
        if self.fits(columns, rows):
            self.table(columns, rows)
            return
        for row in rows:
            self.line(terminal_text("" if row[0] is None else str(row[0])))
            self.kv([(f"  {column.lower()}", "-" if cell is None or cell == "" else terminal_text(str(cell)))
                     for column, cell in zip(columns[1:], row[1:])])

    def line(self, text: str = "") -> None:
        self.stream.write(terminal_text(text) + "\n")  # a hostile name from a host's folder stays inert

    def lines(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.line(text)

    def done(self, texts: Iterable[str]) -> None:
        """Lines saying what a command did (installed, removed, ...), each wrapped as `prose` on a
        terminal: `-q` drops them."""
        if not self.quiet:
            self.notes(texts)

    def suggest(self, lead: str, command: str) -> None:
        """`lead` followed by a command to run: on one line when it fits the terminal (always, off
        a terminal), else the command on lines of its own below `lead`, continued with ` \\`
        between words (`cli.shellwrap`), so that it still runs as printed."""
        width = self.width
        line = f"{lead} {command}"
        if width is None or len(line) <= width:
            self.line(line)
            return
        from pkgmgr.cli.shellwrap import example_lines

        margin = " " * (len(lead) - len(lead.lstrip()) + 2)
        self.prose(lead)
        self.lines(example_lines(f"{margin}{command}", width))

    def prose(self, text: str) -> None:
        """A sentence, wrapped between words to the terminal's width (whole off a terminal), its
        continuation under its first word: a word (a digest, a path) is never broken."""
        width = self.width
        if width is None or len(text) <= width:
            self.line(text)
            return
        import textwrap

        margin = text[: len(text) - len(text.lstrip())]
        self.lines(textwrap.wrap(text, width, subsequent_indent=margin, break_long_words=False,
                                 break_on_hyphens=False))

    def notes(self, texts: Iterable[str]) -> None:
        """Notes for the operator (a host's trust step): prose, each wrapped as `prose`."""
        for text in texts:
            self.prose(text)

    def kv(self, pairs: Sequence[tuple[str, Any]]) -> None:
        """`key: value` lines, the values aligned. On a terminal too narrow for a line, a value of
        one word (a digest, a path) goes whole on a line of its own below its key, and prose is
        wrapped between words under its column; off a terminal every line is whole."""
        width = max((len(k) for k, _ in pairs), default=0)
        columns = self.width
        for key, value in pairs:
            head = f"{key + ':':<{width + 1}} "
            text = "" if value is None else str(value)
            if columns is None or len(head) + len(text) <= columns:
                self.line(head + text)
            elif " " not in text:
                if len(text) + 2 <= columns:
                    self.lines([f"{key}:", f"  {text}"])
                else:
                    self.line(head + text)  # wider than any line: whole, where a terminal can fold it
            else:
                import textwrap

                parts = textwrap.wrap(text, max(columns - len(head), 20), break_long_words=False,
                                      break_on_hyphens=False)
                self.lines([head + parts[0], *(" " * len(head) + part for part in parts[1:])])

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None) -> None:
        """A table whose identifiers are never folded (SPEC 11): every column but the free
        text ones (`PROSE`, truncated with … when the terminal is narrow) keeps its widest
        cell on one line, and the table is drawn wider than the terminal rather than break
        one. Rows carry no trailing spaces."""
        import re

        from rich.table import Table
        from rich.text import Text

        cells = [[terminal_text("" if cell is None else str(cell)) for cell in row] for row in rows]  # inert names
        widths = [max([len(column), *(len(row[i]) for row in cells if i < len(row))]) for i, column in enumerate(columns)]
        fixed = sum(w + 2 for c, w in zip(columns, widths) if c not in PROSE)
        prose = [c for c in columns if c in PROSE]
        console = self.console
        room = max(20, (console.width - fixed) // len(prose) - 2) if prose else 0
        table = Table(title=title, show_edge=False, header_style="bold", pad_edge=False, box=None)
        for column, widest in zip(columns, widths):
            if column in PROSE:
                table.add_column(column, no_wrap=True, overflow="ellipsis", max_width=room)
            else:
                table.add_column(column, no_wrap=True, min_width=widest)
        for row in cells:
            table.add_row(*(Text(cell) for cell in row))
        width = console.width
        console.width = max(width, fixed + len(prose) * (room + 2))  # print() alone never widens
        try:
            with console.capture() as capture:
                console.print(table)
        finally:
            console.width = width
        trailing = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$")
        for line in capture.get().splitlines():  # the cells are escaped: rich's own styles pass
            self.stream.write(trailing.sub(r"\1", line) + "\n")


PROSE = frozenset({"DESCRIPTION", "NOTE"})  # free text: the only columns a narrow terminal truncates


def isatty(stream: Any) -> bool:
    """Whether `stream` is a terminal (False for anything without a working isatty)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def print_tree_report(p: Printer, label: str, report: dict[str, Any], missing: str) -> None:
    """One installed tree as `ext verify` shows it (`archive.checksum.tree_report`'s result):
    ok, MODIFIED with each added (+), removed (-) and modified (~) file, or MISSING (`missing`)."""
    if report.get("missing"):
        p.line(f"{label}: MISSING ({missing})")
        return
    p.line(f"{label}: {'ok' if report['ok'] else 'MODIFIED'}")
    for kind, sign in (("added", "+"), ("removed", "-"), ("modified", "~")):
        for path in report[kind]:
            p.line(f"  {sign} {path}")


def abandon_stdout() -> None:
    """Point standard output at /dev/null after writing to it failed (a full disk, a closed pipe),
    so that the interpreter's last flush of what is still buffered cannot fail again at exit (the
    way Python's documentation handles SIGPIPE)."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # no file descriptor behind it (a test's StringIO): nothing is flushed at exit


def write_json(document: dict[str, Any], stream: Any = None) -> None:
    stream = stream if stream is not None else sys.stdout
    stream.write(scrub_secrets(json.dumps(document, indent=2, ensure_ascii=False, default=str)) + "\n")


def error_document(error: PkgmgrError, partial: dict[str, Any] | None = None) -> dict[str, Any]:
    document = dict(partial or {})
    document["error"] = error.to_json()
    return document


def print_error(error: PkgmgrError, stream: Any = None) -> None:
    """The message goes to stderr in every mode (SPEC 11)."""
    stream = stream if stream is not None else sys.stderr
    first, _, rest = terminal_text(scrub_secrets(error.message)).partition("\n")  # a hostile name stays inert
    label = f"error[{error.code}]"
    if isatty(stream) and not os.environ.get("NO_COLOR"):  # red on a colour terminal (SPEC 11)
        label = f"\x1b[31m{label}\x1b[0m"
    stream.write(f"{label}: {first}\n")
    for line in rest.splitlines():
        stream.write(f"  {line}\n")
    if error.hint:
        stream.write(f"hint: {terminal_text(scrub_secrets(error.hint))}\n")
