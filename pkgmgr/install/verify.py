"""The stage and verify steps: a fetched source becomes a tree in a staging directory, and every
check it must pass lives here — manifest and bundles, host version, the registry entry's
metadata, the declared name, the grant ceiling, the lock's tree checksum.

`prepare` is the two steps together; the result, `Verified`, is what a destination switches to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.plan import Expected, Fetched

if TYPE_CHECKING:
    from pkgmgr.archive import TreeRecord
    from pkgmgr.bundles.bundle import Bundle
    from pkgmgr.config import Config
    from pkgmgr.hosts.install import HostPrepared
    from pkgmgr.manifest.parsed import Manifest

READ_ONLY_GRANTS = frozenset(
    {"logs.read", "memory.read", "model.read", "observe.read", "session.read", "skills.read", "tool.read"}
)


@dataclass
class Verified:
    """An extension extracted and verified in staging, ready to be switched to."""

    fetched: Fetched
    root: Path  # the manifest root inside the staging directory
    staging: Path
    manifest: Manifest
    bundles: tuple[Bundle, ...]
    tree_sha256: str
    listing: dict[str, str]
    grants: tuple[str, ...]
    max_scope: str | None
    durable: bool = False  # its files are on disk already (`make_durable`): the switch need not flush

    @property
    def name(self) -> str:
        return str(self.manifest.name)

    @property
    def version(self) -> str:
        return str(self.manifest.version)

    def summary(self) -> dict[str, Any]:
        """What the operator should see before it is installed (SPEC 7)."""
        sub = self.manifest.subprocess
        command = None
        if sub is not None and sub.command:
            command = " ".join([sub.command, *sub.args])
        network = self.manifest.network
        return {
            "name": self.name,
            "version": self.version,
            "source": self.fetched.kind,
            "verified": self.fetched.verified,
            "kind": self.manifest.kind,
            "permissions": list(self.grants),
            "subprocess": command,
            "network_requirement": network,
            "network_digest": self.manifest.network_digest,
            "max_scope": self.max_scope,
        }


def prepare(fetched: Fetched, staging: Path, *, config: Config, options: InstallOptions) -> Verified | HostPrepared:
    """Stage `fetched` as an extension tree in `staging`, then verify it completely.

    Raises the archive errors (unsafe_archive, archive_too_large, invalid_archive), manifest
    and bundle validation errors, incompatible_host, metadata_mismatch, invalid_config (another
    name than declared), grant_not_allowed and checksum_mismatch (the lock's tree checksum).

    Another host's tree (SPEC 13: terva, Eva, Vera) is judged by its host's rules instead and
    comes back as a `pkgmgr.hosts.install.HostPrepared`, which only that host's destination
    (`pkgmgr.hosts.destination`) switches to.
    """
    from pkgmgr.hosts.detect import staged_host

    fetched, root, record = stage(fetched, staging, config=config, options=options)
    host = staged_host(fetched, root, options)
    if host != "compozy":
        from pkgmgr.hosts.install import prepare_hosted

        return prepare_hosted(fetched, root, staging, host)
    assert root is not None
    return verify(fetched, root, staging, record, config=config, options=options)


def stage(fetched: Fetched, staging: Path, *, config: Config,
          options: InstallOptions | None = None) -> tuple[Fetched, Path | None, TreeRecord | None]:
    """Extract the archive (or copy the directory) into `staging`; `fetched` (with the sha256 of
    a local archive, taken while it was read), the manifest root and, for an archive, the tree
    checksum recorded while extracting. An Eva script (a lone `.exs` file, SPEC 13) is not
    extracted: the root is None and `prepare_hosted` copies it."""
    from pkgmgr.archive import TreeRecord, extract_archive
    from pkgmgr.hosts.detect import is_script

    record = None
    root: Path | None = None
    if fetched.archive is not None and not is_script(fetched.archive):
        record = TreeRecord()  # the tree checksum while extracting, rather than reading it back
        # a local archive is hashed while it is extracted: read from disk once
        import hashlib

        digest = hashlib.sha256() if fetched.sha256 is None and fetched.kind == "archive" else None
        root = extract_archive(fetched.archive, staging, config.limits, record=record, digest=digest)
        if digest is not None:
            fetched = replace(fetched, sha256=digest.hexdigest())
    elif fetched.directory is not None:
        from pkgmgr.hosts.detect import source_host

        # copied as the host's own installer copies it (Host.copy_source)
        root = source_host(fetched, options).copy_source(Path(fetched.directory), staging / "tree")
    elif fetched.archive is None:  # a bug in the caller
        raise RuntimeError("Fetched has neither an archive nor a directory")
    elif fetched.sha256 is None and fetched.kind == "archive":  # an Eva script: hashed as it is
        from pkgmgr.net.hashing import file_sha256

        fetched = replace(fetched, sha256=file_sha256(fetched.archive))
    crashpoint("install.after_extract")
    return fetched, root, record


def verify(fetched: Fetched, root: Path, staging: Path, record: TreeRecord | None, *, config: Config,
           options: InstallOptions) -> Verified:
    """Every check a staged tree must pass before it may be switched to (see `prepare`)."""
    from pkgmgr.archive import tree_checksum_and_listing
    from pkgmgr.bundles.extension import read_extension
    from pkgmgr.manifest import check_host

    expects = fetched.expects
    manifest, bundles = read_extension(root, config)
    check_host(manifest, config.host_version)
    if expects.entry is not None:
        check_expected(expects.entry, manifest)
    expects.check_name(fetched.label or fetched.locator, manifest.name)
    grants = check_grants(manifest, fetched, options)
    max_scope = manifest.publish_max_scope
    if max_scope is not None and fetched.tier != "official":
        max_scope = "workspace"
    recorded = record.result(staging, root) if record is not None else None
    tree_sha256, listing = recorded if recorded is not None else tree_checksum_and_listing(root)
    expects.check_tree(f"{manifest.name} {manifest.version}", tree_sha256)
    return Verified(fetched, root, staging, manifest, bundles, tree_sha256, listing, grants, max_scope)


def check_expected(expected: Expected, manifest: Manifest) -> None:
    """The registry entry may not understate what the archive's manifest declares."""
    from pkgmgr.versions import same_version

    differences = []
    if manifest.name != expected.name:
        differences.append(f"name: entry says {expected.name!r}, archive says {manifest.name!r}")
    if not same_version(manifest.version, expected.version):
        differences.append(f"version: entry says {expected.version}, archive says {manifest.version}")
    if sorted(set(manifest.grants)) != sorted(set(expected.permissions)):
        differences.append(
            f"permissions: entry says {sorted(set(expected.permissions))}, archive says {sorted(set(manifest.grants))}"
        )
    if manifest.network_digest != expected.network_digest:
        differences.append(
            f"network_digest: entry says {expected.network_digest!r}, archive says {manifest.network_digest!r}"
        )
    if not same_version(manifest.min_compozy_version, expected.min_compozy_version):
        differences.append(
            f"min_compozy_version: entry says {expected.min_compozy_version}, "
            f"archive says {manifest.min_compozy_version}"
        )
    if differences:
        raise PkgmgrError(
            f"{expected.name} {expected.version}: the registry entry does not match the archive's manifest: "
            + "; ".join(differences),
            code=Code.METADATA_MISMATCH,
            details={"differences": differences},
        )


def check_grants(manifest: Manifest, fetched: Fetched, options: InstallOptions) -> tuple[str, ...]:
    """The read-only grant ceiling of SPEC 7; returns the effective grants."""
    grants = tuple(manifest.grants)
    beyond = sorted(g for g in set(grants) if g not in READ_ONLY_GRANTS)
    if beyond and fetched.tier != "official" and not options.allow_grants:
        raise PkgmgrError(
            f"{manifest.name} {manifest.version} asks for grants beyond the read-only set: {', '.join(beyond)} "
            "(pkgmgr's rule: an unreviewed source gets read-only grants unless you allow more)",
            code=Code.GRANT_NOT_ALLOWED,
            details={"grants": beyond},
            hint="review them and pass --allow-grants to accept",
        )
    return grants
