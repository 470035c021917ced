"""Reading an Elixir script without compiling it: which modules it defines, which of them
`use Eva.Core.Extension`, and which export `setup/1` (for Eva's loader rules, `eva.py`).

Eva compiles a script to learn this (`Code.require_file` in loader.ex); pkgmgr cannot run
Elixir, so it reads the source: comments, strings, charlists, heredocs, sigils and character
literals are skipped; `do`/`fn` open a block and `end` closes it (`do:` and `:do` do not);
`defmodule ALIAS do` names a module, nested ones under their parent. What this cannot see —
module names built by macros or `alias` expansions, code that fails to compile — is listed in
docs/hosts.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[?!]?")
_ALIAS = re.compile(r"(?:__MODULE__|[A-Z][A-Za-z0-9_]*)(?:\.[A-Z][A-Za-z0-9_]*)*")
_SIGIL_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">", "/": "/", "|": "|", '"': '"', "'": "'"}


class SourceError(ValueError):
    """The source cannot be read as Elixir (an unterminated string, heredoc or sigil)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Token:
    kind: str  # word | alias | punct
    text: str
    line: int
    colon_after: bool = False  # `do:` (a keyword key), not a block
    colon_before: bool = False  # `:do` (an atom)
    dot_before: bool = False  # `x.end` (a field)


@dataclass
class Module:
    name: str
    line: int
    uses_extension: bool = False
    setup_arities: list[tuple[int, int]] = field(default_factory=list)  # (required, total) per clause

    @property
    def exports_setup1(self) -> bool:
        return any(low <= 1 <= high for low, high in self.setup_arities)


def tokens(source: str) -> list[Token]:
    """The words, aliases and punctuation of `source`, everything literal skipped."""
    out: list[Token] = []
    i, n, line = 0, len(source), 1
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r\f\v;":
            i += 1
        elif c == "#":
            while i < n and source[i] != "\n":
                i += 1
        elif source.startswith('"""', i) or source.startswith("'''", i):
            i, line = _heredoc(source, i, line, source[i])
        elif c in "\"'":
            i, line = _quoted(source, i + 1, line, c)
        elif c == "~" and i + 1 < n and source[i + 1].isalpha():
            i, line = _sigil(source, i, line)
        elif c == "?" and i + 1 < n and (not out or out[-1].kind == "punct" or source[i - 1] in " \t\n(,[{"):
            i += 2  # a character literal: ?a, ?" (an escape takes one more)
            if source[i - 1] == "\\" and i < n:
                i += 1
        elif c == ":" and i + 1 < n and source[i + 1] in "\"'":
            i, line = _quoted(source, i + 2, line, source[i + 1])  # :"quoted atom"
        elif c.isalpha() or c == "_":
            match = _IDENT.match(source, i)
            assert match is not None
            word = match.group()
            end = match.end()
            if word[0].isupper():
                alias = _ALIAS.match(source, i)
                assert alias is not None
                word, end = alias.group(), alias.end()
                kind = "alias"
            else:
                kind = "word"
                if word == "__MODULE__":
                    alias = _ALIAS.match(source, i)
                    assert alias is not None
                    word, end, kind = alias.group(), alias.end(), "alias"
            colon_after = end < n and source[end] == ":" and not source.startswith("::", end)
            colon_before = i > 0 and source[i - 1] == ":" and not (i > 1 and source[i - 2] == ":")
            dot_before = i > 0 and source[i - 1] == "."
            out.append(Token(kind, word, line, colon_after, colon_before, dot_before))
            i = end
        elif c.isdigit():
            while i < n and (source[i].isalnum() or source[i] in "_."):
                if source[i] == "." and not (i + 1 < n and source[i + 1].isdigit()):
                    break
                i += 1
        else:
            out.append(Token("punct", c, line))
            i += 1
    return out


def _quoted(source: str, i: int, line: int, quote: str) -> tuple[int, int]:
    """Past a string or charlist opened before `i` (escapes and #{...} interpolations skipped)."""
    start = line
    n = len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if c == "\n":
            line += 1
        elif c == quote:
            return i + 1, line
        elif c == "#" and i + 1 < n and source[i + 1] == "{":
            i, line = _interpolation(source, i + 2, line)
            continue
        i += 1
    raise SourceError(f"a string opened on line {start} is never closed", start)


def _interpolation(source: str, i: int, line: int) -> tuple[int, int]:
    depth = 1
    n = len(source)
    start = line
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
        elif c in "\"'":
            i, line = _quoted(source, i + 1, line, c)
            continue
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1, line
        i += 1
    raise SourceError(f"an interpolation opened on line {start} is never closed", start)


def _heredoc(source: str, i: int, line: int, quote: str) -> tuple[int, int]:
    start = line
    close = quote * 3
    i += 3
    n = len(source)
    while i < n:
        if source[i] == "\n":
            line += 1
            j = i + 1
            while j < n and source[j] in " \t":
                j += 1
            if source.startswith(close, j):
                return j + 3, line
        elif source[i] == "\\":
            i += 1
        elif source[i] == "#" and i + 1 < n and source[i + 1] == "{":
            i, line = _interpolation(source, i + 2, line)
            continue
        i += 1
    raise SourceError(f"a heredoc opened on line {start} is never closed", start)


def _sigil(source: str, i: int, line: int) -> tuple[int, int]:
    start = line
    j = i + 1
    n = len(source)
    while j < n and source[j].isalpha():
        j += 1
    if source.startswith('"""', j) or source.startswith("'''", j):
        end, line = _heredoc(source, j, line, source[j])
    else:
        if j >= n or source[j] not in _SIGIL_CLOSE:
            return j, line  # `~` followed by a name only: an operator such as ~>
        opener, closer = source[j], _SIGIL_CLOSE[source[j]]
        depth = 1
        end = j + 1
        while end < n:
            c = source[end]
            if c == "\\":
                end += 2
                continue
            if c == "\n":
                line += 1
            elif c == closer and (opener == closer or depth == 1):
                end += 1
                break
            elif c == opener and opener != closer:
                depth += 1
            elif c == closer:
                depth -= 1
            end += 1
        else:
            raise SourceError(f"a sigil opened on line {start} is never closed", start)
    while end < n and source[end].isalpha():  # modifiers: ~r/x/i
        end += 1
    return end, line


def modules(source: str) -> list[Module]:
    """Every module `source` defines (nested ones by their full name), in order."""
    toks = tokens(source)
    found: list[Module] = []
    stack: list[tuple[int, Module | None]] = []  # (depth the block opened at, the module it opened)
    depth = 0
    pending: Module | None = None  # a defmodule waiting for its `do`
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok.kind == "word" and not tok.colon_before and not tok.dot_before:
            if tok.text == "defmodule" and i + 1 < len(toks) and toks[i + 1].kind == "alias":
                alias = toks[i + 1].text
                parent = _current(stack)
                name = _join(parent.name if parent else None, alias)
                pending = Module(name, tok.line)
                found.append(pending)
                i += 2
                continue
            if tok.text in ("do", "fn") and not tok.colon_after:
                stack.append((depth, pending if tok.text == "do" else None))
                if tok.text == "do":
                    pending = None
                depth += 1
            elif tok.text == "end" and not tok.colon_after:
                if stack:
                    stack.pop()
                depth = max(0, depth - 1)
            elif tok.text == "use" and i + 1 < len(toks) and toks[i + 1].kind == "alias":
                current = _current(stack)
                if current is not None and toks[i + 1].text == "Eva.Core.Extension":
                    current.uses_extension = True
            elif tok.text in ("def", "defdelegate") and i + 1 < len(toks) and toks[i + 1].text == "setup":
                current = _current(stack)
                if current is not None:
                    current.setup_arities.append(_arity(toks, i + 2))
        elif tok.kind == "word" and tok.text == "do" and tok.colon_after and pending is not None:
            pending = None  # `defmodule X, do: ...`: no block, nothing nested
        i += 1
    return found


def _current(stack: list[tuple[int, Module | None]]) -> Module | None:
    for _, module in reversed(stack):
        if module is not None:
            return module
    return None


def _join(parent: str | None, alias: str) -> str:
    if alias.startswith("__MODULE__"):
        rest = alias[len("__MODULE__"):].lstrip(".")
        return ".".join(p for p in (parent or "", rest) if p)
    if alias.startswith("Elixir."):
        return alias[len("Elixir."):]
    return f"{parent}.{alias}" if parent else alias


def _arity(toks: list[Token], i: int) -> tuple[int, int]:
    """(required, total) arguments of the function head starting at `toks[i]`: `(a, b \\\\ 1)`
    gives (1, 2); no parentheses: one argument when one follows before `do`/`,`."""
    if i >= len(toks) or toks[i].text != "(":
        if i < len(toks) and toks[i].kind in ("word", "alias") and toks[i].text not in ("do", "when"):
            return 1, 1
        return 0, 0
    depth, args, defaults, seen = 0, 0, 0, False
    i += 1
    pending_default = False
    while i < len(toks):
        t = toks[i]
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif t.text == "," and depth == 0:
            args += 1
            defaults += pending_default
            pending_default = False
        elif t.text == "\\" and depth == 0 and i + 1 < len(toks) and toks[i + 1].text == "\\":
            pending_default = True
        seen = True
        i += 1
    if seen:
        args += 1
        defaults += pending_default
    return args - defaults, args


def camelize(name: str) -> str:
    """Elixir's `Macro.camelize/1`, byte for byte: `_x` -> `X` for a lower-case letter, `_1`
    -> `1`, doubled underscores collapse, a leading one is dropped, `/` -> `.`."""
    data = name.encode("utf-8")
    out = bytearray()

    def upper(b: int) -> int:
        return b - 32 if 97 <= b <= 122 else b

    def head(i: int) -> int:
        while i < len(data) and data[i] == 95:  # leading underscores
            i += 1
        if i < len(data):
            out.append(upper(data[i]))
            i += 1
        return i

    i = head(0)
    while i < len(data):
        b = data[i]
        if b == 95 and i + 1 < len(data) and data[i + 1] == 95:
            i += 1
            continue
        if b == 95 and i + 1 < len(data) and 97 <= data[i + 1] <= 122:
            out.append(upper(data[i + 1]))
            i += 2
            continue
        if b == 95 and i + 1 < len(data) and 48 <= data[i + 1] <= 57:
            out.append(data[i + 1])
            i += 2
            continue
        if b == 95 and i + 1 == len(data):
            i += 1
            continue
        if b == 47:  # "/"
            out.append(46)
            i = head(i + 1)
            continue
        out.append(b)
        i += 1
    return out.decode("utf-8", "replace")


def namespace(name: str) -> str:
    """`Eva.Core.Extension.namespace/1`: Eva.Extension.<Macro.camelize(name with - as _)>."""
    return "Eva.Extension." + camelize(name.replace("-", "_"))
