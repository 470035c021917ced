"""`pkgmgr completion bash|zsh|fish`: a shell completion script for commands, options and the
names of installed extensions, generated from the parser itself (so it never drifts).

Installed names come from outside (a host accepts names such as `$(touch${IFS}x)`), so they are
never expanded by a shell: `completion names` prints only names that are plain shell words
(`completable`), and the bash script matches them against the word being completed literally,
never through `compgen -W`, which expands every word it is given (command substitution,
parameters, braces, tildes) — completion on a hostile name ran its command at the press of TAB."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output, Printer

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands

# commands whose NAME arguments are installed extensions
NAMED = frozenset({"status", "verify", "enable", "disable", "remove", "uninstall", "rm", "update", "upgrade",
                   "rollback", "unlink"})
# a name a shell reads back as itself, expanded or not: the only names completion offers
_SHELL_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+@-]*")


def completable(names: Iterable[str]) -> list[str]:
    """The names completion may offer, sorted: those that are plain shell words (any other is
    left for the user to type, quoted)."""
    return sorted({name for name in names if _SHELL_WORD.fullmatch(name)})


def register(commands: Commands) -> None:
    p = commands.command(
        "completion", cmd_completion, "print a shell completion script",
        "Print a script that completes pkgmgr's commands, options and installed extension names. Load it "
        "from your shell's start-up file. 'completion names' prints the installed names (the scripts call it).",
        "pkgmgr completion bash    # in ~/.bashrc: eval \"$(pkgmgr completion bash)\"\n"
        "pkgmgr completion zsh     # in ~/.zshrc: eval \"$(pkgmgr completion zsh)\"\n"
        "pkgmgr completion fish    # saved as ~/.config/fish/completions/pkgmgr.fish",
    )
    p.add_argument("shell", choices=("bash", "zsh", "fish", "names"))


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    from pkgmgr.cli.app import _subparsers

    return _subparsers(parser)


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted({o for o in parser._option_string_actions if o.startswith("--")} | {"--help"})


def _tree() -> list[tuple[str, list[str]]]:
    """(command path, the words that complete after it): "" -> top-level commands, "ext" -> its
    commands, "ext install" -> its options."""
    from pkgmgr.cli.app import TOP_ALIASES, build_parser

    top = build_parser()
    tree = [("", sorted([*_subcommands(top), *TOP_ALIASES]))]
    for name, parser in _subcommands(top).items():
        children = _subcommands(parser)
        if children:
            tree.append((name, sorted(children)))
            tree += [(f"{name} {child}", _options(sub)) for child, sub in children.items()]
        else:
            tree.append((name, _options(parser)))
    return tree


def _bash() -> str:
    cases = []
    for path, words in sorted(_tree(), key=lambda item: -len(item[0].split())):  # deepest first
        names = "; names=1" if path.split(" ")[-1] in NAMED else ""
        pattern = '""' if not path else f'"{path}"|"{path} "*'
        cases.append(f"        {pattern}) words={shlex.quote(' '.join(words))}{names};;")
    aliases = "|".join(f'"{alias}"|"{alias} "*' for alias in ("install", "uninstall", "update", "list"))
    cases.insert(0, f'        {aliases}) path="ext $path"; _pkgmgr_words;;')
    body = "\n".join(cases)
    return f"""# pkgmgr completion for bash: eval "$(pkgmgr completion bash)"
_pkgmgr_words() {{
    case "$path" in
{body}
        *) words="";;
    esac
}}
_pkgmgr() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} path="" words="" names=0 skip=0 i w name
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${{COMP_WORDS[i]}}
        if ((skip)); then skip=0; continue; fi
        case "$w" in
            -o|--home|--workspace|--scope|--lock-timeout) skip=1; continue;;
            -*) continue;;
        esac
        path="${{path:+$path }}$w"
    done
    _pkgmgr_words
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    if ((names)); then  # installed names: matched literally, never expanded
        while IFS= read -r name; do
            [[ $name == "$cur"* ]] && COMPREPLY+=("$name")
        done < <(pkgmgr completion names 2>/dev/null)
    fi
}}
complete -F _pkgmgr pkgmgr
"""


def _zsh() -> str:
    return "# pkgmgr completion for zsh: eval \"$(pkgmgr completion zsh)\"\n" \
           "autoload -U +X bashcompinit && bashcompinit\n" + _bash()


def _fish() -> str:
    lines = ["# pkgmgr completion for fish: pkgmgr completion fish > ~/.config/fish/completions/pkgmgr.fish",
             "complete -c pkgmgr -f"]
    tree = dict(_tree())
    lines.append(f"complete -c pkgmgr -n __fish_use_subcommand -a {shlex.quote(' '.join(tree['']))}")
    for path, words in tree.items():
        if not path:
            continue
        parts = path.split(" ")
        condition = " ; and ".join(f"__fish_seen_subcommand_from {p}" for p in parts)
        if words and not words[0].startswith("-"):  # a group: its commands
            others = " ".join(words)
            lines.append(f"complete -c pkgmgr -n '{condition}; and not __fish_seen_subcommand_from {others}' "
                         f"-a {shlex.quote(others)}")
            continue
        for option in words:
            lines.append(f"complete -c pkgmgr -n '{condition}' -l {option[2:]}")
        if parts[-1] in NAMED:
            lines.append(f"complete -c pkgmgr -n '{condition}' -a '(pkgmgr completion names 2>/dev/null)'")
    return "\n".join(lines) + "\n"


def cmd_completion(ctx: Context, args: argparse.Namespace) -> Output:
    if args.shell == "names":
        from pkgmgr.cli.context import visible_scopes
        from pkgmgr.lifecycle import listed

        names = completable(item.name for item in listed(visible_scopes(ctx)))
        return Output({"names": names}, "\n".join(names) if names else None)
    script = {"bash": _bash, "zsh": _zsh, "fish": _fish}[args.shell]()

    def human(p: Printer) -> None:
        p.stream.write(script)

    return Output({"shell": args.shell, "script": script}, human)
