"""Human text of activations: the line an install, update or removal prints per activation
it touched, and the key/value block of `bundle show|activate|confirm`."""

from __future__ import annotations

from typing import Any, Iterable

from pkgmgr.activation.confirmation import confirm_command


def activation_lines(activations: Iterable[dict[str, Any]], *, error: Any = None) -> list[str]:
    """One line per activation touched by an install, update or removal; an activation awaiting
    confirmation names the command that confirms it, unless `error` (the command's exit-8
    error, printed after) names it already: the command is printed once."""
    from pkgmgr.errors import Code

    told = set(error.details.get("commands", ())) if error is not None and error.code == Code.CONFIRMATION_REQUIRED \
        else set()
    lines = []
    for a in activations:
        change = a.get("change")
        suffix = f" ({change})" if change and change != a["status"] else ""
        line = (f"activation {a['id']} {a['extension']}:{a['bundle']}/{a['profile']} "
                f"v{a['version']} {a['status']}{suffix}")
        if a["status"] == "awaiting_confirmation":
            command = confirm_command(a)
            line += f"; to confirm: {command}" if command not in told else "; the error below says how to confirm it"
        lines.append(line)
    return lines


def print_activations(p: Any, activations: Iterable[dict[str, Any]], *, error: Any = None) -> None:
    """`activation_lines` on the printer `p`: a line that names the confirm command too wide for
    the terminal says what it is, then the command on lines of its own (`Printer.suggest`)."""
    for line in activation_lines(activations, error=error):
        head, told, command = line.partition("; to confirm: ")
        if told:
            p.suggest(f"{head}; to confirm:", command)
        else:
            p.prose(line)


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
        return "not yet"
    return "not needed (no network requirement)"


def review_pairs(review: dict[str, Any]) -> list[tuple[str, Any]]:
    """What the operator reviews (`bundle show`): the network requirement and how it compares with
    what was confirmed (`activation.preview.review`)."""
    requirement = review["network_requirement"]
    state = review["confirmation"]
    if requirement is None:
        pairs: list[tuple[str, Any]] = [("network", "none: nothing to confirm")]
    else:
        pairs = [("network mode", requirement["mode"]),
                 ("channel scopes", ", ".join(requirement["channel_scopes"]) or "(none)")]
    kind = state["state"]
    if kind == "confirmed" and state.get("carried_over"):
        pairs.append(("since confirmed", f"unchanged since version {state['confirmed_version']} was confirmed"))
    elif kind == "never_confirmed":
        pairs.append(("since confirmed", "nothing was confirmed before: all of the requirement above is new"))
    elif kind == "changed" and "since_confirmed" in state:
        change = state["since_confirmed"]
        parts = [f"channel scopes added: {', '.join(change['scopes_added']) or '(none)'}",
                 f"removed: {', '.join(change['scopes_removed']) or '(none)'}"]
        if "mode" in change:
            parts.append(f"mode {change['mode']['confirmed']} -> {change['mode']['now']}")
        else:
            parts.append("mode unchanged")
        pairs.append(("since confirmed", f"changed at version {state['changed_at_version']} (extension "
                      f"{state['extension_version']}): {'; '.join(parts)}"))
    elif kind == "changed":
        pairs.append(("since confirmed", f"changed at version {state['changed_at_version']} (extension "
                      f"{state['extension_version']}): the update withdrew any earlier confirmation, whose "
                      "requirement is not kept; review all of the above"))
    return pairs


def activation_pairs(a: dict[str, Any], review: dict[str, Any] | None = None) -> list[tuple[str, Any]]:
    """The key/value block of `bundle show|activate|confirm` (with `review`: the requirement
    beside its digest, and how it compares with what was confirmed)."""
    requirement = review_pairs(review) if review is not None else []
    return [
        ("activation", a["id"]),
        ("target", f"{a['extension']} {a['extension_version']}: bundle {a['bundle']}, profile {a['profile']}"),
        ("scope", a["scope"] + (f" ({a['workspace']})" if a.get("workspace") else "")),
        ("version", a["version"]),
        ("status", a["status"]),
        *[pair for pair in requirement if pair[0] != "since confirmed"],
        ("network digest", a["network_digest"] or "(none)"),
        *[pair for pair in requirement if pair[0] == "since confirmed"],
        ("activation digest", a["activation_digest"]),
        ("primary channel", a.get("primary_channel") or "-"),
        ("confirmed", confirmation_text(a)),
    ]
