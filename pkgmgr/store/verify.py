"""`ext verify` of a scope's installs: each installed tree against the checksum and the file
listing its row recorded (SPEC 4), and the `tree_modified` error that names what changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pkgmgr.errors import Code, PkgmgrError
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

    def describe(r: dict[str, Any], changes: list[str]) -> str:
        changes = changes or [f"tree checksum {r.get('tree_sha256')} where {r.get('recorded_tree_sha256')} was recorded"]
        return f"{r['name']} {r['version']}: " + ("directory missing" if r.get("missing") else ", ".join(changes))

    def hint(r: dict[str, Any]) -> str:
        return reinstall_hint(next(i for i in items if i.name == r["name"]))

    return results, tree_modified(results, describe, hint)


def tree_modified(results: Sequence[dict[str, Any]], describe: Callable[[dict[str, Any], list[str]], str],
                  hint: Callable[[dict[str, Any]], str]) -> PkgmgrError | None:
    """`tree_modified` naming each of `results` (`archive.tree_report` verdicts) that is not ok,
    None when all are: `describe` turns one and its counts (`["1 added", "2 modified"]`, empty when
    only the checksum differs) into its part of the message, `hint` the first into the hint. Other
    hosts' installs (`pkgmgr.hosts.verify`) are named the same way."""
    bad = [r for r in results if not r["ok"]]
    if not bad:
        return None
    parts = [describe(r, [f"{len(r[k])} {k}" for k in ("added", "removed", "modified") if r[k]]) for r in bad]
    return PkgmgrError("installed files differ from what was installed: " + "; ".join(parts),
                       code=Code.TREE_MODIFIED, details={"extensions": bad}, hint=hint(bad[0]))


def reinstall_hint(item: Installed) -> str:
    """How to put back what was installed, from the source it came from."""
    ref = {"path": item.source, "archive": item.source, "url": item.source, "github": f"github:{item.source}"}
    if item.source_kind in ref:
        return f"reinstall it with 'pkgmgr ext install {ref[item.source_kind]} --force --allow-unverified'"
    return f"reinstall it with 'pkgmgr ext install {item.name}@{item.version} --force'"
