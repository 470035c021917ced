"""Activation lifecycle (SPEC 9.3): preview, activate, confirm, deactivate, and the refresh
that runs inside the store's version switch.

An activation lives in the scope of the install it activates, so switching an extension's
version and refreshing its activations is one transaction of one database. Only an `active`
activation has projected resources; every projection change is one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pkgmgr.activation.checks import Finding, raise_findings, scope_findings, visible_agents
from pkgmgr.activation.projection import Projection, project
from pkgmgr.crash import crashpoint
from pkgmgr.errors import PkgmgrError
from pkgmgr.store.db import transaction
from pkgmgr.store.install import get_installed, login_user, now_utc
from pkgmgr.store.model import Installed
from pkgmgr.store.scope import Scope

ACTIVE = "active"
AWAITING = "awaiting_confirmation"


@dataclass(frozen=True)
class Target:
    extension: str
    bundle: str | None
    profile: str

    @classmethod
    def parse(cls, text: str) -> "Target":
        """`EXT[:BUNDLE[/PROFILE]]`; the profile defaults to `default`."""
        ext, sep, rest = text.partition(":")
        bundle, _, profile = rest.partition("/") if sep else ("", "", "")
        if not ext or (sep and not bundle):
            raise PkgmgrError(f"{text!r}: expected EXT[:BUNDLE[/PROFILE]]", code="usage")
        return cls(ext, bundle or None, profile or "default")


@dataclass
class Resolved:
    installed: Installed
    bundle: Any
    profile: Any
    projection: Projection


def resolve(scope: Scope, target: Target, *, config: Any) -> Resolved:
    """Find the installed extension, bundle and profile, and compute the projection.
    Raises not_found / usage with what exists."""
    installed = get_installed(scope, target.extension)
    if installed is None:
        hint = None
        if scope.parent is not None and get_installed(scope.parent, target.extension) is not None:
            hint = (f"{target.extension} is installed globally; activations live beside their install: "
                    f"'pkgmgr --scope workspace ext install {target.extension}' installs it in the workspace")
        raise PkgmgrError(f"{target.extension} is not installed in the {scope.kind} scope", code="not_found", hint=hint)
    if not installed.enabled:
        raise PkgmgrError(f"{installed.name} is disabled", code="not_found",
                          hint=f"'pkgmgr ext enable {installed.name}' enables it")
    bundles = load_installed_bundles(installed, config)
    bundle, profile = pick(installed.name, bundles, target.bundle, target.profile)
    projection = compute(scope, installed, bundle, profile)
    return Resolved(installed, bundle, profile, projection)


def load_installed_bundles(installed: Installed, config: Any) -> tuple[Any, ...]:
    from pkgmgr.bundles import load_bundles
    from pkgmgr.manifest import parse_manifest

    manifest = parse_manifest(installed.manifest, file="extension.toml", root=None)
    return load_bundles(installed.directory, manifest.bundles, reserved_agent_names=config.reserved_agent_names)


def pick(extension: str, bundles: tuple[Any, ...], bundle_name: str | None, profile_name: str) -> tuple[Any, Any]:
    if not bundles:
        raise PkgmgrError(f"{extension} has no bundles", code="not_found")
    if bundle_name is None:
        if len(bundles) > 1:
            names = ", ".join(b.name for b in bundles)
            raise PkgmgrError(f"{extension} has several bundles ({names}); name one as {extension}:BUNDLE",
                              code="usage")
        bundle = bundles[0]
    else:
        bundle = next((b for b in bundles if b.name.lower() == bundle_name.lower()), None)
        if bundle is None:
            raise PkgmgrError(f"{extension} has no bundle {bundle_name!r} (it has: "
                              f"{', '.join(b.name for b in bundles)})", code="not_found")
    profile = bundle.profile(profile_name)
    if profile is None:
        raise PkgmgrError(f"bundle {bundle.name} has no profile {profile_name!r} (it has: "
                          f"{', '.join(bundle.profile_names())})", code="not_found")
    return bundle, profile


def compute(scope: Scope, installed: Installed, bundle: Any, profile: Any) -> Projection:
    return project(extension=installed.name, bundle=bundle, profile=profile, network_digest=installed.network_digest,
                   scope_kind=scope.kind, scope_root=str(scope.root), workspace_path=scope.workspace_path)


def findings_for(conn: sqlite3.Connection | None, scope: Scope, profile: Any, *, exclude: str | None) -> list[Finding]:
    """Scope rules against everything visible from `scope` (a workspace also sees global)."""
    visible: dict[str, str] = {}
    if conn is not None:
        visible.update(visible_agents(conn, scope.kind, scope.root, exclude_activation=exclude))
    if scope.parent is not None:
        parent_conn = scope.parent.reader()
        if parent_conn is not None:
            for name, owner in visible_agents(parent_conn, scope.parent.kind, scope.parent.root,
                                              exclude_activation=None).items():
                visible.setdefault(name, owner)
    return scope_findings(profile=profile, visible=visible, scope_kind=scope.kind, workspace_path=scope.workspace_path)


# --- reading ------------------------------------------------------------------------------------


def activation_json(row: sqlite3.Row | dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "extension", "extension_version", "bundle", "profile", "scope", "workspace", "version", "status",
            "network_digest", "activation_digest", "primary_channel", "confirmed_version", "confirmed_digest",
            "confirmed_at", "confirmed_by")
    return {key: row[key] for key in keys}


def resource_json(row: sqlite3.Row, scope_kind: str) -> dict[str, Any]:
    return {"id": row["id"], "kind": row["kind"], "name": row["name"], "scope": scope_kind,
            "owner": row["activation_id"], "digest": row["digest"], "source_path": row["source_path"]}


def get_activation(conn: sqlite3.Connection | None, act_id: str) -> sqlite3.Row | None:
    if conn is None:
        return None
    return conn.execute("SELECT * FROM activations WHERE lower(id) = lower(?)", (act_id,)).fetchone()


def require_activation(scope: Scope, act_id: str) -> sqlite3.Row:
    row = get_activation(scope.reader(), act_id)
    if row is None:
        raise PkgmgrError(f"no activation {act_id} in the {scope.kind} scope", code="not_found",
                          hint="'pkgmgr bundle list' shows the activations")
    return row


def resources_of(conn: sqlite3.Connection, act_id: str, scope_kind: str) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT * FROM resources WHERE activation_id = ? ORDER BY kind, name", (act_id,))
    return [resource_json(r, scope_kind) for r in rows]


# --- writing ------------------------------------------------------------------------------------


def _project(conn: sqlite3.Connection, projection: Projection) -> None:
    conn.execute("DELETE FROM resources WHERE activation_id = ?", (projection.activation_id,))
    conn.executemany(
        "INSERT INTO resources (id, activation_id, kind, name, digest, source_path, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(r.id, projection.activation_id, r.kind, r.name, r.sha256, r.source_path,
          json.dumps(r.record, sort_keys=True, ensure_ascii=False)) for r in projection.resources],
    )
    crashpoint("activation.mid_projection")


def _withdraw(conn: sqlite3.Connection, act_id: str) -> None:
    conn.execute("DELETE FROM resources WHERE activation_id = ?", (act_id,))


def activate(scope: Scope, target: Target, *, config: Any, confirm_digest: str | None, lock_timeout: float,
             confirmed_by: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Create the activation at version 1: active and projected when no network requirement
    exists or `confirm_digest` equals it, awaiting confirmation otherwise (SPEC 9.3)."""
    with scope.writer(lock_timeout):
        conn = scope.db
        resolved = resolve(scope, target, config=config)
        projection = resolved.projection
        existing = get_activation(conn, projection.activation_id)
        if existing is not None:
            raise PkgmgrError(f"{projection.activation_id} ({resolved.installed.name}:{projection.bundle}/"
                              f"{projection.profile}) is already activated in the {scope.kind} scope "
                              f"(status {existing['status']})", code="already_active",
                              details={"activation": activation_json(existing)})
        network = projection.network_digest
        if confirm_digest is not None and confirm_digest.strip().lower() != network:
            expected = network or "(none: this extension declares no network requirement)"
            raise PkgmgrError(f"the confirmed network requirement digest {confirm_digest} does not match "
                              f"{resolved.installed.name}'s: {expected}", code="network_digest_mismatch",
                              details={"given": confirm_digest, "network_digest": network})
        raise_findings(findings_for(conn, scope, resolved.profile, exclude=projection.activation_id),
                       f"cannot activate {resolved.installed.name}:{projection.bundle}/{projection.profile}")
        confirmed = network == "" or confirm_digest is not None
        now = now_utc()
        row = {
            "id": projection.activation_id, "extension": resolved.installed.name,
            "extension_version": resolved.installed.version, "bundle": projection.bundle,
            "profile": projection.profile, "scope": scope.kind, "workspace": scope.workspace_path, "version": 1,
            "status": ACTIVE if confirmed else AWAITING, "network_digest": network,
            "activation_digest": projection.activation_digest, "primary_channel": projection.primary_channel,
            "confirmed_version": 1 if confirmed and network else None,
            "confirmed_digest": network if confirmed and network else None,
            "confirmed_at": now if confirmed and network else None,
            "confirmed_by": (confirmed_by or login_user()) if confirmed and network else None,
            "created_at": now, "updated_at": now,
        }
        with transaction(conn):
            conn.execute(f"INSERT INTO activations ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                         tuple(row.values()))
            if confirmed:
                _project(conn, projection)
            crashpoint("activate.before_commit")
        return activation_json(row), resources_of(conn, projection.activation_id, scope.kind)


def confirm(scope: Scope, act_id: str, *, expected_version: int, confirmed_by: str | None, config: Any,
            lock_timeout: float) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """Confirm the current version's network requirement and project. Returns (activation,
    resources, changed); confirming an already-confirmed current version changes nothing."""
    with scope.writer(lock_timeout):
        conn = scope.db
        row = require_activation(scope, act_id)
        if expected_version != row["version"]:
            raise PkgmgrError(f"{row['id']} is at version {row['version']}, not {expected_version}; read it with "
                              f"'pkgmgr bundle show {row['id']}' and confirm that version",
                              code="stale_version", details={"current_version": row["version"],
                                                             "activation": activation_json(row)})
        if row["status"] == ACTIVE and row["confirmed_version"] == row["version"]:
            return activation_json(row), resources_of(conn, row["id"], scope.kind), False
        target = Target(row["extension"], row["bundle"], row["profile"])
        resolved = resolve(scope, target, config=config)
        projection = resolved.projection
        if projection.activation_digest != row["activation_digest"]:
            raise PkgmgrError(f"the installed files of {row['extension']} no longer produce version "
                              f"{row['version']} of {row['id']}", code="tree_modified",
                              hint=f"'pkgmgr ext verify {row['extension']}' lists the changed files")
        raise_findings(findings_for(conn, scope, resolved.profile, exclude=row["id"]), f"cannot confirm {row['id']}")
        now = now_utc()
        with transaction(conn):
            conn.execute(
                "UPDATE activations SET status = ?, confirmed_version = ?, confirmed_digest = ?, confirmed_at = ?, "
                "confirmed_by = ?, updated_at = ? WHERE id = ?",
                (ACTIVE, row["version"], row["network_digest"], now, confirmed_by or login_user(), now, row["id"]))
            _project(conn, projection)
            crashpoint("confirm.before_commit")
        updated = require_activation(scope, row["id"])
        return activation_json(updated), resources_of(conn, row["id"], scope.kind), True


def deactivate(scope: Scope, act_id: str, *, lock_timeout: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Delete the activation and every resource it owns, in one transaction."""
    with scope.writer(lock_timeout):
        conn = scope.db
        row = require_activation(scope, act_id)
        resources = resources_of(conn, row["id"], scope.kind)
        with transaction(conn):
            _withdraw(conn, row["id"])
            conn.execute("DELETE FROM activations WHERE id = ?", (row["id"],))
            crashpoint("deactivate.before_commit")
        return activation_json(row), resources


def list_activations(scope: Scope, *, status: str | None = None) -> list[dict[str, Any]]:
    conn = scope.reader()
    if conn is None:
        return []
    query, params = "SELECT * FROM activations", ()
    if status:
        query, params = query + " WHERE status = ?", (status,)
    return [activation_json(r) for r in conn.execute(query + " ORDER BY extension, bundle, profile", params)]


def list_resources(scopes: list[Scope], *, kind: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for scope in scopes:
        conn = scope.reader()
        if conn is None:
            continue
        query, params = "SELECT * FROM resources", ()
        if kind:
            query, params = query + " WHERE kind = ?", (kind,)
        out.extend(resource_json(r, scope.kind) for r in conn.execute(query + " ORDER BY kind, name, id", params))
    return out


# --- hooks called by the store inside its transactions ---------------------------------------------


def refresh_on_switch(conn: sqlite3.Connection, scope: Scope, installed: Installed, bundles: tuple[Any, ...], *,
                      deactivate_missing: bool, confirm_always: bool) -> list[dict[str, Any]]:
    """Recompute each activation of `installed` after its version changed (SPEC 9.3 "On
    update"): unchanged digest -> nothing; changed -> version + 1 and re-projection; a new
    non-empty network digest (or policy confirm=always) -> confirmation cleared, projection
    withdrawn, awaiting confirmation. Raises bundle_missing / scope-rule errors (the caller's
    transaction then rolls back)."""
    rows = conn.execute("SELECT * FROM activations WHERE extension = ? ORDER BY id", (installed.name,)).fetchall()
    results: list[dict[str, Any]] = []
    now = now_utc()
    for row in rows:
        bundle = next((b for b in bundles if b.name.lower() == row["bundle"].lower()), None)
        profile = bundle.profile(row["profile"]) if bundle is not None else None
        if profile is None:
            if not deactivate_missing:
                raise PkgmgrError(
                    f"{installed.name} {installed.version} no longer has profile {row['bundle']}/{row['profile']}, "
                    f"which activation {row['id']} uses", code="bundle_missing",
                    hint="pass --deactivate-missing to deactivate it as part of the update")
            _withdraw(conn, row["id"])
            conn.execute("DELETE FROM activations WHERE id = ?", (row["id"],))
            results.append({**activation_json(row), "status": "deactivated"})
            continue
        projection = compute(scope, installed, bundle, profile)
        raise_findings(findings_for(conn, scope, profile, exclude=row["id"]),
                       f"{installed.name} {installed.version} cannot keep activation {row['id']}")
        if projection.activation_digest == row["activation_digest"]:
            conn.execute("UPDATE activations SET extension_version = ? WHERE id = ?", (installed.version, row["id"]))
            results.append({**activation_json(row), "extension_version": installed.version, "change": "unchanged"})
            continue
        version = row["version"] + 1
        network = projection.network_digest
        needs_confirmation = confirm_always or (network != "" and network != row["confirmed_digest"])
        if needs_confirmation:
            conn.execute(
                "UPDATE activations SET extension_version = ?, version = ?, status = ?, network_digest = ?, "
                "activation_digest = ?, primary_channel = ?, confirmed_version = NULL, confirmed_digest = NULL, "
                "confirmed_at = NULL, confirmed_by = NULL, updated_at = ? WHERE id = ?",
                (installed.version, version, AWAITING, network, projection.activation_digest,
                 projection.primary_channel, now, row["id"]))
            _withdraw(conn, row["id"])
        else:
            conn.execute(
                "UPDATE activations SET extension_version = ?, version = ?, status = ?, network_digest = ?, "
                "activation_digest = ?, primary_channel = ?, confirmed_version = CASE WHEN ? = '' THEN "
                "confirmed_version ELSE ? END, updated_at = ? WHERE id = ?",
                (installed.version, version, ACTIVE, network, projection.activation_digest,
                 projection.primary_channel, network, version, now, row["id"]))
            _project(conn, projection)
        updated = conn.execute("SELECT * FROM activations WHERE id = ?", (row["id"],)).fetchone()
        results.append({**activation_json(updated), "change": "updated"})
    return results


def guard_removal(conn: sqlite3.Connection, scope: Scope, installed: Installed, *, deactivate: bool,
                  action: str) -> list[dict[str, Any]]:
    """Refuse to remove/disable an extension with activations unless `deactivate`, which
    deletes them (and their resources) in the caller's transaction."""
    rows = conn.execute("SELECT * FROM activations WHERE extension = ? ORDER BY id", (installed.name,)).fetchall()
    if not rows:
        return []
    if not deactivate:
        ids = ", ".join(r["id"] for r in rows)
        raise PkgmgrError(f"cannot {action} {installed.name}: it has {len(rows)} activation(s): {ids}",
                          code="extension_has_active_bundles",
                          details={"activations": [activation_json(r) for r in rows]},
                          hint=f"pass --deactivate to deactivate them, or 'pkgmgr bundle deactivate ACT' first")
    for row in rows:
        _withdraw(conn, row["id"])
        conn.execute("DELETE FROM activations WHERE id = ?", (row["id"],))
    return [{**activation_json(r), "status": "deactivated"} for r in rows]


def activations_for(scope: Scope, extension: str) -> list[dict[str, Any]]:
    conn = scope.reader()
    if conn is None:
        return []
    rows = conn.execute("SELECT * FROM activations WHERE extension = ? ORDER BY id", (extension,))
    return [activation_json(r) for r in rows]

