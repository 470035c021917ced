"""Install, switch and remove extensions in one scope, atomically.

The sequence of SPEC 4: extract into `.staging/<random>` -> validate manifest and bundles ->
rename into `extensions/<name>/<version>/` -> one SQLite transaction switches the current
version, records provenance and refreshes activations -> the old version directory is
removed. A crash anywhere leaves the old or the new state; what it leaves on disk is an
orphan that the next writer removes. Against power loss the order is dpkg's: the tree is
flushed before the rename, its directory after it, and the commit is durable (synchronous =
FULL) before the old tree is deleted.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from pkgmgr.crash import crashpoint
from pkgmgr.errors import PkgmgrError
from pkgmgr.fsutil import durable_tree, fsync_dirs, remove_tree
from pkgmgr.store.db import transaction
from pkgmgr.store.model import READ_ONLY_GRANTS, Fetched, Installed
from pkgmgr.store.scope import Scope


@dataclass(frozen=True)
class InstallOptions:
    force: bool = False
    allow_grants: bool = False
    allow_unverified: bool = False
    pin: bool = False
    pre: bool = False
    yes: bool = False
    dry_run: bool = False
    deactivate_missing: bool = False
    confirm_always: bool = False  # config policy.confirm = "always"
    allow_expired: bool = False


@dataclass
class Prepared:
    """An extension extracted and validated in staging, ready to be committed."""

    fetched: Fetched
    root: Path  # the manifest root inside the staging directory
    staging: Path
    manifest: Any  # pkgmgr.manifest.Manifest
    bundles: tuple[Any, ...]
    tree_sha256: str
    listing: dict[str, str]
    grants: tuple[str, ...]
    max_scope: str | None
    durable: bool = False  # its files are on disk already (`make_durable`): `commit` need not flush

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> str:
        return self.manifest.version

    def summary(self) -> dict[str, Any]:
        """What the operator should see before it is installed (SPEC 7)."""
        sub = self.manifest.subprocess
        command = None
        if sub is not None and sub.command:
            command = " ".join([sub.command, *sub.args])
        network = self.manifest.network
        return {
            "name": self.name,
            "version": self.version,
            "source": self.fetched.kind,
            "verified": self.fetched.verified,
            "kind": self.manifest.kind,
            "permissions": list(self.grants),
            "subprocess": command,
            "network_requirement": network,
            "network_digest": self.manifest.network_digest,
            "max_scope": self.max_scope,
        }


@dataclass
class Outcome:
    action: str  # installed | switched | unchanged | reinstalled
    installed: Installed
    previous_version: str | None = None
    activations: list[dict[str, Any]] = field(default_factory=list)


def prepare(fetched: Fetched, staging: Path, *, config: Any, options: InstallOptions) -> Prepared:
    """Make `fetched` an extension tree in `staging` and validate it completely.

    Raises the archive errors (unsafe_archive, archive_too_large, invalid_archive), manifest
    and bundle validation errors, incompatible_host, metadata_mismatch and grant_not_allowed.
    """
    from pkgmgr.archive import TreeRecord, copy_source_tree, extract_archive, tree_checksum_and_listing
    from pkgmgr.bundles import load_bundles
    from pkgmgr.manifest import check_host, read_manifest

    record = None
    if fetched.archive is not None:
        record = TreeRecord()  # the tree checksum while extracting, rather than reading it back
        # a local archive is hashed while it is extracted: read from disk once
        import hashlib

        digest = hashlib.sha256() if fetched.sha256 is None and fetched.kind == "archive" else None
        root = extract_archive(fetched.archive, staging, config.limits, record=record, digest=digest)
        if digest is not None:
            fetched = replace(fetched, sha256=digest.hexdigest())
    elif fetched.directory is not None:
        root = copy_source_tree(fetched.directory, staging / "tree")
    else:  # a bug in the caller
        raise RuntimeError("Fetched has neither an archive nor a directory")
    crashpoint("install.after_extract")
    manifest = read_manifest(root)
    bundles = load_bundles(root, manifest.bundles, reserved_agent_names=config.reserved_agent_names)
    check_host(manifest, config.host_version)
    if fetched.expected is not None:
        check_expected(fetched, manifest)
    if fetched.expected_name is not None and manifest.name != fetched.expected_name:
        raise PkgmgrError(f"{fetched.label or fetched.locator} holds the extension {manifest.name}, "
                          f"not {fetched.expected_name}", code="invalid_config",
                          details={"name": manifest.name, "expected": fetched.expected_name})
    grants = check_grants(manifest, fetched, options)
    max_scope = manifest.publish_max_scope
    if max_scope is not None and fetched.tier != "official":
        max_scope = "workspace"
    recorded = record.result(staging, root) if record is not None else None
    tree_sha256, listing = recorded if recorded is not None else tree_checksum_and_listing(root)
    if fetched.expected_tree_sha256 is not None and tree_sha256 != fetched.expected_tree_sha256:
        raise PkgmgrError(
            f"{manifest.name} {manifest.version}: the installed tree would have checksum {tree_sha256}, "
            f"but the lock records {fetched.expected_tree_sha256}",
            code="checksum_mismatch",
            details={"tree_sha256": tree_sha256, "expected": fetched.expected_tree_sha256},
        )
    return Prepared(fetched, root, staging, manifest, bundles, tree_sha256, listing, grants, max_scope)


def check_expected(fetched: Fetched, manifest: Any) -> None:
    """The registry entry may not understate what the archive's manifest declares."""
    from pkgmgr.versions import same_version

    expected = fetched.expected
    assert expected is not None
    differences = []
    if manifest.name != expected.name:
        differences.append(f"name: entry says {expected.name!r}, archive says {manifest.name!r}")
    if not same_version(manifest.version, expected.version):
        differences.append(f"version: entry says {expected.version}, archive says {manifest.version}")
    if sorted(set(manifest.grants)) != sorted(set(expected.permissions)):
        differences.append(
            f"permissions: entry says {sorted(set(expected.permissions))}, archive says {sorted(set(manifest.grants))}"
        )
    if manifest.network_digest != expected.network_digest:
        differences.append(
            f"network_digest: entry says {expected.network_digest!r}, archive says {manifest.network_digest!r}"
        )
    if not same_version(manifest.min_compozy_version, expected.min_compozy_version):
        differences.append(
            f"min_compozy_version: entry says {expected.min_compozy_version}, "
            f"archive says {manifest.min_compozy_version}"
        )
    if differences:
        raise PkgmgrError(
            f"{expected.name} {expected.version}: the registry entry does not match the archive's manifest: "
            + "; ".join(differences),
            code="metadata_mismatch",
            details={"differences": differences},
        )


def check_grants(manifest: Any, fetched: Fetched, options: InstallOptions) -> tuple[str, ...]:
    """The read-only grant ceiling of SPEC 7; returns the effective grants."""
    grants = tuple(manifest.grants)
    beyond = sorted(g for g in set(grants) if g not in READ_ONLY_GRANTS)
    if beyond and fetched.tier != "official" and not options.allow_grants:
        raise PkgmgrError(
            f"{manifest.name} {manifest.version} asks for grants beyond the read-only set: {', '.join(beyond)}",
            code="grant_not_allowed",
            details={"grants": beyond},
            hint="review them and pass --allow-grants to accept",
        )
    return grants


def get_installed(scope: Scope, name: str) -> Installed | None:
    conn = scope.reader()
    if conn is None:
        return None
    row = conn.execute("SELECT * FROM extensions WHERE name = ?", (name,)).fetchone()
    return Installed.from_row(row, scope.kind, scope.root) if row else None


def list_installed(scope: Scope) -> list[Installed]:
    conn = scope.reader()
    if conn is None:
        return []
    return [Installed.from_row(r, scope.kind, scope.root) for r in conn.execute("SELECT * FROM extensions ORDER BY name")]


def same_source(current: Installed, fetched: Fetched) -> bool:
    if current.source_kind != fetched.kind:
        return False
    if fetched.kind == "registry":
        return current.registry == fetched.registry
    return current.source == fetched.locator


def check_replace(current: Installed, prepared: Prepared, options: InstallOptions) -> bool:
    """Whether `prepared` is exactly the `current` install (committing it changes nothing).
    Raises the `source_conflict` that replacing `current` with it would be, reading only."""
    from pkgmgr.versions import same_version  # here: `ext list` imports this module, not packaging

    fetched = prepared.fetched
    name, version = prepared.name, prepared.version
    from_same_source = same_source(current, fetched)
    if not from_same_source and not options.force:
        raise PkgmgrError(
            f"{name} is installed from another source ({current.source_kind} {current.source}); "
            f"refusing to replace it with {fetched.kind} {fetched.locator}",
            code="source_conflict",
            hint="pass --force to replace it",
        )
    if not same_version(current.version, version):
        return False
    # --force always replaces: it records another source's provenance even when the content is
    # identical, and it repairs an installed tree that was modified since; the same content over a
    # tree that is gone or damaged repairs it too (SPEC 4)
    same_content = from_same_source and current.tree_sha256 == prepared.tree_sha256
    if same_content and not options.force:
        return tree_is_intact(current)
    if not (options.force or same_content):
        raise PkgmgrError(
            f"{name} {version} is already installed with different content "
            f"(tree {current.tree_sha256[:21]} vs {prepared.tree_sha256[:21]})",
            code="source_conflict",
            hint="pass --force to replace it",
        )
    return False


def commit(scope: Scope, prepared: Prepared, options: InstallOptions,
           announce: Callable[[dict[str, Any]], None] | None = None) -> Outcome:
    """Move a prepared tree into place and switch to it in one transaction (writer lock held).
    `announce` sees the summary once the commit is certain to change something, before it does
    (SPEC 7: what an install grants, runs and needs, shown before it acts)."""
    from pkgmgr.archive.checksum import checksum_hex
    from pkgmgr.versions import same_version  # here: `ext list` imports this module, not packaging

    name, version = prepared.name, prepared.version
    current = get_installed(scope, name)
    if current is not None and check_replace(current, prepared, options):
        if current.pinned != options.pin:
            with transaction(scope.db):
                scope.db.execute("UPDATE extensions SET pinned = ? WHERE name = ?", (int(options.pin), name))
            current = get_installed(scope, name)
            assert current is not None
        remove_tree(prepared.staging)
        return Outcome("unchanged", current, current.version)
    if announce is not None:
        announce(prepared.summary())
    rel = f"extensions/{name}/{version}"
    if current is not None and current.path == rel:
        rel = f"{rel}~{checksum_hex(prepared.tree_sha256)[:12]}"  # a forced reinstall of the same version
    parent, _, leaf = rel.rpartition("/")
    first_of_name = not (scope.root / parent).is_dir()
    target = scope.ensure_dir(parent) / leaf  # no link, no other user's directory on the way
    if os.path.lexists(target):
        remove_tree(target)  # an orphan of an interrupted writer: nothing references it
    if not prepared.durable:
        durable_tree(prepared.root)  # the tree's data on disk before any name points at it
    os.rename(prepared.root, target)
    fsync_dirs(target.parent)  # the rename on disk before the commit that names it
    if first_of_name:  # and the directories made for it
        fsync_dirs(target.parent.parent, scope.root)
    crashpoint("install.after_rename")
    from pkgmgr.activation.lifecycle import refresh_on_switch

    row = _row(prepared, rel, options, current)
    conn = scope.db
    try:
        with transaction(conn):
            columns = ", ".join(row)
            placeholders = ", ".join("?" for _ in row)
            conn.execute(f"INSERT OR REPLACE INTO extensions ({columns}) VALUES ({placeholders})",
                         tuple(row.values()))
            installed = get_installed(scope, name)
            assert installed is not None
            activations = refresh_on_switch(conn, scope, installed, prepared.bundles,
                                            deactivate_missing=options.deactivate_missing,
                                            confirm_always=options.confirm_always)
            crashpoint("install.before_commit")
    except BaseException:
        # rolled back (e.g. extension_has_active_bundles): the old state stands, so the renamed
        # tree is an orphan; remove it now rather than leave it to the next writer
        remove_tree(target)
        raise
    crashpoint("install.after_commit")
    # the commit is durable here (synchronous = FULL, store/db.py): only now may the old tree go
    if current is not None and current.path != rel:
        remove_tree(scope.root / current.path)
        crashpoint("install.after_old_removed")
    remove_tree(prepared.staging)
    if current is None:
        action = "installed"
    elif same_version(current.version, version):
        action = "reinstalled"
    else:
        action = "switched"
    return Outcome(action, installed, current.version if current else None, activations)


def make_durable(scope: Scope, prepared: list[Prepared]) -> None:
    """Flush the trees prepared for one command once, before the first is renamed in (one
    `syncfs` rather than one per ref: SPEC 4 "Durability")."""
    waiting = [item for item in prepared if not item.durable]
    if waiting:
        durable_tree(scope.staging_dir)
        for item in waiting:
            item.durable = True


def tree_is_intact(installed: Installed) -> bool:
    """The installed directory exists and still has the tree checksum its row records."""
    from pkgmgr.archive import tree_checksum

    return installed.directory.is_dir() and tree_checksum(installed.directory) == installed.tree_sha256


def _row(prepared: Prepared, rel: str, options: InstallOptions, current: Installed | None) -> dict[str, Any]:
    fetched = prepared.fetched
    manifest = prepared.manifest
    return {
        "name": manifest.name,
        "version": manifest.version,
        "path": rel,
        "enabled": int(current.enabled) if current is not None else 1,
        "pinned": int(options.pin),
        "source_kind": fetched.kind,
        "source": fetched.locator,
        "registry": fetched.registry,
        "source_url": fetched.source_url,
        "sha256": fetched.sha256,
        "verified": int(fetched.verified),
        "allow_unverified": int(options.allow_unverified and not fetched.verified),
        "tier": fetched.tier,
        "tree_sha256": prepared.tree_sha256,
        "tree_listing": json.dumps(prepared.listing, sort_keys=True, separators=(",", ":")),
        "manifest": json.dumps(manifest.document, sort_keys=True, default=str),
        "network_digest": manifest.network_digest,
        "grants": json.dumps(list(prepared.grants)),
        "max_scope": prepared.max_scope,
        "installed_at": now_utc(),
        "installed_by": login_user(),
    }


def now_utc() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def login_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


def remove(scope: Scope, name: str, *, deactivate: bool) -> tuple[Installed, list[dict[str, Any]]]:
    """Remove an installed extension (writer lock held). Raises not_found and, through the
    activation hooks, extension_has_active_bundles."""
    current = get_installed(scope, name)
    if current is None:
        raise PkgmgrError(f"{name} is not installed in the {scope.kind} scope", code="not_found")
    from pkgmgr.activation.lifecycle import guard_removal

    conn = scope.db
    with transaction(conn):
        deactivated = guard_removal(conn, scope, current, deactivate=deactivate, action="remove")
        conn.execute("DELETE FROM extensions WHERE name = ?", (name,))
        crashpoint("remove.before_commit")
    crashpoint("remove.after_commit")
    remove_tree(scope.root / current.path)
    crashpoint("remove.after_tree_removed")
    name_dir = scope.extensions_dir / name
    if name_dir.is_dir() and not any(name_dir.iterdir()):
        name_dir.rmdir()
    return current, deactivated


def set_enabled(scope: Scope, name: str, enabled: bool, *, deactivate: bool = False) -> tuple[Installed, list]:
    current = get_installed(scope, name)
    if current is None:
        raise PkgmgrError(f"{name} is not installed in the {scope.kind} scope", code="not_found")
    from pkgmgr.activation.lifecycle import guard_removal

    conn = scope.db
    changed: list[dict[str, Any]] = []
    with transaction(conn):
        if not enabled:
            changed = guard_removal(conn, scope, current, deactivate=deactivate, action="disable")
        conn.execute("UPDATE extensions SET enabled = ? WHERE name = ?", (int(enabled), name))
    updated = get_installed(scope, name)
    assert updated is not None
    return updated, changed
