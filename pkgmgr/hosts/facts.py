"""What a release archive of another host says about itself, for a registry entry (SPEC 13):
the name and version its host knows it by, and for Vera the capabilities it asks for (recorded
as the entry's `permissions`, which an install checks against the manifest)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pkgmgr.errors import Code, PkgmgrError

_RELEASE_DIR = re.compile(r"^(?P<name>.+?)-v?(?P<version>\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)$")
NO_HOST_VERSION = "0.0.0"  # `min_compozy_version` of an entry that is not Compozy's: it means nothing


def hosted_facts(root: Path, staging: Path, archive: Path, forced: str | None) -> dict[str, Any] | None:
    """The entry fields of an extracted archive judged by its host; None for Compozy's. An Eva
    archive's version is its top directory's `<name>-<version>` (what `ext pack --release`
    writes), since Eva's format carries none. Raises the host's validation errors and `usage`."""
    from pkgmgr.hosts.detect import detect, for_host, manifests

    host_name = detect(root, forced)
    if host_name == "compozy":
        return None
    host = for_host(host_name)
    release = _RELEASE_DIR.match(root.name) if root != staging else None
    if host_name == "eva":
        _, lone = manifests(root)
        if not (root / "extension.exs").is_file() and lone is not None:
            judged = host.judge(root / lone, layout="script")
        else:
            name = release.group("name") if release else root.name
            judged = host.judge(root, name_hint=name, layout="directory")
        if release is None:
            raise PkgmgrError(f"{archive}: an Eva archive names its version in its top directory "
                              "(<name>-<version>/, as 'pkgmgr ext pack --release VERSION' writes it)", code=Code.USAGE)
        version = release.group("version")
    else:
        judged = host.judge(root)
        version = judged.version
    from pkgmgr.versions import parse_semver, strip_v

    try:
        parse_semver(version)
    except ValueError as exc:
        raise PkgmgrError(f"{judged.name}: version {version!r} is not one a registry can list ({exc})",
                          code=Code.INVALID_MANIFEST) from None
    return {"name": judged.name, "version": strip_v(version), "description": judged.description,
            "min_compozy_version": NO_HOST_VERSION, "network_digest": "",
            "permissions": tuple(sorted(set(judged.capabilities))) if host_name == "vera" else (),
            "warnings": tuple(judged.warnings), "host": host_name}
