"""`ext validate` and `ext pack`'s check: an extension directory or archive judged as `ext install`
judges it (manifest, bundles, host version), without installing anything, with the warnings of
what only loading or activation decides (SPEC 11)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.bundles import Bundle
    from pkgmgr.config import Config
    from pkgmgr.manifest import Manifest


@dataclass(frozen=True)
class Validated:
    manifest: Manifest
    bundles: tuple[Bundle, ...]
    warnings: list[str]


def validate_extension(path: Path, config: Config, *, shown: str) -> Validated:
    """Validate the directory or archive at `path` (`shown`: as the user wrote it) as an install
    would: raises `not_found`, the manifest's and bundles' errors, and `incompatible_host`.
    An archive is extracted into a temporary directory, removed afterwards."""
    import tempfile

    from pkgmgr.bundles.extension import read_extension
    from pkgmgr.manifest import check_host
    from pkgmgr.manifest.resources import resource_warnings

    if not os.path.exists(path):  # unlike Path.exists, also False for a name too long
        raise PkgmgrError(f"{shown}: no such file or directory", code=Code.NOT_FOUND)
    if path.is_dir():
        manifest, bundles = read_extension(path, config)
        tree_warnings = resource_warnings(path, manifest)
    else:
        from pkgmgr.archive import extract_archive

        with tempfile.TemporaryDirectory(prefix="pkgmgr-validate-") as tmp:
            root = extract_archive(path, Path(tmp), config.limits)
            manifest, bundles = read_extension(root, config)
            tree_warnings = resource_warnings(root, manifest)
    check_host(manifest, config.host_version)  # as ext install does
    warnings = (list(manifest.warnings) + [warning for bundle in bundles for warning in bundle.warnings] + tree_warnings
                + activation_warnings(bundles, config.reserved_agent_names))
    return Validated(manifest, bundles, warnings)


def activation_warnings(bundles: tuple[Bundle, ...], reserved: tuple[str, ...]) -> list[str]:
    """What only activation decides (SPEC 11): an agent named after a host-reserved one (refused
    then, as Compozy refuses it), a job's or trigger's agent neither packaged nor reserved."""
    folded = {name.lower() for name in reserved}
    found = []
    for bundle in bundles:
        for profile in bundle.profiles:
            where = f"{bundle.name}/{profile.name}"
            packaged = {name.lower() for name in profile.agent_names()}
            found += [f"{where}: agent {agent.name!r} uses a name the host reserves; activation will refuse it "
                      "(agent_conflict)" for agent in profile.agents if agent.reserved]
            for kind, items in (("job", profile.jobs), ("trigger", profile.triggers)):
                found += [f"{where}: {kind} {item.name!r} runs agent {item.agent!r}, which the profile does not "
                          "package: it must be visible where the profile is activated"
                          for item in items if item.agent and item.agent.lower() not in packaged | folded]
    return found
