"""`min_compozy_version` against the configured host version (SPEC 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pkgmgr.errors import PkgmgrError
from pkgmgr.manifest.model import Manifest
from pkgmgr.versions import parse_semver

if TYPE_CHECKING:
    from packaging.version import Version


def check_host(manifest: Manifest, host_version: str | None) -> None:
    """Raise `PkgmgrError(incompatible_host)` when the host is older than the manifest's
    `min_compozy_version`; no host version configured (None) means not checked. A host
    version that is not a semantic version raises `invalid_config`."""
    if host_version is None:
        return
    try:
        host = parse_semver(host_version)
    except ValueError as exc:
        raise PkgmgrError(f"host version: {exc}", code="invalid_config",
                          hint="set host.version in config.toml or PKGMGR_HOST_VERSION to X.Y.Z") from None
    if _precedence(host) < _precedence(parse_semver(manifest.min_compozy_version)):
        raise PkgmgrError(
            f"{manifest.name} {manifest.version} needs host version {manifest.min_compozy_version} or newer "
            f"(min_compozy_version); the configured host version is {host_version}",
            code="incompatible_host",
            details={"name": manifest.name, "version": manifest.version,
                     "min_compozy_version": manifest.min_compozy_version, "host_version": host_version},
            hint="upgrade the host, or install an older release of the extension",
        )


def _precedence(version: Version) -> Version:
    """The version without its build metadata (a PEP 440 local part), which semver precedence
    ignores."""
    from packaging.version import Version

    return Version(version.public) if version.local is not None else version
