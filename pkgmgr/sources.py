"""Turning install refs into plans (what will be installed, from where, how trusted) and
plans into local files. Local paths are handled here; registries, GitHub and URLs by
`pkgmgr.registry`.
"""

from __future__ import annotations

import errno
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pkgmgr.errors import PkgmgrError
from pkgmgr.progress import Reporter
from pkgmgr.refs import Ref
from pkgmgr.store.model import Fetched

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


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
    fetch: Callable[[Reporter], Fetched] = field(default=lambda reporter: None, repr=False)  # type: ignore[assignment,return-value]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def needs_consent(self) -> bool:
        """Direct sources and unverified registries need --allow-unverified (SPEC 7)."""
        return not self.verified


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
        repository = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9_.-]+(@\S+)?", ref.text)
        raise PkgmgrError(f"{ref.text}: no such file or directory", code="not_found",
                          hint=f"did you mean github:{ref.text}?" if repository else None) from None
    if stat.S_ISDIR(info.st_mode):
        from pkgmgr.archive import MANIFEST_NAMES

        if not any((path / name).is_file() for name in MANIFEST_NAMES):  # said before any consent
            raise PkgmgrError(f"{ref.text}: not an extension directory (no {' or '.join(MANIFEST_NAMES)} in it)",
                              code="invalid_manifest",
                              hint="an extension's root holds extension.toml (or extension.json); "
                                   "'pkgmgr ext new NAME' creates one")
        fetched = Fetched(kind="path", locator=str(path), directory=path, source_url=str(path), label=ref.text)
        return Plan(ref, "path", str(path), verified=False, fetch=lambda reporter: fetched)
    if stat.S_ISREG(info.st_mode):
        _require_archive(path, ref.text)

        def fetch(reporter: Reporter) -> Fetched:  # sha256 None: taken while extracting (store.install.prepare)
            return Fetched(kind="archive", locator=str(path), archive=path, source_url=str(path), label=ref.text)

        return Plan(ref, "archive", str(path), verified=False, fetch=fetch)
    raise PkgmgrError(f"{ref.text}: not a directory or an archive file", code="invalid_archive")


def _require_archive(path: Path, text: str) -> None:
    """A file that is neither gzip nor zip is no extension archive: said before any consent is
    asked for it. Raises invalid_archive."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError:
        return  # the fetch reports what cannot be read
    if magic[:2] == b"\x1f\x8b" or magic == b"PK\x03\x04":
        return
    raise PkgmgrError(f"{text}: not an extension archive (an extension is a directory, or a .tar.gz, .tgz or "
                      ".zip of one)", code="invalid_archive")
