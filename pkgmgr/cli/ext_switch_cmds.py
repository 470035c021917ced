"""`pkgmgr ext rollback|link|unlink`: switch an install back to the version it replaced, or to a
working folder its host loads as it is (a development link), and back."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pkgmgr.cli.context import Context, target_scope
from pkgmgr.cli.output import Output, Printer

if TYPE_CHECKING:
    from pkgmgr.cli.app import Commands
    from pkgmgr.lifecycle import Switched
    from pkgmgr.store.installed import Installed


def register(ext: "Commands") -> None:
    from pkgmgr.cli.install_common import host_option, trust_option

    p = ext.command(
        "rollback", cmd_rollback, "switch back to the version an install replaced",
        "Switch each named extension back to the version installed before it, from the tree pkgmgr kept "
        "when that version was replaced (one is kept per extension: by an update, an install of another "
        "version or a link). The switch is atomic, and the version rolled back to is pinned, so that "
        "'ext update --all' leaves it until 'ext update NAME --unpin'. Rolling back twice switches back again. "
        "'ext status NAME' shows the version kept.",
        "pkgmgr ext rollback review-pack\npkgmgr ext rollback review-pack prompt-enhancer -o json",
    )
    p.add_argument("names", nargs="+", metavar="NAME")
    p.set_defaults(installed="names")  # did you mean: cli.app.suggest_installed
    host_option(p, "the host holding them")
    trust_option(p)

    p = ext.command(
        "link", cmd_link, "make the host load a working folder as it is (development)",
        "Make the extension in a working folder (or a single-file extension) what its host loads, as it is: "
        "edits show without installing again. The folder is judged as an install judges it, then linked "
        "where the host loads extensions from (a symbolic link, or the host's own way: a host that skips "
        "linked folders gets a folder of links to the top-level entries). The install of that name, if "
        "any, is kept: 'ext unlink NAME' restores it. 'ext list' shows the extension as linked, 'ext verify' "
        "skips it, and 'ext remove' removes the link, never the folder.",
        "pkgmgr ext link ./my-extension\npkgmgr --scope workspace ext link ./tools/my-tool",
    )
    p.add_argument("path", metavar="PATH")
    host_option(p, "the host whose extension it is")
    trust_option(p)

    p = ext.command(
        "unlink", cmd_unlink, "remove a development link and restore the installed version",
        "Remove the development link of each named extension (never the folder it names) and restore "
        "the version that was installed before 'ext link', if there was one.",
        "pkgmgr ext unlink my-extension",
    )
    p.add_argument("names", nargs="+", metavar="NAME")
    p.set_defaults(installed="names")
    host_option(p, "the host holding them")
    trust_option(p)


def _options(ctx: Context, args: argparse.Namespace) -> Any:
    from pkgmgr.install.options import InstallOptions

    return InstallOptions(confirm_always=ctx.config.confirm_policy == "always", yes=ctx.yes, host=args.host,
                          approve_host_trust=args.approve_host_trust, lock_timeout=ctx.lock_timeout)


def _entry(item: Installed, **extra: Any) -> dict[str, Any]:
    return item.entry(source=item.source_kind, sha256=item.sha256, verified=item.verified, pinned=item.pinned,
                      **extra)


def _failed(done: Switched) -> list[dict[str, Any]]:
    return [{"name": name or None, "error": error.to_json()} for name, error in done.failed]


def _activations(p: Printer, done: Switched) -> None:
    if done.activations:
        from pkgmgr.cli.activation_text import print_activations

        print_activations(p, done.activations)


def _version(item: Installed | None) -> str:
    """An install's version, or for a host whose extensions carry none its tree's prefix."""
    if item is None:
        return "-"
    if item.version:
        return item.version
    return "tree " + item.tree_sha256.rpartition(":")[2][:12] if item.tree_sha256 else "-"


def cmd_rollback(ctx: Context, args: argparse.Namespace) -> Output:
    """`ext rollback`: JSON as `ext update`'s, the switched installs under `rolled_back`."""
    from pkgmgr.cli.install_common import announce_for, reporter_for
    from pkgmgr.lifecycle import rollback

    done = rollback(target_scope(ctx), args.names, host=args.host, config=ctx.config, options=_options(ctx, args),
                    interactive=ctx.interactive, reporter=reporter_for(ctx), lock_timeout=ctx.lock_timeout,
                    announce=announce_for(ctx))
    pairs = [(before, after) for before, after in zip(done.before, done.after, strict=True) if after is not None]
    data = {"rolled_back": [_entry(after, previous_version=_version(before)) for before, after in pairs],
            "failed": _failed(done), "activations": done.activations}

    def human(p: Printer) -> None:
        for before, after in pairs:
            p.done([f"rolled back {after.name} from {_version(before)} to {_version(after)} ({after.where}); "
                    f"{_version(before)} is kept for another rollback"])
            p.notes(after.notes)
            p.line(f"pinned at {_version(after)}: 'pkgmgr ext update {after.name} --unpin' lets updates move it again")
        _activations(p, done)

    return Output(data, human, done.error)


def cmd_link(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli.install_common import announce_for
    from pkgmgr.fsutil import user_path
    from pkgmgr.lifecycle import link

    done = link(target_scope(ctx), user_path(args.path), shown=args.path, host=args.host, config=ctx.config,
                options=_options(ctx, args), lock_timeout=ctx.lock_timeout, announce=announce_for(ctx))
    linked = [(kept, now) for kept, now in zip(done.before, done.after, strict=True) if now is not None]
    data = {"linked": [_entry(now, linked_to=now.linked, kept_version=kept.version if kept is not None else None)
                       for kept, now in linked],
            "failed": _failed(done), "activations": done.activations}

    def human(p: Printer) -> None:
        for kept, now in linked:
            p.done([f"linked {now.name} {_version(now)} ({now.where}) to {now.linked}"])
            p.notes(now.notes)
            restores = f"restores {_version(kept)}" if kept is not None else "removes the link"
            p.line(f"edits in {now.linked} show as they are; 'pkgmgr ext unlink {now.name}' {restores}")
        _activations(p, done)

    return Output(data, human, done.error)


def cmd_unlink(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.cli.install_common import announce_for
    from pkgmgr.lifecycle import unlink

    done = unlink(target_scope(ctx), args.names, host=args.host, config=ctx.config, options=_options(ctx, args),
                  lock_timeout=ctx.lock_timeout, announce=announce_for(ctx))
    pairs = list(zip(done.before, done.after, strict=True))
    data = {"unlinked": [{"name": (after or before).name,  # type: ignore[union-attr]
                          "restored": _entry(after) if after is not None else None,
                          "linked_to": before.linked if before is not None else None}
                         for before, after in pairs],
            "failed": _failed(done), "activations": done.activations}

    def human(p: Printer) -> None:
        for before, after in pairs:
            if after is not None:
                p.done([f"unlinked {after.name}: restored {_version(after)} ({after.where})"])
                p.notes(after.notes)
            elif before is not None:
                p.done([f"unlinked {before.name}: removed the link to {before.linked} (the folder stays)"])
        _activations(p, done)

    return Output(data, human, done.error)
