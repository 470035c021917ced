"""`ext status` (SPEC 7, 11): the document that describes one install of any host — what its host
reads of it (for Compozy: its manifest as installed, the environment variables it requires that
are unset, its bundles and profiles, its activations), and its provenance with whether its
registry is signed. Reads only; the CLI renders the document as JSON or text."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.config import Config
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope


def status_document(item: Installed, scope: Scope, *, config: Config, home: Path, resolved: bool = False,
                    environ: Mapping[str, str] = os.environ,
                    warn: Callable[[str], None] = lambda _message: None) -> dict[str, Any]:
    """The `ext status -o json` document of `item`, installed in `scope`, of any host: what its
    host reads of it (`Host.status`; `resolved` adds each command as it runs, where the host has
    commands, resolved against `environ`; what cannot be read is a warning, `warn`), its provenance
    with whether its registry is signed (`signature`)."""
    from pkgmgr.hosts import get

    data = get(item.host).status(item, scope, config=config, resolved=resolved, environ=environ, warn=warn)
    data["provenance"] = {**data["provenance"], **signature(item, config=config, home=home)}
    data["linked"] = item.linked
    data["previous"] = kept_document(item)
    return data


def kept_document(item: Installed) -> dict[str, Any] | None:
    """The install `item` keeps for `ext rollback` (its version, where its tree is kept, where it
    came from), or None."""
    kept = item.kept()
    if kept is None:
        return None
    return {"version": kept.version or None, "path": str(kept.place), "source": kept.source_kind,
            "locator": kept.source, "registry": kept.registry, "tree_sha256": kept.tree_sha256,
            "installed_at": kept.installed_at}


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
