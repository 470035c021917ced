"""`python -m pkgmgr` runs the command line."""

from pkgmgr.cli import main

raise SystemExit(main())
