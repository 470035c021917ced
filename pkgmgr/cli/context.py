"""Per-invocation context: global options, configuration, scope roots, prompts, warnings."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.output import isatty
from pkgmgr.errors import Code
from pkgmgr.fsutil import user_path
from pkgmgr.patterns import terminal_text

if TYPE_CHECKING:
    from pkgmgr.config import Config


def default_home() -> Path:
    """`PKGMGR_HOME` (absolute, or `usage`: a relative one would depend on the current
    directory, which a repository controls), else the platform's user data directory."""
    env = os.environ.get("PKGMGR_HOME")
    if env:
        path = user_path(env)
        if not path.is_absolute():
            from pkgmgr.errors import PkgmgrError

            raise PkgmgrError(f"PKGMGR_HOME={env!r} is not an absolute path", code=Code.USAGE,
                              details={"variable": "PKGMGR_HOME"}, hint="set it to an absolute path")
        return path
    from platformdirs import user_data_dir

    return Path(user_data_dir("pkgmgr", appauthor=False))


@dataclass
class Context:
    output: str = "human"
    home: Path = field(default_factory=default_home)
    workspace_arg: Path | None = None
    scope: str = "global"
    quiet: bool = False
    verbose: bool = False
    no_progress: bool = False
    offline: bool = False
    yes: bool = False
    lock_timeout: float = 30.0
    scope_given: bool = False  # --scope was given: a read shows only what it names
    argv: tuple[str, ...] = ()  # the command line, for the hints that repeat it
    stdin: Any = None
    stderr: Any = None
    _warned: set[str] = field(default_factory=set, repr=False)  # warnings given once per command

    @property
    def json(self) -> bool:
        return self.output == "json"

    @cached_property
    def config(self) -> Config:
        from pkgmgr.config import load_config  # here: commands that need no configuration skip tomllib

        return load_config(self.home)

    @property
    def err(self) -> Any:
        return self.stderr if self.stderr is not None else sys.stderr

    @property
    def interactive(self) -> bool:
        """A person can answer a prompt: human output and a terminal on stdin and stderr."""
        stdin = self.stdin if self.stdin is not None else sys.stdin
        return not self.json and isatty(stdin) and isatty(self.err)

    @property
    def show_progress(self) -> bool:
        return not self.json and not self.quiet and not self.no_progress and isatty(self.err)

    def warn(self, message: str) -> None:
        self.err.write(f"warning: {terminal_text(message)}\n")

    def note(self, message: str) -> None:
        """Informational line on stderr (never pollutes a JSON stdout)."""
        if not self.quiet:
            self.err.write(terminal_text(message) + "\n")

    def ask(self, question: str) -> bool:
        """A `[y/N]` prompt on the terminal (SPEC 11): keys typed ahead (during a download) are
        dropped first, an answer that is neither yes nor no asks again, and an empty answer
        or the end of input is no."""
        stdin = self.stdin if self.stdin is not None else sys.stdin
        _drop_typed_ahead(stdin)
        while True:
            self.err.write(f"{terminal_text(question)} [y/N] ")
            self.err.flush()
            answer = stdin.readline()
            word = answer.strip().lower()
            if word in ("y", "yes"):
                return True
            if not answer or word in ("", "n", "no"):
                return False
            self.err.write(f"please answer y or n (not {answer.strip()!r})\n")


def _drop_typed_ahead(stdin: Any) -> None:
    """Discard what was typed on the terminal before the question was asked."""
    if not isatty(stdin):
        return
    try:
        import termios

        termios.tcflush(stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError, AttributeError):
        pass


def require_workspace_dir(path: Path) -> None:
    """`--workspace DIR` names an existing directory (SPEC 11: `not_found` otherwise)."""
    if not path.is_dir():
        from pkgmgr.errors import PkgmgrError

        what = "is not a directory" if os.path.lexists(path) else "does not exist"
        raise PkgmgrError(f"--workspace {path}: {what}", code=Code.NOT_FOUND, path=str(path),
                          hint="--workspace names the folder of a workspace (the one holding pkgmgr.toml)")


def workspace_dir(ctx: Context) -> Path:
    """The workspace: --workspace, else discovered from the current directory (SPEC 11)."""
    if ctx.workspace_arg is not None:
        require_workspace_dir(ctx.workspace_arg)  # a typo must not become a new directory tree
        return ctx.workspace_arg.resolve()  # one spelling: activation ids and approvals key on it
    from pkgmgr.store.scope import discover_workspace

    return discover_workspace(Path.cwd()).resolve()


def target_scope(ctx: Context, scope: str | None = None, *, declares: bool = False, read: bool = False,
                 refs: tuple[str, ...] | list[str] = ()) -> Any:
    """The scope a command writes to (`--scope`, default global). A workspace is found by its
    pkgmgr.toml (SPEC 11): where none is found (and no --workspace names one) a workspace scope
    is refused before its store is created — unless the command creates pkgmgr.toml itself
    (`declares`: `--save`) — since the reads run there would never show it. A store created
    before this rule keeps working; a `read` shows what there is (nothing)."""
    from pkgmgr.store.scope import global_scope

    kind = scope or ctx.scope
    if kind == "workspace":
        from pkgmgr.workspace.store import workspace_scope

        root = workspace_dir(ctx)
        warn_legacy_store(ctx, root)
        found = workspace_scope(root, ctx.home)
        if (not declares and not read and ctx.workspace_arg is None and not os.path.lexists(root / "pkgmgr.toml")
                and not found.exists()):
            raise _no_workspace(ctx, root, refs)
        return found
    return global_scope(ctx.home)


def _no_workspace(ctx: Context, root: Path, refs: tuple[str, ...] | list[str]) -> Exception:
    """The refusal of a workspace scope where no pkgmgr.toml says there is a workspace; for an
    install whose refs pkgmgr.toml can declare, the same command with --save is the way in."""
    import shlex

    from pkgmgr.errors import PkgmgrError

    message = (f"{root} is not in a workspace: neither it nor a folder above it holds pkgmgr.toml, so the "
               "commands run here would never show what --scope workspace put there")
    words = [word for word in ctx.argv if not word.startswith("--scope=")]
    while "--scope" in words:
        at = words.index("--scope")
        del words[at:at + 2]
    from pkgmgr.cli.commands import command_words

    if command_words(words) == ("ext", "install") and "--dry-run" not in words and _saveable(root, refs):
        hint = (f"'pkgmgr {shlex.join([*words, '--save'])}' installs it into a new workspace here and declares it "
                "in pkgmgr.toml; --workspace DIR names an existing workspace")
    else:
        hint = (f"a workspace is a folder holding pkgmgr.toml: create one in {root} (empty will do) to make it "
                "one, or name a workspace with --workspace DIR")
    return PkgmgrError(message, code=Code.NOT_FOUND, path=str(root), hint=hint)


def _saveable(root: Path, refs: tuple[str, ...] | list[str]) -> bool:
    """Whether `ext install REFS --save` would declare every ref (a directory outside the folder
    cannot be)."""
    from pkgmgr.errors import PkgmgrError
    from pkgmgr.workspace.edit import check_saveable

    try:
        check_saveable(root, refs)
    except PkgmgrError:
        return False
    return bool(refs)


def warn_legacy_store(ctx: Context, workspace: Path) -> None:
    """The one-line warning about a `.pkgmgr/` an earlier version left in the work tree (SPEC 10)."""
    from pkgmgr.workspace.store import legacy_warning

    message = legacy_warning(workspace)
    if message is not None and message not in ctx._warned:
        ctx._warned.add(message)
        ctx.warn(message)


def visible_scopes(ctx: Context) -> list[Any]:
    """Scopes a read sees, nearest first (SPEC 11): inside a workspace (discovered, or named by
    --workspace, which must exist) its store under the global home, when it has one, then
    global. `--scope` narrows: `global` to the global scope, `workspace` to the workspace and
    what of global it does not shadow. Creates nothing."""
    from pkgmgr.store.scope import global_scope
    from pkgmgr.workspace.store import workspace_scope

    if ctx.scope == "workspace":
        scope = target_scope(ctx, "workspace", read=True)
        return [scope, scope.parent]
    everywhere = global_scope(ctx.home)
    if ctx.scope_given:
        return [everywhere]
    root = workspace_dir(ctx)  # not_found for a --workspace that does not exist
    if ctx.workspace_arg is None and not (root / "pkgmgr.toml").is_file():
        return [everywhere]
    warn_legacy_store(ctx, root)
    scope = workspace_scope(root, ctx.home)
    if not scope.exists():
        return [everywhere]
    return [scope, everywhere]
