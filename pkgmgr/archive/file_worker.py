"""The helper process that creates the small files of a large extraction (`offload.FileWorker`).

Run as a script — `python -I -S file_worker.py FLAGS` — so it imports nothing but `os`, `struct`
and `sys`: no pkgmgr module, no site-packages, no environment variable. It reads records from
its standard input and, for each, creates one file with `os.open(path, FLAGS, mode)` (FLAGS are
the parent's O_CREAT|O_EXCL|O_NOFOLLOW…: never an existing file, never through a link), writes
its content and closes it. The parent has already checked every name, counted every byte and
fed the tree checksum; this process only spends the kernel time of creating the files, on the
other core, while the parent reads on.

A record is `RECORD` (path length, content length, mode) followed by the absolute path (file
system bytes) and the content. Bit `CHMOD` of the mode: `fchmod` the file to the mode's low bits
after writing (the umask would have cut them). The end of the input ends the work: exit 0.

On the first failure it writes `REPORT` (errno, path length) and the path to its standard output
and exits 1 without reading on; the parent raises that OSError as if its own call had failed.
Input that is not a whole record (the parent died mid-write) is exit 2, with nothing reported.
"""

from __future__ import annotations

import os
import struct
import sys

RECORD = struct.Struct("<IIi")
REPORT = struct.Struct("<iI")
CHMOD = 1 << 16
TRUNCATED = 2


def serve(source: int, report: int, flags: int) -> int:
    """Create the files `source` describes; the exit status (0, 1 after a report, 2)."""
    with open(source, "rb", buffering=1 << 20, closefd=False) as stream:
        read = stream.read
        while True:
            head = read(RECORD.size)
            if not head:
                return 0
            if len(head) != RECORD.size:
                return TRUNCATED
            path_len, data_len, mode = RECORD.unpack(head)
            path = read(path_len)
            data = read(data_len)
            if len(path) != path_len or len(data) != data_len:
                return TRUNCATED
            try:
                _create(path, data, mode, flags)
            except OSError as exc:
                number = exc.errno if exc.errno is not None else 0
                message = REPORT.pack(number, len(path)) + path
                while message:
                    message = message[os.write(report, message):]
                return 1


def _create(path: bytes, data: bytes, mode: int, flags: int) -> None:
    fd = os.open(path, flags, mode & 0o7777)
    try:
        done = os.write(fd, data)
        while done < len(data):
            done += os.write(fd, data[done:])
        if mode & CHMOD:
            os.fchmod(fd, mode & 0o7777)
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(serve(0, 1, int(sys.argv[1])))
