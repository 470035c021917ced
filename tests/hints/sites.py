"""The hint catalogue's other half: every place in pkgmgr's code that suggests a command or an
option, found from the code itself (an AST scan), so that a new hint without a catalogue entry
fails `tests/hints/test_hints.py`.

A site is one string literal (an f-string's expressions read as `{}`) outside docstrings and the
parsers' own help (`commands.command`, `add_argument`: `tests/cli/test_app.py` parses every example
there), that names a pkgmgr command (`pkgmgr [{}] [GLOBAL OPTION...] COMMAND`) or suggests an option
(`pass --X`, `with --X`, `without --X`, `'--X'`). Its key is (module, template): a changed wording is a new site, to
be tried again.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "pkgmgr"
TOP = ("ext", "registry", "bundle", "resources", "sync", "trust", "doctor", "cache", "completion", "hosts", "adopt",
       "help", "install", "uninstall", "update", "list")
COMMAND = re.compile(r"pkgmgr(?:\{\})?(?: --?[a-z][\w-]*(?: (?!(?:" + "|".join(TOP) + r")\b)[^\s']+)?)* (?:"
                     + "|".join(TOP) + r")\b|'pkgmgr \{\}'|'\{\} --help'")
OPTION = re.compile(r"(?:\bpass |\bwith |\bwithout |\bor |'|\()--[a-z][a-z-]+")
HELP_CALLS = frozenset({"command", "group", "add_argument", "add_parser", "add_mutually_exclusive_group"})


def template(node: ast.AST) -> str:
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)  # type: ignore[misc]
    assert isinstance(node, ast.Constant)
    return node.value


# A line of source that could hold part of a site: the literal parts of a template are verbatim in it.
_CANDIDATE = re.compile(r"pkgmgr|--[a-z]|\{\} --help")


def _literals(tree: ast.Module, lines: list[int]) -> Iterator[ast.Constant | ast.JoinedStr]:
    """The string literals of `tree` that are not docstrings, not inside the parsers' own help
    (HELP_CALLS) and not the parts of an f-string; only the subtrees that span one of `lines` (the
    source lines that could hold a site) are visited."""

    def spans(node: ast.AST) -> bool:
        first = getattr(node, "lineno", None)
        if first is None:
            return True
        at = bisect.bisect_left(lines, first)
        return at < len(lines) and lines[at] <= (node.end_lineno or first)

    def visit(node: ast.AST) -> Iterator[ast.Constant | ast.JoinedStr]:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                yield node
            return
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in HELP_CALLS:
                return
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.JoinedStr):
            yield node
            children = [c for c in children if not isinstance(c, ast.Constant)]  # its own text: the template
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                children = [c for c in children if c is not first]  # the docstring
        for child in children:
            if spans(child):
                yield from visit(child)

    return visit(tree)


@functools.cache
def sites() -> dict[tuple[str, str], int]:
    """(module, template) -> its line, for every literal that suggests a command or an option."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted(PKG.rglob("*.py")):
        if "_schemas_generated" in path.parts:
            continue
        source = path.read_text(encoding="utf-8")
        lines = [number for number, line in enumerate(source.splitlines(), 1) if _CANDIDATE.search(line)]
        if not lines:
            continue
        for node in _literals(ast.parse(source), lines):
            text = template(node)
            if COMMAND.search(text) or OPTION.search(text):
                key = (path.relative_to(REPO).as_posix(), text)
                found[key] = min(found.get(key, node.lineno), node.lineno)  # a template written twice: its first line
    return found


def commands_in(text: str) -> list[str]:
    """The pkgmgr commands a template names, each up to the end of its quote or sentence; a
    command built whole at run time (`'pkgmgr {}'`, `'{} --help'`) is `{}`."""
    out = []
    for match in COMMAND.finditer(text):
        if match.group().startswith("'"):
            out.append("{}")
            continue
        rest = text[match.start():]
        end = re.search(r"'|`|\)|;|, |\n| \(| or remove| to | and add", rest)
        out.append(rest[: end.start()] if end else rest)
    return out
