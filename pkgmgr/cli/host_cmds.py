"""The host side of the `ext` commands (SPEC 13), `pkgmgr hosts` and `pkgmgr adopt`.

Each `ext` command calls one function here first (`validate`, `status`, `verify`, `remove`,
`enable`); it answers None when every name is Compozy's, and the command carries on as
before. Names are found across hosts; `--host H` chooses when two hosts hold the same name
(ambiguous without it: `usage`, listing them).
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pkgmgr.cli.context import Context, target_scope, visible_scopes
from pkgmgr.cli.output import Output, Printer, print_tree_report
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import user_path

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.hosts.records import HostInstalled

# ext_cmds' own command for the names no other host holds (passed in: no command module imports another)
Command = Callable[[Context, argparse.Namespace], Output]


def register(commands: Commands) -> None:
    p = commands.command("hosts", cmd_hosts, "show the agent hosts pkgmgr installs into",
                         "Show the four hosts, where each loads extensions on this machine (global, and the "
                         "project folder of the current workspace), and how many extensions pkgmgr manages there "
                         "and how many others are there.",
                         "pkgmgr hosts\npkgmgr hosts -o json")
    p = commands.command("adopt", cmd_adopt, "take hand-installed host extensions under management",
                         "Record extensions that were installed into a host's folder by hand (copied, cloned), "
                         "with their tree checksum as it is now, without moving them. With no NAME, every "
                         "unmanaged extension of that host in the scope's folder.",
                         "pkgmgr adopt --host terva\npkgmgr adopt --host eva tasks\n"
                         "pkgmgr --scope workspace adopt --host terva my-tool")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--host", choices=("terva", "eva", "vera"), required=True, metavar="HOST",
                   help="the host whose folder to adopt from: terva, eva or vera")
    p.add_argument("--force", action="store_true", help="adopt a Vera extension that changed since Vera recorded it")


# --- finding names ---------------------------------------------------------------------------------


def hosted_rows(ctx: Context, host: str | None = None) -> list[HostInstalled]:
    from pkgmgr.hosts import records

    return records.visible(visible_scopes(ctx), host)


def _compozy(ctx: Context, name: str, scopes: list[Any]) -> Any:
    from pkgmgr.store.switch import get_installed

    for scope in scopes:
        item = get_installed(scope, name)
        if item is not None:
            return item
    return None


def resolve(ctx: Context, names: list[str], host: str | None, *, scopes: list[Any] | None = None
            ) -> dict[str, HostInstalled]:
    """The host installs among `names` (name -> row); a name left out is Compozy's (or unknown:
    the Compozy command reports it). Raises `usage` when two hosts hold a name and `host` does
    not pick one, `not_found` when `host` names a host that does not hold it."""
    from pkgmgr.hosts import records

    scopes = scopes if scopes is not None else visible_scopes(ctx)
    found: dict[str, HostInstalled] = {}
    for name in names:
        rows = []
        for scope in scopes:
            for row in records.list_rows(scope):
                if row.name == name and not records.is_placeholder(row) and all(
                        r.host != row.host for r in rows):
                    rows.append(row)
        compozy = _compozy(ctx, name, scopes) if host in (None, "compozy") else None
        if host is not None:
            rows = [r for r in rows if r.host == host]
            if host != "compozy" and not rows:
                raise PkgmgrError(f"{name} is not installed in {host}'s folders", code=Code.NOT_FOUND,
                                  hint=f"'pkgmgr ext list --host {host}' shows what pkgmgr manages there")
        holders = (["compozy"] if compozy is not None else []) + [r.host for r in rows]
        if len(holders) > 1:
            raise PkgmgrError(f"{name} is installed for several hosts ({', '.join(holders)}); say which with --host",
                              code=Code.USAGE, details={"hosts": holders},
                              hint=" or ".join(f"--host {h}" for h in holders))
        if rows and host != "compozy":
            found[name] = rows[0]
    return found


def _merge(first: Output | None, second: Output) -> Output:
    if first is None:
        return second
    data: dict[str, Any] = dict(first.data)
    for key, value in second.data.items():
        if isinstance(value, list) and isinstance(data.get(key), list):
            data[key] = [*data[key], *value]
        else:
            data.setdefault(key, value)

    def human(p: Printer) -> None:
        for part in (first.human, second.human):
            if isinstance(part, str):
                p.line(part)
            elif part is not None:
                part(p)

    return Output(data, human, first.error or second.error)


def _rest(args: argparse.Namespace, names: list[str], attr: str = "names") -> argparse.Namespace:
    copied = copy.copy(args)
    setattr(copied, attr, names)
    return copied


# --- ext validate / pack ------------------------------------------------------------------------------


def validate(ctx: Context, args: argparse.Namespace) -> Output | None:
    """`ext validate` of another host's extension (None: the tree is Compozy's)."""
    from pkgmgr.hosts.views import judge_path

    judged = judge_path(user_path(args.path), getattr(args, "host", None), limits=ctx.config.limits)
    if judged is None:
        return None
    for warning in judged.warnings:
        ctx.warn(warning)
    data = {"valid": True, **judged.summary(), "warnings": list(judged.warnings)}

    def human(p: Printer) -> None:
        what = f"{judged.name} {judged.version}".strip()
        p.line(f"{args.path}: {what} is a valid {judged.host} extension ({judged.kind})")
        if judged.capabilities:
            p.line(f"  capabilities: {', '.join(judged.capabilities)}")
        if judged.entry:
            label = {"eva": "module", "vera": "entrypoint"}.get(judged.host, "runs")
            p.line(f"  {label}: {judged.entry}")

    return Output(data, human)


def pack(ctx: Context, args: argparse.Namespace) -> Output | None:
    """`ext pack` of another host's extension (None: the tree is Compozy's)."""
    from pkgmgr.hosts.views import pack_hosted

    packed = pack_hosted(user_path(args.path), getattr(args, "host", None), release=getattr(args, "release", None),
                         output=user_path(args.output_file) if args.output_file else None,
                         limits=ctx.config.limits, label=args.path)
    if packed is None:
        return None
    return Output(packed.to_json(), lambda p: p.kv([("packed", packed.path), ("host", packed.judged.host),
                                                    ("sha256", packed.sha256), ("size", packed.size)]))


# --- ext list / status / verify ---------------------------------------------------------------------------


def list_entry(row: HostInstalled) -> dict[str, Any]:
    from pkgmgr.hosts import records

    return records.list_entry(row)


def status(ctx: Context, args: argparse.Namespace) -> Output | None:
    found = resolve(ctx, [args.name], getattr(args, "host", None))
    row = found.get(args.name)
    if row is None:
        return None
    from pkgmgr.hosts.views import hosted_status

    data = hosted_status(row)

    def human(p: Printer) -> None:
        prov = row.provenance()
        pairs = [("name", row.name), ("host", row.host), ("version", row.version or "-"), ("scope", row.scope),
                 ("enabled", "yes" if row.enabled else "no"), ("path", row.directory),
                 ("source", f"{prov['source']} {prov['locator']}" + (f" (registry {row.registry})" if row.registry else "")),
                 ("verified", "yes" if row.verified else "no"), ("sha256", row.sha256 or "-"),
                 ("tree sha256", row.tree_sha256), ("capabilities", ", ".join(row.capabilities) or "(none)"),
                 ("installed", f"{row.installed_at} by {row.installed_by}")]
        if "trust" in data:
            pairs.append(("eva approval", data["trust"]["approved_hash"] or "(none)"))
            pairs.append(("content hash", data["trust"]["content_hash"]))
        p.kv(pairs)

    return Output(data, human)


def verify(ctx: Context, args: argparse.Namespace, compozy: Command) -> Output | None:
    """`ext verify` of other hosts' installs; `compozy` (ext_cmds' own command) verifies the rest."""
    from pkgmgr.hosts.verify import verify_hosted

    host = getattr(args, "host", None)
    if args.all:
        if host == "compozy":
            return None
        rows = hosted_rows(ctx, host)
        if not rows:
            return None
        verified = verify_hosted(rows)
        rest = None
        if host is None:
            rest = compozy(ctx, _with_host(args, "compozy"))
        return _merge(rest, _verify_output(*verified)) if rest is not None else _verify_output(*verified)
    found = resolve(ctx, list(args.names), host)
    if not found:
        return None
    verified = verify_hosted([found[n] for n in args.names if n in found])
    others = [n for n in args.names if n not in found]
    if others:
        return _merge(compozy(ctx, _with_host(_rest(args, others), "compozy")), _verify_output(*verified))
    return _verify_output(*verified)


def _with_host(args: argparse.Namespace, host: str) -> argparse.Namespace:
    copied = copy.copy(args)
    copied.host = host
    return copied


def _verify_output(results: list[dict[str, Any]], error: PkgmgrError | None) -> Output:
    def human(p: Printer) -> None:
        for r in results:
            label = f"{r['name']} {r['version'] or ''}".strip() + f" ({r['host']})"
            print_tree_report(p, label, r, f"{r['path']} is gone")

    return Output({"verified": results}, human, error)


# --- ext remove / enable / disable ---------------------------------------------------------------------------


def _host_options(ctx: Context, args: argparse.Namespace) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(lock_timeout=ctx.lock_timeout, approve_host_trust=getattr(args, "approve_host_trust", False))


def _named(names: Sequence[str], found: dict[str, Any]) -> list[Any]:
    """The host installs `found` holds for `names`, in the order named."""
    return [found[name] for name in names if name in found]


def _note_lines(ctx: Context, items: list[Any]) -> list[str]:
    return [line for item in items for line in getattr(item, "notes", ())]


def remove(ctx: Context, args: argparse.Namespace, compozy: Command) -> Output | None:
    from pkgmgr.hosts import install

    scope = target_scope(ctx)
    found = resolve(ctx, list(args.names), getattr(args, "host", None), scopes=[scope])
    if not found:
        return None
    if getattr(args, "save", False):
        raise PkgmgrError("--save edits pkgmgr.toml declarations; remove host extensions declared there by editing "
                          "pkgmgr.toml and running 'pkgmgr sync'", code=Code.USAGE)
    if args.dry_run:
        planned = [{"name": r.name, "version": r.version or None, "host": r.host, "scope": scope.kind,
                    "path": str(r.directory)} for r in found.values()]
        hosted: Output = Output({"planned": planned}, lambda p: p.lines(
            f"would remove {d['name']} ({d['host']}, {d['path']})" for d in planned))
    else:
        items, error = scope.each_under_writer(
            _named(args.names, found), lambda row: install.remove(scope, row, options=_host_options(ctx, args)),
            ctx.lock_timeout)
        removed = [{"name": item.name, "version": item.version or None, "host": item.host,
                    "scope": scope.kind, "path": str(item.directory), "notes": list(item.notes),
                    **({"trust": item.trust} if item.trust else {})} for item in items]
        notes = _note_lines(ctx, items)
        hosted = Output({"removed": removed, "deactivated": []},
                        lambda p: (p.done([f"removed {r['name']} ({r['host']}, {r['path']})" for r in removed]),
                                   p.lines(notes)), error)
    others = [n for n in args.names if n not in found]
    if others:
        return _merge(compozy(ctx, _with_host(_rest(args, others), "compozy")), hosted)
    return hosted


def set_enabled(ctx: Context, args: argparse.Namespace, enabled: bool, compozy: Command) -> Output | None:
    from pkgmgr.hosts import install

    scope = target_scope(ctx)
    found = resolve(ctx, list(args.names), getattr(args, "host", None), scopes=[scope])
    if not found:
        return None
    verb = "enabled" if enabled else "disabled"
    items, error = scope.each_under_writer(
        _named(args.names, found), lambda row: install.set_enabled(scope, row, enabled, options=_host_options(ctx, args)),
        ctx.lock_timeout)
    done = [{"name": item.name, "version": item.version or None, "host": item.host, "scope": scope.kind,
             "enabled": item.enabled, "path": str(item.directory), "notes": list(item.notes),
             **({"trust": item.trust} if item.trust else {})} for item in items]
    notes = _note_lines(ctx, items)
    hosted = Output({verb: done, "deactivated": []},
                    lambda p: (p.done([f"{verb} {d['name']} ({d['host']}, {d['path']})" for d in done]),
                               p.lines(notes)), error)
    others = [n for n in args.names if n not in found]
    if others:
        return _merge(compozy(ctx, _with_host(_rest(args, others), "compozy")), hosted)
    return hosted


# --- pkgmgr hosts / adopt --------------------------------------------------------------------------------


def cmd_hosts(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.hosts.views import hosts_overview
    from pkgmgr.store.scope import global_scope

    project = _project(ctx)
    hosts = hosts_overview(global_scope(ctx.home), target_scope(ctx, "workspace", read=True) if project is not None else None,
                           project)

    def human(p: Printer) -> None:
        p.table(["HOST", "GLOBAL", "PROJECT", "MANAGED", "UNMANAGED"],
                [(h["name"], h["homes"]["global"], h["homes"]["project"] or "-", h["managed"], h["unmanaged"])
                 for h in hosts])

    return Output({"hosts": hosts}, human)


def _project(ctx: Context) -> Path | None:
    """The workspace (project) directory this command sees: --workspace, else discovered."""
    from pkgmgr.cli.context import workspace_dir

    try:
        return workspace_dir(ctx)
    except PkgmgrError:
        return None


def cmd_adopt(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.hosts.views import adopt_names, adopted_entry

    scope = target_scope(ctx)
    adopted = adopt_names(scope, args.host, list(args.names), force=args.force, lock_timeout=ctx.lock_timeout)
    data = {"adopted": [adopted_entry(r) for r in adopted]}
    return Output(data, lambda p: p.done([f"adopted {r.name} {r.version or ''}".rstrip() + f" ({r.host}, {r.path})"
                                          for r in adopted] or [f"nothing to adopt in {args.host}'s {scope.kind} folder"]))
