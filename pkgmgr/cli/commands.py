"""Registry of command groups: each module declares its own parsers and handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands


def register_all(commands: "Commands") -> None:
    from pkgmgr.cli import bundle_cmds, doctor_cmds, ext_cmds, ext_remote_cmds, registry_cmds, workspace_cmds

    ext = ext_cmds.register(commands)
    ext_remote_cmds.register(ext)
    registry_cmds.register(commands)
    bundle_cmds.register(commands)
    workspace_cmds.register(commands)
    doctor_cmds.register(commands)
