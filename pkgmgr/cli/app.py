"""Argument parsing and the single place where failures become exit statuses.

Global options are accepted before or after the subcommand: every parser inherits them from
one parent parser whose defaults are suppressed, so a later occurrence never resets an
earlier one.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any, Callable, Sequence

from pkgmgr import __version__
from pkgmgr.cli.context import Context, default_home
from pkgmgr.cli.output import Output, Printer, error_document, print_error, scrub_secrets, write_json
from pkgmgr.cli.shellwrap import example_lines
from pkgmgr.errors import Code, PkgmgrError, io_error, path_error
from pkgmgr.fsutil import user_path

Handler = Callable[[Context, argparse.Namespace], Output]

GLOBAL_DEFAULTS: dict[str, Any] = {
    "output": "human",
    "home": None,
    "workspace": None,
    "scope": "global",
    "quiet": False,
    "verbose": False,
    "no_progress": False,
    "offline": False,
    "yes": False,
    "lock_timeout": 30.0,
}


class UsageError(PkgmgrError):
    code = Code.USAGE


class Parser(argparse.ArgumentParser):
    """argparse that raises `usage` errors instead of exiting, so JSON mode can report them."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}", hint=f"run '{self.prog} --help' for usage")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help wrapped to the terminal's width, a word never broken at the edge (SPEC 11): prose
    lines are filled; an indented line (an example command) is kept as written when it fits, else
    continued on the next line with a shell's ` \\` (a trailing comment moved above it), so it still
    runs as printed."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines: list[str] = []
        for line in text.splitlines():
            if not line.strip():
                lines.append("")
            elif line[0].isspace():
                lines.extend(indent + part for part in example_lines(line, width))
            else:
                lines.extend(textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=indent,
                                           break_long_words=False, break_on_hyphens=False) or [indent])
        return "\n".join(lines)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)


def non_negative(unit: str) -> Callable[[str], float]:
    """An argparse type: a number of `unit` (seconds, days), not negative."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {unit}") from None
        if value < 0:
            raise argparse.ArgumentTypeError("must not be negative")
        return value

    return parse


def global_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("global options")
    sup = argparse.SUPPRESS
    group.add_argument("-o", dest="output", choices=("human", "json"), default=sup, help="output format (default human)")
    group.add_argument("--json", dest="output", action="store_const", const="json", default=sup, help="same as -o json")
    group.add_argument("--home", metavar="DIR", default=sup, help="global scope root (env PKGMGR_HOME)")
    group.add_argument("--workspace", metavar="DIR", default=sup, help="workspace directory (default: discovered)")
    group.add_argument("--scope", choices=("global", "workspace"), default=sup, help="scope to act on (default global)")
    group.add_argument("-q", "--quiet", action="store_true", default=sup, help="print less")
    group.add_argument("-v", "--verbose", action="store_true", default=sup, help="print more (tracebacks of bugs)")
    group.add_argument("--no-progress", action="store_true", default=sup, help="never draw progress bars")
    group.add_argument("--offline", action="store_true", default=sup, help="use cached registry data only")
    group.add_argument("-y", "--yes", action="store_true", default=sup, help="assume yes where a prompt would ask")
    group.add_argument("--lock-timeout", metavar="SECONDS", type=non_negative("seconds"), default=sup,
                       help="wait this long for another writer (default 30)")
    group.add_argument("-V", "--version", action="version", version=f"pkgmgr {__version__}",
                       help="print pkgmgr's version and exit")
    return parent


class Skipped:
    """Stands in for the parser of a command the command line does not name: whatever a module
    declares on it is ignored (`Commands(only=...)`)."""

    def __getattr__(self, name: str) -> Any:
        return self._ignore

    def _ignore(self, *args: Any, **kwargs: Any) -> "Skipped":
        return self


class Commands:
    """Helper handed to each command module to declare its parsers in one style. With `only`
    (top level: the command named; in a group: its command named) the other commands of this
    level get a `Skipped` stand-in, and their group parsers are not built."""

    def __init__(self, subparsers: Any, parent: argparse.ArgumentParser,
                 owner: argparse.ArgumentParser | None = None, *, only: str | None = None,
                 then: str | None = None) -> None:
        self._subparsers = subparsers
        self._parent = parent
        self._owner = owner  # a group's parser: its help gathers the first example of each command
        self._only = only
        self._then = then  # the word after `only`: the command inside the group `only` names

    def _skipped(self, name: str, aliases: Sequence[str] = ()) -> bool:
        return self._only is not None and name != self._only and self._only not in aliases

    def group(self, name: str, help: str, description: str) -> "Commands":
        if self._skipped(name):
            return Commands(None, self._parent, only="")  # every command of it skipped
        parser = self._subparsers.add_parser(
            name, help=help, description=description, parents=[self._parent],
            formatter_class=HelpFormatter,
        )
        parser.set_defaults(handler=None, group_parser=parser)
        sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)
        return Commands(sub, self._parent, parser, only=self._then if self._only == name else None)

    def command(self, name: str, handler: Handler, help: str, description: str, examples: str = "",
                aliases: Sequence[str] = ()) -> argparse.ArgumentParser:
        if self._skipped(name, aliases):
            return Skipped()  # type: ignore[return-value]
        epilog = "examples:\n" + textwrap.indent(textwrap.dedent(examples).strip("\n"), "  ") if examples else None
        parser = self._subparsers.add_parser(
            name, help=help, description=description, epilog=epilog, parents=[self._parent],
            formatter_class=HelpFormatter, aliases=list(aliases),
        )
        parser.set_defaults(handler=handler)
        if examples and self._owner is not None:
            first = textwrap.dedent(examples).strip("\n").splitlines()[0]
            self._owner.epilog = (self._owner.epilog or "examples:") + "\n  " + first
        return parser


def build_parser(only: str | None = None, then: str | None = None) -> Parser:
    """The command-line parser; with `only`, just the modules declaring that top-level command
    (`pkgmgr.cli.commands.register_all`) and, in them, just that command (and, with `then`,
    just that command of its group)."""
    from pkgmgr.cli.commands import register_all

    parent = global_options()
    parser = Parser(
        prog="pkgmgr",
        description="Declarative package manager for agent-host extensions and their resource bundles.",
        epilog=textwrap.dedent(
            """\
            examples:
              pkgmgr ext install marketing-linear      # install from the configured registries
              pkgmgr ext list                          # what is installed in the global scope
              pkgmgr bundle preview marketing-linear   # what activating its bundle would project
              pkgmgr sync                              # bring a workspace to its pkgmgr.toml

            Run 'pkgmgr COMMAND --help' for the options of a command."""
        ),
        formatter_class=HelpFormatter,
        parents=[parent],
    )
    parser.set_defaults(handler=None, group_parser=parser)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)
    register_all(Commands(sub, parent, only=only, then=then), only)
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse with the parser of the command `argv` names; whenever that fails, parse again with
    the full parser, so that every error and message is the full parser's."""
    from pkgmgr.cli.commands import command_words

    only, then = command_words(argv)
    if only is not None:
        try:
            args = build_parser(only, then).parse_args(argv)
        except UsageError:
            pass
        else:
            if args.handler is not None:  # a group without its command prints the group's whole help
                return args
    parser = build_parser()
    try:
        return parser.parse_args(argv)
    except UsageError as usage:
        usage.parser = parser  # type: ignore[attr-defined]  # for `suggest`, which needs every command
        raise


# the top-level spellings of `ext` verbs (SPEC 11), expanded before parsing
TOP_ALIASES = frozenset({"install", "uninstall", "update", "list"})


def expand_aliases(argv: list[str]) -> list[str]:
    """`pkgmgr install ...` is `pkgmgr ext install ...`; `ext add ...` is `ext install --save ...`."""
    from pkgmgr.cli.commands import word_positions

    words = word_positions(argv)
    if not words:
        return argv
    first = words[0]
    if argv[first] in TOP_ALIASES:
        return [*argv[:first], "ext", *argv[first:]]
    if argv[first] == "ext" and len(words) == 2 and argv[words[1]] == "add":
        second = words[1]
        return [*argv[:second], "install", "--save", *argv[second + 1:]]
    return argv


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def suggest(parser: argparse.ArgumentParser, argv: Sequence[str], error: PkgmgrError) -> None:
    """Did you mean (SPEC 11): the closest command to an unknown one, the closest option of the
    command named to an unknown option, whose hint points at that command's --help."""
    import difflib
    import re

    from pkgmgr.cli.commands import VALUE_OPTIONS

    chain = [parser]
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--":
            break
        if arg.startswith("-"):
            skip = arg in VALUE_OPTIONS
            continue
        sub = _subparsers(chain[-1]).get(arg)
        if sub is None:
            break
        chain.append(sub)
    deepest = chain[-1]
    choice = re.search(r"invalid choice: '([^']*)'", error.message)
    if choice:
        known = list(_subparsers(deepest))
        if deepest is parser:
            known += sorted(TOP_ALIASES)
        close = difflib.get_close_matches(choice.group(1), known, n=3, cutoff=0.6)
        if close:
            error.message += "\ndid you mean " + " or ".join(f"'{deepest.prog} {c}'" for c in close) + "?"
            error.args = (error.message,)
        return
    unknown = re.search(r"unrecognized arguments: (.*)", error.message)
    if unknown:
        options = [o for o in deepest._option_string_actions if o.startswith("--")]
        for word in unknown.group(1).split():
            if not word.startswith("-"):
                continue
            close = difflib.get_close_matches(word.split("=", 1)[0], options, n=3, cutoff=0.6)
            if close:
                error.message += f"\n{word}: did you mean " + " or ".join(close) + "?"
                error.args = (error.message,)
        error.hint = f"run '{deepest.prog} --help' for its options"


def installed_names(ctx: Context) -> set[str]:
    """The names installed in the scopes visible from here, every host's."""
    from pkgmgr.cli.context import visible_scopes
    from pkgmgr.store import records

    return records.visible_names(visible_scopes(ctx))


def installed_before(ctx: Context, args: argparse.Namespace) -> set[str] | None:
    """For a command taking installed names (its parser's `installed` default names the
    argument), the names installed before it runs (it may remove some); else None."""
    if getattr(args, "installed", None) is None:
        return None
    import sqlite3

    try:
        return installed_names(ctx)
    except (PkgmgrError, sqlite3.Error):  # a store that cannot be read: the command itself says so
        return None


def suggest_installed(args: argparse.Namespace, error: PkgmgrError, known: set[str] | None) -> None:
    """Did you mean (SPEC 11) for a command taking installed names: a `not_found` gets the names
    installed (`known`) closest to the first name given that was not installed (a bundle TARGET
    counts by its extension)."""
    from pkgmgr.errors import suggest_close

    if known is None or error.code != Code.NOT_FOUND or "suggestions" in error.details:
        return
    value = getattr(args, args.installed, None)
    given = [value] if isinstance(value, str) else list(value or ())
    if args.installed == "target":
        given = [text.partition(":")[0] for text in given]
    missing = [name for name in given if name.lower() not in known]
    if missing:
        suggest_close(error, missing[0].lower(), known)


def make_context(args: argparse.Namespace, argv: Sequence[str] = ()) -> Context:
    options = {**GLOBAL_DEFAULTS, **{k: v for k, v in vars(args).items() if k in GLOBAL_DEFAULTS}}
    home = user_path(options["home"]) if options["home"] else default_home()
    workspace = user_path(options["workspace"]) if options["workspace"] else None
    return Context(
        output=options["output"],
        home=home.absolute(),
        workspace_arg=workspace.absolute() if workspace else None,
        scope=options["scope"],
        quiet=options["quiet"],
        verbose=options["verbose"],
        no_progress=options["no_progress"],
        offline=options["offline"],
        yes=options["yes"],
        lock_timeout=options["lock_timeout"],
        scope_given="scope" in vars(args),
        argv=tuple(argv),
    )


def _prescan(argv: Sequence[str]) -> tuple[bool, bool]:
    """JSON mode and verbosity, known even when parsing fails."""
    json_mode = verbose = False
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in ("--json", "-ojson") or (arg == "-o" and argv[i + 1 : i + 2] == ["json"]):
            json_mode = True
        if arg in ("-v", "--verbose"):
            verbose = True
    return json_mode, verbose


def run(argv: Sequence[str] | None = None) -> int:
    argv = expand_aliases(list(sys.argv[1:] if argv is None else argv))
    json_mode, verbose = _prescan(argv)
    try:
        try:
            args = parse(argv)
        except UsageError as usage:
            parser = getattr(usage, "parser", None)
            if parser is not None:
                suggest(parser, argv, usage)
            raise
        if args.handler is None:
            group = args.group_parser
            group.print_help(sys.stderr)
            raise UsageError(f"{group.prog}: a command is required")
        ctx = make_context(args, argv)
        if ctx.workspace_arg is not None:
            from pkgmgr.cli.context import require_workspace_dir

            require_workspace_dir(ctx.workspace_arg)  # every command: a typo never goes unnoticed (SPEC 11)
        json_mode, verbose = ctx.json, ctx.verbose
        from pkgmgr.store import lock

        lock.on_wait(None if ctx.quiet else ctx.note)
        known = installed_before(ctx, args)
        try:
            result = args.handler(ctx, args)
        except PkgmgrError as error:
            suggest_installed(args, error, known)
            registry_hint(error, ctx, args)
            raise
        if result.error is not None:
            suggest_installed(args, result.error, known)
            registry_hint(result.error, ctx, args)
        return emit(ctx, result)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the one place a bug becomes exit 70
        return failure(exc, json_mode, verbose)


def failure(exc: BaseException, json_mode: bool, verbose: bool) -> int:
    """Report what interrupted a command (called while it is being handled: `-v` prints its
    traceback) and return the exit status: its own for a `PkgmgrError`, `io_error` for the disk,
    70 for a bug (SPEC 11: no traceback reaches a user)."""
    if isinstance(exc, PkgmgrError):
        return report(exc, json_mode)
    if isinstance(exc, SystemExit):  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    if isinstance(exc, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
        return 130
    if isinstance(exc, BrokenPipeError):
        return 0
    if isinstance(exc, OSError):  # the disk (full, read-only, permissions, I/O) is io_error; the rest a bug
        if verbose:
            import traceback

            sys.stderr.write(scrub_secrets(traceback.format_exc()))
        where = f" {exc.filename}" if exc.filename else ""
        error = io_error(exc) or path_error(exc) or PkgmgrError(
            f"cannot access{where}: {exc.strerror or exc}", code=Code.INTERNAL, details={"errno": exc.errno})
        return report(error, json_mode)
    damaged = _damaged_database(exc) or io_error(exc, "a state database")
    if damaged is not None:
        return report(damaged, json_mode)
    if verbose:
        import traceback

        sys.stderr.write(scrub_secrets(traceback.format_exc()))
    error = PkgmgrError(
        f"internal error: {type(exc).__name__}: {_one_line(exc)}"
        + ("" if verbose else " (run with -v for the traceback)"),
        code=Code.INTERNAL,
    )
    return report(error, json_mode)


def _damaged_database(exc: BaseException) -> PkgmgrError | None:
    """SQLite found a state.db damaged ("database disk image is malformed"): the disk's doing,
    not a bug of pkgmgr's, so `state_inconsistent` rather than an internal error. Only the exact
    class: its subclasses (busy, constraint, misuse) remain what they are."""
    import sqlite3

    if type(exc) is not sqlite3.DatabaseError:
        return None
    return PkgmgrError(f"a state database is damaged: {_one_line(exc)}", code=Code.STATE_INCONSISTENT,
                       hint="run 'pkgmgr doctor --check' to see which scope; restore it from a backup")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else "no message"


# the failures of reading a registry that a user gets out of by not reading it
UNREADABLE = frozenset({Code.NETWORK_ERROR, Code.HTTP_ERROR, Code.RATE_LIMITED, Code.INVALID_INDEX, Code.NOT_FOUND})


def registry_hint(error: PkgmgrError, ctx: Context, args: argparse.Namespace) -> None:
    """An unreadable registry's error names the commands that get past it (SPEC 11), those that
    work here: `registry remove` for a configured registry (one pkgmgr.toml declares is dropped
    there), `--registry` when the command has it, `--offline` when its registry.toml is cached.
    A hint the error has already (a GitHub token, ...) comes first."""
    name = error.details.get("registry")
    if not isinstance(name, str) or error.code not in UNREADABLE or "registry_source" not in error.details:
        return  # not a failure to read the registry (Registry._read records its source)
    from pkgmgr.registry.client import DEFAULT_NAME, NotListed, UnknownRegistry

    if isinstance(error, (NotListed, UnknownRegistry)) or name == DEFAULT_NAME:
        return  # no registry to drop: nothing listed, or none by that name
    fixes = []
    if error.details.get("declared_in"):
        fixes.append("it is declared in pkgmgr.toml: removing it from [registries] there (approved with "
                     "'pkgmgr trust') does without it")
    elif any(registry.name == name for registry in ctx.config.registries):
        fixes.append(f"'pkgmgr registry remove {name}' drops it")
    if "registry" in vars(args):  # the command has --registry
        fixes.append(f"'--registry NAME' asks another registry ({_other_registries(ctx, name)})")
    source = error.details.get("registry_source")
    if isinstance(source, str) and not ctx.offline and _cached(ctx, source):
        fixes.append("'--offline' uses what is cached")
    if not fixes:
        return
    hint = f"registry {name} cannot be read: " + ", ".join(fixes)
    error.hint = f"{error.hint}; {hint}" if error.hint else hint


def _other_registries(ctx: Context, name: str) -> str:
    from pkgmgr.registry.client import DEFAULT_NAME

    return ", ".join([r.name for r in ctx.config.registries if r.name != name] + [DEFAULT_NAME])


def _cached(ctx: Context, source: str) -> bool:
    """Whether the registry cache holds `source`'s registry.toml (what `--offline` reads first)."""
    from pkgmgr.registry.cache import FileCache, cache_root
    from pkgmgr.registry.index_format import REGISTRY_FILE

    try:
        return FileCache(cache_root(ctx.home, source)).load(REGISTRY_FILE) is not None
    except (OSError, PkgmgrError):
        return False


def report(error: PkgmgrError, json_mode: bool, partial: dict[str, Any] | None = None) -> int:
    if json_mode:
        try:
            write_json(error_document(error, partial if partial is not None else error.partial))
        except OSError:  # standard output itself fails (e.g. full): the error still reaches stderr
            from pkgmgr.cli.output import abandon_stdout

            abandon_stdout()
    print_error(error)
    return error.exit_code


def emit(ctx: Context, result: Output) -> int:
    error = result.error
    if ctx.json:
        write_json(error_document(error, result.data) if error else result.data)
    elif result.human is not None and not (ctx.quiet and error is None and isinstance(result.human, str)):
        printer = Printer(quiet=ctx.quiet)
        if isinstance(result.human, str):
            printer.line(result.human)
        else:
            result.human(printer)
    if error is not None:
        print_error(error)
        return error.exit_code
    return result.status
