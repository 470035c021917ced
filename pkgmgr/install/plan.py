"""The first stage of the pipeline: what will be installed, from where, how trusted, and what
the fetched archive must turn out to be.

`Plan` is a resolved ref (decided before anything is downloaded) carrying its `Expectations`;
`Plan.fetch` makes it a local `Fetched`. Local paths are planned here; names, `github:` and URLs
by `pkgmgr.registry.plan` / `pkgmgr.registry.github_plan`; locks by `pkgmgr.workspace.resolve`.
Every expectation is checked in one place, `pkgmgr.install.verify`.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.progress import Reporter
from pkgmgr.refs import Ref

DIRECT_KINDS = frozenset({"path", "archive", "url", "github"})


@dataclass(frozen=True)
class Expected:
    """What a registry entry promises about the archive (SPEC 5.4 metadata_mismatch)."""

    name: str
    version: str
    permissions: tuple[str, ...]
    network_digest: str
    min_compozy_version: str
    host: str = "compozy"  # the entry's host (SPEC 13): whose rules judge the archive


@dataclass(frozen=True)
class Expectations:
    """What a lock, a registry entry or a workspace declaration requires of the fetched archive;
    `pkgmgr.install.verify` checks each that is set."""

    entry: Expected | None = None  # a registry entry's metadata: metadata_mismatch
    tree_sha256: str | None = None  # a lock's tree checksum: checksum_mismatch
    name: str | None = None  # the name a declaration gave a direct source: invalid_config
    host: str | None = None  # the host a declaration names (`host = "..."`, SPEC 13): whose rules judge it
    version: str | None = None  # the version recorded for a host whose format carries none (a kept install's)

    def check_name(self, source: str, name: str, *, what: str = "the extension") -> None:
        """The archive of `source` holds `name`: the name a declaration gave it, if any. Raises
        `NameMismatch` (invalid_config)."""
        if self.name is not None and name != self.name:
            raise NameMismatch(f"{source} holds {what} {name}, not {self.name}", expected=self.name, actual=name)

    def check_tree(self, label: str, tree_sha256: str) -> None:
        """The tree about to be installed has the lock's tree checksum, if one is recorded.
        Raises checksum_mismatch."""
        if self.tree_sha256 is not None and tree_sha256 != self.tree_sha256:
            raise PkgmgrError(f"{label}: the installed tree would have checksum {tree_sha256}, but the lock "
                              f"records {self.tree_sha256}", code=Code.CHECKSUM_MISMATCH,
                              details={"tree_sha256": tree_sha256}, expected=self.tree_sha256, actual=tree_sha256)

    def combined(self, other: Expectations) -> Expectations:
        """These expectations, with `other`'s filling what these leave unset."""
        return Expectations(entry=self.entry or other.entry, tree_sha256=self.tree_sha256 or other.tree_sha256,
                            name=self.name or other.name, host=self.host or other.host,
                            version=self.version or other.version)


class NameMismatch(PkgmgrError):
    """What was fetched holds another extension than the one declared: `expected` is the declared
    name, `actual` the one found (also `details.name`)."""

    code = Code.INVALID_CONFIG
    expected: str
    actual: str

    def __init__(self, message: str, *, expected: str, actual: str) -> None:
        super().__init__(message, details={"name": actual}, expected=expected, actual=actual)


@dataclass(frozen=True)
class Fetched:
    """A source made local: an archive file (checksum verified when known) or a directory."""

    kind: str  # registry | github | url | archive | path
    locator: str  # registry name, OWNER/REPO, URL or absolute path: what `update` follows
    archive: Path | None = None
    directory: Path | None = None
    sha256: str | None = None
    source_url: str | None = None
    verified: bool = False
    tier: str | None = None
    registry: str | None = None
    label: str = ""  # how the user named it (for messages)
    expects: Expectations = Expectations()
    exact: bool = False  # `directory` is an installed tree (`ext rollback`): staged as it is, every file kept

    @property
    def direct(self) -> bool:
        return self.kind in DIRECT_KINDS or self.tier == "unverified"


@dataclass
class Plan:
    """A resolved ref: enough to decide policy before anything is downloaded."""

    ref: Ref
    kind: str  # registry | github | url | archive | path
    label: str
    verified: bool
    tier: str | None = None
    name: str | None = None
    version: str | None = None
    fetch: Callable[[Reporter], Fetched] = field(default=lambda reporter: None, repr=False)  # type: ignore[assignment]
    extra: dict[str, Any] = field(default_factory=dict)
    expects: Expectations = Expectations()  # joined to what `fetch` returns by the pipeline

    def fetch_expected(self, reporter: Reporter) -> Fetched:
        """`fetch`, with this plan's expectations joined to the fetched source's."""
        fetched = self.fetch(reporter)
        if self.expects == Expectations():
            return fetched
        return dataclasses.replace(fetched, expects=self.expects.combined(fetched.expects))

    @property
    def needs_consent(self) -> bool:
        """Direct sources and unverified registries need --allow-unverified (SPEC 7)."""
        return not self.verified


_OWNER_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")


def plan_path(ref: Ref) -> Plan:
    """A directory or an archive file on disk. Raises not_found, and invalid_archive for anything else
    (a FIFO, a device)."""
    assert ref.path is not None
    path = ref.path.absolute()
    try:
        info = path.stat()
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP):
            raise  # permissions and the like: the CLI reports what could not be accessed
        hint = None
        if _OWNER_REPO.fullmatch(ref.text):  # what `compozy extension install OWNER/REPO` takes
            hint = f"to install from GitHub, write 'github:{ref.text}'"
        raise PkgmgrError(f"{ref.text}: no such file or directory", code=Code.NOT_FOUND, hint=hint,
                          details={"suggestion": f"github:{ref.text}"} if hint else None) from None
    if stat.S_ISDIR(info.st_mode):
        from pkgmgr.archive import MANIFEST_NAMES
        from pkgmgr.archive.discover import nested_manifests
        from pkgmgr.hosts import manifest_patterns, matches

        # said before any consent; any host's manifest file counts (SPEC 13), one in a folder too
        files = [entry.name for entry in os.scandir(path) if entry.is_file()]
        files += nested_manifests(path, manifest_patterns())
        if not any(matches(pattern, file) for pattern in manifest_patterns() for file in files):
            raise PkgmgrError(f"{ref.text}: not an extension directory (no {' or '.join(MANIFEST_NAMES)} in it)",
                              code=Code.INVALID_MANIFEST,
                              hint="an extension's root holds extension.toml (or extension.json); "
                                   "'pkgmgr ext new NAME' creates one")
        fetched = Fetched(kind="path", locator=str(path), directory=path, source_url=str(path), label=ref.text)
        return Plan(ref, "path", str(path), verified=False, fetch=lambda reporter: fetched)
    if stat.S_ISREG(info.st_mode):
        _require_archive(path, ref.text)

        def fetch(reporter: Reporter) -> Fetched:  # sha256 None: taken while extracting (install.verify.prepare)
            return Fetched(kind="archive", locator=str(path), archive=path, source_url=str(path), label=ref.text)

        return Plan(ref, "archive", str(path), verified=False, fetch=fetch)
    raise PkgmgrError(f"{ref.text}: not a directory or an archive file", code=Code.INVALID_ARCHIVE)


def _require_archive(path: Path, text: str) -> None:
    """A file that is neither gzip nor zip is no extension archive: said before any consent is
    asked for it. Raises invalid_archive."""
    from pkgmgr.fsutil import read_regular

    try:
        magic = read_regular(path, limit=4, follow_symlinks=True)[:4]  # a FIFO is refused, never waited on
    except OSError:
        return  # the fetch reports what cannot be read
    if magic[:2] == b"\x1f\x8b" or magic == b"PK\x03\x04":
        return
    from pkgmgr.hosts import script_host

    if script_host(path) is not None:  # a single-file extension of a host (SPEC 13)
        return
    raise PkgmgrError(f"{text}: not an extension archive (an extension is a directory, or a .tar.gz, .tgz or "
                      ".zip of one)", code=Code.INVALID_ARCHIVE)
