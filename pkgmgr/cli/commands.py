"""Registry of command groups: each module declares its own parsers and handlers.

A command line names one top-level command, so only the modules declaring it are imported
and registered (`MODULES`), and inside them only the parser of the command named (the others
get a stand-in that ignores what is declared on it); building every parser costs more than
most commands' work. `pkgmgr.cli.app.parse` falls back to the full parser whenever the short
one fails or help is asked for, so what a user sees is the same either way.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands

# the modules in registration order (that order is the order of the top-level help)
ORDER = ("ext_cmds", "ext_remote_cmds", "ext_switch_cmds", "registry_cmds", "bundle_cmds", "workspace_cmds", "doctor_cmds",
         "cache_cmds", "completion_cmds", "host_cmds", "help_cmds")
# top-level command -> the modules that declare it (tests/perf checks it against ORDER)
MODULES = {
    "ext": ("ext_cmds", "ext_remote_cmds", "ext_switch_cmds"),
    "registry": ("registry_cmds",),
    "bundle": ("bundle_cmds",),
    "resources": ("bundle_cmds",),
    "sync": ("workspace_cmds",),
    "trust": ("workspace_cmds",),
    "doctor": ("doctor_cmds",),
    "cache": ("cache_cmds",),
    "completion": ("completion_cmds",),
    "hosts": ("host_cmds",),
    "adopt": ("host_cmds",),
    "help": ("help_cmds",),
}
# global options that take a value in the next argument (see app.global_options)
VALUE_OPTIONS = frozenset({"-o", "--home", "--workspace", "--scope", "--lock-timeout"})


def word_positions(argv: Sequence[str]) -> list[int]:
    """Where the first two words of `argv` that are not options (nor a value option's value) are,
    stopping at help or `--`."""
    positions: list[int] = []
    skip = False
    for index, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in ("-h", "--help", "--"):
            break
        if arg.startswith("-"):
            skip = arg in VALUE_OPTIONS
            continue
        positions.append(index)
        if len(positions) == 2:
            break
    return positions


def command_words(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """The top-level command `argv` names, when it is one of `MODULES`, and the word after it
    (a group's command; None when help is asked for before it or the top-level word is unknown:
    then everything is registered)."""
    words = [argv[index] for index in word_positions(argv)]
    if not words or words[0] not in MODULES:
        return None, None
    return words[0], words[1] if len(words) > 1 else None


def command_word(argv: Sequence[str]) -> str | None:
    return command_words(argv)[0]


def register_all(commands: "Commands", only: str | None = None) -> None:
    """Register every command group, or only the modules declaring top-level command `only`."""
    wanted = set(MODULES[only]) if only in MODULES else set(ORDER)
    ext = None
    for name in ORDER:
        if name not in wanted:
            continue
        module = importlib.import_module(f"pkgmgr.cli.{name}")
        if name in ("ext_remote_cmds", "ext_switch_cmds"):
            module.register(ext)  # extends the ext group
        elif name == "ext_cmds":
            ext = module.register(commands)
        else:
            module.register(commands)
