"""Activation invariants checked read-only by `pkgmgr doctor` (SPEC 4, issue 7)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import TYPE_CHECKING

from pkgmgr.errors import PkgmgrError, Problem
from pkgmgr.store.checks import STORE_HOST
from pkgmgr.store.installed import Installed
from pkgmgr.store.scope import Scope

if TYPE_CHECKING:
    from pkgmgr.config import Config


def check_activations(scope: Scope, conn: sqlite3.Connection, config: Config) -> list[Problem]:
    """No projected resource without an active, confirmed-or-unneeded activation; no active
    activation unconfirmed or missing its resources; every activation's extension installed."""
    from pkgmgr.activation.lifecycle import ACTIVE, AWAITING, compute, is_confirmed, load_installed_bundles, pick

    findings: list[Problem] = []
    orphans = conn.execute(
        "SELECT r.id, r.kind, r.name, a.status, a.network_digest, a.confirmed_digest FROM resources r "
        "LEFT JOIN activations a ON a.id = r.activation_id WHERE a.id IS NULL OR a.status != ? "
        "OR (a.network_digest != '' AND a.network_digest IS NOT a.confirmed_digest)", (ACTIVE,)).fetchall()
    for row in orphans:
        findings.append(Problem.invariant(scope.kind, "resource", f"resource {row['id']} ({row['kind']} {row['name']}) is "
                                "projected without an active, confirmed activation"))
    for row in conn.execute("SELECT * FROM activations ORDER BY id").fetchall():
        ext = conn.execute("SELECT * FROM extensions WHERE host = ? AND name = ?",
                           (STORE_HOST, row["extension"])).fetchone()
        if ext is None:
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} belongs to {row['extension']}, "
                                    "which is not installed"))
            continue
        if row["status"] not in (ACTIVE, AWAITING):
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} has an unknown status "
                                    f"{row['status']!r}"))
            continue
        installed = Installed.from_row(ext, scope.kind, scope.root)
        if row["extension_version"] != installed.version:
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} records {installed.name} "
                                    f"{row['extension_version']}, but {installed.version} is installed"))
        if row["status"] != ACTIVE:
            continue
        if not is_confirmed(row):
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} is active but its network "
                                    f"digest {row['network_digest']} was never confirmed"))
            continue
        if row["network_digest"] != installed.network_digest:
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} is active with network digest "
                                    f"{row['network_digest'] or '(none)'}, but {installed.name} {installed.version} "
                                    f"requires {installed.network_digest or '(none)'}: its confirmation is not "
                                    "this version's"))
            continue
        try:
            bundle, profile = pick(installed.name, load_installed_bundles(installed, config), row["bundle"],
                                   row["profile"])
        except PkgmgrError as error:
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']}: {error.message}"))
            continue
        projection = compute(scope, installed, bundle, profile)
        if projection.activation_digest != row["activation_digest"]:
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} records activation digest "
                                    f"{row['activation_digest']}, but its profile's is {projection.activation_digest}"))
        if projection.primary_channel != row["primary_channel"]:
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} records primary channel "
                                    f"{row['primary_channel']!r}, but its profile's is {projection.primary_channel!r}"))
        expected = {(r.id, r.kind, r.name, r.sha256) for r in projection.resources}
        actual = {(r["id"], r["kind"], r["name"], r["digest"]) for r in
                  conn.execute("SELECT * FROM resources WHERE activation_id = ?", (row["id"],))}
        if expected != actual:
            missing, extra = len(expected - actual), len(actual - expected)
            findings.append(Problem.invariant(scope.kind, "activation", f"activation {row['id']} projects {len(actual)} "
                                    f"resource(s) but should project {len(expected)} ({missing} missing or "
                                    f"different, {extra} unexpected)"))
    for row in conn.execute("SELECT id, kind, digest, record FROM resources ORDER BY id"):
        if not record_matches(row["kind"], row["record"], row["digest"]):
            findings.append(Problem.invariant(scope.kind, "resource", f"resource {row['id']} ({row['kind']}): its record no "
                                    f"longer matches its digest {row['digest']}"))
    return findings


def record_matches(kind: str, record: str, digest: str) -> bool:
    """A resource's stored record against its digest (SPEC 9.2): the canonical JSON of the record
    for structured resources, the file's bytes (the record's `content`) for SOUL.md and HEARTBEAT.md."""
    from pkgmgr.jsonutil import canonical_json

    try:
        document = json.loads(record)
    except (TypeError, ValueError, RecursionError):
        return False
    if not isinstance(document, dict) or canonical_json(document) != record:
        return False
    if kind in ("agent.soul", "agent.heartbeat"):
        content = document.get("content")
        if not isinstance(content, str):
            return False
        return hashlib.sha256(content.encode("utf-8")).hexdigest() == digest
    return hashlib.sha256(record.encode("utf-8")).hexdigest() == digest
