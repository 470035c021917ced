"""`ext status` of a Compozy extension (SPEC 7): the document that describes one install — its
manifest as installed, its provenance and whether its registry is signed, the environment
variables it requires that are unset, its bundles and profiles, and its activations. Reads
only; the CLI renders the document as JSON or text."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.config import Config
    from pkgmgr.manifest.parsed import Manifest
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope


def status_document(item: Installed, scope: Scope, *, config: Config, home: Path, resolved: bool = False,
                    environ: Mapping[str, str] = os.environ,
                    warn: Callable[[str], None] = lambda _message: None) -> dict[str, Any]:
    """The `ext status -o json` document of `item`, installed in `scope`. `resolved` adds each
    command as it runs (SPEC 2: paths and `${VAR}` resolved against `environ`). Bundles that
    cannot be read are a warning (`warn`), not an error: the install itself is still described."""
    from pkgmgr.activation.lifecycle import activations_for
    from pkgmgr.manifest import parse_manifest

    manifest = parse_manifest(item.manifest, file="extension.toml", root=None)
    data: dict[str, Any] = {
        "name": item.name,
        "version": item.version,
        "scope": item.scope,
        "enabled": item.enabled,
        "path": str(item.directory),
        "kind": manifest.kind,
        "generations": list(manifest.generations),
        "description": manifest.description,
        "provenance": {**item.provenance(), **signature(item, config=config, home=home)},
        "tree_sha256": item.tree_sha256,
        "network_digest": item.network_digest,
        "network_requirement": manifest.network,
        "grants": list(item.grants),
        "max_scope": item.max_scope,
        "requires_env": list(manifest.requires_env),
        "missing_env": missing_env(manifest, environ),
        "bundles": bundle_summary(item, manifest, config=config, warn=warn),
        "activations": activations_for(scope, item.name),
        "skills": list(manifest.skills),
        "hooks": [{"name": h.name, "event": h.event, "mode": h.mode, "command": " ".join([h.executor.command,
                                                                                        *h.executor.args])}
                  for h in manifest.hooks],
        "mcp_servers": [{"name": name, "command": " ".join([c.command, *c.args])} for name, c in manifest.mcp_servers],
    }
    if resolved:
        data["commands"] = [{"key": key, **cmd.resolved(str(item.directory), environ)}
                            for key, cmd in manifest.commands()]
    return data


def missing_env(manifest: Manifest, environ: Mapping[str, str]) -> list[str]:
    """The variables the manifest requires (`requires_env`) that are unset or empty in `environ`."""
    return [name for name in manifest.requires_env if not environ.get(name)]


def signature(item: Installed, *, config: Config, home: Path) -> dict[str, Any]:
    """Whether the registry an extension came from is signed (SPEC 5.4a): `signed`, and the
    sha256 of that registry's current trusted root. Read from the configuration and the trusted
    metadata (no `tuf` import); an extension from elsewhere is `signed: false`."""
    if item.source_kind != "registry" or not item.registry:
        return {"signed": False}
    registry = next((r for r in config.registries if r.name == item.registry), None)
    if registry is None or not registry.signed:
        return {"signed": False}
    from pkgmgr.registry.readers import parse_source
    from pkgmgr.registry.trustroot import trusted_state

    try:
        source = parse_source(registry.source).text
    except PkgmgrError:
        return {"signed": False}
    state = trusted_state(home, source)
    return {"signed": True, "root_sha256": state.root_sha256 or registry.root_sha256, "expires": state.expires}


def bundle_summary(item: Installed, manifest: Manifest, *, config: Config,
                   warn: Callable[[str], None]) -> list[dict[str, Any]]:
    """Each bundle the manifest lists with its profiles' names; [] (and a warning) when they
    cannot be read."""
    if not manifest.bundles:
        return []
    from pkgmgr.bundles.loader import load_bundles_of

    try:
        bundles = load_bundles_of(item.directory, manifest.bundles, reserved_agent_names=config.reserved_agent_names,
                                  generation=getattr(config, "compozy_generation", "auto"))
    except PkgmgrError as error:
        warn(f"{item.name}: bundles cannot be read: {error.message.splitlines()[0]}")
        return []
    return [{"name": b.name, "profiles": [p.name for p in b.profiles]} for b in bundles]
