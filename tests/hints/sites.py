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
import functools
import re
from pathlib import Path

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


def _skipped(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in HELP_CALLS:
                skip.update(id(sub) for sub in ast.walk(node))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(value) for value in node.values)
    return skip


@functools.cache
def sites() -> dict[tuple[str, str], int]:
    """(module, template) -> its line, for every literal that suggests a command or an option."""
    found: dict[tuple[str, str], int] = {}
    for path in sorted(PKG.rglob("*.py")):
        if "_schemas_generated" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _skipped(tree)
        for node in ast.walk(tree):
            if id(node) in skip or not (isinstance(node, ast.JoinedStr) or (
                    isinstance(node, ast.Constant) and isinstance(node.value, str))):
                continue
            text = template(node)
            if COMMAND.search(text) or OPTION.search(text):
                found[(path.relative_to(REPO).as_posix(), text)] = node.lineno
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
