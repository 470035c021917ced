"""`ext verify` of other hosts' installs (SPEC 13): each tree's checksum recomputed the host's
way (terva's `enabled` left out) against its `host_extensions` row, and the `tree_modified`
error that names what changed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts.records import HostInstalled


def verify_hosted(rows: Sequence[HostInstalled]) -> tuple[list[dict[str, Any]], PkgmgrError | None]:
    """One result per row (name, version, host, path, ok, the added/removed/modified paths, the
    checksums), and `tree_modified` naming every install that differs (None when all are intact)."""
    from pkgmgr.archive import tree_report
    from pkgmgr.hosts.detect import for_host
    from pkgmgr.store.verify import tree_modified

    results = []
    for row in rows:
        place = row.directory
        current = for_host(row.host).checksum(place) if os.path.lexists(place) else None
        results.append({"name": row.name, "version": row.version or None, "host": row.host, "path": str(place),
                        **tree_report(row.tree_sha256, row.tree_listing, current)})

    def describe(r: dict[str, Any], changes: list[str]) -> str:
        return f"{r['name']} ({r['host']}): " + ("missing" if r.get("missing") else ", ".join(changes or ["tree checksum"]))

    return results, tree_modified(results, describe, lambda r: "reinstall it with --force")
