"""Human rendering of activations, and the exit-8 error that lists what awaits confirmation."""

from __future__ import annotations

from typing import Any, Iterable

from pkgmgr.errors import PkgmgrError


def confirm_command(activation: dict[str, Any]) -> str:
    scope = " --scope workspace" if activation.get("scope") == "workspace" else ""
    return f"pkgmgr{scope} bundle confirm {activation['id']} --expected-version {activation['version']}"


def confirmation_error(awaiting: Iterable[dict[str, Any]]) -> PkgmgrError:
    awaiting = list(awaiting)
    lines = [
        f"{a['id']} ({a['extension']}:{a['bundle']}/{a['profile']}) version {a['version']} awaits confirmation of "
        f"network requirement {a['network_digest'] or '(none)'}; after reviewing it run: {confirm_command(a)}"
        for a in awaiting
    ]
    return PkgmgrError(
        "\n".join(lines) if len(lines) == 1 else f"{len(lines)} activations await confirmation:\n" + "\n".join(lines),
        code="confirmation_required",
        details={"activations": awaiting, "commands": [confirm_command(a) for a in awaiting]},
    )


def activation_lines(activations: Iterable[dict[str, Any]]) -> list[str]:
    lines = []
    for a in activations:
        change = a.get("change")
        suffix = f" ({change})" if change else ""
        lines.append(f"activation {a['id']} {a['extension']}:{a['bundle']}/{a['profile']} "
                     f"v{a['version']} {a['status']}{suffix}")
    return lines


def activation_pairs(a: dict[str, Any]) -> list[tuple[str, Any]]:
    confirmed = "-"
    if a.get("confirmed_version") is not None:
        confirmed = (f"version {a['confirmed_version']} (network digest {a['confirmed_digest'] or '(none)'}) "
                     f"by {a['confirmed_by']} at {a['confirmed_at']}")
    return [
        ("activation", a["id"]),
        ("target", f"{a['extension']} {a['extension_version']}: bundle {a['bundle']}, profile {a['profile']}"),
        ("scope", a["scope"] + (f" ({a['workspace']})" if a.get("workspace") else "")),
        ("version", a["version"]),
        ("status", a["status"]),
        ("network digest", a["network_digest"] or "(none)"),
        ("activation digest", a["activation_digest"]),
        ("primary channel", a.get("primary_channel") or "-"),
        ("confirmed", confirmed),
    ]
