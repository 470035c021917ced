"""The shared rules of pkgmgr's formats, written once: names, digests, timestamps, GitHub
coordinates, archive suffixes, and the streamed sha256 of a file. Every module that checks one
of these imports it from here (`re` only: cheap enough for the start-up fast path of `ext list`)."""

from __future__ import annotations

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
    """(sha256 hex, size) of a file, streamed. Raises OSError."""
    import hashlib  # not at import: loading OpenSSL costs start-up that `ext list` need not pay

    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def file_sha256(path: Path) -> str:
    """The sha256 hex of a file, streamed. Raises OSError."""
    return file_digest(path)[0]
