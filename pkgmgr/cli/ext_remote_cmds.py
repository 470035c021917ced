"""`pkgmgr ext update|info|search`: the commands of the `ext` group that read registries."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.context import Context, target_scope
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.registry.session import Session


def register(ext: "Commands") -> None:
    from pkgmgr.cli.install_common import add_install_options, add_registry_option, host_option, trust_option

    p = ext.command(
        "update", cmd_update, "update installed extensions",
        "Move extensions to the newest allowed version of the source they were installed from: not yanked, "
        "no prerelease unless --pre, compatible with the host. An exact version installed earlier is not a "
        "pin; extensions installed with --pin are skipped (reported as pinned), and path or archive installs "
        "are not updatable. --check only reports, and exits 0 whether updates exist or not (with --exit-code: "
        "10 when they do).",
        "pkgmgr ext update --all --check\n"
        "pkgmgr ext update --all --check --exit-code || echo 'updates available'\n"
        "pkgmgr ext update review-pack marketing-linear\n"
        "pkgmgr ext update --all --dry-run -o json\n"
        "pkgmgr ext update prompt-tools --allow-unverified --yes   # a github: or URL install",
        aliases=("upgrade",),
    )
    p.add_argument("names", nargs="*", metavar="NAME")
    p.set_defaults(installed="names")  # did you mean: cli.app.suggest_installed
    p.add_argument("--all", action="store_true", help="update every installed extension of the scope")
    p.add_argument("--check", action="store_true", help="report available updates; change nothing")
    p.add_argument("--exit-code", action="store_true", help="with --check: exit 10 when updates are available")
    p.add_argument("--unpin", action="store_true",
                   help="release the pin of each named extension ('ext install --pin', 'ext rollback') and update it")
    p.add_argument("--asset", metavar="NAME", help="GitHub release asset to install (exact name)")
    add_install_options(p)
    add_registry_option(p, "take registry installs' versions from this registry")
    host_option(p, "update only this host's extensions")
    trust_option(p)

    p = ext.command(
        "info", cmd_info, "show an extension as its registry lists it",
        "Show the registry entry of an extension: description, tier, and every version with its size, "
        "yanked state, minimum host version, permissions and network digest. The first registry (by "
        "priority) that lists the name answers, as for install.",
        "pkgmgr ext info marketing-linear\npkgmgr ext info review-pack --registry acme -o json",
    )
    p.add_argument("name", metavar="NAME")
    add_registry_option(p, "ask this registry only")
    _allow_expired(p)

    p = ext.command(
        "search", cmd_search, "search the registries",
        "List the extensions of the configured registries whose name or description contains TERM "
        "(case-insensitive); without TERM, list everything. A name listed by several registries is shown "
        "from the one that answers for it.",
        "pkgmgr ext search\npkgmgr ext search linear\npkgmgr ext search review --registry acme -o json",
    )
    p.add_argument("term", nargs="?", default="", metavar="TERM")
    add_registry_option(p, "search this registry only")
    _allow_expired(p)


def _allow_expired(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-expired", action="store_true",
                   help="accept a registry whose metadata has expired")


def _session(ctx: Context, args: argparse.Namespace) -> "Session":
    from pkgmgr.cli.workspace_registries import session_for

    return session_for(ctx, allow_expired=args.allow_expired, dry_run=bool(getattr(args, "dry_run", False)))


# --- update ------------------------------------------------------------------------------------


def cmd_update(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli.install_common import announce_for, confirm_for, install_options, reporter_for
    from pkgmgr.updater import Updater

    if args.all and args.names:
        raise PkgmgrError("name extensions or pass --all, not both", code=Code.USAGE)
    if args.exit_code and not args.check:
        raise PkgmgrError("--exit-code goes with --check", code=Code.USAGE, hint="pkgmgr ext update --all --check --exit-code")
    if not args.all and not args.names:
        raise PkgmgrError("name the extensions to update, or pass --all", code=Code.USAGE,
                          hint="pkgmgr ext update --all --check")
    scope = target_scope(ctx)
    session = _session(ctx, args)
    try:
        if args.registry:
            session.registries.get(args.registry)  # an unknown name is refused before anything is decided
        updater = Updater(session, scope, options=install_options(ctx, args), asset=args.asset,
                          registry=args.registry, unpin=bool(getattr(args, "unpin", False)))
        report = updater.run(args.names, all_=args.all, check=args.check, config=ctx.config,
                             interactive=ctx.interactive, confirm=confirm_for(ctx), reporter=reporter_for(ctx),
                             lock_timeout=ctx.lock_timeout, announce=announce_for(ctx))
    finally:
        session.close()
    empty = "nothing installed to update"
    if getattr(args, "outdated", False):  # ext list --outdated: what has an update, and what failed
        report.items = [i for i in report.items if i.status in ("available", "failed")]
        empty = "every installed extension is up to date"
    output = update_output(report, check=args.check, dry_run=args.dry_run, empty=empty)
    if args.exit_code and output.error is None and report.by_status("available"):
        output.status = 10
    return output


def outdated(ctx: Context) -> Output:
    """`ext list --outdated`: the table of `ext update --all --check`."""
    args = argparse.Namespace(names=[], all=True, check=True, exit_code=False, asset=None, registry=None, unpin=False,
                              allow_expired=False, allow_unverified=False, force=False, pre=False, allow_grants=False,
                              deactivate_missing=False, dry_run=False, outdated=True)
    return cmd_update(ctx, args)


def update_output(report: Any, *, check: bool, dry_run: bool, empty: str = "nothing installed to update") -> Output:
    data: dict[str, Any] = {status: [i.to_json() for i in report.by_status(status)]
                            for status in ("updated", "unchanged", "pinned", "failed")}
    if report.unpinned:
        data["unpinned"] = report.unpinned
    if report.by_status("skipped"):  # held by another update's failure: nothing was committed
        data["skipped"] = [i.to_json() for i in report.by_status("skipped")]
    if check:
        data["available"] = [i.to_json() for i in report.by_status("available")]
    if dry_run:
        data["planned"] = [i.to_json() for i in report.by_status("planned")]
    data["activations"] = report.activations
    error = report.first_error
    awaiting = [a for a in report.activations if a.get("status") == "awaiting_confirmation"]
    if error is None and awaiting:
        from pkgmgr.activation.confirmation import confirmation_error

        error = confirmation_error(awaiting)

    def human(p: Printer) -> None:
        rows = []
        for item in report.items:
            if item.status == "updated":
                rows.append((item.name, item.version, item.installed.version, "updated", ""))
            elif item.status == "failed":
                rows.append((item.name, item.version or "-", "-", "failed",
                             f"[{item.error.code}] {item.error.message.splitlines()[0]}"))
            else:
                status = "update available" if item.status == "available" else \
                    "would update" if item.status == "planned" else item.status
                rows.append((item.name, item.version or "-", item.target or "-", status, item.reason))
        if report.unpinned:
            p.line(f"unpinned {', '.join(report.unpinned)}")
        if not rows:
            p.line(empty)
            return
        p.table(["NAME", "INSTALLED", "NEWEST", "STATUS", "NOTE"], rows)
        planned = [i for i in report.items if i.status == "planned" and i.summary]
        if planned:
            from pkgmgr.cli.install_common import summary_lines

            p.line("would install:")
            for item in planned:
                p.lines(summary_lines(item.summary))
        if report.activations:
            from pkgmgr.cli.activation_text import print_activations

            print_activations(p, report.activations, error=error)

    return Output(data, human, error)


# --- info ---------------------------------------------------------------------------------------


def cmd_info(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.registry.client import NotListed
    from pkgmgr.registry.plan import suggest_listed
    from pkgmgr.registry.resolve import find_entry, host_compatible

    session = _session(ctx, args)
    try:
        try:
            registry, entry = find_entry(session.registries, args.name, registry=args.registry)
        except NotListed as error:
            suggest_listed(error, session.registries.ordered, args.name)
            raise
        registry.remember()
    finally:
        session.close()
    host = ctx.config.host_version
    vanished = registry.vanished(entry.name)
    versions = []
    for version in entry.versions:
        versions.append({**version.to_json(), "compatible": host_compatible(version, host)})
    data = {"name": entry.name, "description": entry.description, "repository": entry.repository,
            "tier": entry.tier, "host": entry.host, "verified": entry.verified, "registry": registry.name, "source": registry.source,
            "latest": entry.latest, "versions": versions, "vanished": list(vanished), **registry.signature_json()}
    if registry.exempt:
        data["shipped"] = True

    def human(p: Printer) -> None:
        signed = (f"yes (expires {data['expires'] or '-'})" if data["signed"]
                  else "no (shipped with pkgmgr)" if registry.exempt else "no")
        p.kv([("name", entry.name), ("description", entry.description or "-"),
              ("repository", entry.repository or "-"), ("tier", entry.tier),
              *([("host", entry.host)] if entry.host != "compozy" else []),
              ("registry", f"{registry.name} ({registry.source})"), ("signed", signed),
              *([("root sha256", data["root_sha256"])] if data["signed"] else []),
              ("latest", entry.latest or "-")])
        p.line()
        minimum = entry.host == "compozy"  # only Compozy's manifests name a minimum host version
        p.table(["VERSION", "SIZE", "YANKED", *(["MIN HOST"] if minimum else []), "PERMISSIONS", "NETWORK DIGEST"],
                [(v["version"] + (" (pre)" if v["prerelease"] else ""), v["size"], "yes" if v["yanked"] else "",
                  *([v["min_compozy_version"] + ("" if v["compatible"] else " (too new)")] if minimum else []),
                  ", ".join(v["permissions"]) or "-", v["network_digest"][:16] or "-") for v in versions])
        for version in vanished:
            p.line(f"{version}: vanished from the registry (treated as yanked)")

    return Output(data, human)


# --- search -------------------------------------------------------------------------------------


def cmd_search(ctx: Context, args: argparse.Namespace) -> Output:
    term = (args.term or "").strip().lower()
    session = _session(ctx, args)
    results: dict[str, dict[str, Any]] = {}
    failed: list[dict[str, Any]] = []
    try:
        registries = [session.registries.get(args.registry)] if args.registry else session.registries.ordered
        for registry in registries:
            try:
                matches = registry.search(term)
            except PkgmgrError as error:
                from pkgmgr.cli.app import UNREADABLE

                if args.registry or error.code not in UNREADABLE:  # a refusal (rollback, ...) is no skip
                    raise
                # a listing, not a resolution: the other registries still answer; the reason whole
                failed.append({"name": registry.name, "error": error.to_json()})
                drop = ("it is declared in pkgmgr.toml" if registry.declared
                        else f"'pkgmgr registry remove {registry.name}' drops it")
                ctx.warn(f"{error.message}\n(registry {registry.name} skipped; {drop})")
                continue
            registry.remember()
            if matches is None:
                ctx.warn(f"registry {registry.name} has no index.json; it cannot be searched")
                continue
            for ext in matches:
                if ext.name in results:
                    continue
                results[ext.name] = {"name": ext.name, "description": ext.description, "tier": ext.tier,
                                     "host": ext.host, "latest": ext.latest, "registry": registry.name,
                                     "versions": [v.version for v in ext.versions]}
    finally:
        session.close()
    found = [results[name] for name in sorted(results)]

    def human(p: Printer) -> None:
        if not found:
            p.line(f"no extension matches {args.term!r}" if term else "the registries list no extensions")
            return
        p.table(["NAME", "LATEST", "TIER", "REGISTRY", "DESCRIPTION"],
                [(r["name"] + (f" ({r['host']})" if r["host"] != "compozy" else ""), r["latest"] or "-", r["tier"],
                  r["registry"], r["description"]) for r in found])

    return Output({"results": found, "failed": failed}, human)
