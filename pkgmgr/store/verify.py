"""`ext verify` of installs: each installed tree against the checksum and the file listing its row
recorded (SPEC 4), and the `tree_modified` error that names what changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.store.installed import Installed

Checksum = Callable[[Installed], "tuple[str, dict[str, str]] | None"]


def verify_installed(items: Sequence[Installed], *, checksum: Checksum | None = None,
                     fields: Callable[[Installed], dict[str, Any]] | None = None,
                     label: Callable[[Installed], str] | None = None) -> tuple[list[dict[str, Any]], PkgmgrError | None]:
    """One result per install (name, version, the `fields` of it, ok, the added/removed/modified
    paths, the checksums), and `tree_modified` naming every install that differs (`label` names it;
    None when all are intact). `checksum` is an install's tree checksum and listing as its host keeps them, None
    when it is gone (default: the scope store's own trees). Reads every file of every tree; writes
    nothing."""
    from pkgmgr.archive import tree_checksum_and_listing, tree_report

    results = []
    for item in items:
        directory = item.directory
        if checksum is not None:
            current = checksum(item)
        else:
            current = tree_checksum_and_listing(directory) if directory.is_dir() else None
        results.append({"name": item.name, "version": item.version or None, **(fields(item) if fields else {}),
                        **tree_report(item.tree_sha256, item.tree_listing, current)})

    def describe(index: int, r: dict[str, Any], changes: list[str]) -> str:
        changes = changes or [f"tree checksum {r.get('tree_sha256')} where {r.get('recorded_tree_sha256')} was recorded"]
        named = label(items[index]) if label is not None else f"{r['name']} {r['version']}"
        return f"{named}: " + ("directory missing" if r.get("missing") else ", ".join(changes))

    def hint(index: int) -> str:
        return reinstall_hint(items[index])

    return results, tree_modified(results, describe, hint)


def tree_modified(results: Sequence[dict[str, Any]], describe: Callable[[int, dict[str, Any], list[str]], str],
                  hint: Callable[[int], str]) -> PkgmgrError | None:
    """`tree_modified` naming each of `results` (`archive.tree_report` verdicts) that is not ok,
    None when all are: `describe` turns one (by its index) and its counts (`["1 added", "2
    modified"]`, empty when only the checksum differs) into its part of the message, `hint` the
    first into the hint."""
    bad = [index for index, r in enumerate(results) if not r["ok"]]
    if not bad:
        return None
    parts = [describe(i, results[i], [f"{len(results[i][k])} {k}" for k in ("added", "removed", "modified")
                                      if results[i][k]]) for i in bad]
    return PkgmgrError("installed files differ from what was installed: " + "; ".join(parts),
                       code=Code.TREE_MODIFIED, details={"extensions": [results[i] for i in bad]}, hint=hint(bad[0]))


def reinstall_hint(item: Installed) -> str:
    """How to put back what was installed, from the source it came from."""
    ref = {"path": item.source, "archive": item.source, "url": item.source, "github": f"github:{item.source}"}
    if item.source_kind in ref:
        return f"reinstall it with 'pkgmgr ext install {ref[item.source_kind]} --force --allow-unverified'"
    named = f"{item.name}@{item.version}" if item.version else item.name
    return f"reinstall it with 'pkgmgr ext install {named} --force'"
