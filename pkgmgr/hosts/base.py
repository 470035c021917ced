"""The destination port of an agent host: where an extension of a name goes for a scope, how a
staged tree is judged by that host's rules, and how a switch, a removal and an enable/disable
are done in the host's own layout (SPEC 13).

One `Host` per host (`terva.py`, `eva.py`, `vera.py`); `pkgmgr.hosts.install` drives them all
with the same pipeline: stage on the target's filesystem (beside the folder the host scans,
never inside it), judge, one atomic rename, one transaction in pkgmgr's state. Everything here
is small and mechanical; what a host accepts is decided in its own module.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pkgmgr.errors import Code, PkgmgrError

STAGING = ".pkgmgr-staging"  # beside the scanned folder: same filesystem, never scanned
DISABLED = ".pkgmgr-disabled"  # Eva: where a disabled extension waits, outside the scanned folder


@dataclass(frozen=True)
class Judged:
    """A tree as its host reads it: the identity, what it runs and what it asks for."""

    host: str
    name: str  # the identity the host knows it by (terva folder/name, Eva name, Vera id)
    version: str  # "" when the host's format carries none (Eva): the registry's is recorded
    layout: str  # "directory" | "script" (an Eva `<name>.exs`)
    kind: str  # terva: subprocess | theme; eva: script | directory; vera: extension
    entry: str = ""  # terva exec, Eva module, Vera entrypoint
    capabilities: tuple[str, ...] = ()
    description: str = ""
    warnings: tuple[str, ...] = ()
    document: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"host": self.host, "name": self.name, "version": self.version or None, "kind": self.kind,
                "layout": self.layout, "entry": self.entry, "capabilities": list(self.capabilities),
                "description": self.description}


@dataclass(frozen=True)
class Found:
    """Something a host would load from its folder: its name and where it is."""

    name: str
    path: Path
    layout: str


class Host:
    """The port. Subclasses fill in the host's rules; the mechanics are shared."""

    name = ""
    manifest_files: tuple[str, ...] = ()
    folder_mode = 0o755  # the host's directories pkgmgr creates (Vera makes its own 0700)

    # --- where ------------------------------------------------------------------------------

    def home(self) -> Path:
        """The host's own directory on this machine (TERVA_HOME, ~/.eva, VERA_HOME)."""
        raise NotImplementedError

    def project_root(self, project: Path) -> Path | None:
        """The host's directory in a project (`.terva`, `.eva`), None when it has no project scope."""
        return None

    def folder(self, scope: str, project: Path | None) -> Path:
        """The folder the host scans for `scope` (global | workspace)."""
        if scope == "workspace":
            if project is None:
                raise RuntimeError("a workspace scope needs its project directory")
            root = self.project_root(project)
            if root is None:
                raise PkgmgrError(f"{self.name} has no project scope: it loads extensions only from "
                                  f"{self.home() / 'extensions'}", code=Code.USAGE,
                                  hint="install it without --scope workspace")
            return root / "extensions"
        return self.home() / "extensions"

    def target(self, folder: Path, name: str, layout: str) -> Path:
        return folder / name

    def occupants(self, folder: Path, name: str) -> list[Path]:
        """What already occupies `name` in `folder` (the host would load it under that name)."""
        path = folder / name
        return [path] if os.path.lexists(path) else []

    def scan(self, folder: Path) -> list[Found]:
        """Every extension the host would consider in `folder`, sorted by name."""
        raise NotImplementedError

    # --- what ---------------------------------------------------------------------------------

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        """The tree at `root` (a directory, or an Eva script file) by the host's rules. Raises
        `ValidationFailed` (invalid_manifest, path_escapes_root) with every problem found."""
        raise NotImplementedError

    def check_neighbours(self, folder: Path, judged: Judged, own: set[Path], scope: str) -> None:
        """Raise what the host would refuse about `judged` beside the other extensions of `folder`
        (and of the folders the host loads with it), `own` (what the install replaces) left out;
        nothing by default (Eva: two extensions of one module)."""

    def checksum(self, path: Path) -> tuple[str, dict[str, str]]:
        """Tree checksum (SPEC 3 format 2) and listing of an install; hosts that rewrite a file
        themselves (terva's `enabled`) leave that out."""
        return tree_checksum(path)

    def copy_source(self, source: Path, dest: Path) -> Path:
        """Copy an extension's source directory into `dest` (staging) as an install of it does:
        pkgmgr's selection (VCS directories and .pkgmgrignore'd files left out), unless the host's
        own installer copies otherwise."""
        from pkgmgr.archive import copy_source_tree

        return copy_source_tree(source, dest)

    def source_checksum(self, source: Path) -> str:
        """The checksum an install of the source directory `source` will have (what
        `copy_source` copies)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="pkgmgr-tree-") as tmp:
            copy = self.copy_source(source, Path(tmp) / "tree")
            return self.checksum(copy)[0]

    # --- hooks around a switch (default: nothing) ------------------------------------------------

    def prepare_staged(self, staged: Path, judged: Judged, *, enabled: bool) -> None:
        """Make the staged tree carry the install's enabled state before it is switched in."""

    def notes(self, scope: str, project: Path | None, folder: Path) -> list[str]:
        """What the operator must know after a change in `folder` (trust, reloads)."""
        return []


# --- the tree checksum of an install ---------------------------------------------------------------


def tree_checksum(path: Path, overrides: dict[str, bytes] | None = None) -> tuple[str, dict[str, str]]:
    """SPEC 3 format 2 over the files of `path` (a directory; or one file, named by its base
    name), as `pkgmgr.archive.checksum` computes every tree checksum. `overrides`: relative path
    -> the bytes to hash instead of that file's content (a host-rewritten field left out)."""
    from pkgmgr.archive.checksum import install_checksum_and_listing

    return install_checksum_and_listing(path, overrides)


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
        os.rename(new, parking)  # `new` holds the old tree now
        return parking
    if not new.is_dir() and not target.is_dir():  # a file (an Eva script) is replaced in one rename
        os.replace(new, target)
        return None
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
