"""`pkgmgr registry ...`: add, list, remove and refresh the configured registries.

`register(commands)` returns the `registry` group so that more commands (init, publish,
validate, build, yank) can be declared on it by their own module.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.registry.session import Session

REGISTRY_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
DEFAULT_PRIORITY = 100


def register(commands: "Commands") -> "Commands":
    group = commands.group(
        "registry", "manage extension registries",
        "Configure the registries extensions are resolved from. Registries are consulted by ascending priority "
        "(default 100); the shipped registry 'default' (priority 1000) always comes last. The first registry "
        "that lists a name answers for it.",
    )

    p = group.command(
        "add", cmd_add, "add a registry",
        "Record a registry in config.toml. SOURCE is a local directory, an https:// base URL of static files "
        "(http:// only on loopback, or with --insecure) or github:OWNER/REPO[@REF] (default REF main). "
        "The source is only recorded; pkgmgr warns when it cannot read it now.",
        "pkgmgr registry add acme github:acme/extension-index\n"
        "pkgmgr registry add mirror https://mirror.example.com/index/ --priority 50\n"
        "pkgmgr registry add local ~/src/my-index --priority 10",
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--priority", type=int, default=None, metavar="N",
                   help=f"lower is consulted first (default {DEFAULT_PRIORITY})")
    p.add_argument("--insecure", action="store_true", help="allow plain http:// to a non-loopback host")

    group.command(
        "list", cmd_list, "list the registries",
        "List the registries in resolution order with their source, priority and the highest serial seen.",
        "pkgmgr registry list\npkgmgr registry list -o json",
    )

    p = group.command(
        "remove", cmd_remove, "remove a registry",
        "Remove a registry from config.toml and forget what pkgmgr remembered of its source (its serial and "
        "checksums, SPEC 5.4) and its cached files. Installed extensions stay installed.",
        "pkgmgr registry remove acme",
    )
    p.add_argument("name", metavar="NAME")

    p = group.command(
        "refresh", cmd_refresh, "re-read registries now",
        "Revalidate the cached registry.toml and index.json of every registry (or the named one) with "
        "conditional requests, checking expiry and rollback.",
        "pkgmgr registry refresh\npkgmgr registry refresh acme -o json",
    )
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("--allow-expired", action="store_true", help="accept a registry whose metadata has expired")
    return group


def _session(ctx: Context, *, allow_expired: bool = False, config: Any = None) -> "Session":
    from pkgmgr.registry.session import Session

    return Session(ctx.home, config or ctx.config, offline=ctx.offline, allow_expired=allow_expired, warn=ctx.warn)


def cmd_add(ctx: Context, args: argparse.Namespace) -> Output:
    import tomlkit

    from pkgmgr.config import edit_config, load_config
    from pkgmgr.registry.client import DEFAULT_NAME
    from pkgmgr.registry.sources import check_source_allowed, parse_source

    name = args.name
    if not REGISTRY_NAME_RE.match(name):
        raise PkgmgrError(f"{name!r} is not a registry name (lower-case letters, digits, '-' and '_')", code="usage")
    if name == DEFAULT_NAME:
        raise PkgmgrError("'default' is the registry shipped with pkgmgr; choose another name", code="usage")
    spec = parse_source(args.source)
    check_source_allowed(spec, insecure=args.insecure)
    for existing in ctx.config.registries:
        if existing.name == name:
            raise PkgmgrError(f"a registry named {name} already exists ({existing.source})", code="usage",
                              hint=f"'pkgmgr registry remove {name}' first to replace it")
    with edit_config(ctx.home) as doc:
        if "registries" not in doc:
            doc.add("registries", tomlkit.table(is_super_table=True))
        table = tomlkit.table()
        table["source"] = spec.text
        if args.priority is not None:
            table["priority"] = args.priority
        if args.insecure:
            table["insecure"] = True
        doc["registries"][name] = table
    config = load_config(ctx.home)
    serial = None
    if not ctx.offline:
        session = _session(ctx, config=config)
        try:
            registry = session.registries.get(name)
            serial = registry.meta().serial
            registry.remember()  # the serial seen when the operator added it: the rollback baseline
        except PkgmgrError as error:
            ctx.warn(f"registry {name} was added but cannot be read now: {error.message.splitlines()[0]}")
        finally:
            session.close()
    added = {"name": name, "source": spec.text, "priority": args.priority or DEFAULT_PRIORITY,
             "insecure": bool(args.insecure), "serial": serial}
    return Output({"added": added}, f"added registry {name} ({spec.text}, priority {added['priority']})")


def cmd_list(ctx: Context, args: argparse.Namespace) -> Output:
    session = _session(ctx)
    rows = []
    try:
        for registry in session.registries.ordered:
            serial = registry.remembered_serial()
            if registry.exempt:
                try:
                    serial = registry.meta().serial
                except PkgmgrError as error:
                    ctx.warn(error.message.splitlines()[0])
            rows.append({**registry.to_json(), "serial": serial})
    finally:
        session.close()

    def human(p: Printer) -> None:
        p.table(["NAME", "PRIORITY", "SERIAL", "SOURCE"],
                [(r["name"], r["priority"], "-" if r["serial"] is None else r["serial"],
                  r["source"] + (" (insecure)" if r["insecure"] else "")) for r in rows])

    return Output({"registries": rows}, human)


def cmd_remove(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.config import edit_config
    from pkgmgr.registry.client import DEFAULT_NAME, Registry

    if args.name == DEFAULT_NAME:
        raise PkgmgrError("the shipped registry 'default' cannot be removed", code="usage")
    found = next((r for r in ctx.config.registries if r.name == args.name), None)
    if found is None:
        raise PkgmgrError(f"no registry named {args.name!r} is configured", code="not_found",
                          hint="'pkgmgr registry list' shows the configured registries")
    with edit_config(ctx.home) as doc:
        del doc["registries"][args.name]
        if not doc["registries"]:
            del doc["registries"]
    session = _session(ctx)
    try:
        registry = Registry(found, session)
        session.memory.forget(registry.source)
        registry.cache.clear()
    finally:
        session.close()
    removed = {"name": found.name, "source": registry.source}
    return Output({"removed": removed}, f"removed registry {found.name} ({registry.source}); "
                                        "its remembered serial and checksums are forgotten")


def cmd_refresh(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.model import format_datetime

    session = _session(ctx, allow_expired=args.allow_expired)
    refreshed: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    error: PkgmgrError | None = None
    try:
        targets = [session.registries.get(args.name)] if args.name else session.registries.ordered
        for registry in targets:
            try:
                meta = registry.meta()
                index = registry.index()
                registry.remember()
            except PkgmgrError as exc:
                error = error or exc
                failed.append({"name": registry.name, "source": registry.source, "error": exc.to_json()})
                continue
            refreshed.append({"name": registry.name, "source": registry.source, "serial": meta.serial,
                              "expires": format_datetime(meta.expires),
                              "extensions": None if index is None else len(index.extensions)})
    finally:
        session.close()

    def human(p: Printer) -> None:
        if refreshed:
            p.table(["NAME", "SERIAL", "EXTENSIONS", "SOURCE"],
                    [(r["name"], r["serial"], "-" if r["extensions"] is None else r["extensions"], r["source"])
                     for r in refreshed])
        for f in failed:
            p.line(f"failed {f['name']}: [{f['error']['code']}] {f['error']['message'].splitlines()[0]}")

    return Output({"refreshed": refreshed, "failed": failed}, human, error)
