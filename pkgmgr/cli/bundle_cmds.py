"""`pkgmgr bundle ...` and `pkgmgr resources list`: operate bundle activations."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pkgmgr.activation.ids import RESOURCE_PREFIXES
from pkgmgr.cli.context import Context, target_scope, visible_scopes
from pkgmgr.cli.output import Output, Printer

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands

RESOURCE_KINDS = tuple(RESOURCE_PREFIXES)  # agent, agent.soul, agent.heartbeat, channel, job, trigger, window_layout


def register(commands: "Commands") -> None:
    bundle = commands.group("bundle", "preview, activate and confirm bundle profiles",
                            "Project bundle profiles of installed extensions into the global or a workspace scope. "
                            "TARGET is EXT[:BUNDLE[/PROFILE]]; the bundle defaults to the extension's only one, the "
                            "profile to 'default'. An activation lives in the scope its extension is installed in. "
                            "ACT ids are matched case-insensitively; show, confirm and deactivate look in the "
                            "chosen scope first, then (from a workspace) in global.")
    p = bundle.command("preview", cmd_preview, "show what activating a profile would do (writes nothing)",
                       "Resolve and validate a profile in the chosen scope and show the activation id, the network "
                       "and activation digests, the inventory, conflicts and whether confirmation will be needed.",
                       "pkgmgr bundle preview marketing-linear\n"
                       "pkgmgr --scope workspace bundle preview marketing-linear:marketing-linear/lean -o json")
    p.add_argument("target", metavar="TARGET")
    p.set_defaults(installed="target")  # did you mean: cli.app.suggest_installed

    p = bundle.command("activate", cmd_activate, "activate a profile",
                       "Create the activation at version 1. Without a network requirement it is active at once. "
                       "With one, pass the digest shown by 'bundle preview' as --confirm-network-requirement to "
                       "activate and confirm in one step; without it the activation awaits confirmation (exit 8) "
                       "and nothing is projected.",
                       "pkgmgr bundle activate marketing-linear\n"
                       "pkgmgr bundle activate marketing-linear --confirm-network-requirement 884e12e9... --as alice")
    p.add_argument("target", metavar="TARGET")
    p.set_defaults(installed="target")
    p.add_argument("--confirm-network-requirement", metavar="DIGEST",
                   help="the network requirement digest you reviewed (from 'bundle preview')")
    p.add_argument("--as", dest="as_name", metavar="NAME", help="who confirms (default: the login user)")

    p = bundle.command("confirm", cmd_confirm, "confirm an activation's network requirement at a version",
                       "Confirm the network requirement of the activation's current version and project its "
                       "resources. --expected-version must equal the current version (stale_version otherwise), "
                       "so you confirm exactly what you read.",
                       "pkgmgr bundle confirm act_0123456789abcdef --expected-version 2 --as alice")
    p.add_argument("activation", metavar="ACT")
    p.add_argument("--expected-version", type=int, required=True, metavar="N", help="the version you reviewed")
    p.add_argument("--as", dest="as_name", metavar="NAME", help="who confirms (default: the login user)")

    p = bundle.command("show", cmd_show, "show an activation and its resources",
                       "Show an activation: version, status, both digests, who confirmed which digest when, and "
                       "the resources it projects.", "pkgmgr bundle show act_0123456789abcdef")
    p.add_argument("activation", metavar="ACT")

    p = bundle.command("list", cmd_list, "list activations",
                       "List the activations of the scope (a workspace also shows the global ones).",
                       "pkgmgr bundle list\npkgmgr bundle list --status awaiting_confirmation -o json")
    p.add_argument("--status", choices=("active", "awaiting_confirmation"), help="only activations in this status")

    p = bundle.command("deactivate", cmd_deactivate, "deactivate an activation",
                       "Delete the activation and every resource it owns, in one transaction.",
                       "pkgmgr bundle deactivate act_0123456789abcdef")
    p.add_argument("activation", metavar="ACT")

    resources = commands.group("resources", "list projected resources",
                               "Inspect the resource catalog that activations project into a scope.")
    p = resources.command("list", cmd_resources, "list projected resources",
                          "List the resources projected into the scope (a workspace also shows the global ones): "
                          "id, kind, name, scope, owning activation, digest and source path.",
                          "pkgmgr resources list\npkgmgr resources list --kind agent -o json")
    p.add_argument("--kind", choices=RESOURCE_KINDS, metavar="KIND",
                   help=f"only resources of this kind: {', '.join(RESOURCE_KINDS)}")


def _schedule_text(schedule: dict[str, Any]) -> str:
    mode = schedule.get("mode")
    fields: dict[Any, str] = {"cron": "expr", "every": "interval", "at": "time"}
    value = schedule.get(fields.get(mode, ""), "")
    return f"{mode} {value}".strip()


def render_inventory(p: Printer, inventory: dict[str, Any]) -> None:
    if inventory["agents"]:
        p.line()
        p.table(["AGENT", "MODEL", "SOUL", "HEARTBEAT", "PATH"],
                [(a["name"], a["model"] or "-", "yes" if a["soul"] else "no", "yes" if a["heartbeat"] else "no",
                  a["path"]) for a in inventory["agents"]])
    channels = inventory["channels"]
    if channels["items"]:
        p.line()
        p.table(["CHANNEL", "PRIMARY", "DESCRIPTION"],
                [(c["name"], "yes" if c["name"] == channels["primary"] else "", c["description"])
                 for c in channels["items"]])
    if inventory["jobs"]:
        p.line()
        p.table(["JOB", "AGENT", "SCHEDULE", "ENABLED"],
                [(j["name"], j["agent"], _schedule_text(j["schedule"]), "yes" if j["enabled"] else "no")
                 for j in inventory["jobs"]])
    if inventory["triggers"]:
        p.line()
        p.table(["TRIGGER", "AGENT", "EVENT"], [(t["name"], t["agent"], t["event"]) for t in inventory["triggers"]])
    if inventory["layouts"]:
        p.line()
        p.table(["LAYOUT", "DISPLAY NAME", "PATH"],
                [(lay["id"], lay["display_name"], lay["path"]) for lay in inventory["layouts"]])


def cmd_preview(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.activation.confirmation import scope_options
    from pkgmgr.activation.preview import preview_activation

    scope = target_scope(ctx)
    preview = preview_activation(scope, args.target, config=ctx.config)
    data = preview.document
    resolved, existing, findings = preview.resolved, preview.existing, preview.findings
    projection = resolved.projection
    needs_confirmation = preview.needs_confirmation
    command = f"pkgmgr{scope_options(scope.kind, scope.workspace_path)} bundle activate {args.target}"

    def human(p: Printer) -> None:
        state = f" (already activated: version {existing['version']}, {existing['status']})" if existing else ""
        p.kv([
            ("activation", projection.activation_id + state),
            ("target", f"{resolved.installed.name} {resolved.installed.version}: bundle {projection.bundle}, "
                       f"profile {projection.profile}"),
            ("scope", scope.kind + (f" ({scope.workspace_path})" if scope.workspace_path else "")),
            ("network digest", projection.network_digest or "(none)"),
            ("activation digest", projection.activation_digest),
            ("resources", _resource_counts(projection.resources)),
        ])
        render_inventory(p, data["inventory"])
        p.line()
        for finding in findings:
            p.line(f"conflict [{finding.code}]: {finding.message}")
        requirement = data["network_requirement"]
        if needs_confirmation:
            scopes = ", ".join(requirement.get("channel_scopes", [])) if requirement else ""
            p.prose(f"confirmation required: this profile needs live network participation "
                    f"(channel scopes: {scopes or 'none'}); review it, then confirm digest {projection.network_digest}")
        elif existing is not None:
            p.line(f"no confirmation needed: it is {existing['status']}")
        else:
            p.line("no confirmation needed: activating projects the resources at once")
        if existing is not None:
            p.line(f"already activated; 'pkgmgr bundle show {existing['id']}' shows it")
        elif findings:
            p.line("activation would fail until the conflicts above are resolved")
        elif needs_confirmation:
            p.suggest("to activate and confirm:", f"{command} --confirm-network-requirement {projection.network_digest}")
        else:
            p.line(f"to activate: {command}")

    return Output(data, human)


def _resource_counts(resources: Any) -> str:
    counts: dict[str, int] = {}
    for resource in resources:
        counts[resource.kind] = counts.get(resource.kind, 0) + 1
    detail = ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items()))
    return f"{len(resources)}" + (f" ({detail})" if detail else "")


def _activation_output(scope: Any, activation: dict[str, Any], resources: list[dict[str, Any]], headline: str,
                       error: Any = None) -> Output:
    """`bundle show|activate|confirm`: the activation with what the operator reviews (its network
    requirement, compared with what was confirmed) and its resources. The confirm command is
    printed once: by the error when there is one (activate's exit 8), else below the block."""
    from pkgmgr.activation.confirmation import confirm_command
    from pkgmgr.activation.preview import review
    from pkgmgr.cli.activation_text import activation_pairs

    reviewed = review(scope, activation)

    def human(p: Printer) -> None:
        if headline:
            p.line(headline)
        p.kv(activation_pairs(activation, reviewed))
        if resources:
            p.line()
            p.table(["KIND", "NAME", "ID", "DIGEST", "SOURCE"],
                    [(r["kind"], r["name"], r["id"], r["digest"][:16], r["source_path"]) for r in resources])
        elif activation["status"] == "awaiting_confirmation":
            p.line()
            if error is not None:
                p.line("nothing is projected until the activation is confirmed (the command is below)")
            else:
                p.line("nothing is projected until the activation is confirmed; after reviewing it run:")
                p.line(f"  {confirm_command(activation)}")

    return Output({"activation": activation, "resources": resources, **reviewed}, human, error)


def cmd_activate(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.activation.confirmation import confirmation_error
    from pkgmgr.activation.lifecycle import AWAITING, Target, activate

    scope = target_scope(ctx)
    activation, resources = activate(scope, Target.parse(args.target), config=ctx.config,
                                     confirm_digest=args.confirm_network_requirement, lock_timeout=ctx.lock_timeout,
                                     confirmed_by=args.as_name)
    error = confirmation_error([activation]) if activation["status"] == AWAITING else None
    headline = (f"activated {activation['id']}: {len(resources)} resource(s) projected" if error is None
                else f"created {activation['id']}, awaiting confirmation of its network requirement")
    return _activation_output(scope, activation, resources, headline, error)


def cmd_confirm(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.activation.lifecycle import confirm

    scope = _find_scope_of(ctx, args.activation)
    activation, resources, changed = confirm(scope, args.activation, expected_version=args.expected_version,
                                             confirmed_by=args.as_name, config=ctx.config,
                                             lock_timeout=ctx.lock_timeout)
    headline = (f"confirmed {activation['id']} version {activation['version']}: {len(resources)} resource(s) "
                "projected" if changed else f"{activation['id']} version {activation['version']} was already confirmed")
    return _activation_output(scope, activation, resources, headline)


def _find_scope_of(ctx: Context, act_id: str) -> Any:
    """The visible scope holding `act_id` (nearest first), else the target scope (whose lookup
    then reports not_found)."""
    from pkgmgr.activation.lifecycle import get_activation

    for scope in visible_scopes(ctx):
        if get_activation(scope.reader(), act_id) is not None:
            return scope
    return target_scope(ctx)


def cmd_show(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.activation.lifecycle import activation_json, require_activation, resources_of

    scope = _find_scope_of(ctx, args.activation)
    row = require_activation(scope, args.activation)
    return _activation_output(scope, activation_json(row), resources_of(scope.db, row["id"], scope.kind), "")


def cmd_list(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.activation.lifecycle import list_activations

    items = [a for scope in visible_scopes(ctx) for a in list_activations(scope, status=args.status)]

    def human(p: Printer) -> None:
        if not items:
            p.line("no activations")
            return
        p.records(["ID", "EXTENSION", "BUNDLE/PROFILE", "SCOPE", "VERSION", "STATUS", "CONFIRMED"],
                  [(a["id"], f"{a['extension']} {a['extension_version']}", f"{a['bundle']}/{a['profile']}", a["scope"],
                    a["version"], a["status"], _confirmed_cell(a)) for a in items])

    return Output({"activations": items}, human)


def _confirmed_cell(a: dict[str, Any]) -> str:
    if a.get("confirmed_at"):
        return f"v{a['confirmed_version']} by {a['confirmed_by']}"
    return "no" if a["status"] == "awaiting_confirmation" else "-"


def cmd_deactivate(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.activation.lifecycle import deactivate

    scope = _find_scope_of(ctx, args.activation)
    activation, resources = deactivate(scope, args.activation, lock_timeout=ctx.lock_timeout)
    return Output({"deactivated": activation, "activation": activation, "resources": resources},
                  f"deactivated {activation['id']} and removed {len(resources)} resource(s)")


def cmd_resources(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.activation.lifecycle import list_resources

    items = list_resources(visible_scopes(ctx), kind=args.kind)

    def human(p: Printer) -> None:
        if not items:
            p.line("no resources projected")
            return
        p.table(["KIND", "NAME", "SCOPE", "OWNER", "ID", "SOURCE"],
                [(r["kind"], r["name"], r["scope"], r["owner"], r["id"], r["source_path"]) for r in items])

    return Output({"resources": items}, human)
