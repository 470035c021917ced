"""Human text of activations: the line an install, update or removal prints per activation
it touched, and the key/value block of `bundle show|activate|confirm`."""

from __future__ import annotations

from typing import Any, Iterable

from pkgmgr.activation.confirmation import confirm_command


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
