"""The manual page, generated from the command tree (argparse) so that it never drifts from
`--help`: `pkgmgr help --man` prints it, and `man/pkgmgr.1` (installed with the package as
`share/man/man1/pkgmgr.1`) is this module's output (`python -m pkgmgr.cli.manpage > man/pkgmgr.1`;
`tests/cli/test_help.py` fails when the file is older than the tree).

roff, as `man 7 groff_man` describes it: every text line escaped (`\\e` for a backslash, `\\-` for a
hyphen that is a minus, `\\&` before a leading `.` or `'`), no date (the same tree gives the same
bytes).
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Iterator

from pkgmgr import __version__

# what SPEC 11 says of each variable, as a user needs it
ENVIRONMENT = (
    ("PKGMGR_HOME", "the global scope's root (an absolute path); default: the platform's user data directory"),
    ("PKGMGR_CONFIG", "the configuration file (an absolute path); default: config.toml in the home"),
    ("PKGMGR_HOST_VERSION", "the Compozy version extensions are checked against (min_compozy_version)"),
    ("PKGMGR_COMPOZY_GENERATION", "the Compozy generation that judges manifests: auto, v0.2, v0.3-beta.3 or v0.3"),
    ("PKGMGR_SIGNING_KEYS", "the directory of a signed registry's keys (registry init --sign, registry sign)"),
    ("PKGMGR_SHARED_CACHE", "a read-only download cache shared by a fleet, consulted before the network"),
    ("PKGMGR_OCI_AUTH_<HOST>", "user:password for an OCI registry (HOST upper-cased, other characters as _)"),
    ("PKGMGR_GITHUB_API_URL, PKGMGR_GITHUB_RAW_URL", "GitHub's REST API and raw-content bases (GitHub Enterprise)"),
    ("GITHUB_TOKEN, GH_TOKEN", "a token for GitHub (private repositories, higher rate limits); never printed"),
    ("NO_COLOR", "when set, no colour"),
)


def escape(text: str) -> str:
    """`text` as roff body text (one line)."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = "".join(char if ord(char) < 128 else f"\\[u{ord(char):04X}]" for char in text)  # roff is ASCII
    return "\\&" + text if text.startswith((".", "'")) else text


def _bold(text: str) -> str:
    return f"\\fB{escape(text)}\\fR"


def _italic(text: str) -> str:
    return f"\\fI{escape(text)}\\fR"


def _paragraphs(text: str | None) -> list[str]:
    """Prose lines of a description, one roff line each, blank lines as `.PP`."""
    lines: list[str] = []
    for line in textwrap.dedent(text or "").strip("\n").splitlines():
        lines.append(".PP" if not line.strip() else escape(line.strip()))
    return lines


def _examples(epilog: str | None) -> list[str]:
    """An `examples:` epilog as a no-fill block of commands (prose after a blank line as prose)."""
    if not epilog:
        return []
    head, _, body = epilog.partition("\n")
    if head.strip() != "examples:":
        return _paragraphs(epilog)
    block, _, rest = body.partition("\n\n")
    rows = [line.strip() for line in block.splitlines() if line.strip()]
    return [".PP", "Examples:", ".RS", ".nf", *(escape(row) for row in rows), ".fi", ".RE",
            *([".PP", *_paragraphs(rest)] if rest.strip() else [])]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    from pkgmgr.cli.app import _subparsers as subparsers

    return subparsers(parser)


def _aliases(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Command name -> its aliases, as the subparsers action records them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names: dict[int, list[str]] = {}
            for name, sub in action.choices.items():
                names.setdefault(id(sub), []).append(name)
            return {group[0]: group[1:] for group in names.values()}
    return {}


def _option_items(actions: list[argparse.Action]) -> Iterator[str]:
    formatter = argparse.HelpFormatter("pkgmgr")
    for action in actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings and not action.help:
            continue  # a positional the synopsis names and the description explains
        if action.option_strings:
            value = "" if action.nargs == 0 else " " + _italic(formatter._format_args(action, action.dest.upper()))
            label = ", ".join(_bold(option) for option in action.option_strings) + value
        else:
            label = _italic(formatter._format_args(action, action.dest))
        yield ".TP"
        yield label
        yield escape(" ".join((action.help or "").split()) % {"default": action.default, "prog": "pkgmgr"}
                     if action.help and "%(" in action.help else " ".join((action.help or "").split()))


def _synopsis(path: str, parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> str:
    formatter = argparse.HelpFormatter("pkgmgr")
    words = [_bold(path)]
    if any(a.option_strings for a in actions):
        words.append("[" + _italic("options") + "]")
    for action in actions:
        if not action.option_strings:
            words.append(_italic(formatter._format_args(action, action.dest)))
    return " ".join(words)


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The manual page of the whole command tree (roff)."""
    from pkgmgr.cli.app import TOP_ALIASES, build_parser, global_options

    top = parser or build_parser()
    global_strings = {o for a in global_options()._actions for o in a.option_strings}

    def own(p: argparse.ArgumentParser) -> list[argparse.Action]:
        return [a for a in p._actions if not isinstance(a, argparse._HelpAction)
                and not (a.option_strings and set(a.option_strings) <= global_strings)]

    lines = [f'.TH PKGMGR 1 "" "pkgmgr {__version__}" "User Commands"', ".nh", ".SH NAME",
             "pkgmgr \\- " + escape((top.description or "").rstrip(".")),
             ".SH SYNOPSIS", f"{_bold('pkgmgr')} [{_italic('global options')}] {_italic('command')} "
             f"[{_italic('options')}] [{_italic('arguments')}]", ".SH DESCRIPTION", *_paragraphs(top.description),
             ".PP", escape("Global options are accepted before or after the command. "
                           + ", ".join(f"'pkgmgr {alias}'" for alias in sorted(TOP_ALIASES))
                           + " are the commands of the same name of 'pkgmgr ext'; 'pkgmgr ext add' is "
                             "'pkgmgr ext install --save'."),
             *_examples(top.epilog), ".SH GLOBAL OPTIONS"]
    lines += _option_items([a for a in top._actions if a.option_strings and set(a.option_strings) & global_strings])
    lines.append(".SH COMMANDS")
    for name, group in _subparsers(top).items():
        commands = _subparsers(group)
        if commands:
            lines += [f'.SS "pkgmgr {name}"', *_paragraphs(group.description)]
            aliases = _aliases(group)
            for command, sub in commands.items():
                if command not in aliases:
                    continue  # an alias: named beside its command
                lines += _command(f"pkgmgr {name} {command}", sub, own(sub), aliases[command])
        else:
            lines += _command(f"pkgmgr {name}", group, own(group), [], section=True)
    lines += [".SH ENVIRONMENT"]
    for variable, meaning in ENVIRONMENT:
        lines += [".TP", _bold(variable), escape(meaning)]
    lines += [".SH EXIT STATUS", *_exit_status()]
    return "\n".join(lines) + "\n"


def _command(path: str, parser: argparse.ArgumentParser, actions: list[argparse.Action], aliases: list[str], *,
             section: bool = False) -> list[str]:
    lines = [f'.SS "{path}"' if section else ".TP", _synopsis(path, parser, actions)]
    if not section:
        lines.append(escape(parser.description or ""))
        lines.append(".RS")
    else:
        lines += [".PP", *_paragraphs(parser.description)]
    if aliases:
        lines += [".PP", escape("Also: " + ", ".join(path.rsplit(" ", 1)[0] + " " + alias for alias in aliases) + ".")]
    if any(True for _ in _option_items(actions)):
        lines += [".PP", *_option_items(actions)]
    lines += _examples(parser.epilog)
    if not section:
        lines.append(".RE")
    return lines


def _exit_status() -> list[str]:
    from pkgmgr.errors import EXIT_CODES

    by_status: dict[int, list[str]] = {}
    for code, status in EXIT_CODES.items():
        by_status.setdefault(status, []).append(code)
    meaning = {2: "usage", 3: "invalid input", 4: "integrity or policy refusal", 5: "not found", 6: "conflict",
               7: "network", 8: "awaiting operator confirmation", 9: "local storage failure (with the path)",
               70: "internal error (a bug)"}
    rows = {0: "success", 10: "not an error: 'ext update --check --exit-code' found updates"}
    rows.update({status: f"{meaning.get(status, 'error')}: " + ", ".join(codes) for status, codes in by_status.items()})
    lines: list[str] = []
    for status in sorted(rows):
        lines += [".TP", _bold(str(status)), escape(rows[status])]
    return lines


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
