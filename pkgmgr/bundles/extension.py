"""An extension tree judged as Compozy's loader judges it, by the configuration's rules: the
manifest under `host.compozy_generation` (env `PKGMGR_COMPOZY_GENERATION`, resolved once, by
`pkgmgr.config`), then its bundles with the configured reserved agent names. `ext validate`,
`ext pack`, `ext install`, `registry publish`, `registry validate --fetch` and `sync` all call
this, so one configuration gives one verdict everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pkgmgr.bundles.bundle import Bundle
    from pkgmgr.config import Config
    from pkgmgr.manifest.parsed import Manifest


def read_extension(root: Path, config: "Config") -> tuple["Manifest", tuple["Bundle", ...]]:
    """The manifest and bundles of the extension at `root`.

    Raises `PkgmgrError(invalid_manifest)` when `root` has no manifest, and `ValidationFailed`
    listing every problem of the manifest (`invalid_manifest`, `path_escapes_root`) or of the
    bundles (`invalid_bundle`, `invalid_layout`, `path_escapes_root`).
    """
    from pkgmgr.bundles.loader import load_bundles
    from pkgmgr.manifest import read_manifest

    manifest = read_manifest(root, generation=config.compozy_generation)
    bundles = load_bundles(root, manifest.bundles, reserved_agent_names=config.reserved_agent_names,
                           manifest_file=manifest.file)
    return manifest, bundles
