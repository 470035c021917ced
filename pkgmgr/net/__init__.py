"""Network access. `pkgmgr.net.http` is the only module that imports requests."""
