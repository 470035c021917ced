"""Scope roots, SQLite state, the writer lock, and atomic install/switch/remove."""

from pkgmgr.store.scope import Scope, discover_workspace, global_scope

__all__ = ["Scope", "discover_workspace", "global_scope"]
