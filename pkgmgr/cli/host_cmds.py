"""`pkgmgr hosts` and `pkgmgr adopt` (SPEC 13): the hosts pkgmgr installs into, and extensions
installed into a host's folder by hand taken under management."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.cli.context import Context, target_scope
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts import names as host_names
from pkgmgr.hosts import others, spoken

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands


def register(commands: Commands) -> None:
    p = commands.command("hosts", cmd_hosts, "show the agent hosts pkgmgr installs into",
                         "Show the hosts, where each loads extensions on this machine (global, and the "
                         "project folder of the current workspace), and how many extensions pkgmgr manages there "
                         "and how many others are there.",
                         "pkgmgr hosts\npkgmgr hosts -o json")
    p = commands.command("adopt", cmd_adopt, "take hand-installed host extensions under management",
                         "Record extensions that were installed into a host's folder by hand (copied, cloned), "
                         "with their tree checksum as it is now, without moving them. With no NAME, every "
                         "unmanaged extension of that host in the scope's folder.",
                         f"pkgmgr adopt --host {others()[0]}\npkgmgr adopt --host {others()[-1]} my-tool\n"
                         f"pkgmgr --scope workspace adopt --host {others()[0]} my-tool")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--host", choices=host_names(), required=True, metavar="HOST",
                   help=f"the host whose folder to adopt from: {spoken(others())}")
    p.add_argument("--force", action="store_true",
                   help="adopt an extension that changed since the host's own records named it")


# --- pkgmgr hosts / adopt --------------------------------------------------------------------------------


def cmd_hosts(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.lifecycle import hosts_overview
    from pkgmgr.store.scope import global_scope

    project = _project(ctx)
    hosts = hosts_overview(global_scope(ctx.home), target_scope(ctx, "workspace", read=True) if project is not None else None,
                           project)

    def human(p: Printer) -> None:
        p.records(["HOST", "GLOBAL", "PROJECT", "MANAGED", "UNMANAGED"],
                  [(h["name"], h["homes"]["global"], h["homes"]["project"] or "-", h["managed"], h["unmanaged"])
                   for h in hosts])

    return Output({"hosts": hosts}, human)


def _project(ctx: Context) -> Path | None:
    """The workspace (project) directory this command sees: --workspace, else discovered."""
    from pkgmgr.cli.context import workspace_dir

    try:
        return workspace_dir(ctx)
    except PkgmgrError:
        return None


def cmd_adopt(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.hosts.views import adopted_entry
    from pkgmgr.lifecycle import adopt

    scope = target_scope(ctx)
    adopted = adopt(scope, args.host, list(args.names), force=args.force, lock_timeout=ctx.lock_timeout)
    data = {"adopted": [adopted_entry(r) for r in adopted]}
    return Output(data, lambda p: p.done([f"adopted {r.name} {r.version or ''}".rstrip() + f" ({r.where})"
                                          for r in adopted] or [f"nothing to adopt in {args.host}'s {scope.kind} folder"]))
