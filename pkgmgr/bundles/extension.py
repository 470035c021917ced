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
    from dataclasses import replace

    from pkgmgr.manifest import read_manifest

    manifest = read_manifest(root, generation=config.compozy_generation)
    if not manifest.bundles:
        return manifest, ()  # without the bundle codecs, which most trees never need
    from pkgmgr.bundles.loader import load_bundles
    from pkgmgr.errors import ValidationFailed
    from pkgmgr.manifest.generations import has_bundles

    # the bundles are judged by each generation that loaded the manifest (their agents' hook
    # taxonomies differ); the extension loads in those that load its bundles too
    loaded: dict[str, tuple["Bundle", ...]] = {}
    failures: list[ValidationFailed] = []
    for generation in (name for name in manifest.generations if has_bundles(name)):
        try:
            loaded[generation] = load_bundles(root, manifest.bundles, reserved_agent_names=config.reserved_agent_names,
                                              manifest_file=manifest.file, generation=generation,
                                              provides=manifest.capabilities)
        except ValidationFailed as exc:
            failures.append(exc)
    if not loaded:
        raise min(failures, key=lambda exc: len(exc.problems))
    generations = tuple(name for name in manifest.generations if name in loaded or not has_bundles(name))
    return replace(manifest, generations=generations), next(iter(loaded.values()))
