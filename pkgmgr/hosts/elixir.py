"""Reading an Elixir script without compiling it: which modules it defines, which of them are
Eva extension modules (`use Eva.Core.Extension`, or a `def __eva_extension__` of their own), which
export `setup/1`, and which sibling scripts it requires (for Eva's loader rules, `eva.py`); and
Elixir's name functions as Eva applies them (`Macro.camelize`, `Module.concat`, `String.downcase`).

Eva compiles a script to learn this (`Code.require_file` in loader.ex). With Elixir on the machine,
`elixir_quoted.py` has Elixir parse the script (never compile or run it) and reads the quoted form;
without it, `read_source` here reads the source: comments, strings, charlists, heredocs, sigils and
character literals are skipped; `do`/`fn` open a block and `end` closes it (`do:` and `:do` do not);
`defmodule ALIAS` (or a quoted atom) names a module, nested ones under their parent as Elixir nests
them. What this cannot see — names built at run time, code that does not compile — is listed in
docs/hosts.md, and the reading says so in `unknown`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_IDENT = re.compile(r"[^\W\d][\w]*[?!]?")
_ALIAS = re.compile(r"(?:__MODULE__|[A-Z][A-Za-z0-9_]*)(?:\.[A-Z][A-Za-z0-9_]*)*")
_ALIAS_SEGMENT = re.compile(r"[A-Z][A-Za-z0-9_]*\Z")
_SIGIL_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">", "/": "/", "|": "|", '"': '"', "'": "'"}
_OPEN, _CLOSE = "([{", ")]}"
# Elixir refuses these anywhere, comments and strings included (elixir_tokenizer's bidi check).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
ATOM_MAX = 255  # characters in an atom (the BEAM's limit; Module.concat raises beyond it)
USING = "Elixir.Eva.Core.Extension"
MARKER = "__eva_extension__"
_REQUIRERS = frozenset({"require_file", "compile_file", "eval_file"})
_BUILDERS = {"Module": frozenset({"create"}), "Code": frozenset({"eval_string", "eval_quoted", "compile_string",
                                                                 "compile_quoted"})}


class SourceError(ValueError):
    """The source cannot be read as Elixir (an unterminated string, heredoc or sigil, a block
    never closed, a character Elixir's tokenizer refuses)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Token:
    kind: str  # word | alias | punct | string | atom
    text: str  # a string's or quoted atom's text ("" when it holds an interpolation)
    line: int
    colon_after: bool = False  # `do:` (a keyword key), not a block
    colon_before: bool = False  # `:do` (an atom)
    dot_before: bool = False  # `x.end` (a field)
    interpolated: bool = False  # a string or quoted atom whose text is known only when it runs


@dataclass
class Module:
    name: str  # as Elixir prints it: Eva.Extension.X, or :"Elixir.Eva.Extension.1x"
    line: int
    uses_extension: bool = False
    setup_arities: list[tuple[int, int]] = field(default_factory=list)  # (required, total) per clause
    atom: str = ""  # Atom.to_string of the module: "Elixir.Eva.Extension.X", or "x" for :x
    marker: bool = False  # defines __eva_extension__/0 itself, which is all Eva's loader looks for
    dynamic_defs: bool = False  # `def unquote(name)(...)`: what it exports is known only when it compiles

    @property
    def exports_setup1(self) -> bool:
        return any(low <= 1 <= high for low, high in self.setup_arities)

    @property
    def is_extension(self) -> bool:
        return self.uses_extension or self.marker


@dataclass(frozen=True)
class Require:
    path: str  # relative to the script's own directory, as written
    line: int


@dataclass
class Reading:
    """A script as pkgmgr reads it: its modules, what Eva would refuse to compile (`problems`:
    (line, message)), what cannot be known without running it (`unknown`), and the sibling scripts
    it requires at load time by a literal path beside it (`requires`)."""

    modules: list[Module] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    requires: list[Require] = field(default_factory=list)

    def note(self, what: str) -> None:
        if what not in self.unknown:
            self.unknown.append(what)


# --- names, as Elixir computes them ---------------------------------------------------------------


def camelize(name: str) -> str:
    """Elixir's `Macro.camelize/1`, byte for byte: `_x` -> `X` for a lower-case letter, `_1`
    -> `1`, doubled underscores collapse, a leading one is dropped, `/` -> `.`."""
    data = name.encode("utf-8", "surrogatepass")
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
    return out.decode("utf-8", "surrogatepass")


def concat_part(part: str) -> str:
    """A binary as `Module.concat` appends it (`:elixir_aliases.to_partial`): one leading
    `Elixir.` or `.` dropped."""
    if part.startswith("Elixir."):
        return part[len("Elixir."):]
    return part[1:] if part.startswith(".") else part


def namespace_atom(name: str) -> str:
    """`Eva.Core.Extension.namespace/1` as an atom's text: `Module.concat(Eva.Extension,
    Macro.camelize(name with - as _))`."""
    return "Elixir.Eva.Extension." + concat_part(camelize(name.replace("-", "_")))


def display(atom: str) -> str:
    """A module as Elixir's `inspect` shows it: `Eva.Extension.X`, or `:"Elixir.Eva.Extension.1x"`
    when it is no alias."""
    if atom.startswith("Elixir."):
        segments = atom[len("Elixir."):].split(".")
        if all(_ALIAS_SEGMENT.match(s) for s in segments):
            return ".".join(segments)
    return ':"' + atom.replace("\\", "\\\\").replace('"', '\\"') + '"'


def namespace(name: str) -> str:
    """`Eva.Core.Extension.namespace/1` as Elixir prints it (`Eva.Extension.MyExt`)."""
    return display(namespace_atom(name))


def downcase(text: str) -> str:
    """Elixir's `String.downcase/1` (default mode): each character's full lower-case mapping, with
    no final-sigma rule (Python's `str.lower` applies one: `ΟΔΟΣ` -> `οδος`, Elixir gives `οδοσ`)."""
    return "".join(c.lower() for c in text)


def alias_form(atom: str) -> str | None:
    """The alias that names `atom` when one does (`Elixir.Eva.Extension.Notes.V2` ->
    `Eva.Extension.Notes.V2`), else None."""
    shown = display(atom)
    return None if shown.startswith(":") else shown


def suggested_module(name: str) -> str:
    """A module name Eva accepts for the extension `name`: its namespace with each segment's first
    letter upper-cased when that makes an alias (`notes.v2` -> `Eva.Extension.Notes.V2`), else the
    namespace as a quoted atom."""
    atom = namespace_atom(name)
    head, _, rest = atom.partition("Elixir.Eva.Extension.")
    segments = rest.split(".")
    raised = ".".join(s[:1].upper() + s[1:] for s in segments)
    candidate = "Elixir.Eva.Extension." + raised
    if downcase(candidate) == downcase(atom) and alias_form(candidate):
        return display(candidate)
    return display(atom)


# --- the tokenizer --------------------------------------------------------------------------------


def tokens(source: str) -> list[Token]:
    """The words, aliases, literals and punctuation of `source` (comments skipped). Raises
    SourceError for what Elixir's tokenizer refuses: an unterminated literal, a character outside
    identifiers and literals that is no Elixir syntax (a BOM, a lone carriage return, NUL, a
    no-break space), a bidirectional control character anywhere."""
    out: list[Token] = []
    i, n, line = 0, len(source), 1
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t;":
            i += 1
        elif c == "\r":
            if not source.startswith("\r\n", i):
                raise SourceError(f"unexpected token: a carriage return not followed by a newline on line {line} "
                                  "(Elixir reads only \\n and \\r\\n as line ends)", line)
            i += 1
        elif c == "#":
            while i < n and source[i] != "\n":
                if source[i] in _BIDI:
                    raise SourceError(f"invalid bidirectional formatting character (U+{ord(source[i]):04X}) in "
                                      f"a comment on line {line}", line)
                i += 1
        elif source.startswith('"""', i) or source.startswith("'''", i):
            text, i, line = _heredoc(source, i, line, source[i])
            out.append(Token("string", text or "", line, interpolated=text is None))
        elif c in "\"'":
            start = line
            text, i, line = _quoted(source, i + 1, line, c)
            out.append(Token("string", text or "", start, interpolated=text is None))
        elif c == "~" and i + 1 < n and source[i + 1].isascii() and source[i + 1].isalpha():
            i, line = _sigil(source, i, line)
        elif c == "?" and i + 1 < n and (not out or out[-1].kind == "punct" or source[i - 1] in " \t\n(,[{"):
            i += 2  # a character literal: ?a, ?" (an escape takes one more)
            if source[i - 1] == "\\" and i < n:
                i += 1
        elif c == ":" and i + 1 < n and source[i + 1] in "\"'":
            start = line
            text, i, line = _quoted(source, i + 2, line, source[i + 1])  # :"quoted atom"
            out.append(Token("atom", text or "", start, interpolated=text is None))
        elif c == "_" or c.isalpha():
            if not c.isascii() and not (c.isidentifier() and not c.isupper() and not c.istitle()):
                raise _unexpected(c, line)
            match = _IDENT.match(source, i)
            if match is None:
                raise _unexpected(c, line)
            word = match.group()
            end = match.end()
            if word[0].isupper():
                alias = _ALIAS.match(source, i)
                if alias is None:
                    raise _unexpected(c, line)
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
        elif c.isdigit() and c.isascii():
            while i < n and source[i].isascii() and (source[i].isalnum() or source[i] in "_."):
                if source[i] == "." and not (i + 1 < n and source[i + 1].isdigit()):
                    break
                i += 1
        elif c.isascii() and c.isprintable():
            out.append(Token("punct", c, line))
            i += 1
        else:
            raise _unexpected(c, line)
    return out


def _unexpected(c: str, line: int) -> SourceError:
    return SourceError(f"unexpected token: U+{ord(c):04X} on line {line} (Elixir allows it only inside strings "
                       "and comments)", line)


def _quoted(source: str, i: int, line: int, quote: str) -> tuple[str | None, int, int]:
    """Past a string, charlist or quoted atom opened before `i` (escapes and #{...} interpolations
    skipped): (its text when it holds no interpolation, else None; the index after it; the line)."""
    start = line
    n = len(source)
    begin = i
    plain = True
    while i < n:
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if c in _BIDI:
            raise SourceError(f"invalid bidirectional formatting character (U+{ord(c):04X}) in a string on line "
                              f"{line}", line)
        if c == "\n":
            line += 1
        elif c == quote:
            return (_unescape(source[begin:i]) if plain else None), i + 1, line
        elif c == "#" and i + 1 < n and source[i + 1] == "{":
            plain = False
            i, line = _interpolation(source, i + 2, line)
            continue
        i += 1
    raise SourceError(f"missing terminator: {quote} (for the string opened on line {start})", start)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "s": " ", "e": "\x1b", "0": "\0", "a": "\a", "b": "\b", "f": "\f",
            "v": "\v"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text, flags=re.S)


def _interpolation(source: str, i: int, line: int) -> tuple[int, int]:
    depth = 1
    n = len(source)
    start = line
    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
        elif c in "\"'":
            _, i, line = _quoted(source, i + 1, line, c)
            continue
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1, line
        i += 1
    raise SourceError(f"missing terminator: }} (for the interpolation opened on line {start})", start)


def _heredoc(source: str, i: int, line: int, quote: str) -> tuple[str | None, int, int]:
    start = line
    close = quote * 3
    i += 3
    n = len(source)
    plain = True
    while i < n:
        if source[i] == "\n":
            line += 1
            j = i + 1
            while j < n and source[j] in " \t":
                j += 1
            if source.startswith(close, j):
                return None if not plain else "", j + 3, line
        elif source[i] == "\\":
            i += 1
        elif source[i] in _BIDI:
            raise SourceError(f"invalid bidirectional formatting character (U+{ord(source[i]):04X}) in a heredoc "
                              f"on line {line}", line)
        elif source[i] == "#" and i + 1 < n and source[i + 1] == "{":
            plain = False
            i, line = _interpolation(source, i + 2, line)
            continue
        i += 1
    raise SourceError(f"missing terminator: {close} (for the heredoc opened on line {start})", start)


def _sigil(source: str, i: int, line: int) -> tuple[int, int]:
    start = line
    j = i + 1
    n = len(source)
    while j < n and source[j].isascii() and source[j].isalpha():
        j += 1
    if source.startswith('"""', j) or source.startswith("'''", j):
        _, end, line = _heredoc(source, j, line, source[j])
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
            raise SourceError(f"missing terminator: {closer} (for the sigil opened on line {start})", start)
    while end < n and source[end].isascii() and source[end].isalpha():  # modifiers: ~r/x/i
        end += 1
    return end, line


# --- reading the tokens ---------------------------------------------------------------------------


@dataclass
class _Frame:
    kind: str  # module | def | block | quote
    module: Module | None
    line: int
    close: str = "end"  # "end", or ")" (a `do: (...)` body), or "line" (a one-line `do:` body)
    parens: int = 0  # bracket depth the frame opened at
    aliases: dict[str, str] = field(default_factory=dict)


def read_source(source: str) -> Reading:
    """The modules, problems and requires of `source`, read from its tokens. Raises SourceError
    (see `tokens`, and a `do` block never closed or an `end` that closes nothing)."""
    return _Reader(tokens(source)).read()


def modules(source: str) -> list[Module]:
    """Every module `source` defines (nested ones by their full name), in order."""
    return read_source(source).modules


class _Reader:
    def __init__(self, toks: list[Token]) -> None:
        self.toks = toks
        self.reading = Reading()
        self.frames: list[_Frame] = []
        self.top_aliases: dict[str, str] = {}
        self.brackets: list[tuple[str, int]] = []  # the open ( [ { and their lines
        self.pending: tuple[Module | None, int] | None = None  # a defmodule waiting for its body
        self.pending_def: int | None = None  # the line of a def waiting for its `do`

    # the scopes ------------------------------------------------------------------------------

    def module(self) -> Module | None:
        for frame in reversed(self.frames):
            if frame.module is not None:
                return frame.module
        return None

    def in_kind(self, kind: str) -> bool:
        return any(f.kind == kind for f in self.frames)

    def in_function(self) -> bool:
        """Inside a def's body, below the innermost module."""
        for frame in reversed(self.frames):
            if frame.kind == "module":
                return False
            if frame.kind == "def":
                return True
        return False

    def aliases(self) -> dict[str, str]:
        merged = dict(self.top_aliases)
        for frame in self.frames:
            merged.update(frame.aliases)
        return merged

    def define_alias(self, short: str, atom: str) -> None:
        (self.frames[-1].aliases if self.frames else self.top_aliases)[short] = atom

    def resolve(self, text: str) -> str:
        """The atom an alias written as `text` names here."""
        if text.startswith("Elixir.") or text == "Elixir":
            return text
        if text.startswith("__MODULE__"):
            module = self.module()
            rest = text[len("__MODULE__"):]
            return ((module.atom if module else "Elixir") + rest) if rest else (module.atom if module else "nil")
        first, _, rest = text.partition(".")
        known = self.aliases().get(first)
        if known:
            return known + ("." + rest if rest else "")
        return "Elixir." + text

    def open(self, frame: _Frame) -> None:
        frame.parens = len(self.brackets)
        self.frames.append(frame)

    # the walk --------------------------------------------------------------------------------

    def read(self) -> Reading:
        toks = self.toks
        i = 0
        while i < len(toks):
            tok = toks[i]
            self.close_line_frames(tok)
            if tok.kind == "punct":
                i = self.punct(tok, i)
                continue
            if tok.kind == "alias" and tok.text in ("Code", "Module") and not self.in_kind("quote"):
                self.require(i)
            if tok.kind != "word" or tok.colon_before or tok.dot_before:
                i += 1
                continue
            text = tok.text
            if text == "do" and tok.colon_after:
                i = self.keyword_do(i)
                continue
            if tok.colon_after:
                i += 1
                continue
            if self.in_kind("quote"):
                i = self.in_quote(tok, i)
                continue
            if text == "defmodule":
                i = self.defmodule(i)
            elif text in ("do", "fn"):
                self.block(tok)
                i += 1
            elif text == "end":
                self.end(tok)
                i += 1
            elif text == "quote":
                i = self.quote(i)
            elif text == "use":
                i = self.use(i)
            elif text == "alias":
                i = self.alias(i)
            elif text in ("def", "defp", "defmacro", "defmacrop", "defdelegate", "defguard", "defguardp"):
                i = self.definition(i)
            else:
                i += 1
        last = toks[-1].line if toks else 1
        for frame in reversed(self.frames):
            if frame.close == "end":
                raise SourceError(f"missing terminator: end (for the do opened on line {frame.line})", frame.line)
        if self.brackets:
            opener, line = self.brackets[-1]
            closer = _CLOSE[_OPEN.index(opener)]
            raise SourceError(f"missing terminator: {closer} (for the {opener} opened on line {line}; end of file on "
                              f"line {last})", line)
        return self.reading

    def close_line_frames(self, tok: Token) -> None:
        while self.frames and self.frames[-1].close == "line" and tok.line > self.frames[-1].line \
                and len(self.brackets) <= self.frames[-1].parens:
            self.frames.pop()

    def punct(self, tok: Token, i: int) -> int:
        if tok.text in _OPEN:
            self.brackets.append((tok.text, tok.line))
        elif tok.text in _CLOSE:
            if not self.brackets or _CLOSE.index(tok.text) != _OPEN.index(self.brackets[-1][0]):
                raise SourceError(f"unexpected token: {tok.text} on line {tok.line}"
                                  + (f" (the {self.brackets[-1][0]} opened on line {self.brackets[-1][1]} is still open)"
                                     if self.brackets else ""), tok.line)
            self.brackets.pop()
            while self.frames and self.frames[-1].close in (")", "line") \
                    and len(self.brackets) <= self.frames[-1].parens:
                self.frames.pop()
        return i + 1

    def keyword_do(self, i: int) -> int:
        """`do:` — a one-expression body: the pending defmodule's or def's, or a call's."""
        tok = self.toks[i]
        nxt = self.toks[i + 1] if i + 1 < len(self.toks) else None
        if self.pending is not None:
            module, _line = self.pending
            self.pending = None
            kind = "module"
        elif self.pending_def is not None:
            module, kind = None, "def"
            self.pending_def = None
        else:
            return i + 1
        if nxt is not None and nxt.kind == "punct" and nxt.text == "(":
            self.open(_Frame(kind, module, tok.line, close=")"))
            self.brackets.append(("(", tok.line))
            return i + 2
        self.open(_Frame(kind, module, tok.line, close="line"))
        return i + 1

    def block(self, tok: Token) -> None:
        if tok.text == "do" and self.pending is not None:
            module, _line = self.pending
            self.pending = None
            self.open(_Frame("module", module, tok.line))
        elif tok.text == "do" and self.pending_def is not None:
            self.pending_def = None
            self.open(_Frame("def", None, tok.line))
        else:
            self.open(_Frame("block", None, tok.line))

    def end(self, tok: Token) -> None:
        while self.frames and self.frames[-1].close == "line":
            self.frames.pop()
        if not self.frames or self.frames[-1].close != "end":
            raise SourceError(f"unexpected reserved word: end on line {tok.line} (no do block is open)", tok.line)
        self.frames.pop()

    def quote(self, i: int) -> int:
        """`quote do ... end` and `quote(do: ...)`: code as data, not this script's code."""
        toks = self.toks
        j = i + 1
        if j < len(toks) and toks[j].kind == "word" and toks[j].text == "do" and not toks[j].colon_after:
            self.open(_Frame("quote", None, toks[j].line))
            return j + 1
        if j < len(toks) and toks[j].kind == "punct" and toks[j].text == "(":
            self.open(_Frame("quote", None, toks[j].line, close=")"))
            self.brackets.append(("(", toks[j].line))
            return j + 1
        if j < len(toks) and toks[j].kind == "word" and toks[j].text == "do" and toks[j].colon_after:
            self.open(_Frame("quote", None, toks[j].line, close="line"))
            return j + 1
        return j

    def in_quote(self, tok: Token, i: int) -> int:
        if tok.text in ("do", "fn"):
            self.open(_Frame("block", None, tok.line))
        elif tok.text == "end":
            self.end(tok)
        return i + 1

    def defmodule(self, i: int) -> int:
        toks = self.toks
        j = i + 1
        if j < len(toks) and toks[j].kind == "punct" and toks[j].text == "(":
            j += 1  # defmodule(Name) do: the parenthesis is counted when the walk reaches it
        parent = self.module()
        tok = toks[j] if j < len(toks) else None
        module: Module | None = None
        if tok is not None and tok.kind == "alias" and tok.text and j + 2 < len(toks) and toks[j + 1].text == "." \
                and toks[j + 2].kind == "word" and toks[j + 2].dot_before:
            self.reading.problems.append((tok.line, "the module's name is computed by a function call, which Elixir "
                                                    "refuses in defmodule (invalid module name)"))
        elif tok is not None and tok.kind == "alias" and tok.text:
            atom = self.nested_atom(tok.text, parent)
            module = Module(display(atom), toks[i].line, atom=atom)
        elif tok is not None and tok.kind == "atom":
            if tok.interpolated:
                self.reading.problems.append((tok.line, "the module name is an interpolated atom: Elixir refuses "
                                                        "it (invalid module name)"))
            else:
                module = Module(display(tok.text), toks[i].line, atom=tok.text)
        else:
            self.reading.note(f"a module whose name is computed when the script runs (line {toks[i].line})")
            module = Module("(computed)", toks[i].line)  # a scope for what it holds, never an answer
            self.pending = (module, toks[i].line)
            return i + 1
        if module is not None:
            self.reading.modules.append(module)
        self.pending = (module, toks[i].line)
        return i + 1

    def nested_atom(self, text: str, parent: Module | None) -> str:
        """defmodule's name: a nested alias below its parent (its first segment as written, an
        alias of the same name notwithstanding), `Elixir.X` and `__MODULE__.X` as written; at the
        top, aliases apply. The short name becomes an alias in the parent."""
        if text.startswith("Elixir.") or text.startswith("__MODULE__"):
            return self.resolve(text)
        if parent is None:
            return self.resolve(text)
        first = text.split(".")[0]
        self.define_alias(first, f"{parent.atom}.{first}")
        return f"{parent.atom}.{text}"

    def target(self, j: int) -> tuple[str | None, int]:
        """The module named at toks[j] (an alias or a quoted atom, parenthesised or not), and the
        index of the token after that name (a parenthesis is left for the walk to count)."""
        toks = self.toks
        if j < len(toks) and toks[j].kind == "punct" and toks[j].text == "(":
            j += 1
        if j < len(toks) and toks[j].kind == "alias" and toks[j].text:
            return self.resolve(toks[j].text), j + 1
        if j < len(toks) and toks[j].kind == "atom" and not toks[j].interpolated:
            return toks[j].text, j + 1
        return None, j

    def use(self, i: int) -> int:
        target, _ = self.target(i + 1)
        line = self.toks[i].line
        if target != USING:
            return i + 1
        module = self.module()
        if module is None:
            self.reading.problems.append((line, "use Eva.Core.Extension outside a module: Elixir refuses it (a "
                                                "module attribute outside a module)"))
        elif self.in_function():
            self.reading.problems.append((line, "use Eva.Core.Extension inside a function: Elixir refuses it (a "
                                                "module attribute set inside a function)"))
        else:
            module.uses_extension = True
        return i + 1

    def alias(self, i: int) -> int:
        """`alias A.B`, `alias A.B, as: C`, `alias A.{B, C}`."""
        toks = self.toks
        target, j = self.target(i + 1)
        if target is None:
            return j
        if j + 1 < len(toks) and toks[j].text == "." and toks[j + 1].text == "{":
            k = j + 2
            while k < len(toks) and toks[k].text != "}":
                if toks[k].kind == "alias" and toks[k].text:
                    self.define_alias(toks[k].text.split(".")[0], f"{target}.{toks[k].text.split('.')[0]}")
                k += 1
            return i + 1
        short = target.rsplit(".", 1)[-1]
        if j + 3 < len(toks) and toks[j].text == "," and toks[j + 1].text == "as" and toks[j + 1].colon_after \
                and toks[j + 3].kind == "alias" and toks[j + 3].text:  # `, as: Name` (the colon is a token)
            short = toks[j + 3].text
        self.define_alias(short, target)
        return i + 1

    def definition(self, i: int) -> int:
        toks = self.toks
        kind = toks[i].text
        module = self.module()
        j = i + 1
        if kind in ("def", "defp", "defmacro", "defmacrop"):
            self.pending_def = toks[i].line  # its `do` opens a function body (defdelegate, defguard have none)
        if j >= len(toks):
            return j
        name = toks[j]
        if name.kind == "word" and name.text == "unquote":
            if module is not None:
                module.dynamic_defs = True
            return j + 1
        if module is None or name.kind != "word":
            return j + 1
        arity = _arity(toks, j + 1)
        if name.text == "setup" and kind in ("def", "defdelegate"):
            module.setup_arities.append(arity)
        if name.text == MARKER and kind == "def" and arity[1] == 0:
            module.marker = True
        return j + 1

    def require(self, i: int) -> None:
        """`Code.require_file(...)` (or compile_file, eval_file) run when Eva loads the script: a
        literal path beside the script (`"x.exs", __DIR__`, `Path.join(__DIR__, "x.exs")`,
        `__DIR__ <> "/x.exs"`) is followed; anything else cannot be known without running it."""
        toks = self.toks
        if not (i + 2 < len(toks) and toks[i + 1].text == "." and toks[i + 2].kind == "word"):
            return
        owner, function = toks[i].text, toks[i + 2].text
        if function in _BUILDERS.get(owner, ()):
            self.reading.note(f"code compiled when the script runs ({owner}.{function}, line {toks[i].line})")
            return
        if not (owner == "Code" and function in _REQUIRERS and i + 3 < len(toks) and toks[i + 3].text == "("):
            return
        if any(f.kind in ("def", "block") for f in self.frames):
            return  # in a function or a conditional: not (always) run when Eva loads the script
        depth, j, strings, here = 0, i + 3, [], False
        while j < len(toks):
            t = toks[j]
            if t.kind == "punct" and t.text in _OPEN:
                depth += 1
            elif t.kind == "punct" and t.text in _CLOSE:
                depth -= 1
                if depth == 0:
                    break
            elif t.kind == "string":
                strings.append("" if t.interpolated else t.text)
            elif t.kind == "word" and t.text == "__DIR__":
                here = True
            j += 1
        line = toks[i].line
        if here and len(strings) == 1 and strings[0]:
            self.reading.requires.append(Require(strings[0].lstrip("/"), line))
        else:
            self.reading.note(f"a file required by a path computed when the script runs (line {line})")


def _arity(toks: list[Token], i: int) -> tuple[int, int]:
    """(required, total) arguments of the function head starting at `toks[i]`: `(a, b \\\\ 1)`
    gives (1, 2); no parentheses: one argument when one follows before `do`/`,`."""
    if i >= len(toks) or toks[i].text != "(":
        if i < len(toks) and toks[i].kind in ("word", "alias", "string", "atom") and toks[i].text not in ("do", "when"):
            return 1, 1
        return 0, 0
    depth, args, defaults, seen = 0, 0, 0, False
    i += 1
    pending_default = False
    while i < len(toks):
        t = toks[i]
        if t.kind == "punct" and t.text in "([{":
            depth += 1
        elif t.kind == "punct" and t.text in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif t.kind == "punct" and t.text == "," and depth == 0:
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
