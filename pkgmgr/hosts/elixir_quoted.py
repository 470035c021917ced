"""Eva's compile-time refusals found without running the script: when `elixir` is on the machine,
it *parses* the script (`Code.string_to_quoted`, which reads and never evaluates) and pkgmgr reads
the quoted form: the syntax, the modules and their `use`/`defmodule` forms, `setup/1`, the keys of
Eva's structs (`%Spec{}`, `%Spec.Command{}`, `%Tools.AgentTool{}`, ...), undefined local functions
and variables, module attributes set inside functions — what Elixir's compiler refuses before any
of the script's code runs. Nothing of the script is compiled or evaluated.

The Elixir side is the fixed program `PROGRAM`, passed as `elixir -e PROGRAM` (no shell), with the
scripts on stdin; it answers one JSON line per script, run with a timeout, its output bounded.
Failures of the toolchain are `ToolchainError`: the caller says the syntax was not checked, and why.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pkgmgr.hosts.elixir import MARKER, USING, Module, Reading, Require, display

TIMEOUT = 120.0  # seconds for one run (a 4 MiB script parses in a few seconds)
OUTPUT_MAX = 96 * 1024 * 1024  # the quoted form of the largest scripts pkgmgr reads, with room
SOURCES_MAX = 128  # scripts in one run
PROBLEMS_MAX = 20

PROGRAM = r'''
defmodule PkgmgrQuoted do
  # pkgmgr (hosts/elixir_quoted.py): reads frames "<size>\n<bytes>" on stdin; for each, parses the
  # bytes with Code.string_to_quoted, which reads and never evaluates, and writes one JSON line: the
  # quoted form or the syntax error. The first line says which Elixir this is and what Kernel
  # imports. Static atoms come back as {:a, text}: no input fills the atom table. The modules a
  # script imports (at most 64) are looked up among those this Elixir has, for their exports.
  def main do
    :ok = :io.setopts(:standard_io, binary: true, encoding: :latin1)
    imports = Kernel.__info__(:functions) ++ Kernel.__info__(:macros) ++ Kernel.SpecialForms.__info__(:macros)
    out(["{\"elixir\":", str(System.version()), ",\"otp\":", str(System.otp_release()), ",\"imports\":", pairs(imports), "}\n"])
    loop()
  end

  defp loop do
    case IO.binread(:stdio, :line) do
      :eof -> :ok
      {:error, _} -> :ok
      line ->
        size = line |> String.trim() |> String.to_integer()
        source = if size > 0, do: IO.binread(:stdio, size), else: ""
        out([one(source), "\n"])
        loop()
    end
  end

  defp one(source) do
    encoder = fn token, _meta ->
      if String.length(token) > 255,
        do: {:error, "atom length must be less than system limit: "},
        else: {:ok, {:a, token}}
    end

    if String.valid?(source) do
      case Code.string_to_quoted(source, static_atoms_encoder: encoder) do
        {:ok, ast} -> ["{\"ast\":", enc(ast), ",\"imports\":", imported(ast), "}"]
        {:error, {location, message, token}} -> error(location, message, token)
      end
    else
      ["{\"error\":{\"line\":null,\"message\":\"invalid encoding (not UTF-8)\"}}"]
    end
  rescue
    # The parser's own error path can stumble on an encoded atom (`A(`): parse again making no atom.
    e -> again(source, Exception.message(e))
  end

  defp again(source, why) do
    case Code.string_to_quoted(source, existing_atoms_only: true) do
      {:error, {location, message, token}} ->
        if String.starts_with?(text(message, token), "unsafe atom"),
          do: ["{\"fail\":", str(why), "}"],
          else: error(location, message, token)
      _ -> ["{\"fail\":", str(why), "}"]
    end
  rescue
    e -> ["{\"fail\":", str(Exception.message(e)), "}"]
  end

  defp error(location, message, token),
    do: ["{\"error\":{\"line\":", enc(line(location)), ",\"message\":", str(text(message, token)), "}}"]

  defp line(location) when is_list(location), do: Keyword.get(location, :line)
  defp line(location) when is_integer(location), do: location
  defp line(_), do: nil

  defp text({prefix, suffix}, token) when is_binary(prefix) and is_binary(suffix), do: prefix <> to_text(token) <> suffix
  defp text(message, token) when is_binary(message), do: message <> to_text(token)
  defp text(message, token), do: inspect(message) <> to_text(token)

  defp to_text(token) when is_binary(token), do: token
  defp to_text(token), do: inspect(token)

  defp imported(ast) do
    {_, names} =
      Macro.prewalk(ast, [], fn
        {{:a, "import"}, _, [target | _]} = node, acc -> {node, [name(target) | acc]}
        node, acc -> {node, acc}
      end)

    names
    |> Enum.reject(&is_nil/1)
    |> Enum.uniq()
    |> Enum.take(64)
    |> Enum.map(fn {text, module} -> {text, exports(module)} end)
    |> Enum.reject(fn {_, exports} -> is_nil(exports) end)
    |> Enum.map(fn {text, exports} -> [str(text), ":", pairs(exports)] end)
    |> Enum.intersperse(",")
    |> then(&["{", &1, "}"])
  end

  defp name({:__aliases__, _, segments}) do
    if Enum.all?(segments, &match?({:a, _}, &1)) do
      text = Enum.map_join(segments, ".", fn {:a, s} -> s end)
      {text, Module.concat([text])}
    end
  end

  defp name({:a, text}), do: {":" <> text, String.to_atom(text)}
  defp name(_), do: nil

  defp exports(module) do
    cond do
      not Code.ensure_loaded?(module) -> nil
      function_exported?(module, :__info__, 1) -> module.__info__(:functions) ++ module.__info__(:macros)
      true -> module.module_info(:exports)
    end
  rescue
    _ -> nil
  end

  defp pairs(list), do: ["[", Enum.intersperse(Enum.map(list, fn {f, a} -> ["[", str(Atom.to_string(f)), ",", Integer.to_string(a), "]"] end), ","), "]"]

  defp enc(nil), do: "null"
  defp enc(true), do: "true"
  defp enc(false), do: "false"
  defp enc({:a, text}) when is_binary(text), do: ["{\"a\":", str(text), "}"]
  defp enc(atom) when is_atom(atom), do: ["{\"a\":", str(Atom.to_string(atom)), "}"]
  defp enc(n) when is_integer(n), do: Integer.to_string(n)
  defp enc(f) when is_float(f), do: ["{\"f\":", str(Float.to_string(f)), "}"]
  defp enc(b) when is_binary(b), do: if(String.valid?(b), do: str(b), else: ["{\"bin\":\"", Base.encode64(b), "\"}"])
  defp enc({form, meta, args}) when is_list(meta), do: ["{\"c\":[", enc(form), ",", enc(Keyword.get(meta, :line)), ",", enc(args), "]}"]
  defp enc({a, b}), do: ["{\"t\":[", enc(a), ",", enc(b), "]}"]
  defp enc(list) when is_list(list), do: list(list, [])
  defp enc(other), do: str(inspect(other))

  defp list([], acc), do: ["[", Enum.intersperse(Enum.reverse(acc), ","), "]"]
  defp list([h | t], acc), do: list(t, [enc(h) | acc])
  defp list(tail, acc), do: list([], [enc(tail) | acc])

  defp str(s), do: [?", escape(s, ""), ?"]

  defp escape(<<?", rest::binary>>, acc), do: escape(rest, <<acc::binary, "\\\"">>)
  defp escape(<<?\\, rest::binary>>, acc), do: escape(rest, <<acc::binary, "\\\\">>)
  defp escape(<<c, rest::binary>>, acc) when c < 0x20,
    do: escape(rest, <<acc::binary, "\\u00", Base.encode16(<<c>>)::binary>>)
  defp escape(<<c, rest::binary>>, acc), do: escape(rest, <<acc::binary, c>>)
  defp escape(<<>>, acc), do: acc

  defp out(iodata), do: IO.binwrite(:stdio, iodata)
end

PkgmgrQuoted.main()
'''


class ToolchainError(Exception):
    """Elixir could not answer (not there, timed out, crashed, said something unreadable)."""


@dataclass(frozen=True)
class Atom:
    name: str


@dataclass(frozen=True)
class Call:
    form: Any
    line: int | None
    args: Any  # None: a variable (or a call without parentheses and arguments)


@dataclass(frozen=True)
class Parsed:
    """One script as Elixir parsed it: the quoted form, or the syntax error (line, message), or why
    Elixir could not say (`failure`: the script is then read without it)."""

    ast: Any = None
    error: tuple[int | None, str] | None = None
    imports: dict[str, frozenset[tuple[str, int]]] = field(default_factory=dict)
    failure: str | None = None


@dataclass(frozen=True)
class Toolchain:
    path: str
    version: str  # Elixir's
    imports: frozenset[tuple[str, int]]  # Kernel's functions and macros, Kernel.SpecialForms


def find() -> str | None:
    """The `elixir` on PATH, if any."""
    return shutil.which("elixir")


_CACHE: OrderedDict[tuple[str, str], Parsed] = OrderedDict()
_CACHE_MAX = 256
_CACHED_BYTES_MAX = 256 * 1024  # larger scripts are parsed again when judged again
_HEADERS: dict[str, Toolchain] = {}
_LOCK = threading.Lock()


def parse(sources: list[str], elixir: str) -> tuple[Toolchain, list[Parsed]]:
    """Each of `sources` parsed by the `elixir` at that path, in one run for those not parsed
    before (results are kept by the source's digest). Raises ToolchainError."""
    keys = [(elixir, hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()) for s in sources]
    with _LOCK:
        known = {k: _CACHE[k] for k in keys if k in _CACHE}
        header = _HEADERS.get(elixir)
    missing = [s for s, k in zip(sources, keys, strict=True) if k not in known]
    if missing or header is None:
        if len(missing) > SOURCES_MAX:
            raise ToolchainError(f"more than {SOURCES_MAX} scripts to read at once")
        header, results = _run(elixir, missing)
        with _LOCK:
            _HEADERS[elixir] = header
            for source, result in zip(missing, results, strict=True):
                key = (elixir, hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest())
                known[key] = result
                if len(source) <= _CACHED_BYTES_MAX:
                    _CACHE[key] = result
                    while len(_CACHE) > _CACHE_MAX:
                        _CACHE.popitem(last=False)
    return header, [known[k] for k in keys]


def _run(elixir: str, sources: list[str]) -> tuple[Toolchain, list[Parsed]]:
    frames = b"".join(b"%d\n%s" % (len(data), data) for data in (s.encode("utf-8", "surrogatepass") for s in sources))
    env = dict(os.environ, ERL_CRASH_DUMP_SECONDS="0")
    with tempfile.TemporaryDirectory(prefix="pkgmgr-elixir-") as cwd:
        try:
            proc = subprocess.Popen([elixir, "-e", PROGRAM], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True)
        except OSError as exc:
            raise ToolchainError(f"{elixir} could not be started ({exc.strerror or exc})") from None
        try:
            out = _exchange(proc, frames)
        finally:
            _stop(proc)
    if proc.returncode != 0:
        raise ToolchainError(f"{elixir} exited with status {proc.returncode}")
    lines = out.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the last line's end
    if len(lines) < len(sources) + 1:
        raise ToolchainError(f"{elixir} answered for {max(0, len(lines) - 1)} of {len(sources)} scripts")
    try:
        head = json.loads(lines[0])
        header = Toolchain(elixir, str(head["elixir"]), frozenset((str(f), int(a)) for f, a in head["imports"]))
        results = [_parsed(json.loads(line, object_hook=_node)) for line in lines[1:len(sources) + 1]]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ToolchainError(f"{elixir} answered something pkgmgr cannot read ({type(exc).__name__})") from None
    return header, results


def _exchange(proc: subprocess.Popen[bytes], frames: bytes) -> bytes:
    """Write `frames` to the child while reading its output, until it closes its output, the
    output passes OUTPUT_MAX, or TIMEOUT passes."""
    assert proc.stdin is not None and proc.stdout is not None
    deadline = time.monotonic() + TIMEOUT
    chunks: list[bytes] = []
    size = 0
    pending = memoryview(frames)
    os.set_blocking(proc.stdin.fileno(), False)
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if pending:
            selector.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ToolchainError(f"elixir did not answer within {TIMEOUT:.0f} seconds")
            for key, _ in selector.select(left):
                if key.fileobj is proc.stdin:
                    try:
                        written = os.write(proc.stdin.fileno(), pending[:65536])
                    except BrokenPipeError:
                        written, pending = 0, memoryview(b"")
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(proc.stdout.fileno(), 1024 * 1024)
                if not chunk:
                    return b"".join(chunks)
                size += len(chunk)
                if size > OUTPUT_MAX:
                    raise ToolchainError(f"elixir's answer is larger than {OUTPUT_MAX // (1024 * 1024)} MiB "
                                         "(pkgmgr's bound)")
                chunks.append(chunk)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None and not stream.closed:
            stream.close()
    proc.wait()


def _node(d: dict[str, Any]) -> Any:
    if "a" in d:
        return Atom(str(d["a"]))
    if "c" in d:
        form, line, args = d["c"]
        return Call(form, line if isinstance(line, int) else None, args)
    if "t" in d:
        return tuple(d["t"])
    if "f" in d:
        return float(d["f"])
    if "bin" in d:
        return base64.b64decode(d["bin"])
    return d  # an "error"/"fail"/"imports" object, or the line itself


def _parsed(line: dict[str, Any]) -> Parsed:
    if "ast" in line:
        imports = {str(k): frozenset((str(f), int(a)) for f, a in v) for k, v in line.get("imports", {}).items()}
        return Parsed(ast=line["ast"], imports=imports)
    if "error" in line:
        error = line["error"]
        where = error.get("line")
        return Parsed(error=(where if isinstance(where, int) else None, str(error.get("message", ""))))
    if "fail" in line:
        return Parsed(failure=f"elixir could not parse it ({str(line['fail'])[:200]})")
    raise ToolchainError("elixir answered something pkgmgr cannot read")


# --- what the host's code injects, and its structs -----------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """What `use Eva.Core.Extension` brings into a module (aliases, functions), and the structs of
    Eva's own modules (their keys, and the keys that must be given), by module atom."""

    injected_aliases: dict[str, str] = field(default_factory=dict)
    injected_functions: frozenset[tuple[str, int]] = frozenset()
    structs: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    struct_roots: tuple[str, ...] = ()  # every struct below these is in `structs`


# --- reading the quoted form ----------------------------------------------------------------------


_IDENT = re.compile(r"[^\W\d]\w*[?!]?\Z")
_DEFS = frozenset({"def", "defp", "defmacro", "defmacrop", "defguard", "defguardp", "defdelegate"})
_TYPESPECS = frozenset({"spec", "type", "typep", "opaque", "callback", "macrocallback"})
_BLOCK_KEYS = frozenset({"do", "else", "after", "rescue", "catch"})
_REQUIRERS = frozenset({"require_file", "compile_file", "eval_file"})
_BUILDERS = {"Module": frozenset({"create"}), "Code": frozenset({"eval_string", "eval_quoted", "compile_string",
                                                                 "compile_quoted"})}
_SKIP_STATEMENTS = frozenset({"alias", "import", "require", "use", "defmodule", "quote", *_DEFS})


def _ident(node: Any) -> str | None:
    """The name of a call or variable written as an identifier (`foo`, `foo(x)`)."""
    if isinstance(node, Call) and isinstance(node.form, Atom) and _IDENT.match(node.form.name):
        return node.form.name
    return None


def _is(node: Any, name: str) -> bool:
    return isinstance(node, Call) and isinstance(node.form, Atom) and node.form.name == name and node.args is not None


def _keywords(node: Any) -> dict[str, Any] | None:
    if isinstance(node, list) and node and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], Atom)
                                                for p in node):
        return {p[0].name: p[1] for p in node}
    return None


def _statements(node: Any) -> list[Any]:
    if _is(node, "__block__"):
        return list(node.args)
    return [node]


def _line(node: Any, default: int | None = None) -> int | None:
    return node.line if isinstance(node, Call) and node.line is not None else default


@dataclass
class _Info:
    """What a module defines and imports (for the check of its function bodies)."""

    module: Module
    defs: list[tuple[str, int, int]] = field(default_factory=list)
    imports: set[tuple[str, int]] = field(default_factory=set)
    checkable: bool = True
    clauses: list[tuple[list[Any], Any, Any]] = field(default_factory=list)  # (head args, guard, body)
    body: list[Any] = field(default_factory=list)  # statements of the module body


@dataclass
class _Env:
    info: _Info | None
    aliases: dict[str, str]
    in_def: bool = False

    @property
    def module(self) -> Module | None:
        return self.info.module if self.info is not None else None


class Quoted:
    """Reads one script's quoted form into a `Reading` (the same as `elixir.read_source` gives, and
    what only compiling would otherwise find)."""

    def __init__(self, parsed: Parsed, toolchain: Toolchain, profile: Profile) -> None:
        self.parsed = parsed
        self.kernel = toolchain.imports
        self.profile = profile
        self.reading = Reading()
        self.infos: list[_Info] = []
        self.top_imports: set[tuple[str, int]] = set()
        self.top_checkable = True
        self.structs_seen: list[tuple[str, int | None]] = []  # structs of modules Eva does not define

    def read(self) -> Reading:
        self.walk(self.parsed.ast, _Env(None, {}), top=True)
        defined = {m.atom for m in self.reading.modules}
        self.undefined_structs(defined)
        for info in self.infos:
            if info.checkable:
                self.check_module(info)
        del self.reading.problems[PROBLEMS_MAX:]
        return self.reading

    def problem(self, line: int | None, message: str) -> None:
        self.reading.problems.append((line or 0, message))

    # pass 1: modules, uses, aliases, definitions, structs ------------------------------------------

    def walk(self, node: Any, env: _Env, *, pattern: bool = False, top: bool = False) -> None:
        if isinstance(node, list):
            for item in node:
                self.walk(item, env, pattern=pattern, top=top)
            return
        if isinstance(node, tuple):
            for item in node:
                self.walk(item, env, pattern=pattern)
            return
        if not isinstance(node, Call):
            return
        form, args = node.form, node.args
        if isinstance(form, Atom) and args is not None:
            handler = _HANDLERS.get(form.name)
            if handler is not None and handler(self, node, env, pattern, top) is not False:
                return
            if form.name in ("unquote", "unquote_splicing") and env.info is not None:
                env.info.checkable = False  # code built at compile time: its names are unknown
        elif isinstance(form, Call):
            if top and self.on_remote(node, env):
                return
            self.walk(form, env, pattern=pattern)
        if args is not None:
            self.walk(args, env, pattern=pattern)

    def on_block(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        for item in node.args:
            self.walk(item, env, pattern=pattern, top=top)
        return True

    def on_match(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        """`pattern = value`, `pattern -> body`, `pattern <- value`: the left side is a pattern (a
        struct there need not give its enforced keys)."""
        if len(node.args) != 2:
            return False
        self.walk(node.args[0], env, pattern=True)
        self.walk(node.args[1], env, pattern=pattern)
        return True

    def on_quote(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        return True  # code as data: not this script's code

    def on_defmodule(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        if len(node.args) != 2:
            return False
        body = (_keywords(node.args[1]) or {}).get("do")
        if body is None and not _keywords(node.args[1]):
            return False
        atom = self.module_atom(node.args[0], env, node)
        line = _line(node, 0) or 0
        module = Module(display(atom), line, atom=atom) if atom is not None else Module("(computed)", line)
        if atom is not None:
            self.reading.modules.append(module)
        info = _Info(module)
        parent = env.info
        info.imports = set(parent.imports) if parent is not None else set(self.top_imports)
        info.checkable = atom is not None and (parent.checkable if parent is not None else self.top_checkable)
        self.infos.append(info)
        inner = _Env(info, dict(env.aliases))
        statements = _statements(body)
        info.body = statements
        for statement in statements:
            self.walk(statement, inner, top=True)
        return True

    def module_atom(self, name: Any, env: _Env, node: Call) -> str | None:
        """defmodule's name as Elixir expands it (Kernel.defmodule): a nested alias below its parent
        by its first segment as written, `Elixir.X` and `__MODULE__.X` as written, at the top with
        aliases applied; an atom as it is. Anything else is computed when the script runs (a
        variable) or refused by Elixir (a function call)."""
        if _is(name, "__aliases__"):
            segments = name.args
            first = segments[0] if segments else None
            if isinstance(first, Atom) and all(isinstance(s, Atom) for s in segments):
                written = [s.name for s in segments]
                if written[0] == "Elixir" or env.module is None:
                    return self.resolve(name, env)
                parent = env.module.atom
                env.aliases[written[0]] = f"{parent}.{written[0]}"
                return ".".join([parent, *written])
            return self.resolve(name, env)
        if isinstance(name, Atom):
            return name.name
        if isinstance(name, Call) and isinstance(name.form, Call) and _is(name.form, "."):
            target = name.form.args[0] if name.form.args else None
            if target == Atom("erlang") or (isinstance(target, Call) and _is(target, "__aliases__")
                                            and target.args in ([Atom("Module")], [Atom("String")])):
                self.problem(_line(node), "the module's name is computed by a function call, which Elixir refuses "
                                          "in defmodule (invalid module name)")
                return None
        self.reading.note(f"a module whose name is computed when the script runs (line {_line(node, 0)})")
        return None

    def resolve(self, node: Any, env: _Env) -> str | None:
        """The atom an alias (or atom) names here."""
        if isinstance(node, Atom):
            return node.name
        if not _is(node, "__aliases__") or not node.args:
            return None
        segments = node.args
        first, rest = segments[0], segments[1:]
        if not all(isinstance(s, Atom) for s in rest):
            return None
        tail = "".join("." + s.name for s in rest)
        if _is_var(first, "__MODULE__"):
            base = env.module.atom if env.module is not None else "Elixir"
            return base + tail
        if not isinstance(first, Atom):
            return None
        if first.name == "Elixir":
            return "Elixir" + tail
        known = env.aliases.get(first.name)
        return (known if known else "Elixir." + first.name) + tail

    def on_use(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        if not node.args:
            return False
        target = self.resolve(node.args[0], env)
        if target != USING:
            if env.info is not None:
                env.info.checkable = False  # another `use` may inject anything
            return False
        line = _line(node)
        if env.info is None:
            self.problem(line, "use Eva.Core.Extension outside a module: Elixir refuses it (a module attribute "
                               "outside a module)")
        elif env.in_def:
            self.problem(line, "use Eva.Core.Extension inside a function: Elixir refuses it (a module attribute set "
                               "inside a function)")
        else:
            env.info.module.uses_extension = True
            env.aliases.update(self.profile.injected_aliases)
            env.info.defs.extend((name, arity, arity) for name, arity in self.profile.injected_functions)
        return False

    def on_alias(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        if not node.args:
            return False
        target, options = node.args[0], _keywords(node.args[1]) if len(node.args) > 1 else None
        if isinstance(target, Call) and _is(target.form, ".") and len(target.form.args) == 2 \
                and target.form.args[1] == Atom("{}"):
            base = self.resolve(target.form.args[0], env)
            for item in target.args or []:
                if base is not None and _is(item, "__aliases__") and all(isinstance(s, Atom) for s in item.args):
                    env.aliases[item.args[0].name] = base + "".join("." + s.name for s in item.args)
            return True
        atom = self.resolve(target, env)
        if atom is None:
            return True
        short = atom.rsplit(".", 1)[-1]
        if options and _is(options.get("as"), "__aliases__") and isinstance(options["as"].args[0], Atom):
            short = options["as"].args[0].name
        env.aliases[short] = atom
        return True

    def on_import(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        if not node.args:
            return False
        target = node.args[0]
        options = (_keywords(node.args[1]) or {}) if len(node.args) > 1 else {}
        written = None
        if _is(target, "__aliases__") and all(isinstance(s, Atom) for s in target.args):
            written = ".".join(s.name for s in target.args)
            if self.resolve(target, env) != "Elixir." + written:
                written = None  # through an alias: not what the toolchain looked up
        elif isinstance(target, Atom):
            written = ":" + target.name
        only = options.get("only")
        imported: set[tuple[str, int]] | None = None
        listed = _keywords(only) if isinstance(only, list) else None
        if listed is not None and all(isinstance(v, int) for v in listed.values()):
            imported = set(listed.items())
        elif written is not None and written in self.parsed.imports and only in (None, Atom("functions"),
                                                                                 Atom("macros")):
            imported = set(self.parsed.imports[written])
            excepted = _keywords(options.get("except")) or {}
            imported -= set(excepted.items())
        if imported is None or env.in_def or written == "Kernel":
            if env.info is not None:
                env.info.checkable = False
            else:
                self.top_checkable = False
            return True
        (env.info.imports if env.info is not None else self.top_imports).update(imported)
        return True

    def on_require(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        return True

    def definition(self, node: Call, env: _Env) -> bool:
        kind = node.form.name
        if not node.args:
            return False
        head, rest = node.args[0], node.args[1:]
        guard = None
        if _is(head, "when") and len(head.args) == 2:
            head, guard = head.args
        info = env.info
        name = _ident(head)
        if info is not None and isinstance(head, Call) and isinstance(head.form, Call):
            info.checkable = False
            info.module.dynamic_defs = True  # def unquote(name)(...): what it defines is computed
        if info is not None and name is not None:
            args = head.args or []
            defaults = sum(1 for a in args if _is(a, "\\\\"))
            low, high = len(args) - defaults, len(args)
            info.defs.append((name, low, high))
            if name == "setup" and kind in ("def", "defdelegate"):
                info.module.setup_arities.append((low, high))
            if name == MARKER and kind == "def" and high == 0:
                info.module.marker = True
        inner = _Env(info, dict(env.aliases), in_def=True)
        if isinstance(head, Call) and head.args:
            self.walk(head.args, inner, pattern=True)
        self.walk(guard, inner)
        body = rest[0] if rest else None
        if kind != "defdelegate":
            self.walk(body, inner)
            if info is not None and name is not None:
                info.clauses.append((list(head.args or []), guard, body))
        return True

    def on_def(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        return self.definition(node, env)

    def on_defstruct(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        if env.info is not None:
            env.info.defs.extend([("__struct__", 0, 1)])
        return False

    def on_defexception(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        if env.info is not None:
            env.info.defs.extend([("__struct__", 0, 1), ("exception", 1, 1), ("message", 1, 1)])
        return False

    def on_attribute(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        inner = node.args[0] if node.args else None
        name = _ident(inner)
        if name is None or not isinstance(inner, Call):
            return True
        if name in _TYPESPECS:
            return True
        if env.in_def and inner.args:
            self.problem(_line(node), f"the module attribute @{name} is set inside a function: Elixir refuses it")
            return True
        self.walk(inner.args, env)
        return True

    def on_remote(self, node: Call, env: _Env) -> bool:
        """`Code.require_file(...)` run when Eva loads the script (a top-level statement); modules
        built when it runs (`Module.create`, `Code.eval_string`, ...)."""
        dot = node.form
        if not (_is(dot, ".") and len(dot.args) == 2 and _is(dot.args[0], "__aliases__")
                and len(dot.args[0].args) == 1 and isinstance(dot.args[0].args[0], Atom)
                and isinstance(dot.args[1], Atom)):
            return False
        owner, function = dot.args[0].args[0].name, dot.args[1].name
        if function in _BUILDERS.get(owner, ()):
            self.reading.note(f"code compiled when the script runs ({owner}.{function}, line {_line(node, 0)})")
            return False
        if owner != "Code" or function not in _REQUIRERS:
            return False
        path = _literal_beside(node.args or [])
        if path:
            self.reading.requires.append(Require(path, _line(node, 0) or 0))
        else:
            self.reading.note(f"a file required by a path computed when the script runs (line {_line(node, 0)})")
        return False

    def on_struct(self, node: Call, env: _Env, pattern: bool, top: bool) -> bool:
        if len(node.args) != 2:
            return False
        name, body = node.args
        atom = self.resolve(name, env) if not _is_var(name, "__MODULE__") else None
        if atom is not None:
            self.struct(atom, body, pattern, _line(node), env)
        self.walk(body, env, pattern=pattern)
        return True

    def struct(self, atom: str, body: Any, pattern: bool, line: int | None, env: _Env) -> None:
        pairs = body.args if _is(body, "%{}") else None
        if pairs is None:
            return
        update = len(pairs) == 1 and _is(pairs[0], "|")
        if update:
            pairs = pairs[0].args[1] if len(pairs[0].args) == 2 and isinstance(pairs[0].args[1], list) else []
        known = self.profile.structs.get(atom)
        if known is None:
            self.structs_seen.append((atom, line))
            return
        fields, enforced = known
        given = set()
        for pair in pairs:
            key = pair[0] if isinstance(pair, tuple) and len(pair) == 2 else pair
            if isinstance(key, Atom) and key.name in fields:
                given.add(key.name)
                continue
            what = f"unknown key :{key.name}" if isinstance(key, Atom) else "a key that is not an atom"
            self.problem(line, f"{what} in struct {display(atom)} (its keys: {', '.join(sorted(fields))}): Elixir "
                               "refuses to compile it")
        missing = sorted(enforced - given)
        if missing and not pattern and not update:
            self.problem(line, f"struct {display(atom)} needs the keys {', '.join(':' + m for m in missing)}: Elixir "
                               "refuses to compile it without them")

    def undefined_structs(self, defined: set[str]) -> None:
        """A struct of a module no one defines: one below Eva's struct roots that Eva lacks, or the
        short names `use Eva.Core.Extension` aliases (`%Spec{}`) used where no `use` aliased them."""
        shorts = {f"Elixir.{short}" for short in self.profile.injected_aliases}
        for atom, line in self.structs_seen:
            if atom in defined:
                continue
            if any(atom == root or atom.startswith(root + ".") for root in self.profile.struct_roots):
                self.problem(line, f"struct {display(atom)} is not defined (Eva has no such struct): Elixir refuses "
                                   "to compile it")
            elif any(atom == s or atom.startswith(s + ".") for s in shorts):
                self.problem(line, f"struct {display(atom)} is not defined: %{display(atom)}{{}} means Eva's struct "
                                   "only in a module that uses Eva.Core.Extension (elsewhere write its full name)")

    # pass 2: function bodies ----------------------------------------------------------------------

    def check_module(self, info: _Info) -> None:
        self.info = info
        for head, guard, body in info.clauses:
            scope: set[str] = set()
            bound: set[str] = set()
            for arg in head:
                self.pattern(arg, scope, bound)
            scope |= bound
            if guard is not None:
                self.expr(guard, scope, set())
            self.def_body(body, scope)
        scope = set()
        for statement in info.body:
            if _ident(statement) in _SKIP_STATEMENTS and isinstance(statement, Call) and statement.args is not None:
                continue
            if _is(statement, "@"):
                inner = statement.args[0] if statement.args else None
                if _ident(inner) in _TYPESPECS or not isinstance(inner, Call) or not inner.args:
                    continue
                statement = inner.args
            bound = set()
            self.expr(statement, scope, bound, module_body=True)
            scope |= bound

    def known(self, name: str, arity: int, *, module_body: bool = False) -> bool:
        if (name, arity) in self.kernel or (name, arity) in self.info.imports or name == "super":
            return True
        if module_body:
            return False  # the module's own functions do not exist yet while its body runs
        return any(n == name and low <= arity <= high for n, low, high in self.info.defs)

    def call(self, name: str, arity: int, line: int | None, *, module_body: bool = False) -> None:
        if not self.known(name, arity, module_body=module_body):
            where = "there is no such import" if module_body else \
                f"{self.info.module.name} defines no such function and imports none"
            self.problem(line, f"undefined function {name}/{arity} ({where}): Elixir refuses to compile it")

    def def_body(self, body: Any, scope: set[str]) -> None:
        blocks = _keywords(body)
        if blocks is None:
            return
        for key, value in blocks.items():
            if key in ("do", "after"):
                self.block(value, set(scope))
            elif key in ("rescue", "catch", "else"):
                self.clauses(value, scope)

    def block(self, node: Any, scope: set[str], *, module_body: bool = False) -> None:
        for statement in _statements(node):
            bound: set[str] = set()
            self.expr(statement, scope, bound, module_body=module_body)
            scope |= bound

    def clauses(self, node: Any, scope: set[str], *, heads: str = "pattern") -> None:
        for clause in node if isinstance(node, list) else []:
            if not (_is(clause, "->") and len(clause.args) == 2):
                self.expr(clause, scope, set())
                continue
            lhs, body = clause.args
            inner, bound = set(scope), set[str]()
            for head in lhs if isinstance(lhs, list) else [lhs]:
                if heads == "pattern":
                    self.pattern(head, inner, bound)
                else:
                    self.expr(head, inner, bound)
            inner |= bound
            self.block(body, inner)

    def expr(self, node: Any, scope: set[str], bound: set[str], *, module_body: bool = False) -> None:
        if isinstance(node, (list, tuple)):
            for item in node:
                self.expr(item, scope, bound, module_body=module_body)
            return
        if not isinstance(node, Call):
            return
        form, args = node.form, node.args
        if isinstance(form, Call):
            if _is(form, ".") and form.args:
                target = form.args[0]
                if not (_is(target, "__aliases__") or isinstance(target, Atom)):
                    self.expr(target, scope, bound, module_body=module_body)
            else:
                self.expr(form, scope, bound, module_body=module_body)
            self.expr(args, scope, bound, module_body=module_body)
            return
        if not isinstance(form, Atom):
            return
        name = form.name
        if args is None:
            if name == "_":
                self.problem(node.line, "_ used as a value: Elixir refuses it (_ only matches in a pattern)")
            elif _IDENT.match(name) and name not in scope and not self.known(name, 0, module_body=module_body):
                self.problem(node.line, f"undefined variable or function {name}: Elixir refuses to compile it")
            return
        method = _FORMS.get(name)
        if method is not None:
            method(self, node, scope, bound, module_body)
            return
        if _IDENT.match(name):
            self.call(name, len(args), node.line, module_body=module_body)
        self.arguments(args, scope, bound, module_body)

    def arguments(self, args: list[Any], scope: set[str], bound: set[str], module_body: bool) -> None:
        """A call's arguments: blocks (`do:`, `else:`, ...) in their own scopes, which see what the
        other arguments bound; the rest in this statement's."""
        blocks = None
        if args and (kw := _keywords(args[-1])) is not None and set(kw) & _BLOCK_KEYS:
            blocks, args = kw, args[:-1]
        for arg in args:
            self.expr(arg, scope, bound, module_body=module_body)
        if blocks is not None:
            for key, value in blocks.items():
                if key in _BLOCK_KEYS:
                    self.block(value, scope | bound, module_body=module_body)
                else:
                    self.expr(value, scope, bound, module_body=module_body)

    def x_match(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        if len(node.args) == 2:
            self.expr(node.args[1], scope, bound, module_body=module_body)
            self.pattern(node.args[0], scope, bound)

    def x_fn(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        self.clauses(node.args, scope)

    def x_case(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        args = node.args
        blocks = _keywords(args[-1]) if args else None
        for arg in args[:-1] if blocks is not None else args:
            self.expr(arg, scope, bound, module_body=module_body)
        for key, value in (blocks or {}).items():
            heads = "expr" if (node.form.name == "cond" or (node.form.name == "receive" and key == "after")) \
                else "pattern"
            self.clauses(value, scope | bound, heads=heads)

    def x_try(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        self.def_body(node.args[0] if node.args else None, scope | bound)

    def x_with(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        args = list(node.args)
        blocks = _keywords(args[-1]) if args else None
        if blocks is not None:
            args = args[:-1]
        inner = scope | bound
        options: dict[str, Any] = {}
        for arg in args:
            kw = _keywords(arg) if node.form.name == "for" else None
            if kw is not None:
                options.update(kw)
                continue
            generator = arg.args[0] if _is(arg, "<<>>") and len(arg.args) == 1 and _is(arg.args[0], "<-") else arg
            if _is(generator, "<-") and len(generator.args) == 2:
                self.expr(generator.args[1], inner, set())
                new: set[str] = set()
                self.pattern(generator.args[0], inner, new)
                inner |= new
            else:
                new = set()
                self.expr(arg, inner, new)
                inner |= new
        for value in options.values():
            self.expr(value, scope, bound)
        for key, value in (blocks or {}).items():
            if key == "do" and "reduce" in options:
                self.clauses(value, inner)
            elif key == "do":
                self.block(value, set(inner))
            elif key == "else":
                self.clauses(value, scope | bound)

    def x_capture(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        arg = node.args[0] if node.args else None
        if isinstance(arg, Call) and _is(arg, "/") and len(arg.args) == 2 and isinstance(arg.args[1], int):
            target = arg.args[0]
            name = _ident(target)
            if name is not None and isinstance(target, Call) and target.args is None:
                self.call(name, arg.args[1], node.line, module_body=module_body)
                return
            if isinstance(target, Call) and isinstance(target.form, Call):
                return  # &Mod.fun/1
        if isinstance(arg, int):
            return  # &1
        self.expr(arg, scope, bound, module_body=module_body)

    def x_pipe(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        if len(node.args) != 2:
            return
        left, right = node.args
        self.expr(left, scope, bound, module_body=module_body)
        name = _ident(right)
        if name is not None and isinstance(right, Call) and right.form.name not in _FORMS:
            self.call(name, len(right.args or []) + 1, right.line, module_body=module_body)
            self.arguments(right.args or [], scope, bound, module_body)
        else:
            self.expr(right, scope, bound, module_body=module_body)

    def x_skip(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        return

    def x_struct(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        if len(node.args) == 2:
            self.expr(node.args[1], scope, bound, module_body=module_body)

    def x_map(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        for pair in node.args:
            if _is(pair, "|") and len(pair.args) == 2:
                self.expr(pair.args, scope, bound, module_body=module_body)
            else:
                self.expr(pair, scope, bound, module_body=module_body)

    def x_binary(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        for segment in node.args:
            if _is(segment, "::") and len(segment.args) == 2:
                self.expr(segment.args[0], scope, bound, module_body=module_body)
                self.sizes(segment.args[1], scope | bound)
            else:
                self.expr(segment, scope, bound, module_body=module_body)

    def x_args(self, node: Call, scope: set[str], bound: set[str], module_body: bool) -> None:
        self.expr(node.args, scope, bound, module_body=module_body)

    def sizes(self, spec: Any, scope: set[str]) -> None:
        """A binary segment's type: only `size(...)` and `unit(...)` hold expressions."""
        if not isinstance(spec, Call) or spec.args is None:
            return
        if _is(spec, "size") or _is(spec, "unit"):
            self.expr(spec.args, scope, set())
        elif _is(spec, "-") or _is(spec, "*"):
            for part in spec.args:
                self.sizes(part, scope)

    def pattern(self, node: Any, scope: set[str], bound: set[str]) -> None:
        """Bind the variables of a pattern into `bound`; pins read `scope`."""
        if isinstance(node, (list, tuple)):
            for item in node:
                self.pattern(item, scope, bound)
            return
        if not isinstance(node, Call) or not isinstance(node.form, Atom):
            return
        name, args = node.form.name, node.args
        if args is None:
            if _IDENT.match(name) and name != "_":
                bound.add(name)
            return
        if name == "^":
            pinned = _ident(args[0]) if args else None
            if pinned is not None and args[0].args is None and pinned not in scope:
                self.problem(node.line, f"undefined variable ^{pinned} (no variable {pinned} is bound before this "
                                        "pattern): Elixir refuses to compile it")
            return
        if name == "when" and args:
            for head in args[:-1]:
                self.pattern(head, scope, bound)
            self.expr(args[-1], scope | bound, set())
            return
        if name == "\\\\" and len(args) == 2:
            self.pattern(args[0], scope, bound)
            self.expr(args[1], set(), set())
            return
        if name == "<<>>":
            for segment in args:
                if _is(segment, "::") and len(segment.args) == 2:
                    self.pattern(segment.args[0], scope, bound)
                    self.sizes(segment.args[1], scope | bound)
                else:
                    self.pattern(segment, scope, bound)
            return
        if name == "%{}":
            for pair in args:
                value = pair[1] if isinstance(pair, tuple) and len(pair) == 2 else pair
                self.pattern(value, scope, bound)
            return
        if name in ("=", "<>", "|", "%", "{}", "in", "::"):
            self.pattern(args, scope, bound)


def _is_var(node: Any, name: str) -> bool:
    return isinstance(node, Call) and node.form == Atom(name) and node.args is None


def _literal_beside(args: list[Any]) -> str | None:
    """The path of `Code.require_file("x.exs", __DIR__)`, `(Path.join(__DIR__, "x.exs"))` or
    `(__DIR__ <> "/x.exs")`, relative to the script's directory; None for any other argument."""
    if len(args) == 2 and isinstance(args[0], str) and _is_var(args[1], "__DIR__"):
        return args[0].lstrip("/") or None
    if len(args) != 1:
        return None
    arg = args[0]
    if _is(arg, "<>") and len(arg.args) == 2 and _is_var(arg.args[0], "__DIR__") and isinstance(arg.args[1], str):
        return arg.args[1].lstrip("/") or None
    if isinstance(arg, Call) and _is(arg.form, ".") and len(arg.form.args) == 2 \
            and arg.form.args[0] == Call(Atom("__aliases__"), arg.form.args[0].line, [Atom("Path")]) \
            and arg.form.args[1] in (Atom("join"), Atom("expand")):
        parts = arg.args or []
        if arg.form.args[1] == Atom("join") and len(parts) == 2 and _is_var(parts[0], "__DIR__") \
                and isinstance(parts[1], str):
            return parts[1].lstrip("/") or None
        if arg.form.args[1] == Atom("expand") and len(parts) == 2 and isinstance(parts[0], str) \
                and _is_var(parts[1], "__DIR__"):
            return parts[0].lstrip("/") or None
    return None


_HANDLERS = {
    "defmodule": Quoted.on_defmodule, "use": Quoted.on_use, "alias": Quoted.on_alias, "import": Quoted.on_import,
    "require": Quoted.on_require, "quote": Quoted.on_quote, "defstruct": Quoted.on_defstruct,
    "defexception": Quoted.on_defexception, "__block__": Quoted.on_block, "=": Quoted.on_match,
    "->": Quoted.on_match, "<-": Quoted.on_match, "%": Quoted.on_struct, "@": Quoted.on_attribute,
    **{kind: Quoted.on_def for kind in _DEFS},
}

_FORMS = {
    "=": Quoted.x_match, "fn": Quoted.x_fn, "case": Quoted.x_case, "cond": Quoted.x_case,
    "receive": Quoted.x_case, "try": Quoted.x_try, "with": Quoted.x_with, "for": Quoted.x_with,
    "&": Quoted.x_capture, "|>": Quoted.x_pipe, "quote": Quoted.x_skip, "@": Quoted.x_skip,
    "unquote": Quoted.x_skip, "unquote_splicing": Quoted.x_skip, "__aliases__": Quoted.x_skip,
    "^": Quoted.x_skip, "%": Quoted.x_struct, "%{}": Quoted.x_map, "<<>>": Quoted.x_binary,
    "__block__": Quoted.x_args, "super": Quoted.x_args, "->": Quoted.x_skip,
    **{name: Quoted.x_skip for name in _SKIP_STATEMENTS},  # definitions are checked as such, wherever they are
}


def read(parsed: Parsed, toolchain: Toolchain, profile: Profile) -> Reading:
    """The reading of one parsed script (its syntax error as a problem). Raises ToolchainError when
    Elixir could not parse it, RecursionError for a quoted form nested too deeply for Python."""
    if parsed.failure is not None:
        raise ToolchainError(parsed.failure)
    if parsed.error is not None:
        line, message = parsed.error
        reading = Reading()
        reading.problems.append((line or 0, f"syntax error: {message}"))
        return reading
    return Quoted(parsed, toolchain, profile).read()
