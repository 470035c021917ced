"""pkgmgr: a declarative package manager for agent-host extensions and their bundles."""

__version__ = "0.1.0"
