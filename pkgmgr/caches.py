"""What pkgmgr caches under `<home>/cache/`: the download cache (archives by sha256) and the
registry files it revalidates with conditional requests. `cache_listing` says what is there;
`clean_caches` removes all of it, or what was not used for some days. Everything there can be
fetched again; nothing else is touched."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pkgmgr.config import RegistryConfig
from pkgmgr.errors import PkgmgrError

DAY = 24 * 3600


def _last_used(path: Path) -> float:
    info = path.stat()
    return max(info.st_atime, info.st_mtime)


def _downloads(home: Path) -> list[Path]:
    root = home / "cache" / "downloads" / "sha256"
    return sorted(p for p in root.glob("*/*") if p.is_file()) if root.is_dir() else []


def _registry_dirs(home: Path, registries: Sequence[RegistryConfig]) -> list[tuple[Path, str | None]]:
    """Each cached registry directory with the configured registry it belongs to (None: a
    registry no longer configured)."""
    from pkgmgr.registry.cache import cache_root
    from pkgmgr.registry.readers import parse_source

    root = home / "cache" / "registries"
    if not root.is_dir():
        return []
    names: dict[Path, str] = {}
    for registry in registries:
        try:
            names[cache_root(home, parse_source(registry.source).text)] = registry.name
        except PkgmgrError:
            continue
    return [(d, names.get(d)) for d in sorted(root.iterdir()) if d.is_dir()]


def _files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()]


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def cache_listing(home: Path, registries: Sequence[RegistryConfig]) -> dict[str, Any]:
    """Every cached archive (sha256, size, last use, path) and, per cached registry directory,
    the configured registry it belongs to (None: no longer configured), its files and size."""
    downloads = [{"sha256": p.name, "size": p.stat().st_size, "last_used": _iso(_last_used(p)), "path": str(p)}
                 for p in _downloads(home)]
    listed = []
    for directory, name in _registry_dirs(home, registries):
        files = _files(directory)
        listed.append({"name": name, "directory": str(directory), "files": len(files),
                       "size": sum(f.stat().st_size for f in files)})
    return {"downloads": downloads, "registries": listed}


def clean_caches(home: Path, registries: Sequence[RegistryConfig], older_than: float | None) -> dict[str, int]:
    """Remove every cached archive and registry file, or (`older_than` days) those unused that
    long; how many of each and the bytes freed."""
    from pkgmgr.fsutil import remove_tree

    cutoff = None if older_than is None else time.time() - older_than * DAY
    removed = {"downloads": 0, "registry_files": 0, "bytes": 0}

    def drop(path: Path, kind: str) -> None:
        try:
            if cutoff is not None and _last_used(path) >= cutoff:
                return
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return
        removed[kind] += 1
        removed["bytes"] += size

    for path in _downloads(home):
        drop(path, "downloads")
    if cutoff is None:  # a file where a registry's folder goes is no folder of pkgmgr's: it goes too
        root = home / "cache" / "registries"
        for stray in sorted(root.iterdir()) if root.is_dir() else ():
            if not stray.is_dir():
                removed["registry_files"] += 1
                removed["bytes"] += stray.lstat().st_size
                stray.unlink(missing_ok=True)
    for directory, _ in _registry_dirs(home, registries):
        if cutoff is None:
            files = _files(directory)
            removed["registry_files"] += len(files)
            removed["bytes"] += sum(f.stat().st_size for f in files)
            remove_tree(directory)
            continue
        for path in _files(directory):  # a cached file holds its validators (pkgmgr.registry.cache)
            drop(path, "registry_files")
    return removed
