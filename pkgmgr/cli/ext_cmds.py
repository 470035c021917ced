"""`pkgmgr ext ...`: validate, pack, install, list, status, verify, enable/disable, remove."""

from __future__ import annotations

import argparse
import os
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
from pkgmgr.errors import Code, PkgmgrError, suggest_close
from pkgmgr.fsutil import user_path

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.store.installed import Installed


def register(commands: "Commands") -> "Commands":
    ext = commands.group("ext", "install and manage extensions",
                         "Install, inspect, verify and remove extensions in the global or a workspace scope.")

    p = ext.command("validate", cmd_validate, "validate an extension directory or archive",
                    "Validate an extension's manifest and bundles without installing it. Every problem is listed "
                    "with its file and key path; exit 3 when any is found.",
                    "pkgmgr ext validate ./my-extension\npkgmgr ext validate my-extension-0.1.0.tar.gz -o json")
    p.add_argument("path", metavar="PATH|ARCHIVE")
    host_option(p, "judge it by this host's rules")

    p = ext.command("new", cmd_new, "create a new extension from a template",
                    "Create ./NAME/ (or --path DIR) holding an extension that 'ext validate', 'ext pack' and "
                    "'ext install' accept as it is. Templates: resource (a skill and a hook), subprocess (a "
                    "command the host runs) and bundle (an agent, a channel and a job). docs/authoring.md "
                    "describes every field.",
                    "pkgmgr ext new my-extension\npkgmgr ext new my-crew --template bundle --path ./crew")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--template", choices=("resource", "subprocess", "bundle"), default="resource",
                   help="what the extension holds (default resource)")
    p.add_argument("--host", choices=("compozy",), default="compozy", help="the host it is for (default compozy)")
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
    host_option(p, "judge it by this host's rules")
    p.add_argument("--release", metavar="VERSION", help="the version an Eva extension (which carries none) is packed as")

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
    host_option(p, "install it for this host (default: from its manifest file or registry entry)")
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
                              "again and the host loads them.")),
            ("disable", False, ("Disable installed extensions without removing them. Disabling is refused while "
                                "activations of their bundles exist, unless --deactivate removes them in the same "
                                "transaction."))):
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


# --- validate / pack ---------------------------------------------------------------------------


def cmd_validate(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli import host_cmds
    from pkgmgr.validation import validate_extension

    hosted = host_cmds.validate(ctx, args)  # another host's extension (SPEC 13)
    if hosted is not None:
        return hosted
    validated = validate_extension(user_path(args.path), ctx.config, shown=args.path)
    manifest, bundles, warnings = validated.manifest, validated.bundles, validated.warnings
    for warning in warnings:
        ctx.warn(warning)
    data = {
        "valid": True,
        "generations": list(manifest.generations),
        "name": manifest.name,
        "version": manifest.version,
        "kind": manifest.kind,
        "network_digest": manifest.network_digest,
        "bundles": [{"name": b.name, "profiles": [p.name for p in b.profiles]} for b in bundles],
        "warnings": warnings,
    }
    profiles = sum(len(b.profiles) for b in bundles)
    return Output(data, f"{args.path}: {manifest.name} {manifest.version} is valid "
                        f"({manifest.kind}, {len(bundles)} bundle(s), {profiles} profile(s); "
                        f"loads in Compozy {', '.join(manifest.generations)})")


def cmd_new(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli.scaffold import cmd_new as new

    return new(ctx, args)


def cmd_pack(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.archive import pack_directory
    from pkgmgr.bundles.extension import read_extension
    from pkgmgr.cli import host_cmds

    hosted = host_cmds.pack(ctx, args)  # another host's extension (SPEC 13)
    if hosted is not None:
        return hosted
    root = user_path(args.path)
    if not os.path.isdir(root):
        raise PkgmgrError(f"{args.path}: not a directory", code=Code.NOT_FOUND)
    manifest, _ = read_extension(root, ctx.config)
    default_name = f"{manifest.name}-{manifest.version}.tar.gz"
    output = user_path(args.output_file) if args.output_file else Path.cwd() / default_name
    if os.path.isdir(output) or (args.output_file or "").endswith(os.sep):
        output = output / default_name  # an existing directory (or DIR/) receives the archive, as cp does
    result = pack_directory(root, manifest.name, manifest.version, output)
    data = {"name": manifest.name, "version": manifest.version, "path": str(result.path),
            "sha256": result.sha256, "size": result.size}
    return Output(data, lambda p: p.kv([("packed", result.path), ("sha256", result.sha256), ("size", result.size)]))


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


def installed_json(installed: "Installed", **extra: Any) -> dict[str, Any]:
    return {
        "name": installed.name,
        "version": installed.version or None,  # None: an Eva extension installed from a path names none
        "scope": installed.scope,
        "source": installed.source_kind,
        "sha256": installed.sha256,
        "verified": installed.verified,
        **({"host": installed.host, "path": str(installed.directory), "notes": list(installed.notes)}
           if hasattr(installed, "host") else {}),
        **({"trust": installed.trust} if getattr(installed, "trust", None) else {}),
        **extra,
    }


def cmd_install(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.install.pipeline import install

    if args.save:
        ctx.scope = "workspace"  # --save declares in the workspace, so it installs there
    scope = target_scope(ctx, declares=args.save, refs=args.refs)
    if args.save:
        from pkgmgr.workspace.edit import check_saveable

        check_saveable(scope.workspace, args.refs)
    options = install_options(ctx, args)
    batch = install(
        scope, args.refs, config=ctx.config, options=options,
        planner=_planner(ctx, args) if _plans_remote(args) else None,
        interactive=ctx.interactive, confirm=confirm_for(ctx), reporter=reporter_for(ctx),
        lock_timeout=ctx.lock_timeout, announce=announce_for(ctx), keep_going=args.keep_going,
    )
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
            where = f"{inst.host}, {inst.directory}" if hasattr(inst, "host") else f"{scope_kind} scope"
            label = " ".join(part for part in (inst.name, inst.version) if part)
            what = {"installed": f"installed {label}", "reinstalled": f"reinstalled {label}",
                    "switched": f"switched {inst.name} from {outcome.previous_version} to {inst.version or '-'}",
                    "unchanged": f"already installed: {label}"}[outcome.action]
            p.done([f"{what} ({where}, {inst.source_kind}, "
                    f"{'verified' if inst.verified else 'unverified'})"])  # its summary came before
            p.lines(getattr(inst, "notes", ()))
        if data["activations"]:
            from pkgmgr.cli.activation_text import activation_lines

            p.lines(activation_lines(data["activations"]))
        failed = [r for r in batch.results if r.status == "failed"]
        if len(batch.results) > 1 and failed:
            for result in failed:
                p.line(f"failed {result.ref}: [{result.error.code}] {result.error.message.splitlines()[0]}")

    return Output(data, human, error)


# --- list / status / verify ---------------------------------------------------------------------


def _visible(ctx: Context) -> list["Installed"]:
    """Installed extensions visible in the chosen scope, workspace ones shadowing global ones."""
    from pkgmgr.store.switch import list_installed

    seen: dict[str, Installed] = {}
    for scope in visible_scopes(ctx):
        for item in list_installed(scope):
            seen.setdefault(item.name, item)
    return [seen[name] for name in sorted(seen)]


def find_installed(ctx: Context, name: str) -> "Installed":
    from pkgmgr.store.switch import get_installed

    for scope in visible_scopes(ctx):
        item = get_installed(scope, name)
        if item is not None:
            return item
    where = "workspace or global" if ctx.scope == "workspace" else "global"
    error = PkgmgrError(f"{name} is not installed in the {where} scope", code=Code.NOT_FOUND)
    suggest_close(error, name, [i.name for i in _visible(ctx)])
    if "suggestions" not in error.details:
        error.hint = f"'pkgmgr ext list' shows what is installed, 'pkgmgr ext search {name}' what the registries offer"
    raise error


def cmd_list(ctx: Context, args: argparse.Namespace) -> Output:
    if args.outdated:
        from pkgmgr.cli.ext_remote_cmds import outdated

        return outdated(ctx)
    host = getattr(args, "host", None)
    items: list[Any] = _visible(ctx) if host in (None, "compozy") else []
    data = {"extensions": [
        {"name": i.name, "version": i.version, "scope": i.scope, "enabled": i.enabled, "source": i.source_kind,
         "verified": i.verified, "path": str(i.directory), "pinned": i.pinned, "host": "compozy"}
        for i in items
    ]}
    if host != "compozy":  # what pkgmgr manages in the other hosts' folders (SPEC 13)
        from pkgmgr.hosts import records

        hosted = records.visible(visible_scopes(ctx), host)
        data["extensions"].extend(records.list_entry(r) for r in hosted)
        items.extend(hosted)

    def human(p: Printer) -> None:
        if not items:
            p.line("no extensions installed")
            return
        p.table(["NAME", "VERSION", "HOST", "SCOPE", "ENABLED", "SOURCE", "VERIFIED"],
                [(i.name, (i.version or "-") + (" (pinned)" if i.pinned else ""), getattr(i, "host", "compozy"),
                  i.scope, "yes" if i.enabled else "no", i.source_kind, "yes" if i.verified else "no")
                 for i in items])

    return Output(data, human)


def cmd_status(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli import host_cmds
    from pkgmgr.status import status_document

    hosted = host_cmds.status(ctx, args)  # another host's install (SPEC 13)
    if hosted is not None:
        return hosted
    item = find_installed(ctx, args.name)
    scope = next(s for s in visible_scopes(ctx) if s.kind == item.scope)
    data = status_document(item, scope, config=ctx.config, home=ctx.home, resolved=args.resolved, warn=ctx.warn)

    def human(p: Printer) -> None:
        prov = item.provenance()
        p.kv([
            ("name", item.name), ("version", item.version + (" (pinned)" if item.pinned else "")),
            ("scope", item.scope), ("enabled", "yes" if item.enabled else "no"), ("kind", data["kind"]),
            ("compozy", ", ".join(data["generations"])),
            ("path", item.directory),
            ("source", f"{prov['source']} {prov['locator']}" + (f" (registry {prov['registry']})" if prov["registry"] else "")),
            ("verified", "yes" if item.verified else "no"),
            ("signed", f"yes (root {data['provenance']['root_sha256']})" if data["provenance"]["signed"] else "no"),
            ("sha256", item.sha256 or "-"),
            ("tree sha256", item.tree_sha256),
            ("network digest", item.network_digest or "(none)"),
            ("grants", ", ".join(item.grants) or "(none)"),
            ("missing env", ", ".join(data["missing_env"]) or "(none)"),
            ("installed", f"{item.installed_at} by {item.installed_by}"),
            *([("skills", ", ".join(data["skills"]))] if data["skills"] else []),
        ])
        if data["hooks"]:
            p.line()
            p.table(["HOOK", "EVENT", "MODE", "COMMAND"],
                    [(h["name"], h["event"], h["mode"], h["command"]) for h in data["hooks"]])
        if data["mcp_servers"]:
            p.line()
            p.table(["MCP SERVER", "COMMAND"], [(m["name"], m["command"]) for m in data["mcp_servers"]])
        if data["bundles"]:
            p.line()
            p.table(["BUNDLE", "PROFILES"], [(b["name"], ", ".join(b["profiles"])) for b in data["bundles"]])
        if "commands" in data:
            p.line()
            p.table(["KEY", "COMMAND"], [(c["key"], " ".join([c["command"], *c["args"]])) for c in data["commands"]])
        if data["activations"]:
            from pkgmgr.cli.activation_text import activation_lines

            p.line()
            p.lines(activation_lines(data["activations"]))

    return Output(data, human)


def cmd_verify(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli import host_cmds
    from pkgmgr.store.verify import verify_installed

    hosted = host_cmds.verify(ctx, args, cmd_verify)  # other hosts' installs (SPEC 13)
    if hosted is not None:
        return hosted
    if args.all:
        items = _visible(ctx)
    elif args.names:
        items = [find_installed(ctx, name) for name in args.names]
    else:
        raise PkgmgrError("name the extensions to verify, or pass --all", code=Code.USAGE)
    results, error = verify_installed(items)
    first_bad = next((i for i, r in zip(items, results) if not r["ok"]), None)
    if error is not None and error.hint and first_bad is not None and first_bad.scope == "workspace":
        # the reinstall goes where the install is (doctor words it the same way)
        error.hint = error.hint.replace("'pkgmgr ext install", "'pkgmgr --scope workspace ext install")

    def human(p: Printer) -> None:
        for r in results:
            print_tree_report(p, f"{r['name']} {r['version']}", r, "its directory is gone")
            if not r.get("missing") and not r["ok"] and not (r["added"] or r["removed"] or r["modified"]):
                p.line(f"  tree checksum {r['tree_sha256']}, recorded {r['recorded_tree_sha256']}")

    return Output({"verified": results}, human, error)


# --- enable / disable / remove -------------------------------------------------------------------


def _set_enabled(ctx: Context, args: argparse.Namespace, enabled: bool) -> Output:
    from pkgmgr.cli import host_cmds
    from pkgmgr.install.scope_destination import set_enabled_each

    hosted = host_cmds.set_enabled(ctx, args, enabled, cmd_enable if enabled else cmd_disable)  # other hosts' installs (SPEC 13)
    if hosted is not None:
        return hosted
    done, activations, error = set_enabled_each(target_scope(ctx), args.names, enabled,
                                                deactivate=getattr(args, "deactivate", False),
                                                timeout=ctx.lock_timeout)
    verb = "enabled" if enabled else "disabled"
    data = {verb: done, "deactivated": activations}
    return Output(data, lambda p: p.done([f"{verb} {d['name']} {d['version']} ({d['scope']} scope)" for d in done]
                                          + [f"deactivated {a['id']}" for a in activations]), error)


def cmd_enable(ctx: Context, args: argparse.Namespace) -> Output:
    return _set_enabled(ctx, args, True)


def cmd_disable(ctx: Context, args: argparse.Namespace) -> Output:
    return _set_enabled(ctx, args, False)


def cmd_remove(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli import host_cmds
    from pkgmgr.install.scope_destination import plan_remove, remove_each

    hosted = host_cmds.remove(ctx, args, cmd_remove)  # other hosts' installs (SPEC 13)
    if hosted is not None:
        return hosted
    if args.save:
        from pkgmgr.workspace.edit import check_saveable

        ctx.scope = "workspace"
    scope = target_scope(ctx)
    if args.save:
        check_saveable(scope.workspace)
    if args.dry_run:
        planned = plan_remove(scope, args.names)
        return Output({"planned": planned}, lambda p: p.lines(
            f"would remove {d['name']} {d['version']} ({d['scope']} scope)"
            + (f" and deactivate {len(d['activations'])} activation(s)" if d["activations"] else "")
            for d in planned))
    removed, deactivated, error = remove_each(scope, args.names, deactivate=args.deactivate, timeout=ctx.lock_timeout)
    if args.save:
        from pkgmgr.workspace.edit import save_removed

        dropped = save_removed(scope.workspace, ctx.home, [r["name"] for r in removed])
        if dropped:
            ctx.note(f"dropped {', '.join(dropped)} from {scope.workspace / 'pkgmgr.toml'}")
            _save_lock(ctx, scope.workspace)
    data = {"removed": removed, "deactivated": deactivated}
    return Output(data, lambda p: p.done([f"removed {r['name']} {r['version']} ({r['scope']} scope)" for r in removed]
                                          + [f"deactivated {a['id']}" for a in deactivated]), error)
