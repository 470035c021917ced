"""Scope roots, SQLite state, the writer lock, and atomic install/switch/remove.

Import the modules themselves (`pkgmgr.store.scope`, ...): this package imports nothing, so that
`pkgmgr.store.checks` costs only itself (the start-up fast path of `ext list`)."""
