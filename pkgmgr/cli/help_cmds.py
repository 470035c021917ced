"""`pkgmgr help [COMMAND...] [--man]`: the help of a command, or the manual page of them all."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output, Printer

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands


def register(commands: "Commands") -> None:
    p = commands.command(
        "help", cmd_help, "show the help of a command, or the manual page",
        "Print the help of the command named (the same as 'pkgmgr COMMAND --help'), or of pkgmgr itself. "
        "--man prints the manual page of every command (roff, for man), generated from the same command "
        "tree as --help; it is also installed with pkgmgr as pkgmgr.1.",
        "pkgmgr help ext install\npkgmgr help --man > pkgmgr.1     # then: man ./pkgmgr.1",
    )
    p.add_argument("words", nargs="*", metavar="COMMAND")
    p.add_argument("--man", action="store_true", help="print the manual page (roff) of every command")


def cmd_help(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli.app import UsageError, _subparsers, build_parser

    parser = build_parser()
    if args.man:
        if args.words:
            raise UsageError("--man prints the page of every command: name none",
                             hint="run 'pkgmgr help --man' for the whole page")
        from pkgmgr.cli.manpage import render

        page = render(parser)
        return Output({"man": page}, lambda p: _write(p, page))
    current: argparse.ArgumentParser = parser
    for word in args.words:
        children = _subparsers(current)
        if word not in children:
            import difflib

            close = difflib.get_close_matches(word, list(children), n=3, cutoff=0.6)
            known = ", ".join(children) or "none: it takes no command"
            raise UsageError(f"{current.prog}: no command {word!r} (commands: {known})"
                             + (f"\ndid you mean {' or '.join(repr(c) for c in close)}?" if close else ""),
                             hint=f"run '{current.prog} --help' for its commands")
        current = children[word]
    text = current.format_help()
    return Output({"help": text}, lambda p: _write(p, text))


def _write(printer: Printer, text: str) -> None:
    printer.stream.write(text)
