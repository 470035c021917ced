"""`python -m pkgmgr` runs the command line."""

from pkgmgr.cli import console

console()
