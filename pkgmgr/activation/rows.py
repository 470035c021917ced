"""The activation rows of one extension, as a scope's state.db holds them (checked as every row
read through `pkgmgr.store.db.rows`). Apart from the rest of `pkgmgr.activation` so that an
install or a removal can ask whether an extension has any before importing the projection and
its checks, which only an extension with activations needs."""

from __future__ import annotations

import sqlite3

from pkgmgr.store.db import rows


def extension_rows(conn: sqlite3.Connection, extension: str) -> list[sqlite3.Row]:
    """The activations of `extension`, by id."""
    return rows(conn, "activations", "SELECT * FROM activations WHERE extension = ? ORDER BY id", (extension,))
