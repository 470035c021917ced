"""Compozy (compozy/compozy, SPEC 2): `extension.toml` (or a Compozy `extension.json`) judged by the
generation's rules (`pkgmgr.manifest`) with its bundles (`pkgmgr.bundles`), installed into
pkgmgr's own scope store — `extensions/<name>/<version>/` of the global scope or of a workspace's
store (SPEC 4, 10) — whose activations are refreshed in the switch's transaction
(`hosts.scope_store`). Enabled state and trust are pkgmgr's own (`state.db`, SPEC 7, 10).

This module is on every install's path: it imports the codecs only where it judges a tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.hosts.port import SHARED, Change, Changed, Claim, Host, Packable, Prepared, Validation
from pkgmgr.store.checks import STORE_HOST

if TYPE_CHECKING:
    from pkgmgr.archive import TreeRecord
    from pkgmgr.bundles.bundle import Bundle
    from pkgmgr.config import Config
    from pkgmgr.hosts.port import Destination, Options, Promised, Source, Warn
    from pkgmgr.manifest.parsed import Manifest
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

MANIFEST_TOML, MANIFEST_JSON = "extension.toml", "extension.json"
READ_ONLY_GRANTS = frozenset(
    {"logs.read", "memory.read", "model.read", "observe.read", "session.read", "skills.read", "tool.read"}
)


@dataclass(frozen=True)
class CompozyTree:
    """A Compozy extension as its rules read it: the manifest and its bundles."""

    manifest: Manifest
    bundles: tuple[Bundle, ...]


class Compozy(Host):
    name = STORE_HOST
    title = "Compozy"
    in_scope_store = True
    templates = ("resource", "subprocess", "bundle")
    read_only_grants = READ_ONLY_GRANTS

    # --- recognising, where --------------------------------------------------------------------------

    def claim(self, level: Path, files: frozenset[str]) -> Claim | None:
        """`extension.toml`; else an `extension.json` no other host reads as its own."""
        if MANIFEST_TOML in files:
            return Claim(MANIFEST_TOML)
        if MANIFEST_JSON in files:
            return Claim(MANIFEST_JSON, SHARED)
        return None

    def homes(self, global_root: Path, workspace_root: Path | None, project: Path | None) -> dict[str, Path | None]:
        """pkgmgr's own stores: the global root, and the workspace's store (SPEC 10)."""
        return {"global": global_root, "project": workspace_root}

    # --- installing -------------------------------------------------------------------------------------

    def prepare(self, fetched: Source, root: Path | None, staging: Path, *, config: Config, options: Options,
                record: TreeRecord | None = None) -> Prepared[CompozyTree]:
        """Every check a staged Compozy tree must pass before it may be switched to: manifest and
        bundles, host version, the registry entry's metadata, the declared name, the grant ceiling,
        the lock's tree checksum. Raises the manifest's and bundles' errors, `incompatible_host`,
        `metadata_mismatch`, `invalid_config`, `grant_not_allowed` and `checksum_mismatch`."""
        from pkgmgr.archive import tree_checksum_and_listing
        from pkgmgr.bundles.extension import read_extension
        from pkgmgr.manifest import check_host

        if root is None:
            raise PkgmgrError(f"{fetched.label or fetched.locator} is no Compozy extension", code=Code.INVALID_ARCHIVE)
        expects = fetched.expects
        manifest, bundles = read_extension(root, config)
        check_host(manifest, config.host_version)
        if expects.entry is not None:
            check_expected(expects.entry, manifest)
        expects.check_name(fetched.label or fetched.locator, manifest.name)
        grants = check_grants(manifest, fetched, options)
        max_scope = manifest.publish_max_scope
        if max_scope is not None and fetched.tier != "official":
            max_scope = "workspace"
        recorded = record.result(staging, root) if record is not None else None
        tree_sha256, listing = recorded if recorded is not None else tree_checksum_and_listing(root)
        expects.check_tree(f"{manifest.name} {manifest.version}", tree_sha256)
        sub = manifest.subprocess
        shown = {
            "name": manifest.name, "version": manifest.version, "source": fetched.kind, "verified": fetched.verified,
            "kind": manifest.kind, "permissions": list(grants),
            "subprocess": " ".join([sub.command, *sub.args]) if sub is not None and sub.command else None,
            "network_requirement": manifest.network, "network_digest": manifest.network_digest,
            "max_scope": max_scope,
        }
        return Prepared(host=self.name, fetched=fetched, root=root, staging=staging, name=str(manifest.name),
                        version=str(manifest.version), tree_sha256=tree_sha256, listing=listing,
                        judged=CompozyTree(manifest, bundles), shown=shown, document=manifest.document,
                        grants=grants, network_digest=manifest.network_digest, max_scope=max_scope)

    def destination(self, scope: Scope) -> Destination:
        from pkgmgr.hosts.scope_store import ScopeDestination

        return ScopeDestination(scope)

    # --- the lifecycle ----------------------------------------------------------------------------------

    def remove(self, scope: Scope, record: Installed, change: Change) -> Changed:
        from pkgmgr.hosts.scope_store import remove

        gone, deactivated = remove(scope, record.name, deactivate=change.deactivate)
        return Changed(gone, deactivated)

    def set_enabled(self, scope: Scope, record: Installed, enabled: bool, change: Change) -> Changed:
        from pkgmgr.hosts.scope_store import set_enabled

        now, deactivated = set_enabled(scope, record.name, enabled, deactivate=change.deactivate)
        return Changed(now, deactivated)

    def plan_remove(self, scope: Scope, record: Installed) -> list[dict[str, Any]]:
        from pkgmgr.activation.lifecycle import activations_for

        return activations_for(scope, record.name)

    def checksum(self, path: Path) -> tuple[str, dict[str, str]]:
        from pkgmgr.archive import tree_checksum_and_listing

        return tree_checksum_and_listing(path)

    def intact(self, record: Installed) -> bool:
        from pkgmgr.store.switch import tree_is_intact

        return tree_is_intact(record)

    def recover(self, scope: Scope, timeout: float = 0.0) -> list[str]:
        """Nothing beyond what the scope's writer lock does when it is taken: the store removes the
        trees a dead writer recorded in `pending_trees` (`store.leftovers`)."""
        return []

    def status(self, record: Installed, scope: Scope, *, config: Config, resolved: bool,
               environ: Mapping[str, str], warn: Warn) -> dict[str, Any]:
        """The manifest as installed, the unset `requires_env`, bundles and profiles, activations,
        and with `resolved` each command as it runs (SPEC 2: paths and `${VAR}` resolved)."""
        from pkgmgr.activation.lifecycle import activations_for
        from pkgmgr.manifest import parse_manifest

        manifest = parse_manifest(record.manifest, file=MANIFEST_TOML, root=None)
        data: dict[str, Any] = {
            "name": record.name,
            "version": record.version,
            "scope": record.scope,
            "enabled": record.enabled,
            "path": str(record.directory),
            "kind": manifest.kind,
            "generations": list(manifest.generations),
            "description": manifest.description,
            "provenance": record.provenance(),
            "tree_sha256": record.tree_sha256,
            "network_digest": record.network_digest,
            "network_requirement": manifest.network,
            "grants": list(record.grants),
            "max_scope": record.max_scope,
            "requires_env": list(manifest.requires_env),
            "missing_env": [name for name in manifest.requires_env if not environ.get(name)],
            "bundles": _bundle_summary(record, manifest, config=config, warn=warn),
            "activations": activations_for(scope, record.name),
            "skills": list(manifest.skills),
            "hooks": [{"name": h.name, "event": h.event, "mode": h.mode,
                       "command": " ".join([h.executor.command, *h.executor.args])} for h in manifest.hooks],
            "mcp_servers": [{"name": name, "command": " ".join([c.command, *c.args])}
                            for name, c in manifest.mcp_servers],
        }
        if resolved:
            data["commands"] = [{"key": key, **cmd.resolved(str(record.directory), environ)}
                                for key, cmd in manifest.commands()]
        return data

    # --- authoring --------------------------------------------------------------------------------------

    def validate(self, path: Path, *, config: Config, shown: str) -> Validation:
        from pkgmgr.validation import validate_extension

        validated = validate_extension(path, config, shown=shown)
        manifest, bundles = validated.manifest, validated.bundles
        data = {
            "valid": True,
            "generations": list(manifest.generations),
            "name": manifest.name,
            "version": manifest.version,
            "kind": manifest.kind,
            "network_digest": manifest.network_digest,
            "bundles": [{"name": b.name, "profiles": [p.name for p in b.profiles]} for b in bundles],
            "warnings": validated.warnings,
        }
        profiles = sum(len(b.profiles) for b in bundles)
        line = (f"{shown}: {manifest.name} {manifest.version} is valid ({manifest.kind}, {len(bundles)} bundle(s), "
                f"{profiles} profile(s); loads in Compozy {', '.join(manifest.generations)})")
        return Validation(data, [line], list(validated.warnings))

    def packable(self, root: Path, *, release: str | None, config: Config, label: str) -> Packable:
        from pkgmgr.bundles.extension import read_extension

        manifest, _ = read_extension(root, config)
        return Packable(self.name, manifest.name, manifest.version, root)

    def scaffold(self, name: str, template: str) -> dict[str, str]:
        from pkgmgr.hosts.compozy_templates import files_for
        from pkgmgr.refs import NAME_RE

        if not NAME_RE.fullmatch(name):
            raise PkgmgrError(f"{name!r} is not an extension name (lower-case letters, digits and '-', "
                              "starting with a letter)", code=Code.USAGE)
        return files_for(template, name)

    def entry_facts(self, root: Path, staging: Path, archive: Path, *, config: Config) -> dict[str, Any]:
        from pkgmgr.bundles.extension import read_extension
        from pkgmgr.versions import strip_v

        manifest, bundles = read_extension(root, config)
        return {"name": manifest.name, "version": strip_v(manifest.version), "description": manifest.description,
                "min_compozy_version": strip_v(manifest.min_compozy_version),
                "network_digest": manifest.network_digest, "permissions": tuple(sorted(set(manifest.grants))),
                "warnings": tuple(manifest.warnings) + tuple(w for bundle in bundles for w in bundle.warnings),
                "host": self.name}


def check_expected(expected: Promised, manifest: Manifest) -> None:
    """The registry entry may not understate what the archive's manifest declares (SPEC 5.4)."""
    from pkgmgr.versions import same_version

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
            code=Code.METADATA_MISMATCH,
            details={"differences": differences},
        )


def check_grants(manifest: Manifest, fetched: Source, options: Options) -> tuple[str, ...]:
    """The read-only grant ceiling of SPEC 7; returns the effective grants."""
    grants = tuple(manifest.grants)
    beyond = sorted(g for g in set(grants) if g not in READ_ONLY_GRANTS)
    if beyond and fetched.tier != "official" and not options.allow_grants:
        raise PkgmgrError(
            f"{manifest.name} {manifest.version} asks for grants beyond the read-only set: {', '.join(beyond)} "
            "(pkgmgr's rule: an unreviewed source gets read-only grants unless you allow more)",
            code=Code.GRANT_NOT_ALLOWED,
            details={"grants": beyond},
            hint="review them and pass --allow-grants to accept",
        )
    return grants


def _bundle_summary(record: Installed, manifest: Manifest, *, config: Config, warn: Warn) -> list[dict[str, Any]]:
    """Each bundle the manifest lists with its profiles' names; [] (and a warning) when they
    cannot be read."""
    if not manifest.bundles:
        return []
    from pkgmgr.bundles.loader import load_bundles_of

    try:
        bundles = load_bundles_of(record.directory, manifest.bundles, reserved_agent_names=config.reserved_agent_names,
                                  generation=config.compozy_generation)
    except PkgmgrError as error:
        warn(f"{record.name}: bundles cannot be read: {error.message.splitlines()[0]}")
        return []
    return [{"name": b.name, "profiles": [p.name for p in b.profiles]} for b in bundles]
