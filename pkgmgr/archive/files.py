"""Filesystem primitives of the archive package: normalised modes, opening a regular file
without following links or blocking on a FIFO, and writing a fresh tree (extraction and
install-from-directory) with O_EXCL/O_NOFOLLOW semantics.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Iterable

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import NotRegularFile, kind_of, open_regular_fd, remove_tree

CHUNK = 1024 * 1024
# A regular member up to this size is read whole and written in one call (`TreeWriter.write_bytes`,
# which a helper process may do); a larger one streams (`TreeWriter.write`).
SMALL_MEMBER_BYTES = 64 * 1024
FILE_MODE = 0o644
EXEC_MODE = 0o755
DIR_MODE = 0o755

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# A writer with `offload` writes this many small files itself, then starts a FileWorker for the rest
# (`offload.py`): a tree of a few hundred files is not worth a process. Tests lower it.
OFFLOAD_AFTER = 256
# A longer path is written here (its bytes may pass PATH_MAX: ENAMETOOLONG at the member's own call).
_OFFLOAD_PATH_CHARS = 1000


def file_mode(st_mode: int) -> int:
    """0755 when the owner may execute, else 0644: every other bit (setuid, setgid, sticky,
    group/other write, a missing read bit) is dropped."""
    return EXEC_MODE if st_mode & stat.S_IXUSR else FILE_MODE


def mode_label(mode: int) -> str:
    """`"0755"` or `"0644"`: the mode as the tree checksum and listing spell it."""
    return "0755" if mode & stat.S_IXUSR else "0644"


def open_regular(path: str | os.PathLike[str], *, display: str, dir_fd: int | None = None) -> int:
    """Open a regular file for reading and return its descriptor: a symbolic link in the last
    component, a FIFO, a device or a socket is refused (`invalid_archive`) without blocking.
    `dir_fd`: `path` is a name in that open directory."""
    try:
        return open_regular_fd(path, dir_fd=dir_fd)
    except NotRegularFile as exc:
        if exc.kind == "a symbolic link":
            raise PkgmgrError(f"{display!r} changed into a symbolic link while being read",
                              code=Code.PATH_ESCAPES_ROOT, details={"path": display}) from exc
        raise _not_a_file(display, exc.kind) from None


def not_regular(display: str, st_mode: int) -> PkgmgrError:
    return _not_a_file(display, kind_of(st_mode))


def _not_a_file(display: str, kind: str) -> PkgmgrError:
    return PkgmgrError(
        f"{display!r} is {kind}: only regular files, directories and symbolic links "
        "can be installed or packed",
        code=Code.INVALID_ARCHIVE,
        details={"path": display},
    )


def read_chunks(fd: int, size: int = CHUNK) -> Iterable[bytes]:
    """The content of an open descriptor in chunks of at most `size` bytes."""
    while True:
        data = os.read(fd, size)
        if not data:
            return
        yield data


def empty_directory(directory: Path) -> None:
    """Remove everything inside `directory`, keeping the directory itself."""
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return
    for entry in entries:
        remove_tree(Path(entry.path))


def _write_all(fd: int, data: bytes) -> None:
    done = os.write(fd, data)
    if done < len(data):
        view = memoryview(data)[done:]
        while view:
            view = view[os.write(fd, view):]


def process_umask() -> int | None:
    """The process's umask as Linux reports it (`/proc/self/status`), without changing it
    (`os.umask` can only be read by setting it, which races with other threads); None where
    it cannot be read."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


class TreeWriter:
    """Writes a new tree under an existing private directory.

    Paths are relative POSIX paths that were already validated; files are created with
    O_CREAT|O_EXCL|O_NOFOLLOW (never overwriting, never through a link) with their final
    normalised mode, independent of the umask: created with it when the umask leaves it whole
    (the usual 022 does), else given it with fchmod — the umask is read once, when the first
    file is created (pkgmgr never changes it). Directories get 0755 in `finish()`.
    No fsync here: the store makes the whole tree durable in one flush before renaming it into
    place (`store.switch.commit`, `fsutil.durable_tree`).
    """

    def __init__(self, root: Path, record: Any = None, *, offload: bool = False) -> None:
        self._root = os.fspath(root)
        self._prefix = os.path.join(self._root, "")
        self._dirs: set[str] = {""}
        self._made: list[str] = []
        self._record = record  # a checksum.TreeRecord, fed what is written
        self._direct: frozenset[int] | None = None  # the modes the umask leaves whole, read at the first file
        # `offload`: from the OFFLOAD_AFTER-th small file on, a FileWorker creates them (offload.py)
        self._inline_left = OFFLOAD_AFTER if offload else -1
        self._worker: Any = None

    def _path(self, rel: str) -> str:
        return self._prefix + rel

    def mkdir(self, rel: str) -> None:
        """Create directory `rel` and any missing parents (known parents cost nothing)."""
        missing = []
        while rel not in self._dirs:
            missing.append(rel)
            rel = rel.rpartition("/")[0]
        for rel in reversed(missing):
            path = self._path(rel)
            os.mkdir(path, 0o700)
            self._dirs.add(rel)
            self._made.append(path)

    def _create(self, rel: str, mode: int) -> tuple[int, bool]:
        """Create file `rel` (parents included): its descriptor, and whether it has `mode`
        already (else the caller fchmods it)."""
        parent = rel.rpartition("/")[0]
        if parent not in self._dirs:
            self.mkdir(parent)
        direct = mode in (self._direct if self._direct is not None else self._create_modes())
        return os.open(self._prefix + rel, _CREATE_FLAGS, mode if direct else 0o600), direct

    def _create_modes(self) -> frozenset[int]:
        """The modes a file can be created with directly: those the umask leaves whole."""
        umask = process_umask()
        self._direct = frozenset(m for m in (FILE_MODE, EXEC_MODE) if umask is not None and not umask & m)
        return self._direct

    def write(self, rel: str, chunks: Iterable[bytes], mode: int, size: int | None = None) -> None:
        """Create file `rel` (parents included) from `chunks` (`size` bytes, when known), with
        `mode` (0644 or 0755)."""
        fd, direct = self._create(rel, mode)
        record = self._record
        take = record.file(rel, mode, size) if record is not None else None
        try:
            for chunk in chunks:
                if take is not None:
                    take(chunk)
                _write_all(fd, chunk)
            if not direct:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        if record is not None:
            record.end()

    def write_bytes(self, rel: str, data: bytes, mode: int) -> None:
        """`write` of a file whose whole content is at hand (`_create` inlined: one call a member
        of an archive of small files). With `offload`, past the first OFFLOAD_AFTER files the
        worker creates it, and an error may surface at a later call or at `finish`."""
        if rel.rpartition("/")[0] not in self._dirs:
            self.mkdir(rel.rpartition("/")[0])
        direct = mode in (self._direct if self._direct is not None else self._create_modes())
        path = self._prefix + rel
        if (self._worker is not None or self._start_worker()) and len(path) <= _OFFLOAD_PATH_CHARS:
            self._worker.create(path, data, mode, chmod=not direct)
            if self._record is not None:
                self._record.add(rel, mode, data)
            return
        fd = os.open(path, _CREATE_FLAGS, mode if direct else 0o600)
        try:
            done = os.write(fd, data)  # `_write_all`, its usual case inlined
            if done < len(data):
                _write_all(fd, data[done:])
            if not direct:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        if self._record is not None:
            self._record.add(rel, mode, data)

    def _start_worker(self) -> bool:
        """Count one more small file written here; True once a FileWorker has been started."""
        if self._inline_left < 0:
            return False
        self._inline_left -= 1
        if self._inline_left >= 0:
            return False
        from pkgmgr.archive import offload

        if offload.available():
            try:
                self._worker = offload.FileWorker(self._root, _CREATE_FLAGS)
                return True
            except OSError:
                pass  # no process could be started: this one writes on
        return False

    def finish(self) -> None:
        """Wait for every file to be created (the worker's error, if any, raised here), then give
        every directory this writer made its final mode."""
        if self._worker is not None:
            self._worker.finish()  # kept until it returns: interrupted or failed, `abort` still stops it
            self._worker = None
        for path in self._made:
            os.chmod(path, DIR_MODE)

    def abort(self) -> None:
        """After a failure: stop the worker, if any; once this returns nothing writes in the tree."""
        worker, self._worker = self._worker, None
        self._inline_left = -1
        if worker is not None:
            worker.abort()
