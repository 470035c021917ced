"""`ext verify` of a scope's installs: each installed tree against the checksum and the file
listing its row recorded (SPEC 4), and the `tree_modified` error that names what changed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pkgmgr.errors import PkgmgrError
from pkgmgr.store.installed import Installed


def verify_installed(items: Sequence[Installed]) -> tuple[list[dict[str, Any]], PkgmgrError | None]:
    """One result per install (name, version, ok, the added/removed/modified paths, the
    checksums), and `tree_modified` naming every install that differs (None when all are intact).
    Reads every file of every tree; writes nothing."""
    from pkgmgr.archive import tree_checksum_and_listing, tree_report

    results = []
    for item in items:
        directory = item.directory
        current = tree_checksum_and_listing(directory) if directory.is_dir() else None
        results.append({"name": item.name, "version": item.version,
                        **tree_report(item.tree_sha256, item.tree_listing, current)})
    bad = [r for r in results if not r["ok"]]
    if not bad:
        return results, None
    parts = []
    for r in bad:
        changes = [f"{len(r[k])} {k}" for k in ("added", "removed", "modified") if r[k]] or [
            f"tree checksum {r.get('tree_sha256')} where {r.get('recorded_tree_sha256')} was recorded"]
        parts.append(f"{r['name']} {r['version']}: " + ("directory missing" if r.get("missing") else ", ".join(changes)))
    first = next(i for i in items if i.name == bad[0]["name"])
    return results, PkgmgrError("installed files differ from what was installed: " + "; ".join(parts),
                                code="tree_modified", details={"extensions": bad}, hint=reinstall_hint(first))


def reinstall_hint(item: Installed) -> str:
    """How to put back what was installed, from the source it came from."""
    ref = {"path": item.source, "archive": item.source, "url": item.source, "github": f"github:{item.source}"}
    if item.source_kind in ref:
        return f"reinstall it with 'pkgmgr ext install {ref[item.source_kind]} --force --allow-unverified'"
    return f"reinstall it with 'pkgmgr ext install {item.name}@{item.version} --force'"
