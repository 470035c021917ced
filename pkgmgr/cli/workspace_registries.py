"""What a command run inside a workspace takes from it: the registries of an approved pkgmgr.toml,
for the commands that work on the workspace's own scope; and the `Session` a command's context
assembles from them and the configuration (the one place a CLI `Context` becomes a session)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pkgmgr.config import RegistryConfig
from pkgmgr.errors import PkgmgrError

if TYPE_CHECKING:
    from pkgmgr.registry.session import Session


def trusted_registries(ctx: Any) -> tuple[RegistryConfig, ...]:
    """The `[registries]` of the current workspace's pkgmgr.toml once approved (SPEC 10); none
    (with a warning) while it is not. They serve only the workspace's own scope (`--scope
    workspace`, `--save`): a global command run inside the repository never consults them, so
    a repository cannot shadow a name the user's own registries serve (SPEC 10)."""
    from pathlib import Path

    if getattr(ctx, "scope", "global") != "workspace":
        return ()

    from pkgmgr.store.scope import discover_workspace
    from pkgmgr.workspace.declaration import MANIFEST

    root = getattr(ctx, "workspace_arg", None) or discover_workspace(Path.cwd())
    if not (root / MANIFEST).is_file():
        return ()
    from pkgmgr.workspace.workspace import Workspace

    try:
        ws = Workspace(root, ctx.home)
    except PkgmgrError as error:
        ctx.warn(f"{root / MANIFEST} is ignored: {error.message.splitlines()[0]}")
        return ()
    if not ws.manifest.registries:
        return ()
    if not ws.trusted:
        ctx.warn(f"the registries declared in {root / MANIFEST} are not used until you approve them "
                 "('pkgmgr trust --show')")
        return ()
    return ws.manifest.registries


def session_for(ctx: Any, *, allow_expired: bool = False,
                extra_registries: Sequence[RegistryConfig] | None = None, dry_run: bool = False) -> Session:
    """A Session from the CLI context (home, config, --offline, warnings on stderr). Inside a
    workspace, the registries its approved pkgmgr.toml declares join the configured ones. A
    `dry_run` session writes nothing (not even the rollback memory)."""
    from pkgmgr.registry.session import Session

    if extra_registries is None:
        extra_registries = trusted_registries(ctx)
    return Session(ctx.home, ctx.config, offline=ctx.offline, allow_expired=allow_expired, warn=ctx.warn,
                   extra_registries=extra_registries, record=not dry_run)
