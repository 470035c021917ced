"""What the command line never prints: the GitHub token (SPEC 6). `os` only, for `ext list`'s
start-up fast path (`pkgmgr.cli.fast_list`) as for everything `pkgmgr.cli.output` prints."""

from __future__ import annotations

import os


def scrub_secrets(text: str) -> str:
    """`text` with the GitHub token masked (SPEC 6: never printed). pkgmgr's own messages never
    carry it; this guards the one place everything is shown from what a bug (an exception quoting
    request headers, a traceback) could put in a message."""
    secrets: set[str] = set()
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        value = os.environ.get(name, "")
        secrets.update(s for s in (value.strip(), *value.split()) if len(s) >= 8)
    for secret in sorted(secrets, key=lambda s: (-len(s), s)):  # the longest first: one mask per span
        text = text.replace(secret, "***")
    return text
