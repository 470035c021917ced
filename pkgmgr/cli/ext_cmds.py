"""`pkgmgr ext ...`: validate, pack, install, list, status, verify, enable/disable, remove."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.context import Context, target_scope, visible_scopes
from pkgmgr.cli.install_common import (
    add_install_options,
    add_registry_option,
    announce_for,
    confirm_for,
    host_option,
    install_options,
    reporter_for,
    summary_lines,
    trust_option,
)
from pkgmgr.cli.output import Output, Printer, print_tree_report
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import user_path
from pkgmgr.hosts import DEFAULT as DEFAULT_HOST
from pkgmgr.hosts import names as host_names
from pkgmgr.hosts import spoken

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.lifecycle import Done
    from pkgmgr.store.installed import Installed


def register(commands: "Commands") -> "Commands":
    ext = commands.group("ext", "install and manage extensions",
                         "Install, inspect, verify and remove extensions in the global or a workspace scope.")

    p = ext.command("validate", cmd_validate, "validate an extension directory or archive",
                    "Validate an extension's manifest and bundles without installing it. Every problem is listed "
                    "with its file and key path; exit 3 when any is found.",
                    "pkgmgr ext validate ./my-extension\npkgmgr ext validate my-extension-0.1.0.tar.gz -o json")
    p.add_argument("path", metavar="PATH|ARCHIVE")
    host_option(p, "judge it by this host's rules", "from the manifest file")

    p = ext.command("new", cmd_new, "create a new extension from a template",
                    "Create ./NAME/ (or --path DIR) holding an extension that 'ext validate', 'ext pack' and "
                    "'ext install' accept as it is. Templates: resource (a skill and a hook), subprocess (a "
                    "command the host runs) and bundle (an agent, a channel and a job). docs/authoring.md "
                    "describes every field.",
                    "pkgmgr ext new my-extension\npkgmgr ext new my-crew --template bundle --path ./crew")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--template", metavar="TEMPLATE",
                   help="what the extension holds: for compozy resource (the default), subprocess or bundle; each "
                        "other host offers its own (the first is its default)")
    p.add_argument("--host", choices=host_names(), default=DEFAULT_HOST, metavar="HOST",
                   help=f"the host it is for: {spoken(host_names())} (default {DEFAULT_HOST})")
    p.add_argument("--path", metavar="DIR", help="directory to create (default ./NAME)")

    p = ext.command("pack", cmd_pack, "build a reproducible .tar.gz of an extension",
                    "Validate an extension directory and pack it into a reproducible archive: sorted entries under "
                    "one <name>-<version>/ directory, zeroed times and owners, normalised modes. Files matched "
                    "by .pkgmgrignore and VCS directories are left out.",
                    "pkgmgr ext pack ./my-extension\npkgmgr ext pack ./my-extension --output dist/my.tar.gz")
    p.add_argument("path", metavar="DIR")
    # dest differs from the global -o's "output": sharing it let `-o json` overwrite the file name
    p.add_argument("--output", dest="output_file", metavar="FILE|DIR",
                   help="archive to write, or a directory to write <name>-<version>.tar.gz into "
                        "(default ./<name>-<version>.tar.gz)")
    host_option(p, "judge it by this host's rules", "from the manifest file")
    p.add_argument("--release", metavar="VERSION",
                   help="the version an extension whose format carries none is packed as")

    p = ext.command("install", cmd_install, "install extensions",
                    "Install one or more extensions. A REF is NAME, NAME@VERSION, NAME@SPEC (PEP 440, e.g. "
                    "'review-pack@>=0.2,<0.4'), a path to a directory, .tar.gz, .tgz or .zip, "
                    "github:OWNER/REPO[@TAG] or an https:// archive URL. Sources other than a reviewed "
                    "registry need --allow-unverified (and --yes when nothing can ask).",
                    "pkgmgr ext install marketing-linear\n"
                    "pkgmgr ext install 'review-pack@>=0.1,<0.2' --pin\n"
                    "pkgmgr ext install ./my-extension --allow-unverified --yes\n"
                    "pkgmgr --scope workspace ext install ./tools/local-tool --allow-unverified --yes")
    p.add_argument("refs", nargs="+", metavar="REF")
    add_install_options(p)
    p.add_argument("--pin", action="store_true", help="hold this version: 'ext update' skips it")
    p.add_argument("--asset", metavar="NAME", help="GitHub release asset to install (exact name)")
    p.add_argument("--save", action="store_true",
                   help="install into the workspace and declare it in its pkgmgr.toml (comments kept)")
    host_option(p, "install it for this host", "from its manifest file or registry entry")
    trust_option(p)
    add_registry_option(p, "resolve names in this registry only")
    p.add_argument("--keep-going", action="store_true",
                   help="install the refs that succeed even when others fail (default: all or nothing)")

    p = ext.command("list", cmd_list, "list installed extensions",
                    "List installed extensions of every scope visible from here, with their SCOPE: inside a "
                    "workspace its own extensions beside the global ones it does not shadow. --scope global "
                    "narrows the list to the global scope.",
                    "pkgmgr ext list\npkgmgr --scope workspace ext list -o json\npkgmgr ext list --outdated",
                    aliases=("ls",))
    p.add_argument("--outdated", action="store_true",
                   help="only what has a newer allowed version (the table of 'ext update --all --check')")
    host_option(p, "only this host's extensions")

    p = ext.command("status", cmd_status, "show one installed extension",
                    "Show an installed extension: kind (resource or subprocess), provenance, tree checksum, "
                    "network digest, effective grants, missing environment variables, bundles, activations.",
                    "pkgmgr ext status review-pack\npkgmgr ext status prompt-enhancer --resolved -o json")
    p.add_argument("name")
    p.set_defaults(installed="name")  # did you mean: cli.app.suggest_installed
    p.add_argument("--resolved", action="store_true",
                   help="show commands with {{config_dir}} expanded and {{env:NAME}} as set/unset")
    host_option(p, "the host holding it, when two hosts hold the name")

    p = ext.command("verify", cmd_verify, "check an installed tree against its recorded checksum",
                    "Recompute the tree checksum of installed extensions and list added, removed and modified "
                    "files. Any difference exits 4 (tree_modified).",
                    "pkgmgr ext verify review-pack\npkgmgr ext verify --all")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.set_defaults(installed="names")
    p.add_argument("--all", action="store_true", help="verify every installed extension")
    host_option(p, "the host holding them")

    for name, enabled, text in (
            ("enable", True, ("Enable installed extensions that were disabled: their bundles can be activated "
                              "again and the host loads them. With --scope workspace, an install of the global scope whose "
                              "host turns extensions on or off per folder itself is enabled for the workspace folder "
                              "alone, as the host's own workspace scope does.")),
            ("disable", False, ("Disable installed extensions without removing them. Disabling is refused while "
                                "activations of their bundles exist, unless --deactivate removes them in the same "
                                "transaction. With --scope workspace, an install of the global scope whose host turns "
                                "extensions on or off per folder itself is disabled for the workspace folder alone."))):
        p = ext.command(name, cmd_enable if enabled else cmd_disable, f"{name} installed extensions", text,
                        f"pkgmgr ext {name} review-pack")
        p.add_argument("names", nargs="+", metavar="NAME")
        p.set_defaults(installed="names")
        if not enabled:
            p.add_argument("--deactivate", action="store_true", help="deactivate its bundle activations first")
        host_option(p, "the host holding them")
        trust_option(p)

    p = ext.command("remove", cmd_remove, "remove installed extensions",
                    "Remove installed extensions from the scope. Refused while activations of their bundles "
                    "exist, unless --deactivate removes them in the same transaction.",
                    "pkgmgr ext remove review-pack\npkgmgr ext remove marketing-linear --deactivate --dry-run",
                    aliases=("uninstall", "rm"))
    p.add_argument("names", nargs="+", metavar="NAME")
    p.set_defaults(installed="names")
    p.add_argument("--deactivate", action="store_true", help="deactivate its bundle activations first")
    p.add_argument("--dry-run", action="store_true", help="show what would be removed")
    p.add_argument("--save", action="store_true",
                   help="remove from the workspace and drop its declaration from pkgmgr.toml")
    host_option(p, "the host holding them")
    trust_option(p)
    return ext


# --- validate / pack / new ---------------------------------------------------------------------


def cmd_validate(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.lifecycle import validate

    validation = validate(user_path(args.path), args.host, config=ctx.config, shown=args.path)
    for warning in validation.warnings:
        ctx.warn(warning)

    def human(p: Printer) -> None:
        for line in validation.lines:  # a verdict is prose, wrapped on a terminal; its details are lines
            if line.startswith(" "):
                p.line(line)
            else:
                p.prose(line)

    return Output(validation.data, human)


def cmd_new(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.lifecycle import new

    target = user_path(args.path) if args.path else Path.cwd() / args.name
    created = new(args.name, host=args.host, template=args.template, target=target)
    data = {"name": created.name, "template": created.template, "host": created.host, "path": str(created.path),
            "files": created.files}

    def human(p: Printer) -> None:
        what = created.template if created.template != "extension" else created.host  # a host's only template
        p.line(f"created {what} extension {created.name} in {created.path}")
        p.lines(f"  {rel}" for rel in created.files)
        p.line(f"next: pkgmgr ext validate {created.path}")

    return Output(data, human)


def cmd_pack(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.lifecycle import pack

    packed = pack(user_path(args.path), args.host, release=args.release, output=args.output_file, config=ctx.config,
                  shown=args.path)
    return Output(packed.to_json(), lambda p: p.kv([("packed", packed.path), ("sha256", packed.sha256),
                                                    ("size", packed.size), ("host", packed.host)]))


# --- install ----------------------------------------------------------------------------------


def _planner(ctx: Context, args: argparse.Namespace) -> Any:
    from pkgmgr.cli.workspace_registries import session_for
    from pkgmgr.registry.plan import make_planner

    options = install_options(ctx, args)
    return make_planner(session_for(ctx, allow_expired=options.allow_expired, dry_run=options.dry_run), options=options,
                        asset=getattr(args, "asset", None), registry=getattr(args, "registry", None))


def _plans_remote(args: argparse.Namespace) -> bool:
    """Whether a ref of `ext install` is planned through the registries (a name, `github:`, a URL,
    or one `--registry` names): a batch of local paths is planned without importing them."""
    from pkgmgr.refs import parse_ref

    if getattr(args, "registry", None) is not None:
        return True
    for text in args.refs:
        try:
            if parse_ref(text).kind != "path":
                return True
        except PkgmgrError:
            return True  # reported by the install, as before
    return False


def installed_json(installed: Installed, **extra: Any) -> dict[str, Any]:
    return installed.entry(source=installed.source_kind, sha256=installed.sha256, verified=installed.verified,
                           **extra)


def cmd_install(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.install.pipeline import InstallRequest, install

    if args.save:
        ctx.scope = "workspace"  # --save declares in the workspace, so it installs there
    scope = target_scope(ctx, declares=args.save, refs=args.refs)
    if args.save:
        from pkgmgr.workspace.edit import check_saveable

        check_saveable(scope.workspace, args.refs)
    options = install_options(ctx, args)
    batch = install(InstallRequest(
        scope, args.refs, config=ctx.config, options=options,
        planner=_planner(ctx, args) if _plans_remote(args) else None,
        interactive=ctx.interactive, confirm=confirm_for(ctx), reporter=reporter_for(ctx),
        lock_timeout=ctx.lock_timeout, announce=announce_for(ctx), keep_going=args.keep_going,
    ))
    if args.save and not options.dry_run:
        from pkgmgr.workspace.edit import save_installed

        saved = save_installed(scope.workspace, ctx.home, batch.results, ctx.warn)
        if saved:
            ctx.note(f"declared {', '.join(saved)} in {scope.workspace / 'pkgmgr.toml'}")
            _save_lock(ctx, scope.workspace)
    return install_output(ctx, batch, scope.kind)


def _save_lock(ctx: Context, workspace: Path) -> None:
    """`--save` keeps pkgmgr.lock in step with pkgmgr.toml (SPEC 10), as `uv add` does."""
    from pkgmgr.workspace.sync import update_lock

    try:
        written = update_lock(workspace, home=ctx.home, config=ctx.config, offline=ctx.offline, warn=ctx.warn)
    except PkgmgrError as error:
        ctx.warn(f"pkgmgr.lock was not updated: {error.message.splitlines()[0]}; 'pkgmgr sync' updates it")
        return
    if written is None:
        ctx.warn("pkgmgr.lock was not updated: the workspace holds declared extensions not installed yet; "
                 "'pkgmgr sync' installs them and updates it")
    elif written:
        ctx.note(f"updated {workspace / 'pkgmgr.lock'}")


def install_output(ctx: Context, batch: Any, scope_kind: str) -> Output:
    data: dict[str, Any] = {"installed": [], "unchanged": [], "skipped": [], "failed": [], "activations": []}
    if any(r.status == "planned" for r in batch.results):
        data["planned"] = []
    for result in batch.results:
        if result.status == "failed":
            assert result.error is not None
            data["failed"].append({"ref": result.ref, "name": result.name, "error": result.error.to_json()})
        elif result.status == "planned":
            data["planned"].append({"ref": result.ref, **(result.summary or {})})
        elif result.status == "skipped":
            data["skipped"].append({"ref": result.ref, "name": result.name, "version": result.version,
                                    "reason": result.message})
        else:
            outcome = result.outcome
            entry = installed_json(outcome.installed, action=outcome.action, previous_version=outcome.previous_version,
                                   summary=result.summary)
            data["unchanged" if outcome.action == "unchanged" else "installed"].append(entry)
            data["activations"].extend(outcome.activations)
    error = batch.first_error
    awaiting = [a for a in data["activations"] if a.get("status") == "awaiting_confirmation"]
    if error is None and awaiting:
        from pkgmgr.activation.confirmation import confirmation_error

        error = confirmation_error(awaiting)

    def human(p: Printer) -> None:
        for result in batch.results:
            if result.status == "failed":
                continue
            if result.status == "skipped":
                p.done([result.message])
                continue
            if result.status == "planned":
                p.line(f"would install into the {scope_kind} scope:")
                p.lines(summary_lines(result.summary or {}))
                continue
            outcome = result.outcome
            inst = outcome.installed
            label = _named(inst)
            what = {"installed": f"installed {label}", "reinstalled": f"reinstalled {label}",
                    "switched": f"switched {inst.name} from {outcome.previous_version} to {inst.version or '-'}",
                    "unchanged": f"already installed: {label}"}[outcome.action]
            p.done([f"{what} ({inst.where}, {inst.source_kind}, "
                    f"{'verified' if inst.verified else 'unverified'})"])  # its summary came before
            p.notes(inst.notes)
        if data["activations"]:
            from pkgmgr.cli.activation_text import print_activations

            print_activations(p, data["activations"], error=error)
        failed = [r for r in batch.results if r.status == "failed"]
        if len(batch.results) > 1 and failed:
            for result in failed:
                p.line(f"failed {result.ref}: [{result.error.code}] {result.error.message.splitlines()[0]}")

    return Output(data, human, error)


# --- list / status / verify ---------------------------------------------------------------------


def cmd_list(ctx: Context, args: argparse.Namespace) -> Output:
    if args.outdated:
        from pkgmgr.cli.ext_remote_cmds import outdated

        return outdated(ctx)
    from pkgmgr.hosts.views import list_entry
    from pkgmgr.lifecycle import listed

    items = listed(visible_scopes(ctx), args.host)
    data = {"extensions": [list_entry(i) for i in items]}

    def human(p: Printer) -> None:
        if not items:
            p.line("no extensions installed")
            return
        p.table(["NAME", "VERSION", "HOST", "SCOPE", "ENABLED", "SOURCE", "VERIFIED"],
                [(i.name, (i.version or "-") + (" (pinned)" if i.pinned else ""), i.host, i.scope,
                  "yes" if i.enabled else "no", "linked" if i.linked else i.source_kind,
                  "yes" if i.verified else "no") for i in items])

    return Output(data, human)


def cmd_status(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.lifecycle import find_one, status

    scopes = visible_scopes(ctx)
    item = find_one(scopes, args.name, args.host)
    data = status(item, scopes, config=ctx.config, home=ctx.home, resolved=args.resolved, warn=ctx.warn)

    def human(p: Printer) -> None:
        prov = data["provenance"]
        p.kv([
            ("name", item.name), *([] if item.in_store else [("host", item.host)]),
            ("version", (item.version or "-") + (" (pinned)" if item.pinned else "")),
            ("scope", item.scope), ("enabled", "yes" if item.enabled else "no"), ("kind", data["kind"]),
            *([("compozy", ", ".join(data["generations"]))] if "generations" in data else []),
            ("path", item.directory),
            ("source", f"{prov['source']} {prov['locator']}" + (f" (registry {prov['registry']})" if prov["registry"]
                                                                  and prov["registry"] != prov["locator"] else "")),
            ("verified", "yes" if item.verified else "no"),
            ("signed", "yes" if prov["signed"] else "no"),
            *([("root sha256", prov["root_sha256"])] if prov["signed"] else []),
            ("sha256", item.sha256 or "-"),
            ("tree sha256", item.tree_sha256),
            ("network digest", item.network_digest or "(none)"),
            ("grants" if item.in_store else "capabilities", ", ".join(item.grants) or "(none)"),
            ("missing env", ", ".join(data["missing_env"]) or "(none)"),
            ("installed", f"{item.installed_at} by {item.installed_by}"),
            *([("linked", f"{item.linked} (the host loads this folder as it is)")] if item.linked else []),
            ("previous", _kept_line(data["previous"])),
            *([("skills", ", ".join(data["skills"]))] if data.get("skills") else []),
            *([("approved hash", data["trust"]["approved_hash"] or "(none)"),
               ("content hash", data["trust"]["content_hash"])] if "trust" in data else []),
        ])
        if data.get("hooks"):
            p.line()
            p.table(["HOOK", "EVENT", "MODE", "COMMAND"],
                    [(h["name"], h["event"], h["mode"], h["command"]) for h in data["hooks"]])
        if data.get("mcp_servers"):
            p.line()
            p.table(["MCP SERVER", "COMMAND"], [(m["name"], m["command"]) for m in data["mcp_servers"]])
        if data["bundles"]:
            p.line()
            p.table(["BUNDLE", "PROFILES"], [(b["name"], ", ".join(b["profiles"])) for b in data["bundles"]])
        if "commands" in data:
            p.line()
            p.table(["KEY", "COMMAND"], [(c["key"], " ".join([c["command"], *c["args"]])) for c in data["commands"]])
        if data["activations"]:
            from pkgmgr.cli.activation_text import print_activations

            p.line()
            print_activations(p, data["activations"])

    return Output(data, human)


def _kept_line(kept: dict[str, Any] | None) -> str:
    """`ext status`'s line about the install kept for `ext rollback`."""
    if kept is None:
        return "(none kept)"
    return f"{kept['version'] or '-'} ({kept['source']}, kept at {kept['path']})"


def cmd_verify(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.lifecycle import find_one, listed, verify

    scopes = visible_scopes(ctx)
    if args.all:
        items = listed(scopes, args.host)
    elif args.names:
        items = [find_one(scopes, name, args.host) for name in dict.fromkeys(args.names)]
    else:
        raise PkgmgrError("name the extensions to verify, or pass --all", code=Code.USAGE)
    results, error = verify(items)
    first_bad = next((i for i, r in zip(items, results, strict=True) if not r["ok"]), None)
    if error is not None and error.hint and first_bad is not None and first_bad.scope == "workspace":
        # the reinstall goes where the install is (doctor words it the same way)
        error.hint = error.hint.replace("'pkgmgr ext install", "'pkgmgr --scope workspace ext install")

    def human(p: Printer) -> None:
        for item, r in zip(items, results, strict=True):
            if r.get("skipped") == "linked":
                p.line(f"{item.label}: skipped (linked to {item.linked}, which the host loads as it is)")
                continue
            print_tree_report(p, item.label, r, "its directory is gone")
            if not r.get("missing") and not r["ok"] and not (r["added"] or r["removed"] or r["modified"]):
                p.line(f"  tree checksum {r['tree_sha256']}, recorded {r['recorded_tree_sha256']}")

    return Output({"verified": results}, human, error)


# --- enable / disable / remove -------------------------------------------------------------------


def _named(item: Installed) -> str:
    """An install's name and version (none for an extension whose format carries no version)."""
    return " ".join(part for part in (item.name, item.version) if part)


def _change(ctx: Context, args: argparse.Namespace) -> Any:
    from pkgmgr.lifecycle import Change

    deactivate = bool(vars(args).get("deactivate"))  # `ext enable` has no --deactivate
    return Change(deactivate=deactivate, approve_host_trust=args.approve_host_trust,
                  approve_host_trust_all=args.approve_host_trust_all, lock_timeout=ctx.lock_timeout)


def _done_output(verb: str, done: Done) -> Output:
    entries = [item.entry(**({"enabled": item.enabled} if verb != "removed" else {}))
               for item in done.changed]
    data = {verb: entries, "deactivated": done.deactivated}

    def human(p: Printer) -> None:
        p.done([f"{verb} {_named(i)} ({i.where})" for i in done.changed]
               + [f"deactivated {a['id']}" for a in done.deactivated])
        p.notes(line for item in done.changed for line in item.notes)

    return Output(data, human, done.error)


def _set_enabled(ctx: Context, args: argparse.Namespace, enabled: bool) -> Output:
    from pkgmgr.lifecycle import per_folder, set_enabled, set_enabled_in

    if ctx.scope == "workspace":  # an install of the global scope whose host enables it per folder
        from pkgmgr.store.scope import global_scope

        here = target_scope(ctx, read=True)
        home = global_scope(ctx.home)
        if per_folder(here, home, args.names, args.host):
            assert here.workspace is not None
            done = set_enabled_in(home, args.names, enabled, folder=here.workspace, host=args.host,
                                  change=_change(ctx, args))
            return _done_output("enabled" if enabled else "disabled", done)
    done = set_enabled(target_scope(ctx), args.names, enabled, host=args.host, change=_change(ctx, args))
    return _done_output("enabled" if enabled else "disabled", done)


def cmd_enable(ctx: Context, args: argparse.Namespace) -> Output:
    return _set_enabled(ctx, args, True)


def cmd_disable(ctx: Context, args: argparse.Namespace) -> Output:
    return _set_enabled(ctx, args, False)


def cmd_remove(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.lifecycle import plan_remove, remove

    if args.save:
        from pkgmgr.workspace.edit import check_saveable

        ctx.scope = "workspace"
    scope = target_scope(ctx)
    if args.save:
        check_saveable(scope.workspace)
    if args.dry_run:
        plan = plan_remove(scope, args.names, host=args.host)
        planned = [{"name": item.name, "version": item.version or None, "scope": scope.kind, **item.located(),
                    "activations": activations} for item, activations in plan]
        return Output({"planned": planned}, lambda p: p.lines(
            f"would remove {_named(item)} ({item.where})"
            + (f" and deactivate {len(activations)} activation(s)" if activations else "") for item, activations in plan))
    done = remove(scope, args.names, host=args.host, change=_change(ctx, args))
    if args.save:
        from pkgmgr.workspace.edit import save_removed

        dropped = save_removed(scope.workspace, ctx.home, [item.name for item in done.changed])
        if dropped:
            ctx.note(f"dropped {', '.join(dropped)} from {scope.workspace / 'pkgmgr.toml'}")
            _save_lock(ctx, scope.workspace)
    return _done_output("removed", done)
