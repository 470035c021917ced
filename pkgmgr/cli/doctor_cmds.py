"""`pkgmgr doctor`: check the invariants of every scope, and repair what is safe to repair."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pkgmgr.cli.context import Context, workspace_dir
from pkgmgr.cli.output import Output, Printer

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands


def register(commands: "Commands") -> None:
    p = commands.command(
        "doctor", cmd_doctor, "check (and repair) the state of the scopes",
        "Check every invariant of the global scope and of every workspace store recorded in the global state "
        "whose workspace still exists (with the current workspace's, when it has one): "
        "the SQLite integrity check, each installed tree against its recorded checksum, activations and "
        "their projected resources, leftovers of interrupted commands, and trees state.db does not name. Without "
        "--check, leftovers (staging contents, trees an interrupted command recorded as pending, pending host "
        "installs, partial downloads older than a day) are removed or settled first, and what was done is "
        "listed; a tree state.db does not name is never removed, and nothing is removed while state.db is "
        "missing, empty or cannot be read. --rebuild sets such a state.db aside and records the installed "
        "trees found from their manifests and tree checksums (provenance unknown; activations are not "
        "reconstructed); beside a sound state.db it records the trees no row names. Exit 0 when every "
        "invariant holds, 4 (state_inconsistent) otherwise.",
        "pkgmgr doctor --check\npkgmgr doctor -o json\npkgmgr doctor --rebuild",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report only; repair nothing")
    mode.add_argument("--rebuild", action="store_true",
                      help="when state.db is missing, empty or unreadable, set it aside and record the installed "
                           "trees found; else record the trees it does not name (provenance unknown)")


def cmd_doctor(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.doctor import run_doctor

    report = run_doctor(ctx.home, workspace_dir(ctx), config=ctx.config, check=args.check, rebuild=args.rebuild,
                        lock_timeout=ctx.lock_timeout)
    repaired, legacy, findings, scopes = report.repaired, report.legacy, report.findings, report.scopes

    def human(p: Printer) -> None:
        for item in repaired:
            p.line(f"repaired ({item.scope}): {item.message}")
        if legacy is not None:
            p.line(f"note: {legacy} was left by an earlier pkgmgr and is ignored (nothing in it is read); "
                   f"delete it with: rm -rf '{legacy}'")
        if not findings:
            p.line("all invariants hold: " + ", ".join(f"{s.kind} ({s.root})" for s in scopes))

    return Output(report.to_json(), human, report.error)
