"""Creating a large tree's small files in a helper process, while this one reads on.

Extracting 10,000 small files is mostly kernel time — an `open`, a `write` and a `close` each —
spent on one core while the other waits, and Python threads cannot share it out (a thread back
from a system call waits for the GIL for up to a switch interval). `FileWorker` hands the
creation of each file to `file_worker.py`, one Python process with no pkgmgr module in it, over
a pipe; this process keeps everything that decides: reading the archive, the name rules, the
limits, the tree checksum, the directories. A file is created by the worker with the same flags
as by `files.TreeWriter` (O_CREAT|O_EXCL|O_NOFOLLOW) under the same private staging directory.

The worker inherits the writer's locks (`fsutil.HELD_LOCKS`): when this process is killed, the
worker still creates what the pipe holds, then sees its end and exits — and until then the lock
is held, so the next writer, which empties `.staging/`, starts only once nothing writes there.

Errors come back as the OSError the worker's call raised (errno and path), from the next
`create` or from `finish`, so they map to SPEC codes as before. `finish()` returns only once
every file exists (the worker has exited), `abort()` once nothing writes any more: a failed
extraction empties the staging directory only after it. The worker flushes nothing; the store's
flush before the rename makes its files durable as every staged file (`fsutil.durable_tree`).
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pkgmgr.archive.file_worker import CHMOD, RECORD, REPORT
from pkgmgr.fsutil import HELD_LOCKS

if TYPE_CHECKING:
    from subprocess import Popen

WORKER = Path(__file__).with_name("file_worker.py")
# Bytes gathered before one write to the pipe; the pipe is widened to hold four of them.
BATCH_BYTES = 256 * 1024
PIPE_BYTES = 1024 * 1024
PATH_MAX = 4096  # Linux's: a longer path is ENAMETOOLONG, which the caller gets from its own call
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ (Linux; typeshed does not declare it everywhere)


def available() -> bool:
    """Whether a worker can be started here: POSIX, a known interpreter and the script beside
    this module (a frozen or zipped pkgmgr has none: the caller writes the files itself)."""
    return os.name == "posix" and bool(sys.executable) and WORKER.is_file()


class FileWorker:
    """One helper process creating files, fed over a pipe. Not thread-safe."""

    def __init__(self, root: str, flags: int) -> None:
        """Start a worker creating files under `root` with `os.open` flags `flags`."""
        import subprocess  # only an extraction of many files starts one

        process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WORKER), str(flags)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
            cwd="/", close_fds=True, pass_fds=sorted(HELD_LOCKS))  # a killed writer's lock outlives its worker
        assert process.stdin is not None and process.stdout is not None
        self._process: Popen[bytes] = process
        self._stdin, self._stdout = process.stdin, process.stdout
        self._fd = process.stdin.fileno()
        try:
            import fcntl

            fcntl.fcntl(self._fd, _F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # the default 64 KiB pipe works, with more hand-offs
        self._batch = bytearray()
        self._root = root

    def create(self, path: str, data: bytes, mode: int, *, chmod: bool) -> None:
        """Queue the creation of file `path` (absolute) holding `data` with `mode`; `chmod`:
        `fchmod` it to `mode` afterwards. May raise the OSError of an earlier file."""
        name = os.fsencode(path)
        batch = self._batch
        batch += RECORD.pack(len(name), len(data), mode | CHMOD if chmod else mode)
        batch += name
        batch += data
        if len(batch) >= BATCH_BYTES:
            self._send()

    def finish(self) -> None:
        """Wait until every queued file exists; raise the worker's OSError, if any."""
        try:
            self._send()
        finally:
            self._stdin.close()
        self._collect()

    def abort(self) -> None:
        """Stop the worker and wait for it: once this returns, nothing writes any more."""
        process = self._process
        if process.returncode is None:
            process.kill()
        try:
            self._stdin.close()
        except OSError:
            pass
        process.wait()
        self._stdout.close()

    def _send(self) -> None:
        batch, self._batch = self._batch, bytearray()
        view = memoryview(batch)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except BrokenPipeError:  # the worker stopped: it failed
            self._stdin.close()
            self._collect()
            raise

    def _collect(self) -> None:
        """Wait for the worker's exit and raise its report as an OSError (or, without one, an
        EIO naming the worker's status)."""
        process = self._process
        report = b""
        while len(report) <= REPORT.size + 2 * PATH_MAX and (piece := self._stdout.read(PATH_MAX)):
            report += piece
        self._stdout.close()
        status = process.wait()
        if status == 0 and not report:
            return
        if len(report) >= REPORT.size:
            number, length = REPORT.unpack_from(report)
            path = os.fsdecode(report[REPORT.size:REPORT.size + length])
            raise OSError(number, os.strerror(number), path)
        raise OSError(errno.EIO, f"the process creating the extracted files ended with status {status}", self._root)
