"""The commands an operator copies from an activation's messages (`bundle show`, `bundle
confirm`, with the options that select its scope), and the exit-8 error that lists what awaits
confirmation. The human text of `bundle show` and of install/update/remove is the CLI's
(`pkgmgr.cli.activation_text`)."""

from __future__ import annotations

import shlex
from typing import Any, Iterable

from pkgmgr.errors import Code, PkgmgrError


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
        code=Code.CONFIRMATION_REQUIRED,
        details={"activations": awaiting, "commands": [confirm_command(a) for a in awaiting]},
    )
