"""Small filesystem primitives: atomic writes, private directories, safe removal, and reading a
file that must be a regular one (never blocking on a FIFO, never through a final link)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"))


def kind_of(st_mode: int) -> str:
    """A human word for a file type, for messages about files that are neither files nor dirs."""
    for test, word in _KINDS:
        if test(st_mode):
            return word
    return "not a regular file"


class NotRegularFile(OSError):
    """`path` is not a regular file: `kind` says what it is ("a FIFO", "a symbolic link", ...).
    Callers turn it into their own error code."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", os.fspath(path))
        self.kind = kind


def open_regular_fd(path: str | os.PathLike[str], *, follow_symlinks: bool = False, dir_fd: int | None = None) -> int:
    """Open a regular file for reading and return its descriptor. Opened non-blocking, so a FIFO
    (or a device) is refused instead of hanging the open; a symbolic link in the last component
    is refused unless `follow_symlinks`. Raises NotRegularFile, and the OSError of the open
    (FileNotFoundError, PermissionError, ...). `dir_fd`: `path` is a name in that open directory."""
    flags = _READ_FLAGS | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        # ELOOP (EMLINK on FreeBSD) is what O_NOFOLLOW says for a final link
        if not follow_symlinks and exc.errno in (errno.ELOOP, errno.EMLINK):
            raise NotRegularFile(path, "a symbolic link") from exc
        raise
    st_mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(st_mode):
        os.close(fd)
        raise NotRegularFile(path, kind_of(st_mode))
    return fd


def read_regular(path: str | os.PathLike[str], *, limit: int, follow_symlinks: bool = False) -> bytes:
    """At most `limit` + 1 bytes of the regular file `path` (a caller that gets more than `limit`
    knows the file is too large without reading it all). Raises as `open_regular_fd`."""
    fd = open_regular_fd(path, follow_symlinks=follow_symlinks)
    try:
        chunks: list[bytes] = []
        left = limit + 1
        step = min(left, os.fstat(fd).st_size + 1)  # a regular file comes whole in one read (and one copy)
        while left > 0:
            chunk = os.read(fd, min(left, max(step, 1024 * 1024) if chunks else step))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class TooLarge(OSError):
    """A file holds more than the bound its reader set."""

    def __init__(self, path: str | os.PathLike[str], limit: int) -> None:
        super().__init__(errno.EFBIG, f"is larger than {limit} bytes", os.fspath(path))
        self.limit = limit


def regular_chunks(path: str | os.PathLike[str], *, limit: int, follow_symlinks: bool = False,
                   chunk: int = 1024 * 1024) -> Iterator[bytes]:
    """The content of the regular file `path` in chunks, for a reader that streams it (a digest):
    opened as `open_regular_fd` opens it, and `TooLarge` raised as soon as more than `limit` bytes
    came (nothing past the bound is read). Raises as `open_regular_fd` when the iteration starts."""
    fd = open_regular_fd(path, follow_symlinks=follow_symlinks)
    try:
        left = limit
        while data := os.read(fd, chunk):
            if len(data) > left:
                raise TooLarge(path, limit)
            left -= len(data)
            yield data
    finally:
        os.close(fd)


def user_path(text: str | os.PathLike[str]) -> Path:
    """`~` and `~user` expanded; an unknown `~user` stays as written (where Path.expanduser raises
    RuntimeError, which would surface as an internal error)."""
    return Path(os.path.expanduser(text))


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True,
                       temp_dir: Path | None = None) -> None:
    """Write `data` to a temporary file beside `path` (or in `temp_dir`, a directory of the same
    filesystem: a file inside an installed tree is written from outside it, so a kill never leaves
    a stray file in the tree), fsync it, then `os.replace` it in.

    `durable=False` skips both fsyncs, for files whose loss after a power cut costs nothing
    (caches that verify what they read): the replace stays atomic, readers never see a torn
    file before a crash, only possibly after one."""
    import tempfile  # here, not at import time: read-only commands never need it

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=temp_dir or path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


# what a failing flush says: never ignored (a lost write must fail the command, not vanish)
_FLUSH_FAILED = frozenset({errno.EIO, errno.ENOSPC, errno.EDQUOT})


def fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (a file renamed into it, one removed from it). Where
    directories cannot be fsynced (some filesystems say EINVAL) there is nothing to do; a
    device that fails (EIO, ENOSPC) raises, naming the directory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        if exc.errno in _FLUSH_FAILED:
            raise
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno in _FLUSH_FAILED:
            raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
    finally:
        os.close(fd)


def write_through(path: Path, data: bytes, tmp: Path, *, mode: int) -> None:
    """Write `data` to `path` the way a host writes its own file: through the temporary file
    `tmp` beside it (the name the host itself uses), created exclusively (a link planted at the
    name is never followed), fsynced, renamed over `path`, and the directory fsynced."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dirs(*paths: Path) -> None:
    """Make the entries of every directory in `paths` durable: the store's renames and removals
    that a later step relies on. One or two: `fsync_dir` each. More: one `syncfs(2)` of each
    filesystem they are on, which writes back every dirty inode there — these directories
    included — with one journal commit and one cache flush, where each fsync flushes the disk's
    cache again (~5-20 ms here under load; a 20-extension install changes 22 directories:
    0.91-0.96x of its time against the fsyncs from threads). Without syncfs, the fsyncs run at
    once, from threads, sharing the journal commit and the flushes."""
    if not DURABLE:
        return
    if len(paths) <= 2:
        for path in paths:
            fsync_dir(path)
        return
    filesystems: dict[int, Path] = {}
    for path in paths:
        try:
            filesystems.setdefault(os.stat(path).st_dev, path)
        except OSError as exc:  # gone: nothing of it to make durable (as `fsync_dir`)
            if exc.errno in _FLUSH_FAILED:
                raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
    if all(syncfs(path) for path in filesystems.values()):
        return
    from pkgmgr.threads import map_in_threads

    map_in_threads(fsync_dir, list(paths), workers=16, name="pkgmgr-fsync")


def fsync_tree(path: Path) -> None:
    """fsync every file and directory under `path` (not following links), directories after
    what they hold: the portable way to make a new tree durable, one fsync per file."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _current, _dirs, files, dir_fd in os.fwalk(path, topdown=False):
        for name in files:
            try:
                fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=dir_fd)
            except OSError:
                continue  # a link (O_NOFOLLOW) or a special file: it has no data to sync
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.fsync(fd)
            finally:
                os.close(fd)
        try:
            os.fsync(dir_fd)
        except OSError as exc:
            if exc.errno in _FLUSH_FAILED:
                raise OSError(exc.errno, exc.strerror, os.fspath(os.path.join(path, _current))) from None
            # else a directory that cannot be fsynced (EINVAL on some filesystems)


# The power-loss harness (tests/reliability/test_power_loss.py) turns the durability steps off
# with PKGMGR_TEST_DURABILITY=off to show what it catches without them; nothing else sets it.
DURABLE = os.environ.get("PKGMGR_TEST_DURABILITY") != "off"

# The descriptors of the exclusive locks this process holds (`store.lock.ExclusiveLock` adds and
# removes them). A helper process that writes for this one inherits them (`archive.offload`): a
# flock belongs to the open file, so a writer killed mid-extraction leaves its lock held until its
# helper has stopped writing too, and the next writer, which empties `.staging/`, waits for that.
HELD_LOCKS: set[int] = set()

_SYNCFS: list = []  # [callable or None], resolved once


def syncfs(path: Path) -> bool:
    """Flush every dirty page and the journal of the filesystem that holds `path` (Linux
    `syncfs(2)`, through ctypes: Python has no `os.syncfs`). False where the call is not
    available; raises the OSError of a failing flush (EIO, ENOSPC)."""
    if not _SYNCFS:
        call = None
        if os.name == "posix":
            try:
                import ctypes

                call = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
                if call is not None:
                    call.argtypes = [ctypes.c_int]
                    call.restype = ctypes.c_int
            except (OSError, AttributeError, ImportError):
                call = None
        _SYNCFS.append(call)
    call = _SYNCFS[0]
    if call is None:
        return False
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if call(fd) != 0:
            import ctypes

            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), os.fspath(path))
    finally:
        os.close(fd)
    return True


class EarlyWriteback:
    """`syncfs` of the filesystem holding `path`, over and over, from a thread of its own until
    `stop()` (`Scope.new_staging` starts one for the time the writer lock is held): what a command
    stages reaches the disk while it is still extracting and checking, so the flush that makes the
    trees durable before their renames (`durable_tree`, SPEC 4) finds little left to write. 10,000
    small files extracted then flushed, 12 alternating pairs: 0.91x of the time (0.27-0.74x where
    creating files was slow, 0.95-1.15x where it was fast). Only an optimisation: nothing relies on
    these flushes, and a flush that fails is left for that one to report. Nothing is started
    without `syncfs` or with the durability steps off (`DURABLE`)."""

    INTERVAL = 0.05  # seconds between the end of one flush and the start of the next

    def __init__(self, path: Path) -> None:
        self._stop: Any = None
        self._thread: Any = None
        if not DURABLE or os.name != "posix":
            return
        import threading

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(Path(path),), name="pkgmgr-writeback", daemon=True)
        self._thread.start()

    def _run(self, path: Path) -> None:
        while not self._stop.wait(self.INTERVAL):
            try:
                if not syncfs(path):
                    return
            except OSError:
                return  # the flush before the rename reports it

    def stop(self) -> None:
        """Stop flushing (the flush under way, if any, ends first)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None


def durable_tree(path: Path) -> None:
    """Make the tree at `path` durable before it is renamed into place (SPEC 4, as dpkg does):
    one `syncfs` of its filesystem where there is one — much cheaper than an fsync per file for
    trees of many small files — else `fsync_tree`."""
    if not DURABLE:
        return
    if not syncfs(path):
        fsync_tree(path)


def private_dir(parent: Path, prefix: str) -> Path:
    """Create a fresh 0700 directory under `parent`."""
    import tempfile

    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def remove_tree(path: Path) -> None:
    """Remove a file or a directory tree, however deep (no recursion), tolerating members that
    are already gone and read-only directories."""
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        path.unlink(missing_ok=True)
        return
    stack = [(str(path), False)]
    while stack:
        current, visited = stack.pop()
        if visited:
            try:
                os.rmdir(current)
            except FileNotFoundError:
                pass
            continue
        try:
            os.chmod(current, 0o700)
            entries = list(os.scandir(current))
        except FileNotFoundError:
            continue
        stack.append((current, True))
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, False))
            else:
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass


def owner_name(uid: int) -> str:
    """The login name of `uid` ("uid N" when the system has none)."""
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def foreign_owner(info: os.stat_result) -> str | None:
    """The owner of a stat result when it is not the current (effective) user, else None."""
    return owner_name(info.st_uid) if info.st_uid != os.geteuid() else None


def secure_dirs(base: Path, rel: str, *, create: bool, mode: int = 0o755) -> None:
    """Check every directory from `base` down to `base/rel` before pkgmgr writes there: each
    component under `base` is opened without following a symlink (`O_NOFOLLOW`, relative to
    its parent's descriptor), and `base` and every component must be owned by the current
    user. `create` makes the missing ones (`base` included, with its parents); without it the
    walk stops at the first missing one.

    Raises `path_escapes_root` for a symlink, a non-directory or another user's directory on
    the way (nothing is created below it)."""
    from pkgmgr.errors import Code, PkgmgrError

    base = Path(base)
    if create:
        base.mkdir(parents=True, exist_ok=True, mode=mode)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise PkgmgrError(f"{base} is not a directory", code=Code.PATH_ESCAPES_ROOT) from None
    path = base
    try:
        _check_owner(fd, path)
        for name in (p for p in rel.split("/") if p and p != "."):
            path = path / name
            try:
                child = os.open(name, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    return
                try:
                    os.mkdir(name, mode, dir_fd=fd)
                except FileExistsError:
                    pass  # another process made it meanwhile: it is opened (and checked) below
                except OSError as exc:
                    raise _named(exc, path) from None
                child = _open_child(name, flags, fd, path)
            except OSError as exc:
                raise _not_a_directory(exc, path) from None
            os.close(fd)
            fd = child
            _check_owner(fd, path)
    finally:
        os.close(fd)


def _open_child(name: str, flags: int, fd: int, path: Path) -> int:
    try:
        return os.open(name, flags, dir_fd=fd)
    except OSError as exc:
        raise _not_a_directory(exc, path) from None


def _named(exc: OSError, path: Path) -> OSError:
    """`exc` naming `path` whole: an error of a call relative to a directory descriptor names only
    the last component (`.staging: Permission denied`), which says nothing of where it is."""
    named = type(exc)(exc.errno, exc.strerror, str(path))
    return named


def _not_a_directory(exc: OSError, path: Path) -> Exception:
    """`path_escapes_root` for a link or a non-directory where a directory was opened; other
    OS errors (permissions, a full disk) as they are, naming the whole path."""
    from pkgmgr.errors import Code, PkgmgrError

    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
        return _named(exc, path)
    kind = "a symbolic link" if os.path.islink(path) else "not a directory"
    return PkgmgrError(f"{path} is {kind}: pkgmgr does not write through it", code=Code.PATH_ESCAPES_ROOT,
                       path=str(path),
                       hint=f"remove {path}; the next command creates what pkgmgr needs there")


def _check_owner(fd: int, path: Path) -> None:
    from pkgmgr.errors import Code, PkgmgrError

    owner = foreign_owner(os.fstat(fd))
    if owner is not None:
        raise PkgmgrError(f"{path} is owned by {owner}, not by you: pkgmgr does not write there",
                          code=Code.PATH_ESCAPES_ROOT, path=str(path),
                          hint="use a directory of your own (PKGMGR_HOME, --home)")


def refuse_links(directory: Path, names: tuple[str, ...]) -> None:
    """Refuse (`path_escapes_root`) files pkgmgr opens for writing in `directory` when they are
    symlinks or another user's (a missing one is fine: pkgmgr creates it)."""
    from pkgmgr.errors import Code, PkgmgrError

    for name in names:
        path = Path(directory) / name
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise PkgmgrError(f"{path} is a symbolic link: pkgmgr does not write through it", code=Code.PATH_ESCAPES_ROOT,
                              path=str(path), hint=f"remove {path}")
        owner = foreign_owner(info)
        if owner is not None:
            raise PkgmgrError(f"{path} is owned by {owner}, not by you: pkgmgr does not write there",
                              code=Code.PATH_ESCAPES_ROOT, path=str(path))
