"""The stage and verify steps: a fetched source becomes a tree in a staging directory, and its
host's rules judge it (`pkgmgr.hosts.port.Host.prepare`: every check a tree must pass lives with
its host — for Compozy the manifest and bundles, host version, the registry entry's metadata, the
declared name, the grant ceiling, the lock's tree checksum).

`prepare` is the two steps together; the result, a `Prepared`, is what a destination switches to.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.crash import crashpoint
from pkgmgr.fsutil import remove_tree
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.plan import Fetched

if TYPE_CHECKING:
    from pkgmgr.archive import TreeRecord
    from pkgmgr.config import Config
    from pkgmgr.hosts.port import Prepared


def prepare(fetched: Fetched, staging: Path, *, config: Config, options: InstallOptions) -> Prepared[Any]:
    """Stage `fetched` as an extension tree in `staging`, then have its host judge it completely
    (the host: the registry entry's or a declaration's, else `--host`, else the one whose manifest
    file the tree holds: `pkgmgr.hosts.detect.staged_host`).

    Raises the archive errors (unsafe_archive, archive_too_large, invalid_archive) and what the
    host's `prepare` raises (for Compozy: manifest and bundle validation errors,
    incompatible_host, metadata_mismatch, invalid_config (another name than declared),
    grant_not_allowed and checksum_mismatch (the lock's tree checksum)).
    """
    from pkgmgr.hosts import get
    from pkgmgr.hosts.detect import staged_host

    fetched, root, record = stage(fetched, staging, config=config, options=options)
    host = get(staged_host(fetched, root, options))
    prepared = host.prepare(fetched, root, staging, config=config, options=options, record=record)
    if options.link:  # judged as a copy, switched in as a link to the folder itself (`ext link`)
        source = fetched.directory or fetched.archive
        assert source is not None
        link = staging / "link"
        host.make_link(Path(source).absolute(), link)
        prepared.root, prepared.linked, prepared.durable = link, str(Path(source).absolute()), True
    return prepared


def stage(fetched: Fetched, staging: Path, *, config: Config,
          options: InstallOptions | None = None) -> tuple[Fetched, Path | None, TreeRecord | None]:
    """Extract the archive (or copy the directory) into `staging`; `fetched` (with the sha256 of
    a local archive, taken while it was read), the manifest root and, for an archive, the tree
    checksum recorded while extracting. A single-file extension (`pkgmgr.hosts.script_host`) is
    not extracted: the root is None and its host's `prepare` copies it."""
    from pkgmgr.archive import TreeRecord, extract_archive
    from pkgmgr.hosts import manifest_patterns, script_host

    record = None
    root: Path | None = None
    if fetched.archive is not None and script_host(fetched.archive) is None:
        record = TreeRecord()  # the tree checksum while extracting, rather than reading it back
        # a local archive is hashed while it is extracted: read from disk once
        import hashlib

        digest = hashlib.sha256() if fetched.sha256 is None and fetched.kind == "archive" else None
        root = extract_archive(fetched.archive, staging, config.limits, record=record, digest=digest,
                               manifests=manifest_patterns())
        if digest is not None:
            fetched = replace(fetched, sha256=digest.hexdigest())
    elif fetched.directory is not None and fetched.exact:  # an installed tree: without the host's runtime files
        from pkgmgr.hosts import get
        from pkgmgr.hosts.detect import source_host

        host = get(fetched.expects.host) if fetched.expects.host else source_host(fetched, options)
        root = host.copy_installed(Path(fetched.directory), staging / "tree")
    elif fetched.directory is not None:
        from pkgmgr.hosts.detect import source_host

        # copied as the host's own installer copies it (Host.copy_source)
        host = source_host(fetched, options)
        root = host.copy_source(Path(fetched.directory), staging / "tree")
        if options is not None and options.link:  # a working folder the host loads: what it wrote there is not
            # the extension (`Host.runtime_files`), as for an installed tree
            for name in host.runtime_files:
                if os.path.lexists(root / name):
                    remove_tree(root / name)
    elif fetched.archive is None:  # a bug in the caller
        raise RuntimeError("Fetched has neither an archive nor a directory")
    elif fetched.sha256 is None and fetched.kind == "archive":  # a single-file extension: hashed as it is
        from pkgmgr.net.hashing import file_sha256

        fetched = replace(fetched, sha256=file_sha256(fetched.archive))
    crashpoint("install.after_extract")
    return fetched, root, record
