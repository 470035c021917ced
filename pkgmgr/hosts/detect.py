"""Which host an extension is for, from its manifest file (SPEC 13).

Each host (in `pkgmgr.hosts.HOSTS` order) whose manifest files are at a level is asked for its
`Claim` there; a `shared` claim (a file name another host also reads, as Compozy's
`extension.json`) yields to another host's `own` claim of the same file, and a `fallback` claim (a
lone script) only stands when nothing else is claimed. A level two hosts still claim is refused
(`invalid_archive`, naming both) unless `--host` picks one. A host's module is imported only when
one of its manifest files is there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.hosts import DEFAULT, HOSTS, get, matches

if TYPE_CHECKING:
    from pkgmgr.hosts.base import FolderHost
    from pkgmgr.hosts.port import Claim, Host, Options, Source


def _files(level: Path) -> frozenset[str]:
    """The names of the files at `level`, and the manifests that are a path below it (a host whose
    manifest lives in a folder of the extension)."""
    from pkgmgr.archive.discover import nested_manifests
    from pkgmgr.hosts import manifest_patterns

    try:
        files = frozenset(e.name for e in os.scandir(level) if not e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    return files | nested_manifests(level, manifest_patterns())


def claims(level: Path, files: frozenset[str] | None = None) -> dict[str, Claim]:
    """{host: its claim} of every host whose manifest files are at `level`, before one yields to
    another."""
    files = _files(level) if files is None else files
    found: dict[str, Claim] = {}
    for name, entry in HOSTS.items():
        if any(matches(pattern, file) for pattern in entry.manifests for file in files):
            claim = get(name).claim(level, files)
            if claim is not None:
                found[name] = claim
    return found


def manifests(level: Path) -> dict[str, str]:
    """{host: its manifest file} of the hosts whose claim on `level` stands."""
    from pkgmgr.hosts.port import FALLBACK, OWN, SHARED

    found = claims(level)
    owned = {claim.file: host for host, claim in found.items() if claim.strength == OWN}
    standing = {host: claim for host, claim in found.items()
                if not (claim.strength == SHARED and owned.get(claim.file, host) != host)}
    if any(claim.strength != FALLBACK for claim in standing.values()):
        standing = {host: claim for host, claim in standing.items() if claim.strength != FALLBACK}
    return {host: claim.file for host, claim in standing.items()}


def detect(level: Path, forced: str | None = None, *, default: str | None = None) -> str:
    """The host of the extension at `level`. `forced` (`--host`) picks one of several, and must
    name a host whose manifest is there; `default` is the host of a level no host claims (None:
    that is `invalid_archive`). Raises `invalid_archive` and `usage`."""
    if forced is not None:
        get(forced)  # usage for a name that is no host
    found = manifests(level)
    if forced is not None:
        files = _files(level)
        exact = [p for p in HOSTS[forced].manifests if not p.startswith("*")]
        if forced in found or forced in claims(level, files) or any(f in files for f in exact):
            return forced
        what = ", ".join(f"{f} ({h})" for h, f in found.items()) or "none"
        raise PkgmgrError(f"no extension manifest of {forced} here (--host {forced}; found: {what})",
                          code=Code.INVALID_ARCHIVE, details={"found": found})
    if len(found) > 1:
        listed = " and ".join(f"{file} ({host})" for host, file in found.items())
        raise PkgmgrError(f"holds the manifests of two hosts: {listed}; pass --host to pick one",
                          code=Code.INVALID_ARCHIVE, details={"hosts": sorted(found)},
                          hint=f"--host {' or --host '.join(found)}")
    if not found:
        if default is not None:
            return default
        raise PkgmgrError("no extension manifest of any host here", code=Code.INVALID_ARCHIVE)
    return next(iter(found))


def _forced_host(fetched: Source, options: Options) -> str | None:
    """The host a fetched ref must be for: its registry entry's, else `--host` (None: any)."""
    forced = fetched.expects.host or options.host
    expected = fetched.expects.entry
    entry_host = expected.host if expected is not None else None
    if expected is not None and entry_host and entry_host != DEFAULT:
        if forced is not None and forced != entry_host:
            raise PkgmgrError(f"{expected.name} is a {entry_host} extension in its registry, not a {forced} one",
                              code=Code.USAGE)
        return entry_host
    return forced


def staged_host(fetched: Source, root: Path | None, options: Options) -> str:
    """The host of a staged tree (`root`), or of the single-file extension `fetched.archive`
    staged as it is (`root` None). Raises `invalid_archive` and `usage` (a forced host the tree is
    not for)."""
    from pkgmgr.hosts import script_host

    forced = _forced_host(fetched, options)
    if root is not None:
        return detect(root, forced)
    assert fetched.archive is not None
    scripted = script_host(fetched.archive)
    assert scripted is not None  # `root` is None only for a single-file extension
    if forced not in (None, scripted):
        raise PkgmgrError(f"{fetched.label or fetched.locator} is {get(scripted).article} script, not a {forced} "
                          "extension", code=Code.INVALID_ARCHIVE)
    return scripted


def for_host(name: str) -> FolderHost:
    """The folder host `name` (one that loads extensions from a folder of its own). Raises
    `usage` for a name that is no such host."""
    from typing import cast

    host = get(name)
    if host.in_scope_store:
        raise PkgmgrError(f"{name} loads no extensions from a folder of its own", code=Code.USAGE)
    return cast("FolderHost", host)


def source_host(fetched: Source, options: Options | None) -> Host:
    """Whose copy rules stage a source directory (`Host.copy_source`): the host its manifest names
    (or its registry entry or `--host`), else the default host (pkgmgr's selection). What the
    directory holds is judged after the copy, as before."""
    assert fetched.directory is not None
    try:
        name = detect(Path(fetched.directory), _forced_host(fetched, options) if options is not None else None,
                      default=DEFAULT)
    except PkgmgrError:
        name = DEFAULT  # two hosts' manifests: staged_host says so once the tree is staged
    return get(name)
