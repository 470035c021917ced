"""What the CLI shows of the other hosts' extensions, as values it renders: an install
(`ext status`), a tree judged by its host (`ext validate`), a host extension packed (`ext pack`),
the hosts and their folders (`pkgmgr hosts`), and what `pkgmgr adopt` took under management."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.hosts import AGENT_HOSTS
from pkgmgr.hosts.base import Judged

if TYPE_CHECKING:
    from pkgmgr.config import Limits
    from pkgmgr.hosts.records import HostInstalled
    from pkgmgr.store.scope import Scope


def judge_path(path: Path, forced: str | None, *, limits: Limits) -> Judged | None:
    """A directory, archive or Eva script judged by its host (`forced`, else the one its
    manifest names); None when it is Compozy's. Raises `not_found` when `path` does not exist,
    `invalid_archive` when it is an Eva script and `forced` names another host, and what the
    host's judge or the extraction raises."""
    from pkgmgr.hosts.detect import detect, for_host, is_script, manifests
    from pkgmgr.hosts.install import _VERSION_SUFFIX, judge_level

    if forced == "compozy":
        return None
    if not os.path.exists(path):
        raise PkgmgrError(f"{path}: no such file or directory", code=Code.NOT_FOUND)
    if path.is_file() and is_script(path):
        if forced not in (None, "eva"):
            raise PkgmgrError(f"{path} is an Eva script, not a {forced} extension", code=Code.INVALID_ARCHIVE)
        return for_host("eva").judge(path, layout="script")
    if path.is_dir():
        found, _lone = manifests(path)
        if forced is None and (not found or list(found) == ["compozy"]):
            return None
        return judge_level(for_host(detect(path, forced)), path, path.name)
    from pkgmgr.archive import extract_archive

    with tempfile.TemporaryDirectory(prefix="pkgmgr-validate-") as tmp:
        root = extract_archive(path, Path(tmp), limits)
        host = detect(root, forced)
        if host == "compozy":
            return None
        hint = _VERSION_SUFFIX.sub("", root.name if root != Path(tmp) else path.name.split(".")[0])
        return judge_level(for_host(host), root, hint)


def hosted_status(row: HostInstalled) -> dict[str, Any]:
    """`ext status -o json` of another host's install: the fields of a Compozy install's document
    (empty where the host has no such notion), and for an Eva project folder its approval (`trust`:
    the approved hash and the content hash now). Reads only."""
    data: dict[str, Any] = {
        "name": row.name, "version": row.version or None, "host": row.host, "scope": row.scope,
        "enabled": row.enabled, "path": str(row.directory), "install_path": str(row.path), "layout": row.layout,
        "kind": row.manifest.get("kind") or _kind(row), "provenance": row.provenance(), "tree_sha256": row.tree_sha256,
        "network_digest": "", "grants": [], "capabilities": list(row.capabilities), "missing_env": [],
        "bundles": [], "activations": [], "manifest": row.manifest,
    }
    if row.host == "eva" and row.scope == "workspace":
        from pkgmgr.hosts import eva

        folder = row.path.parent
        data["trust"] = {"folder": str(folder), "approved_hash": eva.approved_hash(folder),
                         "content_hash": eva.content_hash(folder)}
    return data


def _kind(row: HostInstalled) -> str:
    if row.host == "terva":
        return "theme" if not row.manifest.get("exec") else "subprocess"
    if row.host == "eva":
        return row.layout
    return "extension"


@dataclass(frozen=True)
class Packed:
    """A host extension packed by `ext pack`: what its host judged, and the archive written."""

    judged: Judged
    version: str
    path: Path
    sha256: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.judged.name, "version": self.version, "host": self.judged.host, "path": str(self.path),
                "sha256": self.sha256, "size": self.size}


def pack_hosted(root: Path, forced: str | None, *, release: str | None, output: Path | None, limits: Limits,
                label: str | None = None) -> Packed | None:
    """`ext pack` of another host's extension: validated by its host, packed under
    `<name>-<version>/` into `output` (default `./<name>-<version>.tar.gz`); an Eva extension,
    which carries no version, takes `release`. None when `root` is no directory or Eva script,
    or is Compozy's. Raises `usage` when no version is known, `invalid_manifest` when the
    version is no semver; `label` is how messages name `root` (the path as the user wrote it)."""
    from pkgmgr.archive import pack_directory
    from pkgmgr.hosts.detect import is_script
    from pkgmgr.versions import parse_semver

    label = label if label is not None else str(root)
    script = root.is_file() and is_script(root)
    if not script and not os.path.isdir(root):
        return None
    judged = judge_path(root, forced, limits=limits)
    if judged is None:
        return None
    version = judged.version or release
    if not version:
        raise PkgmgrError(f"{label}: an Eva extension carries no version; pass --release VERSION to name the "
                          "archive's version", code=Code.USAGE)
    try:
        parse_semver(version)
    except ValueError as exc:
        raise PkgmgrError(f"{judged.host} extension {judged.name}: version {version!r} cannot name a release "
                          f"({exc})", code=Code.INVALID_MANIFEST) from None
    output = output if output is not None else Path.cwd() / f"{judged.name}-{version}.tar.gz"
    if script:
        with tempfile.TemporaryDirectory(prefix="pkgmgr-pack-") as tmp:
            folder = Path(tmp) / judged.name
            folder.mkdir()
            (folder / f"{judged.name}.exs").write_bytes(root.read_bytes())
            result = pack_directory(folder, judged.name, version, output)
    else:
        result = pack_directory(root, judged.name, version, output)
    return Packed(judged, version, result.path, result.sha256, result.size)


def hosts_overview(global_scope: Scope, workspace_scope: Scope | None, project: Path | None) -> list[dict[str, Any]]:
    """`pkgmgr hosts`: each host, where it loads extensions (global, and the folder of
    `project`, the current workspace), how many extensions pkgmgr manages there and how many
    others are there. Compozy's homes are pkgmgr's own stores. Reads only."""
    from pkgmgr.hosts import records
    from pkgmgr.hosts.detect import for_host
    from pkgmgr.store.switch import list_installed

    compozy = len(list_installed(global_scope))
    if workspace_scope is not None and workspace_scope.exists():
        compozy += len(list_installed(workspace_scope))
    hosts: list[dict[str, Any]] = [{
        "name": "compozy", "homes": {"global": str(global_scope.root),
                                     "project": str(workspace_scope.root) if workspace_scope is not None else None},
        "managed": compozy, "unmanaged": 0}]
    for name in AGENT_HOSTS:
        host = for_host(name)
        folders: dict[str, Path | None] = {"global": host.folder("global", None)}
        root = host.project_root(project) if project is not None else None
        folders["project"] = root / "extensions" if root is not None else None
        managed = unmanaged = 0
        for kind, scope in (("global", global_scope), ("project", workspace_scope)):
            folder = folders[kind]
            if folder is None or scope is None:
                continue
            rows = records.list_rows(scope, name) if scope.exists() else []
            paths = {r.path for r in rows} | {r.directory for r in rows}
            managed += len([r for r in rows if not records.is_placeholder(r)])
            unmanaged += len([f for f in host.scan(folder) if f.path not in paths])
        hosts.append({"name": name, "homes": {k: str(v) if v is not None else None for k, v in folders.items()},
                      "managed": managed, "unmanaged": unmanaged})
    return hosts


def adopt_names(scope: Scope, host_name: str, names: list[str], *, force: bool = False,
                lock_timeout: float) -> list[HostInstalled]:
    """`pkgmgr adopt`: `hosts.install.adopt` under the scope's writer lock (waiting at most
    `lock_timeout` seconds). Raises `usage` for an unknown host and what `adopt` raises."""
    from pkgmgr.hosts import install
    from pkgmgr.hosts.detect import for_host

    host = for_host(host_name)
    with scope.writer(lock_timeout):
        return install.adopt(scope, host, names, force=force)


def adopted_entry(row: HostInstalled) -> dict[str, Any]:
    """An adopted extension as `pkgmgr adopt -o json` lists it: its `ext list` entry and tree checksum."""
    from pkgmgr.hosts import records

    return records.list_entry(row) | {"tree_sha256": row.tree_sha256}
