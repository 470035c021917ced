"""Error codes are written as `Code` members (pkgmgr/errors.py), never as string literals (issue
12 item 4): an AST scan of pkgmgr/ for the places a code is given or compared."""

from __future__ import annotations

import ast
from pathlib import Path

from pkgmgr.errors import Code

PKG = Path(__file__).resolve().parents[1] / "pkgmgr"
CODES = {code.value for code in Code}
# callables that take the code positionally, and at which argument
POSITIONAL = {"Problem": 0, "scope_rule": 0, "ProblemSink": 1, "_error": 0, "TreeError": 0}


def _literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CODES


def _literals(node: ast.AST) -> list[ast.AST]:
    """`node` itself, or the items of a tuple/list/set (or frozenset(...) of one), that are code literals."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("frozenset", "set") and node.args:
        node = node.args[0]
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [item for item in items if _literal(item)]


def _is_code(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "code") or (isinstance(node, ast.Name)
                                                                         and "code" in node.id.lower())


def code_literals(tree: ast.AST) -> list[ast.AST]:
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "code":
            found += _literals(node.value)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            index = POSITIONAL.get(name)
            if index is not None and len(node.args) > index:
                found += _literals(node.args[index])
        elif isinstance(node, ast.Compare) and any(_is_code(side) for side in (node.left, *node.comparators)):
            for side in (node.left, *node.comparators):
                found += _literals(side)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(_is_code(t) or (isinstance(t, ast.Name) and t.id in ("INVALID", "ESCAPES",
                                                                                              "UNREADABLE"))
                                              for t in targets):
                found += _literals(node.value)
    for node in ast.walk(tree):  # defaults of a parameter named code
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
                if "code" in arg.arg:
                    found += _literals(default)
            for arg, default in zip(args.kwonlyargs, args.kw_defaults):
                if default is not None and "code" in arg.arg:
                    found += _literals(default)
    return found


def test_no_error_code_is_a_string_literal() -> None:
    offending = []
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PKG:
            continue  # the table itself
        for node in code_literals(ast.parse(path.read_text(encoding="utf-8"))):
            offending.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {node.value!r}")  # type: ignore[attr-defined]
    assert offending == [], "write Code.<NAME> (pkgmgr.errors.Code) instead of the string:\n" + "\n".join(offending)


def test_the_scan_sees_each_form() -> None:
    source = '''
PkgmgrError("x", code="not_found")
if error.code == "usage": pass
if error.code in ("network_error", Code.HTTP_ERROR): pass
Problem("invalid_manifest", "f", "", "m")
ProblemSink("f", "invalid_bundle")
INVALID = "invalid_index"
UNREADABLE = frozenset({"rate_limited"})
class UsageError(PkgmgrError):
    code = "usage"
def f(code="invalid_layout"): pass
PkgmgrError("x", code=Code.NOT_FOUND)
status = "locked"
'''
    assert sorted(n.value for n in code_literals(ast.parse(source))) == sorted(  # type: ignore[attr-defined]
        ["not_found", "usage", "network_error", "invalid_manifest", "invalid_bundle", "invalid_index", "rate_limited",
         "usage", "invalid_layout"])
