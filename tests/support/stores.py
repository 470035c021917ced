"""Where a workspace's store is (SPEC 10), computed here as docs/workspaces.md documents it, not
through pkgmgr: `$PKGMGR_HOME/workspaces/<first 32 hex of sha256(canonical path)>/`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def store_root(workspace: Path, home: Path | None = None) -> Path:
    """The store of `workspace` under `home` (default: $PKGMGR_HOME, which tests/conftest.py sets)."""
    base = Path(home) if home is not None else Path(os.environ["PKGMGR_HOME"])
    ident = hashlib.sha256(os.fsencode(str(Path(workspace).resolve()))).hexdigest()[:32]
    return base / "workspaces" / ident
