"""A workspace as one command sees it: its declaration (pkgmgr.toml), its lock, its store and
its trust state, each read once."""

from __future__ import annotations

import os
from pathlib import Path

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import foreign_owner
from pkgmgr.store.scope import Scope
from pkgmgr.workspace import trust
from pkgmgr.workspace.declaration import MANIFEST, WorkspaceManifest, read_workspace_manifest
from pkgmgr.workspace.lockfile import read_lock
from pkgmgr.workspace.store import workspace_scope


class Workspace:
    """A workspace's declaration, lock, store and trust state, read once. The root is resolved,
    so that approvals and activation ids do not depend on how the path was spelt."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root.resolve()
        self.home = home
        _refuse_foreign(self.root)
        self.manifest: WorkspaceManifest = read_workspace_manifest(self.root)
        self.lock, self.lock_raw = read_lock(self.root)
        self.scope: Scope = workspace_scope(self.root, home)
        self._state: trust.TrustState | None = None
        self._trusted: bool | None = None

    def path_extensions(self) -> list[tuple[str, str]]:
        return [(d.name, d.path or "") for d in self.manifest.extensions if d.kind == "path"]

    def trust_state(self) -> trust.TrustState:
        """The digest of the files as they are now (the path trees are hashed once per command)."""
        if self._state is None:
            self._state = trust.compute(self.manifest.raw, self.lock_raw, self.root, self.path_extensions(),
                                        registries=self.manifest.registries)
        return self._state

    def digest_with_lock(self, lock_raw: bytes) -> str:
        """The digest once `lock_raw` replaces the lock (path and registry trees as already hashed)."""
        state = self.trust_state()
        return trust.compute(self.manifest.raw, lock_raw, self.root, [], trees=state.paths,
                             registry_dirs=state.registries).digest

    def path_tree(self, name: str) -> str:
        """The tree checksum of a path extension, as the trust digest covers it."""
        return next(tree for extension, _, tree in self.trust_state().paths if extension == name)

    @property
    def trusted(self) -> bool:
        if self._trusted is None:
            self._trusted = self.trust_state().digest in trust.approved_digests(self.home, self.root)
        return self._trusted

    def require_trust(self) -> None:
        """Raises trust_required for an unapproved declaration, saying what changed since the
        last approval (by the files' change times) or that there was none."""
        if not self.trusted:
            last = trust.last_approval(self.home, self.root)
            changed: list[str] = []
            if last is None:
                why = "has not been approved yet"
            else:
                parts = [MANIFEST, "pkgmgr.lock", *(rel for _, rel, _ in self.trust_state().paths),
                         *(where for _, where, tree in self.trust_state().registries
                           if tree not in ("outside", "missing"))]
                changed = trust.changed_since(self.root, last[0], parts)
                what = f": {', '.join(changed)} changed after it" if changed else ""
                why = f"changed since it was approved (by {last[1]} at {last[0]}){what}"
            raise PkgmgrError(
                f"{self.root / MANIFEST} (with its lock, path extensions and registry directories) {why}",
                code=Code.TRUST_REQUIRED,
                details={"digest": self.trust_state().digest, **({"changed": changed} if changed else {})},
                hint=f"review it with 'pkgmgr trust --show --workspace {self.root}', then approve it with "
                     "'pkgmgr trust'",
            )


def _refuse_foreign(root: Path) -> None:
    """A workspace whose root or pkgmgr.toml (the link or its target) another user owns is
    theirs to declare, not this user's to run (SPEC 10): `trust_required`, naming the owner."""
    for path, follow in ((root, True), (root / MANIFEST, False), (root / MANIFEST, True)):
        try:
            owner = foreign_owner(os.stat(path, follow_symlinks=follow))
        except OSError:
            continue  # a missing pkgmgr.toml is reported when it is read
        if owner is not None:
            raise PkgmgrError(f"{path} is owned by {owner}, not by you: pkgmgr does not trust or sync a workspace "
                              "another user controls", code=Code.TRUST_REQUIRED, path=str(path),
                              hint="work in a copy of your own (e.g. a clone owned by you)")
