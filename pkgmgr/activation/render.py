"""Human rendering of activations, and the exit-8 error that lists what awaits confirmation."""

from __future__ import annotations

import shlex
from typing import Any, Iterable

from pkgmgr.errors import PkgmgrError


def scope_options(scope: str | None, workspace: str | None) -> str:
    """The global options that select an activation's scope, for a command to copy and paste
    from anywhere: `--scope workspace --workspace <path>` for a workspace, nothing for global."""
    if scope != "workspace":
        return ""
    where = f" --workspace {shlex.quote(workspace)}" if workspace else ""
    return f" --scope workspace{where}"


def show_command(act_id: str, scope: str | None, workspace: str | None) -> str:
    return f"pkgmgr{scope_options(scope, workspace)} bundle show {act_id}"


def confirm_command(activation: dict[str, Any]) -> str:
    """The exact command that confirms `activation` at its current version."""
    return (f"pkgmgr{scope_options(activation.get('scope'), activation.get('workspace'))} bundle confirm "
            f"{activation['id']} --expected-version {activation['version']}")


def confirmation_error(awaiting: Iterable[dict[str, Any]]) -> PkgmgrError:
    """confirmation_required (exit 8) naming each activation, what it awaits and the command
    that confirms it; `details.commands` lists the commands in the same order."""
    awaiting = list(awaiting)
    lines = []
    for a in awaiting:
        requirement = (f"network requirement {a['network_digest']}" if a.get("network_digest")
                       else "its new content (policy confirm = \"always\")")
        show = show_command(a["id"], a.get("scope"), a.get("workspace"))
        lines.append(f"{a['id']} ({a['extension']}:{a['bundle']}/{a['profile']}) version {a['version']} awaits "
                     f"confirmation of {requirement}; after reviewing it ('{show}') run: {confirm_command(a)}")
    message = lines[0] if len(lines) == 1 else f"{len(lines)} activations await confirmation:\n" + "\n".join(lines)
    return PkgmgrError(
        message,
        code="confirmation_required",
        details={"activations": awaiting, "commands": [confirm_command(a) for a in awaiting]},
    )


def activation_lines(activations: Iterable[dict[str, Any]]) -> list[str]:
    """One line per activation touched by an install, update or removal."""
    lines = []
    for a in activations:
        change = a.get("change")
        suffix = f" ({change})" if change and change != a["status"] else ""
        line = (f"activation {a['id']} {a['extension']}:{a['bundle']}/{a['profile']} "
                f"v{a['version']} {a['status']}{suffix}")
        if a["status"] == "awaiting_confirmation":
            line += f"; to confirm: {confirm_command(a)}"
        lines.append(line)
    return lines


def confirmation_text(a: dict[str, Any]) -> str:
    """Who confirmed which network digest when, or why nothing needs confirming."""
    if a.get("confirmed_at"):
        digest = a.get("confirmed_digest") or "(none)"
        text = (f"network digest {digest} at version {a['confirmed_version']}, by {a['confirmed_by']} "
                f"at {a['confirmed_at']}")
        if a.get("confirmed_version") != a.get("version") and a.get("status") == "active":
            if not a.get("network_digest"):
                text += f" (version {a['version']} declares no network requirement)"
            elif a.get("network_digest") == a.get("confirmed_digest"):
                text += f" (still holds at version {a['version']}: the network digest did not change)"
        return text
    if a.get("status") == "awaiting_confirmation":
        return f"not yet: run {confirm_command(a)}"
    return "not needed (no network requirement)"


def activation_pairs(a: dict[str, Any]) -> list[tuple[str, Any]]:
    """The key/value block of `bundle show|activate|confirm`."""
    return [
        ("activation", a["id"]),
        ("target", f"{a['extension']} {a['extension_version']}: bundle {a['bundle']}, profile {a['profile']}"),
        ("scope", a["scope"] + (f" ({a['workspace']})" if a.get("workspace") else "")),
        ("version", a["version"]),
        ("status", a["status"]),
        ("network digest", a["network_digest"] or "(none)"),
        ("activation digest", a["activation_digest"]),
        ("primary channel", a.get("primary_channel") or "-"),
        ("confirmed", confirmation_text(a)),
    ]
