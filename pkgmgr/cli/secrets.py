"""What the command line never prints: the GitHub token (SPEC 6) and the secrets a URL can carry
(user-info, a signed query: `pkgmgr.redact`). `os` and `re` only, for `ext list`'s start-up fast
path (`pkgmgr.cli.fast_list`) as for everything `pkgmgr.cli.output` prints."""

from __future__ import annotations

import os

from pkgmgr.redact import redact_urls

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: on the start-up path, typing is not imported
if TYPE_CHECKING:
    from typing import Any


def scrub_secrets(text: str) -> str:
    """`text` with the GitHub token masked and every URL redacted (SPEC 6, 11: never printed).
    pkgmgr's own messages show URLs redacted already; this guards the one place everything is
    shown from what a message quoting its input, or a bug (an exception quoting request headers,
    a traceback), could put there."""
    secrets: set[str] = set()
    for name in ("GITHUB_TOKEN", "GH_TOKEN"):
        value = os.environ.get(name, "")
        secrets.update(s for s in (value.strip(), *value.split()) if len(s) >= 8)
    for secret in sorted(secrets, key=lambda s: (-len(s), s)):  # the longest first: one mask per span
        text = text.replace(secret, "***")
    return redact_urls(text)


class ScrubbedStream:
    """A text stream whose every `write` goes through `scrub_secrets`: the command line's
    standard output and error while a command runs (`pkgmgr.cli.main`), so a table, a warning or
    a progress line is held to the same rule as a message or a JSON document."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub_secrets(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
