"""Declarative workspaces (SPEC 10): pkgmgr.toml, pkgmgr.lock, sync and trust."""
