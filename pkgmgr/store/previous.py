"""The install an install replaced, kept for `ext rollback` (SPEC 11), and development links.

A switch to another version keeps the install it replaces — its row as the new row's `previous`,
its tree where the destination keeps it (the scope store's stays at `extensions/<name>/<version>`,
a folder host's moves beside the folder the host scans) — and drops the one kept before: one
previous install per extension, whatever happens. A development link (`ext link`) keeps the
install it replaces the same way, so that `ext unlink` restores it; a link itself is never kept.
An install made from the kept tree (a rollback, an unlink) no longer keeps that tree as well.

The rules are here, written once for every destination (`store.switch` for the scope store,
`hosts.folder` for a folder host); each destination moves and deletes the trees itself, under its
own crash protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pkgmgr.store.installed import Installed


def keeps(current: Installed | None, version: str, linked: str | None, tree_sha256: str = "") -> bool:
    """Whether switching from `current` to an install of `version` (a link to `linked`, when it
    is one; its tree `tree_sha256`) keeps `current` for a rollback: another version, other
    content for a host whose extensions carry no version, or a link over an install;
    never a link, and never the same version (a reinstall replaces it)."""
    if current is None or current.linked is not None:
        return False
    if linked is not None:
        return True
    if not version and not current.version:
        return bool(tree_sha256) and tree_sha256 != current.tree_sha256
    from pkgmgr.versions import same_version

    try:
        return not same_version(current.version, version)
    except ValueError:
        return current.version != version


def carried(current: Installed | None, version: str, tree_sha256: str, linked: str | None = None,
            ) -> dict[str, Any] | None:
    """The kept install a switch from `current` that does not keep `current` carries over: the one
    `current` kept, unless the new install is that very install (a rollback or an unlink restoring
    it: its tree is not kept twice; a link is never that install)."""
    if current is None or current.previous is None:
        return None
    kept = current.previous
    if linked is None and kept.get("tree_sha256") == tree_sha256 and kept.get("version") == version:
        return None
    return kept


def replaced_trees(current: Installed | None, new_previous: dict[str, Any] | None) -> list[Installed]:
    """The kept install of `current` that the switch stops keeping (its tree is to be deleted once
    the switch is committed)."""
    if current is None:
        return []
    old = current.kept()
    if old is None:
        return []
    if new_previous is not None and new_previous == current.previous:  # carried over: still kept
        return []
    return [old]
