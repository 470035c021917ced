"""What a release archive says about itself, for the publishing side of a registry (SPEC 5.5).

`inspect_archive` validates an archive fully — safe extraction into a private temporary
directory, the manifest, the bundles (scope-independent rules) — and returns the facts an
entry records: name, version, min_compozy_version, network_digest, permissions, sha256 and
size. `metadata_differences` compares an entry's promises with those facts (the rule an
install enforces as `metadata_mismatch`, SPEC 5.4).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.patterns import file_digest
from pkgmgr.versions import same_version

if TYPE_CHECKING:
    from pkgmgr.config import Config

_ZIP_MAGIC = b"PK"


@dataclass(frozen=True)
class ArchiveFacts:
    """A valid extension archive, as a registry entry records it."""

    name: str
    version: str
    description: str
    min_compozy_version: str
    network_digest: str
    permissions: tuple[str, ...]
    sha256: str
    size: int
    suffix: str  # ".tar.gz" or ".zip": how the archive is stored under archives/
    warnings: tuple[str, ...] = ()
    host: str = "compozy"  # SPEC 13: the host whose rules judged it




def archive_suffix(path: Path) -> str:
    """`.zip` for a zip archive, `.tar.gz` otherwise (extraction decides what is valid)."""
    from pkgmgr.fsutil import read_regular

    try:
        magic = read_regular(path, limit=2, follow_symlinks=True)[:2]  # a FIFO is refused, never waited on
    except OSError:
        return ".tar.gz"
    return ".zip" if magic == _ZIP_MAGIC else ".tar.gz"


def inspect_archive(path: Path, *, config: "Config", host: str | None = None) -> ArchiveFacts:
    """Validate the archive at `path` and describe it, by the rules of its host (detected from
    its manifest file, or `host`; SPEC 13) under `config` (its limits, Compozy generation and
    reserved agent names, as `ext install` applies them).

    Raises `not_found` (no such file), `invalid_archive`, `unsafe_archive`,
    `archive_too_large` (SPEC 3), and `ValidationFailed` for the manifest (`invalid_manifest`,
    `path_escapes_root`) or the bundles (`invalid_bundle`, `invalid_layout`)."""
    from pkgmgr.archive import extract_archive
    from pkgmgr.hosts import get, manifest_patterns
    from pkgmgr.hosts.detect import detect

    path = Path(path)
    if not path.is_file():
        raise PkgmgrError(f"{path}: no such archive", code=Code.NOT_FOUND, path=str(path))
    sha256, size = file_digest(path)
    with tempfile.TemporaryDirectory(prefix="pkgmgr-publish-") as tmp:
        root = extract_archive(path, Path(tmp), config.limits, manifests=manifest_patterns())
        facts = get(detect(root, host)).entry_facts(root, Path(tmp), path, config=config)
    return ArchiveFacts(sha256=sha256, size=size, suffix=archive_suffix(path), **facts)


def metadata_differences(entry_name: str, version: Any, facts: ArchiveFacts, *, host: str = "compozy") -> list[str]:
    """How an entry's `version` (a `VersionEntry`) understates or misstates the archive: one
    line per differing field (name, version, permissions, network_digest,
    min_compozy_version); empty when they agree."""
    found = []
    if host != facts.host:
        found.append(f"host: the entry is a {host} extension, the archive's manifest is {facts.host}'s")
    if facts.name != entry_name:
        found.append(f"name: the entry is {entry_name!r}, the archive's manifest says {facts.name!r}")
    if not same_version(facts.version, version.version):
        found.append(f"version: the entry says {version.version}, the archive's manifest says {facts.version}")
    if sorted(set(version.permissions)) != list(facts.permissions):
        found.append(f"permissions: the entry says {sorted(set(version.permissions))}, "
                     f"the archive's security.capabilities are {list(facts.permissions)}")
    if version.network_digest != facts.network_digest:
        found.append(f"network_digest: the entry says {version.network_digest!r}, "
                     f"the archive's manifest gives {facts.network_digest!r}")
    if not same_version(version.min_compozy_version, facts.min_compozy_version):
        found.append(f"min_compozy_version: the entry says {version.min_compozy_version}, "
                     f"the archive's manifest says {facts.min_compozy_version}")
    return found
