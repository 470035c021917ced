"""`pkgmgr doctor`: check the invariants of every scope, and repair what is safe to repair."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.context import Context, workspace_dir
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands


def register(commands: "Commands") -> None:
    p = commands.command(
        "doctor", cmd_doctor, "check (and repair) the state of the scopes",
        "Check every invariant of the global scope and of every workspace store recorded in the global state "
        "whose workspace still exists (with the current workspace's, when it has one): "
        "the SQLite integrity check, each installed tree against its recorded checksum, activations and "
        "their projected resources, and leftovers of interrupted commands. Without --check, leftovers and "
        "orphaned version directories (and partial downloads older than a day) are removed first, and what "
        "was done is listed; nothing is removed while state.db is missing, empty or cannot be read. --rebuild "
        "sets such a state.db aside and records the installed trees found from their manifests and tree "
        "checksums (provenance unknown; activations are not reconstructed). Exit 0 when every "
        "invariant holds, 4 (state_inconsistent) otherwise.",
        "pkgmgr doctor --check\npkgmgr doctor -o json\npkgmgr doctor --rebuild",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report only; repair nothing")
    mode.add_argument("--rebuild", action="store_true",
                      help="when state.db is missing, empty or unreadable, set it aside and record the installed "
                           "trees found (provenance unknown)")


def cmd_doctor(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.doctor import check_scope
    from pkgmgr.store.recovery import rebuild_scope, repair_scope
    from pkgmgr.store.scope import global_scope
    from pkgmgr.workspace.store import legacy_store, recorded_stores, workspace_scope

    here = workspace_dir(ctx)
    scopes = [global_scope(ctx.home)]
    stores = recorded_stores(ctx.home)
    current = workspace_scope(here, ctx.home)
    if current.root.is_dir() and current.root not in {s.root for s in stores}:
        stores.append(current)  # not recorded (the global state was replaced): still this user's store
    scopes.extend(stores)
    legacy = legacy_store(here)  # never opened: what a pull could have replaced
    repaired, findings, labels, fixes = [], [], [], []
    if not args.check:
        repaired.extend(_prune_downloads(ctx))
    for scope in scopes:
        if args.rebuild:
            repaired.extend(rebuild_scope(scope, ctx.lock_timeout))
        if not args.check:
            repaired.extend(repair_scope(scope, ctx.lock_timeout))
        found = check_scope(scope, config=ctx.config)
        findings.extend(found)
        labels.extend([f"workspace {scope.workspace}" if scope.workspace else scope.kind] * len(found))
        fixes.extend(_reinstall_fixes(scope, found))
        scope.close()
    data = {
        "ok": not findings,
        "scopes": [{"scope": s.kind, "root": str(s.root), **({"workspace": str(s.workspace)} if s.workspace else {})}
                   for s in scopes],
        "legacy_store": str(legacy) if legacy is not None else None,
        "problems": [f.to_json() for f in findings],
        "repaired": [f.to_json() for f in repaired],
    }
    error = None
    if findings:
        error = PkgmgrError(
            f"{len(findings)} invariant(s) do not hold:\n" + "\n".join(f"{label}: {f.message}" for label, f in zip(labels, findings)),
            code="state_inconsistent",
            details={"problems": data["problems"]},
            hint="; ".join(fixes + (["run 'pkgmgr doctor' to repair what can be repaired"]
                                    if args.check and any(f.check != "install" for f in findings) else [])) or None,
        )

    def human(p: Printer) -> None:
        for item in repaired:
            p.line(f"repaired ({item.scope}): {item.message}")
        if legacy is not None:
            p.line(f"note: {legacy} was left by an earlier pkgmgr and is ignored (nothing in it is read); "
                   f"delete it with: rm -rf '{legacy}'")
        if not findings:
            p.line("all invariants hold: " + ", ".join(f"{s.kind} ({s.root})" for s in scopes))

    return Output(data, human, error)


def _reinstall_fixes(scope: Any, findings: list[Any]) -> list[str]:
    """A missing or modified installed tree is not doctor's to repair: reinstalling it is (the
    advice `ext verify` gives)."""
    fixes: list[str] = []
    for finding in findings:
        if finding.check != "install":
            continue
        from pkgmgr.store.switch import get_installed
        from pkgmgr.store.verify import reinstall_hint

        item = get_installed(scope, finding.message.split(" ", 1)[0])
        if item is not None:
            hint = reinstall_hint(item)
            if scope.kind == "workspace":
                hint = hint.replace("'pkgmgr ext install", "'pkgmgr --scope workspace ext install")
            fixes.append(f"{item.name}: {hint}")
    return fixes


def _prune_downloads(ctx: Context) -> list:
    """Partial downloads that interrupted commands left in the cache's tmp/ (a day old, so that
    a download running in another process is left alone); the cache proper is content-addressed
    and re-hashed on every use, so it needs no repair."""
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.store.recovery import Finding

    count = DownloadCache(ctx.home / "cache" / "downloads").prune_tmp()
    return [Finding("global", "leftover", f"removed {count} partial download(s) from cache/downloads/tmp", True)
            ] if count else []
