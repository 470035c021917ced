"""What the command line never prints: the GitHub token (SPEC 6). `os` only, for `ext list`'s
start-up fast path (`pkgmgr.cli.fast_list`) as for everything `pkgmgr.cli.output` prints."""

from __future__ import annotations

import os


def scrub_secrets(text: str) -> str:
    """`text` with the GitHub token masked (SPEC 6: never printed). pkgmgr's own messages never
    carry it; this guards the one place everything is shown from what a bug (an exception quoting
    request headers, a traceback) could put in a message."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        value = os.environ.get(name, "")
        for secret in {value.strip(), *value.split()}:
            if len(secret) >= 8 and secret in text:
                text = text.replace(secret, "***")
    return text
