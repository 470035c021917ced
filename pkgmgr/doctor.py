"""`pkgmgr doctor`: the checks of one scope — the store's (SPEC 4) composed with the
activations' (SPEC 9), so that neither layer calls the other — and `run_doctor`, which repairs
what is safe and checks every scope pkgmgr knows of."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError, Problem

if TYPE_CHECKING:
    from pkgmgr.config import Config
    from pkgmgr.store.scope import Scope


def check_scope(scope: Scope, *, config: Config, verify_trees: bool = True) -> list[Problem]:
    """Every read-only invariant check of `scope`: installs, trees, leftovers, activations, and
    what killed writers left of any host's installs (`lifecycle.interrupted`)."""
    from pkgmgr.activation.invariants import check_activations
    from pkgmgr.store.recovery import check_store

    def activations(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
        return check_activations(scope, conn, config)

    checks = ((activations, _interrupted, _host_health, _kept) if verify_trees
              else (activations, _interrupted, _host_health))
    return check_store(scope, verify_trees=verify_trees, row_checks=checks)


def _kept(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
    """Each install kept for `ext rollback` can be rolled back to: its tree is there, as it was
    when it was replaced (`doctor` forgets one that is not: `repair_kept`)."""
    from pkgmgr.lifecycle import kept_problem
    from pkgmgr.store import records
    from pkgmgr.store.pending import intents

    changing = {(intent.host, intent.name) for intent in intents(conn)}  # a killed writer's: `interrupted` lists it
    found = [kept_problem(row) for row in records.installed(scope)
             if row.previous is not None and (row.host, row.name) not in changing]
    return [Problem.invariant(scope.kind, "kept", f"{message} (a repair stops keeping it)", True)
            for message in found if message is not None]


def repair_kept(scope: Scope, timeout: float) -> list[Problem]:
    """`doctor`'s repair of the installs kept for a rollback: one that cannot be rolled back to any
    more is forgotten, and what is left of its tree removed."""
    from pkgmgr.lifecycle import forget_kept

    return [Problem.invariant(scope.kind, "kept", f"stopped keeping {item.name} {item.version or '-'} for a rollback "
                              f"({item.place})", True) for item in forget_kept(scope, broken_only=True,
                                                                               lock_timeout=timeout)]


def _interrupted(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
    """What killed writers left of any host's installs (SPEC 4, 13), unless a writer is at work."""
    from pkgmgr.lifecycle import interrupted
    from pkgmgr.store.lock import is_held

    if is_held(scope.lock_path):
        return []
    found = interrupted(scope)
    if is_held(scope.lock_path):
        return []
    return [Problem.invariant(scope.kind, "leftover", message, True) for message in found]


def _host_health(scope: Scope, conn: sqlite3.Connection) -> list[Problem]:
    """Every other host's installs against their trees and the host's own records (SPEC 13)."""
    from pkgmgr.lifecycle import health

    return [Problem.invariant(scope.kind, check, message, repairable) for check, message, repairable in health(scope)]


def repair_hosts(scope: Scope, timeout: float) -> list[Problem]:
    """`doctor`'s repair of every host's installs: what a killed writer left is settled from what
    is on disk (`lifecycle.recover`), under the scope's writer lock."""
    from pkgmgr.lifecycle import recover, repair
    from pkgmgr.store.recovery import database_problem

    if not scope.root.is_dir() or scope.layout_problem() is not None or database_problem(scope) is not None:
        return []  # nothing is repaired on the word of a database that cannot be read
    done = [Problem.invariant(scope.kind, "host_lock", line, True) for line in repair(scope)]
    return done + [Problem.invariant(scope.kind, "leftover", line, True) for line in recover(scope, timeout)]


@dataclass(frozen=True)
class DoctorReport:
    """What one `pkgmgr doctor` found and did: the scopes it checked, the in-tree store an
    earlier version left (never opened), the invariants that do not hold, the repairs done, and
    `state_inconsistent` naming every problem (None when all hold)."""

    scopes: list[Scope]
    legacy: Path | None
    findings: list[Problem]
    repaired: list[Problem]
    error: PkgmgrError | None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": not self.findings,
            "scopes": [{"scope": s.kind, "root": str(s.root), **({"workspace": str(s.workspace)} if s.workspace else {})}
                       for s in self.scopes],
            "legacy_store": str(self.legacy) if self.legacy is not None else None,
            "problems": [f.to_json() for f in self.findings],
            "repaired": [f.to_json() for f in self.repaired],
        }


def run_doctor(home: Path, workspace: Path, *, config: Config, check: bool = False, rebuild: bool = False,
               lock_timeout: float = 30.0) -> DoctorReport:
    """Check the global scope and every workspace store recorded in the global state (with
    `workspace`'s, when it has one); unless `check`, first repair what is safe (leftovers,
    orphaned version directories, day-old partial downloads); with `rebuild`, set an unreadable
    state.db aside and record the trees found (`store.recovery.rebuild_scope`)."""
    from pkgmgr.store.recovery import rebuild_scope, repair_scope
    from pkgmgr.store.scope import global_scope
    from pkgmgr.workspace.store import legacy_store, recorded_stores, workspace_scope

    scopes = [global_scope(home)]
    stores = recorded_stores(home)
    current = workspace_scope(workspace, home)
    if current.root.is_dir() and current.root not in {s.root for s in stores}:
        stores.append(current)  # not recorded (the global state was replaced): still this user's store
    scopes.extend(stores)
    legacy = legacy_store(workspace)  # never opened: what a pull could have replaced
    repaired: list[Problem] = []
    findings: list[Problem] = []
    labels: list[str] = []
    fixes: list[str] = []
    if not check:
        repaired.extend(_prune_downloads(home))
    for scope in scopes:
        if rebuild:
            repaired.extend(rebuild_scope(scope, lock_timeout))
        if not check:
            repaired.extend(repair_scope(scope, lock_timeout))
            repaired.extend(repair_hosts(scope, lock_timeout))
            repaired.extend(repair_kept(scope, lock_timeout))
        found = check_scope(scope, config=config)
        findings.extend(found)
        labels.extend([f"workspace {scope.workspace}" if scope.workspace else scope.kind] * len(found))
        fixes.extend(_reinstall_fixes(scope, found))
        scope.close()
    roots = trusted_roots(home, config)
    findings.extend(roots)
    labels.extend(["registries"] * len(roots))
    fixes.extend(_reestablish_fixes(config, roots))
    error = None
    if findings:
        error = PkgmgrError(
            f"{len(findings)} invariant(s) do not hold:\n" + "\n".join(f"{label}: {f.message}" for label, f in zip(labels, findings)),
            code=Code.STATE_INCONSISTENT,
            details={"problems": [f.to_json() for f in findings]},
            hint="; ".join(fixes + (["run 'pkgmgr doctor' to repair what can be repaired"]
                                    if check and any(f.check not in ("install", "trusted_root") for f in findings)
                                    else [])) or None,
        )
    return DoctorReport(scopes, legacy, findings, repaired, error)


def trusted_roots(home: Path, config: Config) -> list[Problem]:
    """Each configured signed registry's trusted root (SPEC 5.4a: its TUF metadata cache), as
    ngclient would load it: one missing, unreadable, empty, truncated or not signed by its own
    keys makes every install from the registry fail until it is re-established — not doctor's to
    repair (it takes the registry's root again), so a finding naming the command. Reads only."""
    signed = [registry for registry in config.registries if registry.root_sha256 is not None]
    if not signed:
        return []
    from pkgmgr.registry.signed import trusted_root_problem

    found = []
    for registry in signed:
        why = trusted_root_problem(home, registry.source)
        if why is not None:
            found.append(Problem.invariant(
                "global", "trusted_root", f"registry {registry.name}: the trusted root recorded for {registry.source} "
                f"{why}; every install from it fails (registry_signature_invalid) until it is re-established",
                name=registry.name))
    return found


def _reestablish_fixes(config: Config, findings: list[Problem]) -> list[str]:
    from pkgmgr.registry.trustroot import reestablish_hint

    named = {registry.name: registry for registry in config.registries}
    return [f"registry {finding.name}: {reestablish_hint(named[finding.name])}"
            for finding in findings if finding.name in named]


def _reinstall_fixes(scope: Scope, findings: list[Problem]) -> list[str]:
    """A missing or modified installed tree is not doctor's to repair: reinstalling it is (the
    advice `ext verify` gives)."""
    fixes: list[str] = []
    for finding in findings:
        if finding.check != "install":
            continue
        from pkgmgr.store.switch import get_installed
        from pkgmgr.store.verify import reinstall_hint

        item = get_installed(scope, finding.name)
        if item is not None:
            hint = reinstall_hint(item)
            if scope.kind == "workspace":
                hint = hint.replace("'pkgmgr ext install", "'pkgmgr --scope workspace ext install")
            fixes.append(f"{item.name}: {hint}")
    return fixes


def _prune_downloads(home: Path) -> list[Problem]:
    """Partial downloads that interrupted commands left in the cache's tmp/ (a day old, so that
    a download running in another process is left alone); the cache proper is content-addressed
    and re-hashed on every use, so it needs no repair."""
    from pkgmgr.net.cache import DownloadCache

    count = DownloadCache(home / "cache" / "downloads").prune_tmp()
    return [Problem.invariant("global", "leftover", f"removed {count} partial download(s) from cache/downloads/tmp", True)
            ] if count else []
