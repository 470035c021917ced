"""The install pipeline: plan -> fetch -> verify -> stage -> switch (docs/architecture.md).

`plan` turns refs into `Plan`s with explicit `Expectations`, `verify` holds every check a
fetched archive must pass, `pipeline.install` drives a batch, and a `Destination`
(`destination.py`) owns where a verified tree goes and how it is recorded. Nothing is imported
here: `pkgmgr --version` and `ext list` must stay light.
"""
