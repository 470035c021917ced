"""`pkgmgr cache list|clean`: the download cache (archives by sha256) and the cached registry
files under `<home>/cache/`, listed and pruned by `pkgmgr.caches`. Everything there can be
fetched again; nothing else is touched."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pkgmgr.cli.app import non_negative
from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output, Printer

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands


def register(commands: Commands) -> None:
    group = commands.group("cache", "show and prune the download cache",
                           "Show and prune what pkgmgr caches: downloaded archives (by sha256) and the registry "
                           "files it revalidates with conditional requests. Everything cached can be fetched again.")
    group.command("list", cmd_list, "list the cached archives and registry files",
                  "List the cached archives (sha256, size, last use) and, per registry, its cached files.",
                  "pkgmgr cache list\npkgmgr cache list -o json")
    p = group.command("clean", cmd_clean, "remove cached archives and registry files",
                      "Remove every cached archive and registry file, or with --older-than only those unused for "
                      "that many days, and the previous versions kept for 'ext rollback' (with --older-than, "
                      "those replaced that many days ago). Installed extensions are not affected; the next "
                      "install downloads again.",
                      "pkgmgr cache clean\npkgmgr cache clean --older-than 30")
    p.add_argument("--older-than", type=non_negative("days"), metavar="DAYS", help="only what was not used for DAYS days")




def cmd_list(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.caches import cache_listing

    data = cache_listing(ctx.home, ctx.config.registries)
    downloads, registries = data["downloads"], data["registries"]

    def human(p: Printer) -> None:
        if not downloads and not registries:
            p.line(f"the cache is empty ({ctx.home / 'cache'})")
            return
        if downloads:
            p.records(["SHA256", "SIZE", "LAST USED"], [(d["sha256"], d["size"], d["last_used"]) for d in downloads])
        if registries:
            if downloads:
                p.line()
            p.records(["REGISTRY", "FILES", "SIZE", "DIRECTORY"],
                      [(r["name"] or "(not configured)", r["files"], r["size"], r["directory"]) for r in registries])

    return Output(data, human)


def cmd_clean(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.caches import clean_caches
    from pkgmgr.cli.context import visible_scopes
    from pkgmgr.lifecycle import forget_kept

    removed = clean_caches(ctx.home, ctx.config.registries, args.older_than)
    kept = [item for scope in visible_scopes(ctx)
            for item in forget_kept(scope, older_than=args.older_than, lock_timeout=ctx.lock_timeout)]
    removed["kept_versions"] = len(kept)
    age = "" if args.older_than is None else f" unused for {args.older_than:g} day(s)"
    text = (f"removed {removed['downloads']} cached archive(s) and {removed['registry_files']} registry file(s)"
            f"{age} ({removed['bytes']} bytes)")
    lines = [text] + ([f"stopped keeping {', '.join(f'{k.name} {k.version or chr(45)}' for k in kept)} for a rollback"]
                      if kept else [])
    return Output({"removed": removed, "kept_removed": [{"name": k.name, "version": k.version or None,
                                                         "host": k.host, "path": str(k.place)} for k in kept]},
                  lambda p: p.done(lines))
