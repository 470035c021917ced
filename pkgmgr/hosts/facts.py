"""What a release archive of a folder host says about itself, for a registry entry (SPEC 13): the
name and version its host knows it by, and the capabilities it asks for where a registry entry
lists them as its `permissions` (which an install checks against the manifest)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.hosts.base import FolderHost

_RELEASE_DIR = re.compile(r"^(?P<name>.+?)-v?(?P<version>\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)$")
NO_HOST_VERSION = "0.0.0"  # `min_compozy_version` of an entry that is not Compozy's: it means nothing


def hosted_facts(host: FolderHost, root: Path, staging: Path, archive: Path) -> dict[str, Any]:
    """The entry fields of an archive extracted at `root` (inside `staging`), judged by `host`. The
    version of an extension whose format carries none is its top directory's `<name>-<version>`
    (what `ext pack --release` writes). Raises the host's validation errors and `usage`."""
    from pkgmgr.versions import parse_semver, strip_v

    release = _RELEASE_DIR.match(root.name) if root != staging else None
    path, layout = host.locate(root)
    if host.versions_itself:
        judged = host.judge(path, layout=layout)
        version = judged.version
    else:
        hint = None if layout == "script" or host.names_itself else (release.group("name") if release else root.name)
        judged = host.judge(path, name_hint=hint, layout=layout)
        if release is None:
            raise PkgmgrError(f"{archive}: {host.article} archive names its version in its top directory "
                              "(<name>-<version>/, as 'pkgmgr ext pack --release VERSION' writes it)", code=Code.USAGE)
        version = release.group("version")
    try:
        parse_semver(version)
    except ValueError as exc:
        raise PkgmgrError(f"{judged.name}: version {version!r} is not one a registry can list ({exc})",
                          code=Code.INVALID_MANIFEST) from None
    return {"name": judged.name, "version": strip_v(version), "description": judged.description,
            "min_compozy_version": NO_HOST_VERSION, "network_digest": "",
            "permissions": tuple(sorted(set(judged.capabilities))) if host.capabilities_are_permissions else (),
            "warnings": tuple(judged.warnings), "host": host.name}
