"""`pkgmgr sync` and `pkgmgr trust`: declarative workspaces (SPEC 10)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.context import Context, warn_legacy_store, workspace_dir
from pkgmgr.cli.install_common import add_install_options, announce_for, install_options, reporter_for, trust_option
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import Code, PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.workspace.sync import SyncPlan


def register(commands: "Commands") -> None:
    p = commands.command(
        "sync", cmd_sync, "bring the workspace to what pkgmgr.toml declares",
        "Resolve the extensions pkgmgr.toml declares (keeping a locked version while it still satisfies its "
        "requirement), write pkgmgr.lock, install into the workspace scope, remove what is no longer declared, and "
        "activate/deactivate bundle profiles to match. The plan is printed before anything is done. A workspace's "
        "declarations run only once 'pkgmgr trust' approved them. Activations that await confirmation exit 8.",
        "pkgmgr sync\npkgmgr sync --dry-run\npkgmgr sync --locked          # CI: fail if the lock is stale\n"
        "pkgmgr sync --frozen          # install exactly the lock\npkgmgr sync --upgrade review-pack",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--locked", action="store_true", help="fail (lock_outdated) if resolving would change the lock")
    mode.add_argument("--frozen", action="store_true", help="install exactly what the lock says, without resolving")
    mode.add_argument("--upgrade", nargs="*", metavar="NAME", default=None,
                      help="re-resolve these extensions (all when no name is given) to the newest allowed version")
    add_install_options(p)
    trust_option(p)

    p = commands.command(
        "trust", cmd_trust, "approve a workspace's pkgmgr.toml, lock and path extensions",
        "A workspace's pkgmgr.toml comes with its repository, so nothing it declares runs before you approve it. "
        "'pkgmgr trust' approves the current digest of pkgmgr.toml + pkgmgr.lock + every path extension's tree "
        "(recorded in your global state); it prints what it approves. "
        "--show prints the digest and what it covers without approving; --digest D approves only if the files "
        "still have digest D.",
        "pkgmgr trust --show\npkgmgr trust --digest 3f1c...\npkgmgr trust --workspace ~/src/team-repo",
    )
    p.add_argument("--show", action="store_true", help="print what would be approved; approve nothing")
    p.add_argument("--digest", metavar="D", help="approve only if the workspace still has this digest")


def _plan_lines(plan: "SyncPlan") -> list[str]:
    lines = [f"sync plan for {plan.workspace}:"]
    for item in plan.items:
        version = item.version or "latest"
        if item.action == "install":
            lines.append(f"  + install {item.name} {version} ({item.declared.kind})")
        elif item.action == "switch":
            current = item.current.version if item.current is not None else "?"
            lines.append(f"  ~ switch {item.name} {current} -> {version}")
        elif item.action == "reinstall":
            lines.append(f"  ~ reinstall {item.name} {version} (other content or source)")
    for installed in plan.remove:
        lines.append(f"  - remove {installed.name} {installed.version}")
    for activation in plan.deactivate:
        lines.append(f"  - deactivate {activation['id']} ({activation['extension']}:{activation['bundle']}/"
                     f"{activation['profile']})")
    for declared in plan.activate:
        lines.append(f"  + activate {declared.label}")
    for row in plan.confirm:
        lines.append(f"  + confirm {row['id']} ({row['extension']}:{row['bundle']}/{row['profile']}, network "
                     f"requirement {row['network_digest']})")
    if plan.lock_update:
        lines.append("  ~ write pkgmgr.lock")
    unchanged = sum(1 for i in plan.items if i.action == "unchanged")
    if plan.empty:
        lines.append(f"  nothing to do ({unchanged} extension(s) up to date)")
    elif unchanged:
        lines.append(f"  = {unchanged} extension(s) up to date")
    return lines


def cmd_sync(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.workspace.sync import SyncOptions, sync

    options = SyncOptions(
        install=install_options(ctx, args),
        locked=args.locked,
        frozen=args.frozen,
        upgrade=tuple(args.upgrade) if args.upgrade is not None else None,
        dry_run=args.dry_run,
    )
    root = workspace_dir(ctx)
    warn_legacy_store(ctx, root)
    planned: dict[str, Any] = {}

    def on_plan(plan: "SyncPlan") -> None:
        planned.update(plan.to_json())  # as planned: acting moves each item's current version
        if not ctx.json:
            Printer(quiet=ctx.quiet).done(_plan_lines(plan))

    result = sync(root, home=ctx.home, config=ctx.config, options=options, offline=ctx.offline, warn=ctx.warn,
                  reporter=reporter_for(ctx), lock_timeout=ctx.lock_timeout, on_plan=on_plan,
                  announce=announce_for(ctx))
    root = result.plan.workspace
    data = result.to_json(dry_run=options.dry_run, planned=planned)
    error = result.final_error()

    def human(p: Printer) -> None:
        if options.dry_run:
            p.line("dry run: nothing was changed")
            return
        p.done(" ".join(str(part) for part in (item["action"], item["name"], item["version"]) if part)
               for item in data["installed"])
        p.done(" ".join(str(part) for part in ("removed", item["name"], item["version"]) if part)
               for item in result.removed)
        p.notes(note for item in [*data["installed"], *result.removed, *result.host_trust]
                for note in item.get("notes", ()))
        p.done(f"{a.get('change') or a.get('status')} {a['id']} ({a['extension']}:{a['bundle']}/{a['profile']})"
               for a in result.activations)
        if result.lock_written:
            p.done([f"wrote {root / 'pkgmgr.lock'}"])

    return Output(data, human, error)


def _summary(ctx: Context, ws: Any, state: Any) -> dict[str, Any]:
    """What an approval covers: registries, sources, permissions, commands, network requirements.
    A path extension is described from its files; a registry or GitHub one from the lock and,
    when this user's store has the locked version installed, from that install (otherwise its
    permissions are checked when it is installed: the read-only set unless --allow-grants)."""
    from pkgmgr.manifest import parse_manifest, read_manifest
    from pkgmgr.store.switch import list_installed

    installed = {i.name: i for i in list_installed(ws.scope)}
    trees = {name: tree for name, _, tree in state.paths}
    registry_trees = {name: tree for name, _, tree in state.registries if tree != "outside"}
    extensions = []
    for declared in ws.manifest.extensions:
        locked = ws.lock.get(declared.name) if ws.lock else None
        item: dict[str, Any] = {"name": declared.name, "host": _declared_host(ws, declared, locked),
                                "source": declared.kind,
                                "locked_version": locked.version if locked else None,
                                "locked_source": locked.source if locked else None,
                                "network_digest": locked.network_digest if locked else None}
        manifest = None
        try:
            if declared.kind == "path":
                item.update(path=declared.path, tree_sha256=trees.get(declared.name))
                manifest = read_manifest(ws.root / (declared.path or ""), generation=ctx.config.compozy_generation)
            else:
                if declared.kind == "registry":
                    item.update(requirement=declared.spec or "*", registry=declared.registry)
                else:
                    item.update(repository=declared.github, tag=declared.tag)
                current = installed.get(declared.name)
                if current is not None and locked is not None and current.sha256 == locked.sha256:
                    manifest = parse_manifest(current.manifest, file="extension.toml", root=None)
        except PkgmgrError as error:
            item["problem"] = error.message.splitlines()[0]
        if manifest is not None:
            sub = manifest.subprocess
            item.update(version=manifest.version, permissions=list(manifest.grants),
                        subprocess=" ".join([sub.command, *sub.args]) if sub and sub.command else None,
                        network_requirement=manifest.network, network_digest=manifest.network_digest)
        extensions.append(item)
    return {
        "workspace": str(ws.root),
        "digest": state.digest,
        "approved": ws.trusted,
        "store": {"path": str(ws.scope.root), "exists": ws.scope.root.is_dir()},
        "registries": [{"name": r.name, "source": r.source, "priority": r.priority, "insecure": r.insecure,
                        # a directory inside the workspace is covered whole: the digest of its tree
                        "tree_sha256": registry_trees.get(r.name),
                        # a signed registry's pinned root: read only through TUF with it
                        "root_sha256": r.root_sha256} for r in ws.manifest.registries],
        "extensions": extensions,
        "activations": [{"extension": a.extension, "bundle": a.bundle, "profile": a.profile,
                         "confirm_network_requirement": a.confirm} for a in ws.manifest.activations],
        "lock": ws.lock_raw is not None,
    }


def _declared_host(ws: Any, declared: Any, locked: Any) -> str | None:
    """The host a declared extension is for: its `host = "..."`, the lock's, or for a path the
    host whose manifest the folder holds (None: not known until it is installed)."""
    from pkgmgr.hosts.detect import detect
    from pkgmgr.store.checks import STORE_HOST

    if declared.host:
        return str(declared.host)
    if locked is not None:
        return str(locked.host or STORE_HOST)
    if declared.kind == "path":
        try:
            return detect(ws.root / (declared.path or ""))
        except PkgmgrError:
            return None
    return None


def _render_summary(p: Printer, data: dict[str, Any]) -> None:
    p.kv([("workspace", data["workspace"]), ("digest", data["digest"]),
          ("approved", "yes" if data["approved"] else "no"),
          ("store", data["store"]["path"] + ("" if data["store"]["exists"] else " (not created yet)"))])
    if data["registries"]:
        p.line()
        p.table(["REGISTRY", "SOURCE", "PRIORITY", "SIGNED"],
                [(r["name"], r["source"], r["priority"], "yes" if r.get("root_sha256") else "no")
                 for r in data["registries"]])
        for r in data["registries"]:
            if r.get("root_sha256"):  # the digest on its own line: 80 columns hold it whole
                p.line(f"registry {r['name']}: read only through TUF, with the root whose sha256 is")
                p.line(f"  {r['root_sha256']}")
            if r.get("tree_sha256"):
                p.line(f"registry {r['name']}: a directory inside the workspace, covered whole (every file of it "
                       "counts; its entries count at most as tier community)")
    if data["extensions"]:
        p.line()
        rows = []
        for e in data["extensions"]:
            # the lock, not the declaration, says which registry a kept version comes from
            locked = f" (locked: {e['locked_source'].partition('+')[2]})" if e.get("locked_source") else ""
            source = {"registry": f"registry {e.get('registry') or '(by priority)'} {e.get('requirement', '')}{locked}",
                      "github": f"github {e.get('repository')}@{e.get('tag') or 'latest'}",
                      "path": f"path {e.get('path')}"}[e["source"]]
            permissions = (", ".join(e["permissions"]) or "none") if "permissions" in e else "read-only at most"
            rows.append((e["name"], e.get("host") or "-", source, e.get("locked_version") or e.get("version") or "-",
                         permissions, e.get("subprocess") or "-", e.get("network_digest") or "-"))
        p.records(["EXTENSION", "HOST", "SOURCE", "VERSION", "PERMISSIONS", "SUBPROCESS", "NETWORK DIGEST"], rows)
    if data["activations"]:
        p.line()
        p.table(["ACTIVATE", "BUNDLE", "PROFILE", "CONFIRMS"],
                [(a["extension"], a["bundle"] or "(only bundle)", a["profile"], a["confirm_network_requirement"] or "-")
                 for a in data["activations"]])


def cmd_trust(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.store.switch import login_user
    from pkgmgr.workspace import trust
    from pkgmgr.workspace.workspace import Workspace

    root = workspace_dir(ctx)
    warn_legacy_store(ctx, root)
    if not os.path.lexists(root / "pkgmgr.toml"):  # a FIFO or a link is read (and refused) below
        raise PkgmgrError(f"{root} has no pkgmgr.toml: nothing to trust", code=Code.NOT_FOUND)
    ws = Workspace(root, ctx.home)
    state = ws.trust_state()
    summary = _summary(ctx, ws, state)
    if args.show:
        def render_show(printer: Printer) -> None:
            _render_summary(printer, summary)
            printer.line()
            printer.suggest("approve exactly this with:", f"pkgmgr trust --digest {state.digest}")

        return Output(summary, render_show)
    if args.digest is not None and args.digest.strip().lower() != state.digest:
        raise PkgmgrError(f"the workspace's digest is {state.digest}, not {args.digest}: its files changed since "
                          "they were shown", code=Code.TRUST_REQUIRED, details={"digest": state.digest},
                          hint="review them again with 'pkgmgr trust --show'")
    trust.approve(ctx.home, ws.root, state.digest, by=login_user())
    summary.update(approved=True)

    def human(p: Printer) -> None:
        if p.quiet:  # -q: the approval, in one line
            p.line(f"approved {ws.root} at digest {state.digest}")
            return
        _render_summary(p, summary)
        p.line()
        p.line(f"approved {ws.root} at digest {state.digest}")

    return Output(summary, human)
