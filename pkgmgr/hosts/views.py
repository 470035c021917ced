"""What the commands show of extensions and hosts, as values they render: an install as `ext list`
lists it, a folder host's install (`ext status`), a tree judged by its folder host (`ext
validate`), an extension packed (`ext pack`), the hosts and their folders (`pkgmgr hosts`), and
what `pkgmgr adopt` took under management."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.config import Limits
    from pkgmgr.hosts.base import FolderHost, Judged
    from pkgmgr.hosts.port import Host, Packable
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope


def list_entry(row: Installed) -> dict[str, Any]:
    """An install as `ext list` shows it (SPEC 11's shape, with its host)."""
    return {"name": row.name, "version": row.version or None, "scope": row.scope, "enabled": row.enabled,
            "source": row.source_kind, "verified": row.verified, "path": str(row.directory), "pinned": row.pinned,
            "host": row.host, **({"linked": row.linked} if row.linked is not None else {})}  # a development link


def judge_path(path: Path, forced: str | None, *, limits: Limits) -> Judged | None:
    """A directory, archive or single-file extension judged by its folder host (`forced`, else the
    one its manifest names); None when its host is not a folder host (Compozy's). Raises
    `not_found` when `path` does not exist, `invalid_archive` when it is a single-file extension
    and `forced` names another host, and what the host's judge or the extraction raises."""
    from pkgmgr.hosts import DEFAULT, get, manifest_patterns, script_host
    from pkgmgr.hosts.detect import detect

    if forced is not None and get(forced).in_scope_store:
        return None
    if not os.path.exists(path):
        raise PkgmgrError(f"{path}: no such file or directory", code=Code.NOT_FOUND)
    scripted = script_host(path) if path.is_file() else None
    if scripted is not None:
        host = get(scripted)
        if forced not in (None, scripted):
            raise PkgmgrError(f"{path} is {host.article} script, not a {forced} extension", code=Code.INVALID_ARCHIVE)
        return _folder_host(host).judge(path, layout="script")
    if path.is_dir():
        host = get(detect(path, forced, default=DEFAULT))
        return None if host.in_scope_store else _folder_host(host).judge_level(path, path.name)
    from pkgmgr.archive import extract_archive
    from pkgmgr.hosts.folder import VERSION_SUFFIX

    with tempfile.TemporaryDirectory(prefix="pkgmgr-validate-") as tmp:
        root = extract_archive(path, Path(tmp), limits, manifests=manifest_patterns())
        host = get(detect(root, forced))
        if host.in_scope_store:
            return None
        hint = VERSION_SUFFIX.sub("", root.name if root != Path(tmp) else path.name.split(".")[0])
        return _folder_host(host).judge_level(root, hint)


def _folder_host(host: Host) -> FolderHost:
    """`host`, known to load extensions from a folder of its own (not `in_scope_store`)."""
    from typing import cast

    assert not host.in_scope_store
    return cast("FolderHost", host)


def hosted_status(row: Installed) -> dict[str, Any]:
    """`ext status -o json` of a folder host's install: the fields of a Compozy install's document
    (empty where the host has no such notion), and the host's approval of the folder it is in
    (`trust`), where it keeps one. Reads only."""
    from pkgmgr.hosts import get

    host = _folder_host(get(row.host))
    data: dict[str, Any] = {
        "name": row.name, "version": row.version or None, "host": row.host, "scope": row.scope,
        "enabled": row.enabled, "path": str(row.directory), "install_path": str(row.place), "layout": row.layout,
        "kind": host.kind_of(row), "provenance": row.provenance(), "tree_sha256": row.tree_sha256,
        "network_digest": "", "grants": [], "capabilities": list(row.grants), "missing_env": [],
        "bundles": [], "activations": [], "manifest": row.manifest,
    }
    trust = host.trust_status(row)
    if trust is not None:
        data["trust"] = trust
    return data


@dataclass(frozen=True)
class Packed:
    """An extension packed by `ext pack`: its host, name and version, and the archive written."""

    host: str
    name: str
    version: str
    path: Path
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "host": self.host, "path": str(self.path),
                "sha256": self.sha256, "size": self.size}


def packable(host: FolderHost, root: Path, *, release: str | None, limits: Limits, label: str) -> Packable:
    """What `ext pack` archives of a folder host's extension at `root` (a directory, or a
    single-file extension): the name and version its host knows it by, or `release` for a host
    whose format carries none. Raises `usage` when no version is known, `invalid_manifest` when
    the version is no semver, and what the host's judge raises."""
    from pkgmgr.hosts.port import Packable
    from pkgmgr.versions import parse_semver

    script = root.is_file() and host.is_script(root)
    judged = host.judge(root, layout="script") if script else judge_path(root, host.name, limits=limits)
    assert judged is not None
    version = judged.version or release
    if not version:
        raise PkgmgrError(f"{label}: {host.article} extension carries no version; pass --release VERSION to name the "
                          "archive's version", code=Code.USAGE)
    try:
        parse_semver(version)
    except ValueError as exc:
        raise PkgmgrError(f"{judged.host} extension {judged.name}: version {version!r} cannot name a release "
                          f"({exc})", code=Code.INVALID_MANIFEST) from None
    return Packable(host.name, judged.name, version, root, script)


SCRIPT_MAX_BYTES = 64 * 1024 * 1024  # pkgmgr's bound on a single-file extension it packs (its host's judge bounds it lower)


def _script_bytes(path: Path) -> bytes:
    """The script `ext pack` judged, read again through the bounded primitive: swapped since for a
    FIFO or something larger, it is refused (invalid_archive), never waited on."""
    from pkgmgr.fsutil import read_regular

    try:
        data = read_regular(path, limit=SCRIPT_MAX_BYTES, follow_symlinks=True)
    except OSError as exc:
        raise PkgmgrError(f"{path}: cannot be read ({exc.strerror})", code=Code.INVALID_ARCHIVE,
                          path=str(path)) from None
    if len(data) > SCRIPT_MAX_BYTES:
        raise PkgmgrError(f"{path}: larger than {SCRIPT_MAX_BYTES} bytes (pkgmgr's bound on a script it packs)",
                          code=Code.INVALID_ARCHIVE, path=str(path))
    return data


def write_archive(packable: Packable, output: Path) -> Packed:
    """`ext pack`'s archive of `packable` at `output`: reproducible, under `<name>-<version>/`; a
    single-file extension is packed as the one file of a directory named after it."""
    from pkgmgr.archive import pack_directory

    if packable.script:
        with tempfile.TemporaryDirectory(prefix="pkgmgr-pack-") as tmp:
            folder = Path(tmp) / packable.name
            folder.mkdir()
            (folder / (packable.name + packable.root.suffix)).write_bytes(_script_bytes(packable.root))
            result = pack_directory(folder, packable.name, packable.version, output)
    else:
        result = pack_directory(packable.root, packable.name, packable.version, output)
    return Packed(packable.host, packable.name, packable.version, result.path, result.sha256, result.size)


def pack_hosted(root: Path, forced: str | None, *, release: str | None, output: Path | None, limits: Limits,
                label: str | None = None) -> Packed | None:
    """`ext pack` of a folder host's extension into `output` (default `./<name>-<version>.tar.gz`).
    None when `root` is no directory or single-file extension, or is not a folder host's.
    `label` is how messages name `root` (the path as the user wrote it)."""
    from pkgmgr.hosts import get, script_host

    label = label if label is not None else str(root)
    scripted = script_host(root) if root.is_file() else None
    if scripted is None and not os.path.isdir(root):
        return None
    judged = judge_path(root, forced, limits=limits)
    if judged is None:
        return None
    host = _folder_host(get(judged.host))
    found = packable(host, root, release=release, limits=limits, label=label)
    return write_archive(found, output if output is not None else Path.cwd() / f"{found.name}-{found.version}.tar.gz")


def hosts_overview(global_scope: Scope, workspace_scope: Scope | None, project: Path | None) -> list[dict[str, Any]]:
    """`pkgmgr hosts`: each host, where it loads extensions (global, and for `project`, the current
    workspace whose store is `workspace_scope`), how many extensions pkgmgr manages there and how
    many others are there. Reads only."""
    from pkgmgr.hosts import get, names
    from pkgmgr.store import records

    hosts: list[dict[str, Any]] = []
    for name in names():
        host = get(name)
        homes = host.homes(global_scope.root, workspace_scope.root if workspace_scope is not None else None, project)
        managed = unmanaged = 0
        for kind, scope in (("global", global_scope), ("project", workspace_scope)):
            home = homes.get(kind)
            if home is None or scope is None:
                continue
            managed += len(records.installed(scope, name)) if scope.exists() else 0
            unmanaged += host.unmanaged(scope, home)
        hosts.append({"name": name, "homes": {k: str(v) if v is not None else None for k, v in homes.items()},
                      "managed": managed, "unmanaged": unmanaged})
    return hosts


def adopt_names(scope: Scope, host_name: str, names: list[str], *, force: bool = False,
                lock_timeout: float) -> list[Installed]:
    """`pkgmgr adopt`: the host's `adopt` under the scope's writer lock (waiting at most
    `lock_timeout` seconds). Raises `usage` for an unknown host and what `adopt` raises."""
    from pkgmgr.hosts import get

    host = get(host_name)
    with scope.writer(lock_timeout):
        return host.adopt(scope, names, force=force)


def adopted_entry(row: Installed) -> dict[str, Any]:
    """An adopted extension as `pkgmgr adopt -o json` lists it: its `ext list` entry and tree checksum."""
    return list_entry(row) | {"tree_sha256": row.tree_sha256}
