"""The shared rules of pkgmgr's formats, written once: names, digests, timestamps, GitHub
coordinates, archive suffixes, and the streamed sha256 of a file. Every module that checks one
of these imports it from here (`re` only: cheap enough for the start-up fast path of `ext list`)."""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `ext list`'s fast path imports this module
if TYPE_CHECKING:
    from pathlib import Path

# an extension name (SPEC 2): lowercase letter, then letters, digits and '-', 2 to 64 characters
EXTENSION_NAME = re.compile(r"^[a-z][a-z0-9-]{1,63}$")
# an extension id of a host that allows dots (`acme.word`: lower-case, dotted or dashed), which
# pkgmgr.toml may declare with a path or github source (a registry names extensions as above)
DOTTED_ID = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")
# a registry's name in config.toml, pkgmgr.toml and `registry add`
REGISTRY_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")

# a sha256 as pkgmgr writes it (lowercase hex), and as others may write it (either case)
HEX64 = re.compile(r"^[0-9a-f]{64}$")
HEX64_ANY_CASE = re.compile(r"^[0-9a-fA-F]{64}$")

# a UTC timestamp as pkgmgr writes it (`now_utc`): RFC 3339, seconds, `Z`
UTC_MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")

# GitHub's own rules: owners are letters, digits and inner '-'; a repository is never '.' or '..'
GITHUB_OWNER = r"[A-Za-z0-9][A-Za-z0-9-]{0,38}"
GITHUB_REPO = r"(?!\.{1,2}(?:@|$))[A-Za-z0-9_.-]{1,100}"
GITHUB_OWNER_RE = re.compile(GITHUB_OWNER)
GITHUB_REPO_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")

# the archive formats pkgmgr extracts (SPEC 3)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")

CHUNK = 1024 * 1024


def file_digest(path: Path) -> tuple[str, int]:
    """(sha256 hex, size) of the regular file `path` (a final link followed), streamed. Raises
    OSError (`fsutil.NotRegularFile` for a FIFO, a device, a socket or a directory)."""
    import hashlib  # not at import: loading OpenSSL costs start-up that `ext list` need not pay

    from pkgmgr.fsutil import open_regular_fd

    digest = hashlib.sha256()
    size = 0
    fd = open_regular_fd(path, follow_symlinks=True)  # a FIFO or a device is refused, never waited on
    try:
        while chunk := os.read(fd, CHUNK):
            digest.update(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest(), size


def file_sha256(path: Path) -> str:
    """The sha256 hex of a file, streamed. Raises OSError."""
    return file_digest(path)[0]


# what a name read from a folder pkgmgr did not fill may hold that a terminal acts on: C0 and C1
# controls (escape sequences, a newline that forges a line), the bidirectional overrides and
# isolates that reorder what is shown (Trojan Source, CVE-2021-42574), and the lone surrogates of
# bytes that are not UTF-8
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` as a message may show it: unchanged when it holds nothing a terminal acts on, else
    quoted with every such character escaped (`'\\x1b[2J.exs'`), so that a hostile file name can
    neither forge a line, nor move the cursor, nor reorder what is around it."""
    return repr(text) if _UNSHOWABLE.search(text) else text


# the same set, less the tab and the newline a message's own layout uses
_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def terminal_text(text: str) -> str:
    """`text` as pkgmgr writes it to a terminal, a pipe or a log: every character a terminal acts
    on (`printable`'s set, but the tab and the newline of the message's own layout) written as its
    escape (`\\x1b`, `\\u202e`), so that a name from a folder or a document pkgmgr did not
    fill can neither clear the screen, forge a line nor reorder what surrounds it."""
    if not _TERMINAL.search(text):
        return text
    return _TERMINAL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                         text)
