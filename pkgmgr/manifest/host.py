"""`min_compozy_version` against the configured host version (SPEC 2)."""

from __future__ import annotations

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.manifest.parsed import Manifest
from pkgmgr.versions import host_satisfies, parse_host_version


def check_host(manifest: Manifest, host_version: str | None) -> None:
    """Raise `PkgmgrError(incompatible_host)` when the host is older than the manifest's
    `min_compozy_version`; no host version configured (None) means not checked. A host
    version that is not a semantic version raises `invalid_config`."""
    host = parse_host_version(host_version)
    if host is None:
        return
    if not host_satisfies(host, manifest.min_compozy_version):
        raise PkgmgrError(
            f"{manifest.name} {manifest.version} needs host version {manifest.min_compozy_version} or newer "
            f"(min_compozy_version); the configured host version is {host_version}",
            code=Code.INCOMPATIBLE_HOST,
            details={"name": manifest.name, "version": manifest.version,
                     "min_compozy_version": manifest.min_compozy_version, "host_version": host_version},
            hint="upgrade the host, or install an older release of the extension",
        )

