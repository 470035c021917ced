"""Activation lifecycle (SPEC 9.3): preview, activate, confirm, deactivate, and the refresh
that runs inside the store's version switch.

An activation lives in the scope of the install it activates, so switching an extension's
version and refreshing its activations is one transaction of one database. Only an `active`
activation has projected resources; every projection change is one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pkgmgr.activation.checks import (
    VisibleAgents,
    activation_agent_owner,
    collect_visible,
    raise_findings,
    scope_findings,
)
from pkgmgr.activation.confirmation import scope_options, show_command
from pkgmgr.activation.projection import Projection, project
from pkgmgr.activation.rows import extension_rows
from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError, Problem
from pkgmgr.store.checks import STORE_HOST
from pkgmgr.store.db import one_row, transaction
from pkgmgr.store.db import rows as db_rows
from pkgmgr.store.installed import Installed
from pkgmgr.store.scope import Scope
from pkgmgr.store.switch import get_installed, login_user, now_utc

ACTIVE = "active"
AWAITING = "awaiting_confirmation"

if TYPE_CHECKING:
    from pkgmgr.bundles.bundle import Bundle, Profile
    from pkgmgr.config import Config


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
            raise PkgmgrError(f"{text!r}: expected EXT[:BUNDLE[/PROFILE]]", code=Code.USAGE)
        return cls(ext, bundle or None, profile or "default")


@dataclass
class Resolved:
    installed: Installed
    bundle: Bundle
    profile: Profile
    projection: Projection


def new_activation(resolved: Resolved, scope: Scope, status: str) -> dict[str, Any]:
    """The activation `resolved` becomes in `scope` (version 1, nothing confirmed yet), as
    `activation_json` shows one: what `activate` records and `bundle preview` shows."""
    projection = resolved.projection
    return {
        "id": projection.activation_id, "extension": resolved.installed.name,
        "extension_version": resolved.installed.version, "bundle": projection.bundle,
        "profile": projection.profile, "scope": scope.kind, "workspace": scope.workspace_path, "version": 1,
        "status": status, "network_digest": projection.network_digest,
        "activation_digest": projection.activation_digest, "primary_channel": projection.primary_channel,
        "confirmed_version": None, "confirmed_digest": None, "confirmed_at": None, "confirmed_by": None,
    }


def resolve(scope: Scope, target: Target, *, config: Config) -> Resolved:
    """Find the installed extension, bundle and profile, and compute the projection.
    Raises not_found / usage with what exists."""
    name = target.extension.lower()  # extension names are lower-case (SPEC 2)
    installed = get_installed(scope, name)
    if installed is None:
        hint = None
        if scope.parent is not None and get_installed(scope.parent, name) is not None:
            hint = (f"{name} is installed globally; an activation lives beside its install, so install it in "
                    f"the workspace too: 'pkgmgr{scope_options(scope.kind, scope.workspace_path)} ext install "
                    f"{name}' (or the path or archive it came from)")
        raise PkgmgrError(f"{name} is not installed in the {scope.kind} scope", code=Code.NOT_FOUND, hint=hint)
    if not installed.enabled:
        raise PkgmgrError(f"{installed.name} is disabled", code=Code.NOT_FOUND,
                          hint=f"'pkgmgr ext enable {installed.name}' enables it")
    bundles = load_installed_bundles(installed, config)
    bundle, profile = pick(installed.name, bundles, target.bundle, target.profile)
    projection = compute(scope, installed, bundle, profile)
    return Resolved(installed, bundle, profile, projection)


def load_installed_bundles(installed: Installed, config: Config) -> tuple[Bundle, ...]:
    """Load and validate the bundles of an installed tree. The manifest was validated when it
    was installed, so its stored document gives `resources.bundles` without validating it
    again; the bundle files are validated again, since they are what gets projected."""
    from pkgmgr.bundles.loader import load_bundles_of
    from pkgmgr.manifest.generations import AUTO, has_bundles

    generation = getattr(config, "compozy_generation", AUTO)
    if generation != AUTO and not has_bundles(generation):
        raise PkgmgrError(f"Compozy {generation} has no bundles: activation needs a generation that has them "
                          "(v0.2, v0.3-beta.3)", code=Code.INCOMPATIBLE_HOST,
                          details={"compozy_generation": generation},
                          hint="set host.compozy_generation (or PKGMGR_COMPOZY_GENERATION) to auto, v0.2 or "
                               "v0.3-beta.3")
    from pkgmgr.manifest.keys import as_read

    resources = as_read(installed.manifest).get("resources")  # as Compozy reads the keys
    paths = resources.get("bundles") if isinstance(resources, dict) else None
    bundle_paths = tuple(str(p) for p in paths) if isinstance(paths, list) else ()
    return load_bundles_of(installed.directory, bundle_paths, reserved_agent_names=config.reserved_agent_names,
                           generation=generation)


def pick(extension: str, bundles: tuple[Bundle, ...], bundle_name: str | None, profile_name: str) -> tuple[Bundle, Profile]:
    if not bundles:
        raise PkgmgrError(f"{extension} has no bundles", code=Code.NOT_FOUND)
    if bundle_name is None:
        if len(bundles) > 1:
            names = ", ".join(b.name for b in bundles)
            raise PkgmgrError(f"{extension} has several bundles ({names}); name one as {extension}:BUNDLE",
                              code=Code.USAGE)
        bundle = bundles[0]
    else:
        named = next((b for b in bundles if b.name.lower() == bundle_name.lower()), None)
        if named is None:
            raise PkgmgrError(f"{extension} has no bundle {bundle_name!r} (it has: "
                              f"{', '.join(b.name for b in bundles)})", code=Code.NOT_FOUND)
        bundle = named
    profile = bundle.profile(profile_name)
    if profile is None:
        raise PkgmgrError(f"bundle {bundle.name} has no profile {profile_name!r} (it has: "
                          f"{', '.join(bundle.profile_names())})", code=Code.NOT_FOUND)
    return bundle, profile


def compute(scope: Scope, installed: Installed, bundle: Bundle, profile: Profile) -> Projection:
    return project(extension=installed.name, bundle=bundle, profile=profile, network_digest=installed.network_digest,
                   scope_kind=scope.kind, scope_root=str(scope.root), workspace_path=scope.workspace_path)


def visible_from(conn: sqlite3.Connection | None, scope: Scope) -> VisibleAgents:
    """The agents visible from `scope` (a workspace also sees global, SPEC 9.3)."""
    visible = VisibleAgents()
    own_extensions: frozenset[str] = frozenset()
    if conn is not None:
        collect_visible(conn, scope.kind, scope.root, visible)
        own_extensions = frozenset(r["name"] for r in db_rows(conn, "extensions", "SELECT name FROM extensions WHERE host = ?",
                                                                   (STORE_HOST,)))
    if scope.parent is not None:
        parent_conn = scope.parent.reader()
        if parent_conn is not None:
            # a workspace install shadows the global one of the same name, static agents included
            collect_visible(parent_conn, scope.parent.kind, scope.parent.root, visible, skip_static_of=own_extensions)
    return visible


def findings_for(conn: sqlite3.Connection | None, scope: Scope, bundle: Bundle, profile: Profile, *, activation: str,
                 visible: VisibleAgents | None = None) -> list[Problem]:
    """Scope rules for `profile` activated as `activation` against everything visible from
    `scope` (computed unless `visible` is given)."""
    if visible is None:
        visible = visible_from(conn, scope)
    return scope_findings(profile=profile, visible=visible, activation=activation, scope_kind=scope.kind,
                          workspace_path=scope.workspace_path, bundle=bundle)


def is_confirmed(row: sqlite3.Row | dict[str, Any]) -> bool:
    """SPEC 9.3: confirmed when the network digest is empty or equals the confirmed digest."""
    return row["network_digest"] == "" or row["network_digest"] == row["confirmed_digest"]


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
    """The activation `act_id`, looked up case-insensitively (ids are stored lower-case, so the
    primary-key index answers), or None."""
    if conn is None:
        return None
    return one_row(conn, "activations", "SELECT * FROM activations WHERE id = ?", (act_id.strip().lower(),))


def require_activation(scope: Scope, act_id: str) -> sqlite3.Row:
    conn = scope.reader()
    row = get_activation(conn, act_id)
    if row is None:
        from pkgmgr.errors import suggest_close

        error = PkgmgrError(f"no activation {act_id} in the {scope.kind} scope", code=Code.NOT_FOUND,
                            hint="'pkgmgr bundle list' shows the activations")
        if conn is not None:
            suggest_close(error, act_id.strip().lower(), [r["id"] for r in conn.execute("SELECT id FROM activations")])
        raise error
    return row


def resources_of(conn: sqlite3.Connection, act_id: str, scope_kind: str) -> list[dict[str, Any]]:
    rows = db_rows(conn, "resources", "SELECT * FROM resources WHERE activation_id = ? ORDER BY kind, name", (act_id,))
    return [resource_json(r, scope_kind) for r in rows]


# --- writing ------------------------------------------------------------------------------------


def _project(conn: sqlite3.Connection, projection: Projection) -> None:
    conn.execute("DELETE FROM resources WHERE activation_id = ?", (projection.activation_id,))
    conn.executemany(
        "INSERT INTO resources (id, activation_id, kind, name, digest, source_path, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(r.id, projection.activation_id, r.kind, r.name, r.sha256, r.source_path, r.stored)
         for r in projection.resources],
    )
    crashpoint("activation.mid_projection")


def _withdraw(conn: sqlite3.Connection, act_id: str) -> None:
    conn.execute("DELETE FROM resources WHERE activation_id = ?", (act_id,))


def activate(scope: Scope, target: Target, *, config: Config, confirm_digest: str | None, lock_timeout: float,
             confirmed_by: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Create the activation at version 1: active and projected when no network requirement
    exists or `confirm_digest` equals it, awaiting confirmation otherwise (SPEC 9.3).

    Raises (writing nothing) not_found, already_active, network_digest_mismatch (a digest that
    differs, or any digest when there is no requirement), agent_conflict,
    agent_reference_not_found and invalid_layout."""
    if not scope.exists():
        resolve(scope, target, config=config)  # not_found (with its hint), without creating the store
    with scope.writer(lock_timeout):
        conn = scope.db
        resolved = resolve(scope, target, config=config)
        projection = resolved.projection
        existing = get_activation(conn, projection.activation_id)
        if existing is not None:
            raise PkgmgrError(f"{projection.activation_id} ({resolved.installed.name}:{projection.bundle}/"
                              f"{projection.profile}) is already activated in the {scope.kind} scope "
                              f"(status {existing['status']}, version {existing['version']})", code=Code.ALREADY_ACTIVE,
                              details={"activation": activation_json(existing)},
                              hint=f"'{show_command(projection.activation_id, scope.kind, scope.workspace_path)}' "
                                   "shows it")
        network = projection.network_digest
        if confirm_digest is not None and (network == "" or confirm_digest.strip().lower() != network):
            expected = network or "(none: the extension declares no network requirement, nothing to confirm)"
            raise PkgmgrError(f"the confirmed network requirement digest {confirm_digest!r} does not match "
                              f"{resolved.installed.name} {resolved.installed.version}'s: {expected}",
                              code=Code.NETWORK_DIGEST_MISMATCH,
                              details={"given": confirm_digest, "network_digest": network},
                              hint=f"'pkgmgr{scope_options(scope.kind, scope.workspace_path)} bundle preview "
                                   f"{resolved.installed.name}:{projection.bundle}/{projection.profile}' shows the "
                                   "requirement and its digest")
        raise_findings(findings_for(conn, scope, resolved.bundle, resolved.profile,
                                    activation=projection.activation_id),
                       f"cannot activate {resolved.installed.name}:{projection.bundle}/{projection.profile}")
        confirmed = network == "" or confirm_digest is not None
        records_confirmation = confirmed and network != ""
        now = now_utc()
        row = {
            **new_activation(resolved, scope, ACTIVE if confirmed else AWAITING),
            "confirmed_version": 1 if records_confirmation else None,
            "confirmed_digest": network if records_confirmation else None,
            "confirmed_at": now if records_confirmation else None,
            "confirmed_by": (confirmed_by or login_user()) if records_confirmation else None,
            "confirmed_requirement": confirmed_requirement(resolved.installed) if records_confirmation else None,
            "created_at": now, "updated_at": now,
        }
        with transaction(conn):
            conn.execute(f"INSERT INTO activations ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                         tuple(row.values()))
            if confirmed:
                _project(conn, projection)
            crashpoint("activate.before_commit")
        crashpoint("activate.after_commit")
        return activation_json(row), resources_of(conn, projection.activation_id, scope.kind)


def confirmed_requirement(installed: Any) -> str | None:
    """The network requirement being confirmed, as `activations.confirmed_requirement` keeps it
    (an update that changes the requirement withdraws the confirmation but leaves this, for
    `bundle show` to compare: `preview.review`)."""
    import json

    from pkgmgr.manifest.network import declared_requirement

    requirement = declared_requirement(installed.manifest)
    return json.dumps(requirement, sort_keys=True) if requirement is not None else None


def confirm(scope: Scope, act_id: str, *, expected_version: int, confirmed_by: str | None, config: Config,
            lock_timeout: float) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """Confirm the current version's network requirement and project. Returns (activation,
    resources, changed); confirming an already-confirmed current version changes nothing.

    Raises not_found, stale_version (showing the current version), tree_modified (the
    installed files no longer produce this version) and the scope-rule errors."""
    if not scope.exists():
        require_activation(scope, act_id)  # not_found, without creating the store
    with scope.writer(lock_timeout):
        conn = scope.db
        row = require_activation(scope, act_id)
        if expected_version != row["version"]:
            raise PkgmgrError(f"{row['id']} is at version {row['version']}, not {expected_version}; read it with "
                              f"'{show_command(row['id'], scope.kind, scope.workspace_path)}' and confirm that version",
                              code=Code.STALE_VERSION, details={"current_version": row["version"],
                                                             "expected_version": expected_version,
                                                             "activation": activation_json(row)})
        if row["status"] == ACTIVE and is_confirmed(row):
            return activation_json(row), resources_of(conn, row["id"], scope.kind), False
        resolved = resolve(scope, Target(row["extension"], row["bundle"], row["profile"]), config=config)
        projection = resolved.projection
        if projection.activation_digest != row["activation_digest"]:
            raise PkgmgrError(f"the installed files of {row['extension']} {row['extension_version']} no longer "
                              f"produce version {row['version']} of {row['id']} (activation digest "
                              f"{projection.activation_digest}, recorded {row['activation_digest']})",
                              code=Code.TREE_MODIFIED,
                              hint=f"'pkgmgr ext verify {row['extension']}' lists the changed files")
        raise_findings(findings_for(conn, scope, resolved.bundle, resolved.profile, activation=row["id"]),
                       f"cannot confirm {row['id']}")
        now = now_utc()
        with transaction(conn):
            conn.execute(
                "UPDATE activations SET status = ?, confirmed_version = ?, confirmed_digest = ?, confirmed_at = ?, "
                "confirmed_by = ?, confirmed_requirement = ?, updated_at = ? WHERE id = ?",
                (ACTIVE, row["version"], row["network_digest"], now, confirmed_by or login_user(),
                 confirmed_requirement(resolved.installed), now, row["id"]))
            _project(conn, projection)
            crashpoint("confirm.before_commit")
        crashpoint("confirm.after_commit")
        updated = require_activation(scope, row["id"])
        return activation_json(updated), resources_of(conn, row["id"], scope.kind), True


def deactivate(scope: Scope, act_id: str, *, lock_timeout: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Delete the activation and every resource it owns, in one transaction. Raises not_found."""
    if not scope.exists():
        require_activation(scope, act_id)  # not_found, without creating the store
    with scope.writer(lock_timeout):
        conn = scope.db
        row = require_activation(scope, act_id)
        resources = resources_of(conn, row["id"], scope.kind)
        with transaction(conn):
            _withdraw(conn, row["id"])
            conn.execute("DELETE FROM activations WHERE id = ?", (row["id"],))
            crashpoint("deactivate.before_commit")
        crashpoint("deactivate.after_commit")
        return activation_json(row), resources


def list_activations(scope: Scope, *, status: str | None = None) -> list[dict[str, Any]]:
    conn = scope.reader()
    if conn is None:
        return []
    query = "SELECT * FROM activations"
    params: tuple[str, ...] = ()
    if status:
        query, params = query + " WHERE status = ?", (status,)
    return [activation_json(r) for r in db_rows(conn, "activations", query + " ORDER BY extension, bundle, profile", params)]


def list_resources(scopes: list[Scope], *, kind: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for scope in scopes:
        conn = scope.reader()
        if conn is None:
            continue
        query = "SELECT * FROM resources"
        params: tuple[str, ...] = ()
        if kind:
            query, params = query + " WHERE kind = ?", (kind,)
        out.extend(resource_json(r, scope.kind) for r in db_rows(conn, "resources", query + " ORDER BY kind, name, id", params))
    return out


# --- hooks called by the store inside its transactions ---------------------------------------------


def refresh_on_switch(conn: sqlite3.Connection, scope: Scope, installed: Installed, bundles: tuple[Bundle, ...], *,
                      deactivate_missing: bool, confirm_always: bool) -> list[dict[str, Any]]:
    """Recompute each activation of `installed` after its version changed, inside the caller's
    transaction: the rows and what is visible are read, `plan_refresh` decides (pure), and
    `apply_refresh` writes. Raises what `plan_refresh` raises, before anything is written; the
    caller's transaction then rolls back, so the old version stays installed and every
    activation as it was."""
    rows = extension_rows(conn, installed.name)
    if not rows:
        return []
    changes = plan_refresh(rows, scope, installed, bundles, visible_from(conn, scope),
                           deactivate_missing=deactivate_missing, confirm_always=confirm_always)
    return apply_refresh(conn, installed, changes, now=now_utc())


@dataclass(frozen=True)
class ActivationChange:
    """What a version switch does to one activation (SPEC 9.3 "On update")."""

    row: sqlite3.Row | dict[str, Any]
    change: str  # deactivated | unchanged | updated
    projection: Projection | None = None
    needs_confirmation: bool = False


def plan_refresh(rows: Sequence[sqlite3.Row | dict[str, Any]], scope: Scope, installed: Installed,
                 bundles: tuple[Bundle, ...], visible: VisibleAgents, *, deactivate_missing: bool,
                 confirm_always: bool) -> list[ActivationChange]:
    """The change of each activation `rows` of `installed` (its new version, with `bundles`),
    judged against `visible` (updated as it goes); reads and writes nothing:

    - activation digest unchanged -> only `extension_version` follows (`unchanged`);
    - changed -> `version` + 1 and re-projection (`updated`); the confirmation carries over while
      the network digest still equals the confirmed one (`confirmed_version` keeps naming the
      version that was confirmed);
    - a network digest changed to a non-empty value (or not empty and never confirmed), or any
      change under policy confirm = "always" -> confirmation cleared, projection withdrawn,
      `awaiting_confirmation`;
    - profile (or bundle) gone -> bundle_missing, unless `deactivate_missing` deactivates it.

    Raises bundle_missing and the scope-rule errors."""
    changes: list[ActivationChange] = []
    for row in rows:  # judged against what the switch leaves projected: each re-adds its agents below
        visible.replace(row["id"])
    for row in rows:
        bundle, profile = _target_of(row, bundles)
        if bundle is None or profile is None:
            if not deactivate_missing:
                raise _bundle_missing(installed.name, installed.version, row, bundle)
            visible.replace(row["id"])
            changes.append(ActivationChange(row, "deactivated"))
            continue
        projection = compute(scope, installed, bundle, profile)
        raise_findings(findings_for(None, scope, bundle, profile, activation=row["id"], visible=visible),
                       f"{installed.name} {installed.version} cannot keep activation {row['id']}")
        owner = partial(activation_agent_owner, activation=row["id"], extension=installed.name,
                        scope_kind=scope.kind)
        if projection.activation_digest == row["activation_digest"]:
            if row["status"] == ACTIVE:
                visible.replace(row["id"], profile.agent_names(), owner)
            changes.append(ActivationChange(row, "unchanged"))
            continue
        network = projection.network_digest
        # a non-empty network digest needs confirming when it changed (even back to a value confirmed
        # before it was dropped) or was never confirmed
        needs_confirmation = confirm_always or (
            network != "" and (network != row["network_digest"] or network != row["confirmed_digest"]))
        if needs_confirmation:
            visible.replace(row["id"])
        else:
            visible.replace(row["id"], profile.agent_names(), owner)
        changes.append(ActivationChange(row, "updated", projection, needs_confirmation))
    return changes


def apply_refresh(conn: sqlite3.Connection, installed: Installed, changes: Sequence[ActivationChange], *,
                  now: str) -> list[dict[str, Any]]:
    """Write `changes` in the caller's transaction; the activation objects after them."""
    results: list[dict[str, Any]] = []
    for item in changes:
        row = item.row
        if item.change == "deactivated":
            _withdraw(conn, row["id"])
            conn.execute("DELETE FROM activations WHERE id = ?", (row["id"],))
            results.append({**activation_json(row), "status": "deactivated", "change": "deactivated"})
            continue
        if item.change == "unchanged":
            conn.execute("UPDATE activations SET extension_version = ? WHERE id = ?", (installed.version, row["id"]))
            results.append({**activation_json(row), "extension_version": installed.version, "change": "unchanged"})
            continue
        projection = item.projection
        assert projection is not None  # an update always has its projection
        conn.execute(
            "UPDATE activations SET extension_version = ?, version = ?, status = ?, network_digest = ?, "
            "activation_digest = ?, primary_channel = ?, updated_at = ? WHERE id = ?",
            (installed.version, row["version"] + 1, AWAITING if item.needs_confirmation else ACTIVE,
             projection.network_digest, projection.activation_digest, projection.primary_channel, now, row["id"]))
        if item.needs_confirmation:
            conn.execute("UPDATE activations SET confirmed_version = NULL, confirmed_digest = NULL, "
                         "confirmed_at = NULL, confirmed_by = NULL WHERE id = ?", (row["id"],))
            _withdraw(conn, row["id"])
        else:
            _project(conn, projection)
        updated = one_row(conn, "activations", "SELECT * FROM activations WHERE id = ?", (row["id"],))
        assert updated is not None  # updated in this transaction
        results.append({**activation_json(updated), "change": "updated"})
    return results


def _target_of(row: sqlite3.Row | dict[str, Any], bundles: tuple[Bundle, ...]) -> tuple[Bundle | None, Profile | None]:
    """The bundle and profile an activation names among `bundles` (None where gone)."""
    bundle = next((b for b in bundles if b.name.lower() == row["bundle"].lower()), None)
    return bundle, bundle.profile(row["profile"]) if bundle is not None else None


def _bundle_missing(name: str, version: str, row: sqlite3.Row | dict[str, Any], bundle: Bundle | None) -> PkgmgrError:
    missing = f"bundle {row['bundle']}" if bundle is None else f"profile {row['bundle']}/{row['profile']}"
    return PkgmgrError(
        f"{name} {version} no longer has {missing}, which activation {row['id']} uses; nothing was changed",
        code=Code.BUNDLE_MISSING, details={"activation": activation_json(row)},
        hint="pass --deactivate-missing to deactivate it as part of the update")


def check_kept(scope: Scope, name: str, version: str, bundles: tuple[Bundle, ...], *, deactivate_missing: bool) -> None:
    """Raise the `bundle_missing` that switching `name` to `version` (with `bundles`) would
    raise, reading only: what a dry run can know about the refresh of its activations."""
    if deactivate_missing:
        return
    for row in activations_for(scope, name):
        bundle, profile = _target_of(row, bundles)
        if bundle is None or profile is None:
            raise _bundle_missing(name, version, row, bundle)


def guard_removal(conn: sqlite3.Connection, scope: Scope, installed: Installed, *, deactivate: bool,
                  action: str) -> list[dict[str, Any]]:
    """Refuse to remove/disable an extension with activations unless `deactivate`, which
    deletes them (and their resources) in the caller's transaction."""
    rows = extension_rows(conn, installed.name)
    if not rows:
        return []
    if not deactivate:
        ids = ", ".join(r["id"] for r in rows)
        raise PkgmgrError(f"cannot {action} {installed.name}: it has {len(rows)} activation(s): {ids}",
                          code=Code.EXTENSION_HAS_ACTIVE_BUNDLES,
                          details={"activations": [activation_json(r) for r in rows]},
                          hint="pass --deactivate to deactivate them in the same step, or first "
                               + " and ".join(f"'pkgmgr{scope_options(scope.kind, scope.workspace_path)} bundle "
                                              f"deactivate {r['id']}'" for r in rows))
    for row in rows:
        _withdraw(conn, row["id"])
        crashpoint("remove.mid_deactivate")
        conn.execute("DELETE FROM activations WHERE id = ?", (row["id"],))
    return [{**activation_json(r), "status": "deactivated"} for r in rows]


def activations_for(scope: Scope, extension: str) -> list[dict[str, Any]]:
    conn = scope.reader()
    if conn is None:
        return []
    rows = extension_rows(conn, extension)
    return [activation_json(r) for r in rows]

