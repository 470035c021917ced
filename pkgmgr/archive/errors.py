"""The three ways an archive is refused, as `PkgmgrError`s naming the member concerned."""

from __future__ import annotations

from pkgmgr.errors import Code, PkgmgrError


def _member(member: str | None) -> dict[str, str]:
    return {"member": member} if member is not None else {}


def unsafe(member: str, reason: str) -> PkgmgrError:
    """`unsafe_archive`: a member that could write outside the tree or is not a plain file/dir."""
    return PkgmgrError(f"unsafe archive member {member!r}: {reason}", code=Code.UNSAFE_ARCHIVE,
                       details={"member": member, "reason": reason})


def too_large(what: str, limit: int | float, *, member: str | None = None, configurable: bool = True) -> PkgmgrError:
    """`archive_too_large`: one of the `[limits]` (or, not `configurable`, a fixed bound) was
    passed (found while streaming)."""
    where = f" (refused while reading {member!r})" if member is not None else ""
    return PkgmgrError(
        f"archive exceeds the {what} limit of {limit:,}{where}",
        code=Code.ARCHIVE_TOO_LARGE,
        details={"limit": what, "value": limit, **_member(member)},
        hint="raise [limits] in config.toml if this archive is trusted" if configurable else None,
    )


def corrupt(reason: str, *, member: str | None = None) -> PkgmgrError:
    """`invalid_archive`: not an archive we can read (truncated, bad data, unsupported feature)."""
    where = f" at {member!r}" if member is not None else ""
    return PkgmgrError(f"invalid archive{where}: {reason}", code=Code.INVALID_ARCHIVE,
                       details={"reason": reason, **_member(member)})
