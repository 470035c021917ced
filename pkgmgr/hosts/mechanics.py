"""The filesystem mechanics every host that loads extensions from a folder of its own shares
(SPEC 4, 13): staging beside the scanned folder (never inside it), the atomic switch, making a
tree durable before it is renamed in, the ownership walk of every directory on the way to an
install path, and the tree checksum of an install."""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Callable, Collection
from pathlib import Path

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError

STAGING = ".pkgmgr-staging"  # beside the scanned folder: same filesystem, never scanned
DISABLED = ".pkgmgr-disabled"  # where a disabled extension waits, outside the scanned folder
PREVIOUS = ".pkgmgr-previous"  # where the install an update replaced is kept for `ext rollback`, outside it too


# --- the tree checksum of an install ---------------------------------------------------------------


def tree_checksum(path: Path, overrides: dict[str, bytes] | None = None,
                  leave_out: Collection[str] = ()) -> tuple[str, dict[str, str]]:
    """SPEC 3 format 2 over the files of `path` (a directory; or one file, named by its base
    name), as `pkgmgr.archive.checksum` computes every tree checksum. `overrides`: relative path
    -> the bytes to hash instead of that file's content (a host-rewritten field left out);
    `leave_out`: the names at the top of the tree the host writes while it runs (not tampering)."""
    from pkgmgr.archive.checksum import install_checksum_and_listing

    return install_checksum_and_listing(path, overrides, leave_out)


# --- filesystem mechanics --------------------------------------------------------------------------

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: Callable[..., int] | None | bool = False


def _libc_renameat2() -> Callable[..., int] | None:
    global _renameat2
    if _renameat2 is False:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            function = libc.renameat2
            function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
            function.restype = ctypes.c_int
            _renameat2 = function
        except (OSError, AttributeError):
            _renameat2 = None
    return _renameat2 or None  # type: ignore[return-value]


def exchange(new: Path, current: Path) -> bool:
    """Swap `new` and `current` in one step (`renameat2(RENAME_EXCHANGE)`): whoever looks sees
    the old tree or the new one, never neither. False when the system cannot (the caller then
    renames the old one away and the new one in: two steps)."""
    function = _libc_renameat2()
    if function is None:
        return False
    result = function(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(current), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(current))


def switch_in(new: Path, target: Path, parking: Path) -> Path | None:
    """Put `new` at `target` atomically. An existing `target` ends up at `parking` (returned, for
    the caller to delete once its state is committed); None when there was none."""
    if not os.path.lexists(target):
        os.rename(new, target)
        return None
    if new.is_dir() == target.is_dir() and new.is_dir() and exchange(new, target):
        crashpoint("host.install.after_exchange")  # `new` holds the old tree now (`undo_install` looks there)
        os.rename(new, parking)
        return parking
    if not new.is_dir() and not target.is_dir():  # a file (an Eva script) is replaced in one rename
        # the old one kept first under its own name in the directory `parking` (a second name of
        # it: its checksum names the file), so that a switch undone before its commit puts it
        # back (`store.pending`)
        os.mkdir(parking, 0o700)
        kept = parking / target.name
        try:
            os.link(target, kept, follow_symlinks=False)
        except OSError:  # a filesystem without hard links: a copy
            import shutil

            shutil.copy2(target, kept, follow_symlinks=False)
        os.replace(new, target)
        return kept
    os.rename(target, parking)
    os.rename(new, target)
    return parking


def fsync_dir(path: Path) -> None:
    from pkgmgr.fsutil import fsync_dir as sync

    sync(path)


def sync_tree(path: Path) -> None:
    """Make a staged tree durable before it is renamed in (SPEC 4): one syncfs(2) of its
    filesystem where the system has it, else an fsync of every file."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(path, os.O_RDONLY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    for root, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def ensure_dirs(base: Path, rel: str, *, mode: int = 0o755) -> Path:
    """`base/rel` created (with `mode`), every directory on the way opened without following a
    link and owned by the user (`path_escapes_root` otherwise), `base` and its parents included."""
    from pkgmgr.fsutil import secure_dirs

    anchor = _anchor(base)
    below = base.relative_to(anchor).as_posix()
    secure_dirs(anchor, "/".join(p for p in (below, rel) if p and p != "."), create=True, mode=mode)
    return base / rel if rel else base


def check_dirs(path: Path) -> None:
    """Refuse (`path_escapes_root`) a link or another user's directory among the existing
    directories on the way to `path` below the user's home or the nearest existing ancestor the
    user owns; creates nothing."""
    from pkgmgr.fsutil import secure_dirs

    anchor = _anchor(path)
    secure_dirs(anchor, path.relative_to(anchor).as_posix(), create=False)


def _anchor(path: Path) -> Path:
    """Where the ownership walk starts: the user's home when `path` is below it, else the
    shallowest existing ancestor of `path` that is the user's own directory (a temporary
    directory, a mount point). The system's directories above it (owned by root) are not
    checked; one owned by another user is refused (`path_escapes_root`)."""
    path = Path(os.path.abspath(path))
    uid = os.geteuid()
    home = Path(os.path.abspath(os.path.expanduser("~")))
    if path == home or home in path.parents:
        try:
            info = os.lstat(home)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
                return home
        except FileNotFoundError:
            pass
    last = Path(path.anchor)
    for parent in reversed([path, *path.parents]):
        try:
            info = os.lstat(parent)
        except FileNotFoundError:
            break
        last = parent
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid:
            return parent
        if stat.S_ISDIR(info.st_mode) and info.st_uid != 0:
            from pkgmgr.fsutil import owner_name

            raise PkgmgrError(f"{parent} is owned by {owner_name(info.st_uid)}, not by you: pkgmgr does not "
                              "install below it", code=Code.PATH_ESCAPES_ROOT, path=str(parent))
    return last
