"""What `ext install/update` and `sync` share on the command line: the install options, the
progress reporter, the question for an unverified source and the summary shown before a commit
(SPEC 7). Kept apart from the command modules so that none of them imports another."""

from __future__ import annotations

import argparse
from typing import Any

from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Printer


def add_install_options(p: argparse.ArgumentParser) -> None:
    """Options shared by install, update and sync (SPEC 4)."""
    p.add_argument("--allow-unverified", action="store_true",
                   help="accept sources no reviewed registry vouches for (paths, archives, URLs, GitHub)")
    p.add_argument("--force", action="store_true", help="replace an install from another source or content")
    p.add_argument("--pre", action="store_true", help="consider prereleases")
    p.add_argument("--allow-grants", action="store_true", help="accept grants beyond the read-only set")
    p.add_argument("--deactivate-missing", action="store_true",
                   help="deactivate activations whose profile the new version no longer has")
    p.add_argument("--dry-run", action="store_true", help="show what would be installed; change nothing")
    p.add_argument("--allow-expired", action="store_true", help="use a registry whose 'expires' date has passed")


def host_option(parser: argparse.ArgumentParser, what: str, default: str | None = None) -> None:
    """`--host`; `default` says what decides when it is not given (the manifest file, for a
    command given an extension's files), none for a command on installed extensions."""
    from pkgmgr.hosts import names, spoken

    parser.add_argument("--host", choices=names(), metavar="HOST",
                        help=f"{what}: {spoken(names())}" + (f" (default: {default})" if default else ""))


def trust_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--approve-host-trust", action="store_true",
                        help="for a project folder whose host keeps its own approval of it: record the approval "
                             "of the folder as it is now, when every file the approval covers is one pkgmgr "
                             "installed")
    # its own option string, so that `--approve-host-trust REF` never takes REF as a value
    parser.add_argument("--approve-host-trust=all", action="store_true", dest="approve_host_trust_all",
                        help="the same, approving also the files pkgmgr did not install that the approval covers "
                             "(after you reviewed the list an --approve-host-trust refusal names)")


def add_registry_option(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--registry", metavar="NAME", help=text)


def install_options(ctx: Context, args: argparse.Namespace) -> Any:
    from pkgmgr.install.options import InstallOptions

    return InstallOptions(
        confirm_always=ctx.config.confirm_policy == "always",
        force=args.force,
        allow_grants=args.allow_grants,
        allow_unverified=args.allow_unverified,
        pin=getattr(args, "pin", False),
        pre=args.pre,
        yes=ctx.yes,
        dry_run=args.dry_run,
        deactivate_missing=args.deactivate_missing,
        allow_expired=args.allow_expired,
        host=vars(args).get("host"),  # sync takes every host a declaration names
        approve_host_trust=bool(vars(args).get("approve_host_trust")),
        approve_host_trust_all=bool(vars(args).get("approve_host_trust_all")),
        lock_timeout=ctx.lock_timeout,
    )


def reporter_for(ctx: Context) -> Any:
    if ctx.show_progress:
        from pkgmgr.cli.progress_bars import RichReporter

        return RichReporter()
    from pkgmgr.progress import Reporter

    return Reporter()


def confirm_for(ctx: Context) -> Any:
    if not ctx.interactive:
        return None

    def confirm(summary: dict[str, Any]) -> bool:
        for line in summary_lines(summary):
            ctx.err.write(line + "\n")
        return ctx.ask(f"Install {summary['name']} {summary['version']} from this unverified source?")

    return confirm


def announce_for(ctx: Context) -> Any:
    """SPEC 7: before it acts, installing shows what it installs — permissions, subprocess
    command, network requirement — one summary per extension, just before its commit, on stderr
    (JSON output carries the same summary in its document; `-q` drops it)."""
    if ctx.json or ctx.quiet:
        return None
    printer = Printer(ctx.err)  # progress, not a result: stderr (SPEC 11)

    def announce(summary: dict[str, Any]) -> None:
        lines = summary_lines(summary)
        printer.notes([f"installing {lines[0]}", *lines[1:]])  # wrapped between words on a terminal
        printer.stream.flush()

    return announce


def summary_lines(summary: dict[str, Any]) -> list[str]:
    lines = [f"{summary['name']} {summary['version']} ({summary['kind']} extension, source {summary['source']}, "
             f"{'verified' if summary['verified'] else 'unverified'})"]
    if "capabilities" in summary:  # a host whose extensions ask for capabilities (SPEC 13)
        lines.append(f"  capabilities: {', '.join(summary['capabilities']) or 'none'}")
    else:
        lines.append(f"  permissions: {', '.join(summary['permissions']) or 'none'}")
    if summary.get("subprocess"):
        lines.append(f"  subprocess:  {summary['subprocess']}")
    network = summary.get("network_requirement")
    if network:
        scopes = ", ".join(network.get("channel_scopes", [])) or "no channel scopes"
        lines.append(f"  network:     required, mode {network.get('mode')}, {scopes} "
                     f"(digest {summary['network_digest']})")
    if summary.get("max_scope"):
        lines.append(f"  publishes:   up to the {summary['max_scope']} scope")
    return lines
