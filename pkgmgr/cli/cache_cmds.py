"""`pkgmgr cache list|clean`: the download cache (archives by sha256) and the cached registry
files under `<home>/cache/`. Everything there can be fetched again; nothing else is touched."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.cli.app import non_negative
from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands

DAY = 24 * 3600


def register(commands: Commands) -> None:
    group = commands.group("cache", "show and prune the download cache",
                           "Show and prune what pkgmgr caches: downloaded archives (by sha256) and the registry "
                           "files it revalidates with conditional requests. Everything cached can be fetched again.")
    group.command("list", cmd_list, "list the cached archives and registry files",
                  "List the cached archives (sha256, size, last use) and, per registry, its cached files.",
                  "pkgmgr cache list\npkgmgr cache list -o json")
    p = group.command("clean", cmd_clean, "remove cached archives and registry files",
                      "Remove every cached archive and registry file, or with --older-than only those unused for "
                      "that many days. Installed extensions are not affected; the next install downloads again.",
                      "pkgmgr cache clean\npkgmgr cache clean --older-than 30")
    p.add_argument("--older-than", type=non_negative("days"), metavar="DAYS", help="only what was not used for DAYS days")




def _last_used(path: Path) -> float:
    info = path.stat()
    return max(info.st_atime, info.st_mtime)


def _downloads(home: Path) -> list[Path]:
    root = home / "cache" / "downloads" / "sha256"
    return sorted(p for p in root.glob("*/*") if p.is_file()) if root.is_dir() else []


def _registry_dirs(ctx: Context) -> list[tuple[Path, str | None]]:
    """Each cached registry directory with the configured registry it belongs to (None: a
    registry no longer configured)."""
    from pkgmgr.registry.cache import cache_root
    from pkgmgr.registry.readers import parse_source

    root = ctx.home / "cache" / "registries"
    if not root.is_dir():
        return []
    names: dict[Path, str] = {}
    for registry in ctx.config.registries:
        try:
            names[cache_root(ctx.home, parse_source(registry.source).text)] = registry.name
        except PkgmgrError:
            continue
    return [(d, names.get(d)) for d in sorted(root.iterdir()) if d.is_dir()]


def _files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()]


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def cmd_list(ctx: Context, args: argparse.Namespace) -> Output:
    downloads = [{"sha256": p.name, "size": p.stat().st_size, "last_used": _iso(_last_used(p)), "path": str(p)}
                 for p in _downloads(ctx.home)]
    registries = []
    for directory, name in _registry_dirs(ctx):
        files = [f for f in _files(directory) if not f.name.endswith(".meta.json")]
        registries.append({"name": name, "directory": str(directory), "files": len(files),
                           "size": sum(f.stat().st_size for f in _files(directory))})
    data = {"downloads": downloads, "registries": registries}

    def human(p: Printer) -> None:
        if not downloads and not registries:
            p.line(f"the cache is empty ({ctx.home / 'cache'})")
            return
        if downloads:
            p.table(["SHA256", "SIZE", "LAST USED"], [(d["sha256"], d["size"], d["last_used"]) for d in downloads])
        if registries:
            if downloads:
                p.line()
            p.table(["REGISTRY", "FILES", "SIZE", "DIRECTORY"],
                    [(r["name"] or "(not configured)", r["files"], r["size"], r["directory"]) for r in registries])

    return Output(data, human)


def cmd_clean(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.fsutil import remove_tree

    cutoff = None if args.older_than is None else time.time() - args.older_than * DAY
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

    for path in _downloads(ctx.home):
        drop(path, "downloads")
    for directory, _ in _registry_dirs(ctx):
        if cutoff is None:
            files = _files(directory)
            removed["registry_files"] += sum(1 for f in files if not f.name.endswith(".meta.json"))
            removed["bytes"] += sum(f.stat().st_size for f in files)
            remove_tree(directory)
            continue
        for path in _files(directory):
            if not path.name.endswith(".meta.json"):
                meta = path.with_name(path.name + ".meta.json")
                before = removed["registry_files"]
                drop(path, "registry_files")
                if removed["registry_files"] > before and meta.exists():
                    removed["bytes"] += meta.stat().st_size
                    os.unlink(meta)
    age = "" if args.older_than is None else f" unused for {args.older_than:g} day(s)"
    text = (f"removed {removed['downloads']} cached archive(s) and {removed['registry_files']} registry file(s)"
            f"{age} ({removed['bytes']} bytes)")
    return Output({"removed": removed}, lambda p: p.done([text]))
