"""A trigger's prompt as Compozy judges it: a Go `text/template` over the activation envelope.

Compozy parses a trigger prompt that holds `{{` or `}}` with Go's `text/template` (no functions
beyond the built-in ones) and then walks the tree (`internal/automation/model/template.go`
`ValidateTriggerPromptTemplate`, `ParseTriggerPromptTemplate`, `validateTemplateNode`): every
field lookup must name the envelope — `.Kind`, `.Scope`, `.WorkspaceID`, `.Source` (no child
fields) or anything under `.Data`; lookups rooted at a variable (`$x.Y`, `$.Kind`) are refused;
`index` reaches into `.Data` only; inside `range` the dot is unknown, so a field there is
refused; inside `with .Data.x` the dot is that path; `{{template "n" .}}` passes only the root.

`prompt_template_problem` is a small reader of Go's template syntax written for this check (the
lexer's delimiters, trim markers, comments, strings, fields, variables, pipelines, the control
words and their `end`s), not a template engine: nothing is executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BUILTINS = frozenset({"and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf",
                      "println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne"})
ENVELOPE_LEAVES = ("Kind", "Scope", "WorkspaceID", "Source")
_SPACE = " \t\r\n"
_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\n]+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<char>'(?:[^'\\\n]|\\.)+')
  | (?P<declare>:=)
  | (?P<assign>=)
  | (?P<field>\.[A-Za-z_][A-Za-z0-9_]*)
  | (?P<variable>\$[A-Za-z0-9_]*)
  | (?P<number>[-+]?(?:0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eEpP][-+]?[0-9]+)?|\.[0-9]+)i?)
  | (?P<dot>\.)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[()|,])
""", re.VERBOSE)


class TemplateError(Exception):
    pass


# --- the tree: what the check needs of Go's parse nodes ----------------------------------------


@dataclass
class Operand:
    """A field chain (`root` "dot" with fields), a variable (`root` "$name"), a parenthesised
    pipeline (`pipe`), an identifier (`word`) or a literal (`root` "literal")."""

    root: str
    fields: list[str] = field(default_factory=list)
    pipe: "list[list[Operand]] | None" = None


Pipe = list[list[Operand]]  # commands, each a list of operands


@dataclass
class Node:
    kind: str  # action | if | with | range | template | define
    pipe: Pipe | None = None
    body: "list[Node]" = field(default_factory=list)
    orelse: "list[Node]" = field(default_factory=list)


# --- reading ------------------------------------------------------------------------------------


def _actions(text: str) -> list[list[tuple[str, str]]]:
    """The token lists of the actions of `text` (comments dropped); raises TemplateError."""
    actions: list[list[tuple[str, str]]] = []
    position = 0
    while True:
        start = text.find("{{", position)
        if start < 0:
            return actions
        cursor = start + 2
        if text.startswith("-", cursor) and cursor + 1 < len(text) and text[cursor + 1] in _SPACE:
            cursor += 2
        if text.startswith("/*", cursor):
            end = text.find("*/", cursor + 2)
            if end < 0:
                raise TemplateError("unclosed comment")
            after = end + 2
            if text.startswith(" -}}", after):
                after += 4
            elif text.startswith("}}", after):
                after += 2
            else:
                raise TemplateError("comment ends before closing delimiter")
            position = after
            continue
        tokens: list[tuple[str, str]] = []
        while True:
            if cursor >= len(text):
                raise TemplateError("unclosed action")
            if text.startswith("}}", cursor):
                position = cursor + 2
                break
            match = _TOKEN.match(text, cursor)
            if match is None:
                raise TemplateError(f"unrecognized character in action: {text[cursor]!r}")
            kind = match.lastgroup or ""
            spaced = cursor > 0 and text[cursor - 1] in _SPACE
            cursor = match.end()
            if kind == "field" and spaced:
                tokens.append(("sep", ""))  # `.A .B` is two operands, `.A.B` one chain
            if kind != "space":
                tokens.append((kind, match.group()))
            elif text.startswith("-}}", cursor):  # the right trim marker: white space, then -}}
                position = cursor + 3
                break
        actions.append(tokens)


class _Parser:
    def __init__(self, actions: list[list[tuple[str, str]]]) -> None:
        self.actions = actions
        self.index = 0
        self.variables: list[set[str]] = [{"$"}]

    def parse(self) -> tuple[list[Node], list[Node]]:
        """(the main tree, the `define`d and `block` trees)."""
        defined: list[Node] = []
        nodes, stop = self._list(defined, top=True)
        if stop is not None:
            raise TemplateError(f"unexpected {{{{{stop}}}}}")
        return nodes, defined

    def _list(self, defined: list[Node], *, top: bool = False, in_range: bool = False) -> tuple[list[Node], str | None]:
        """Nodes up to an `else`/`end` (returned as the stop word, its tokens left current)."""
        nodes: list[Node] = []
        while self.index < len(self.actions):
            tokens = self.actions[self.index]
            self.index += 1
            if not tokens:
                raise TemplateError("missing value for command")
            kind, word = tokens[0]
            if kind == "word" and word in ("end", "else"):
                if top:
                    raise TemplateError(f"unexpected {{{{{word}}}}}")
                self.index -= 1
                return nodes, word
            if kind == "word" and word in ("if", "with", "range"):
                nodes.append(self._control(word, tokens[1:], defined, in_range))
            elif kind == "word" and word in ("define", "block"):
                if not top:
                    raise TemplateError(f"unexpected {word!r} in command")
                name, rest = self._name(tokens[1:], word)
                if word == "define" and rest:
                    raise TemplateError("unexpected tokens after define clause")
                pipe = self._pipe(rest) if word == "block" else None
                body, stop = self._list(defined)
                self._end(stop, word)
                defined.append(Node("define", None, body))
                if word == "block":
                    nodes.append(Node("template", pipe))
            elif kind == "word" and word == "template":
                _, rest = self._name(tokens[1:], word)
                nodes.append(Node("template", self._pipe(rest) if rest else None))
            elif kind == "word" and word in ("break", "continue"):
                if not in_range or len(tokens) > 1:
                    raise TemplateError(f"{{{{{word}}}}} outside {{{{range}}}}")
            else:
                nodes.append(Node("action", self._pipe(tokens, declare=True)))
        if top:
            return nodes, None
        raise TemplateError("unexpected EOF")

    def _control(self, word: str, tokens: list[tuple[str, str]], defined: list[Node], in_range: bool) -> Node:
        self.variables.append(set())
        node = Node(word, self._pipe(tokens, declare=True))
        node.body, stop = self._list(defined, in_range=in_range or word == "range")
        if stop == "else":
            tokens = self.actions[self.index]
            self.index += 1
            if len(tokens) > 1 and tokens[1] == ("word", word) and word in ("if", "with"):
                node.orelse = [self._control(word, tokens[2:], defined, in_range)]  # else if / else with
                self.variables.pop()
                return node
            if len(tokens) > 1:
                raise TemplateError("unexpected tokens after {{else}}")
            node.orelse, stop = self._list(defined, in_range=in_range)
        self._end(stop, word)
        self.variables.pop()
        return node

    def _end(self, stop: str | None, word: str) -> None:
        if stop != "end":
            raise TemplateError(f"unexpected EOF in {word}")
        tokens = self.actions[self.index]
        self.index += 1
        if len(tokens) > 1:
            raise TemplateError("unexpected tokens after {{end}}")

    @staticmethod
    def _name(tokens: list[tuple[str, str]], word: str) -> tuple[str, list[tuple[str, str]]]:
        if not tokens or tokens[0][0] not in ("string", "raw"):
            raise TemplateError(f"{word} needs a quoted template name")
        return tokens[0][1], tokens[1:]

    def _pipe(self, tokens: list[tuple[str, str]], *, declare: bool = False) -> Pipe:
        """A pipeline, after its variable declaration (`$x :=`, `$x =`, `$i, $e :=`) if any."""
        if declare:
            kinds = [kind for kind, _ in tokens[:4]]
            names: list[str] = []
            if kinds[:2] in (["variable", "declare"], ["variable", "assign"]):
                names, op, tokens = [tokens[0][1]], tokens[1][0], tokens[2:]
            elif kinds[:3] == ["variable", "punct", "variable"] and tokens[1][1] == "," and kinds[3:4] in (
                    ["declare"], ["assign"]):
                names, op, tokens = [tokens[0][1], tokens[2][1]], tokens[3][0], tokens[4:]
            for name in names:
                if op == "declare":
                    self.variables[-1].add(name)
                elif not any(name in scope for scope in self.variables):
                    raise TemplateError(f"undefined variable {name!r}")
        commands, rest = self._commands(tokens, nested=False)
        if rest:
            raise TemplateError(f"unexpected {rest[0][1]!r} in command")
        return commands

    def _commands(self, tokens: list[tuple[str, str]], *, nested: bool) -> tuple[Pipe, list[tuple[str, str]]]:
        commands: Pipe = []
        command: list[Operand] = []
        while tokens:
            kind, text = tokens[0]
            if (kind, text) == ("punct", ")"):
                if not nested:
                    raise TemplateError("unexpected right paren")
                break
            tokens = tokens[1:]
            if kind == "sep":
                continue
            if (kind, text) == ("punct", "|"):
                if not command:
                    raise TemplateError("missing value for command")
                commands.append(command)
                command = []
                continue
            if (kind, text) == ("punct", "("):
                inner, tokens = self._commands(tokens, nested=True)
                if not tokens:
                    raise TemplateError("unclosed left paren")
                tokens = tokens[1:]
                operand = Operand("pipe", pipe=inner)
            elif kind == "field":
                operand = Operand("dot", [text[1:]])
            elif kind == "dot":
                operand = Operand("dot")
            elif kind == "variable":
                if not any(text in scope for scope in self.variables):
                    raise TemplateError(f"undefined variable {text!r}")
                operand = Operand(text)
            elif kind == "word":
                if text in ("true", "false", "nil"):
                    operand = Operand("literal")
                elif text in BUILTINS:
                    operand = Operand("word:" + text)
                else:
                    raise TemplateError(f"function {text!r} not defined")
            elif kind in ("string", "raw", "char", "number"):
                operand = Operand("literal")
            else:
                raise TemplateError(f"unexpected {text!r} in operand")
            while tokens and tokens[0][0] == "field" and not operand.root.startswith(("literal", "word:")):  # .A.B, $x.A, (...).A
                operand.fields.append(tokens[0][1][1:])
                tokens = tokens[1:]
            command.append(operand)
        if not command:
            raise TemplateError("missing value for command")
        commands.append(command)
        return commands, tokens


# --- Compozy's walk -----------------------------------------------------------------------------

_UNKNOWN = None  # the dot inside range: no path is known


def _path(operand: Operand, dot: list[str] | None) -> list[str] | None:
    """`scopedTemplateFieldPath` of one operand: its envelope path, or None when unresolved."""
    if operand.root == "dot":
        return None if dot is None else dot + operand.fields
    if operand.root == "pipe" and operand.pipe is not None and len(operand.pipe) == 1 and len(operand.pipe[0]) == 1:
        base = _path(operand.pipe[0][0], dot)
        return None if base is None else base + operand.fields
    return None


def _pipe_path(pipe: Pipe | None, dot: list[str] | None) -> list[str] | None:
    if pipe is None or len(pipe) != 1 or len(pipe[0]) != 1:
        return None
    return _path(pipe[0][0], dot)


def _variable_rooted(operand: Operand) -> bool:
    if operand.root.startswith("$"):
        return True
    return (operand.root == "pipe" and operand.pipe is not None and len(operand.pipe) == 1
            and len(operand.pipe[0]) == 1 and _variable_rooted(operand.pipe[0][0]))


def _lookup(path: list[str]) -> str | None:
    """`validateActivationFieldPath`."""
    if not path or path[0] == "Data":
        return None
    if path[0] in ENVELOPE_LEAVES:
        return f"activation envelope field {path[0]!r} has no child field {path[1]!r}" if len(path) > 1 else None
    return f"unknown activation envelope field {'.' + '.'.join(path)!r} (use .Kind, .Scope, .WorkspaceID, .Source or .Data)"


def _check_pipe(pipe: Pipe | None, dot: list[str] | None) -> str | None:
    for command in pipe or []:
        if command and command[0].root == "word:index":
            target = command[1] if len(command) > 1 else None
            if target is None:
                return "index requires a target expression"
            if _variable_rooted(target):
                return "index reaches into .Data only, not into a variable"
            path = _path(target, dot)
            if not path or path[0] != "Data":
                return "index reaches into .Data only"
        for operand in command:
            if problem := _check_operand(operand, dot):
                return problem
    return None


def _check_operand(operand: Operand, dot: list[str] | None) -> str | None:
    if operand.root.startswith("$"):
        return "lookups rooted at a variable are not supported" if operand.fields else None
    if operand.root == "pipe":
        if operand.fields:
            if _variable_rooted(operand):
                return "lookups rooted at a variable are not supported"
            path = _path(operand, dot)
            return _lookup(path) if path is not None else "a field lookup whose scope is unknown (inside range?)"
        return _check_pipe(operand.pipe, dot)
    if operand.root == "dot" and operand.fields:
        path = _path(operand, dot)
        return _lookup(path) if path is not None else "a field lookup whose scope is unknown (inside range?)"
    return None


def _check_nodes(nodes: list[Node], dot: list[str] | None) -> str | None:
    for node in nodes:
        problem = _check_pipe(node.pipe, dot)
        if problem is None and node.kind == "template":
            if _pipe_path(node.pipe, dot) != []:
                problem = "a template invocation may pass only the root dot: {{template \"name\" .}}"
        elif problem is None and node.kind in ("if", "with", "range"):
            inner = dot if node.kind == "if" else _UNKNOWN if node.kind == "range" else _pipe_path(node.pipe, dot)
            problem = _check_nodes(node.body, inner) or _check_nodes(node.orelse, dot)
        if problem:
            return problem
    return None


def prompt_template_problem(prompt: str) -> str | None:
    """What Compozy's `ValidateTriggerPromptTemplate` refuses in `prompt`, or None."""
    if "{{" not in prompt and "}}" not in prompt:
        return None
    try:
        tree, defined = _Parser(_actions(prompt)).parse()
        for nodes in (tree, *(node.body for node in defined)):
            if problem := _check_nodes(nodes, []):
                return problem
    except TemplateError as exc:
        return f"is not a valid template: {exc}"
    except RecursionError:
        return "is not a valid template: nested too deeply (pkgmgr's limit)"
    return None
