"""Enforcing `Limits` while streaming: compressed bytes read, bytes produced, entries, ratio.

Every check happens before the bytes concerned are handed on, so nothing over a limit is ever
written: a decompression bomb is stopped after at most one chunk past the ratio threshold.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any, BinaryIO, Callable

from pkgmgr.archive.errors import corrupt, too_large
from pkgmgr.archive.files import CHUNK
from pkgmgr.config import Limits

if TYPE_CHECKING:
    import queue

GZIP_WBITS = 16 + zlib.MAX_WBITS
RAW_DEFLATE_WBITS = -zlib.MAX_WBITS


class Budget:
    """Entry count and bytes written, shared by every member of one archive."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.entries = 0
        self.written = 0

    def entry(self, member: str) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise too_large("entry count", self.limits.max_entries, member=member)

    def reserve(self, size: int, member: str) -> None:
        """Refuse up front a member whose declared size alone would pass the limit."""
        if self.written + size > self.limits.max_uncompressed_bytes:
            raise too_large("uncompressed size", self.limits.max_uncompressed_bytes, member=member)

    def take(self, size: int, member: str) -> None:
        """Count `size` bytes about to be written; refuse them if they would pass the limit."""
        self.reserve(size, member)
        self.written += size


class CountingReader:
    """Reads a raw file, refusing to read more than `limit` bytes in total."""

    def __init__(self, raw: BinaryIO, limit: int) -> None:
        self._raw = raw
        self._limit = limit
        self.count = 0

    def read(self, size: int) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        if self.count > self._limit:
            raise too_large("compressed size", self._limit)
        return data


# A gzip stream may hold several members (`cat a.gz b.gz`, bgzip's 64 KiB blocks); each costs a
# new decompressor and a turn of a Python loop, whatever it holds. A member that adds little
# output is therefore budgeted: at most GZIP_MEMBERS_FREE members, plus one for every
# GZIP_MEMBER_BYTES produced (bgzip's blocks stay well inside; 2.5 million empty members — 48 MiB
# that inflated for 86 s — stop after the first few, on every Python).
GZIP_MEMBERS_FREE = 16
GZIP_MEMBER_BYTES = 32 * 1024


class Inflater:
    """A file-like `read(n)` over a deflate (zip) or gzip stream, refusing while it streams:

    - more than `max_ratio` bytes out per compressed byte in, once `ratio_threshold_bytes`
      have been produced;
    - more than `cap` bytes out in total;
    - more gzip members than their output pays for (`GZIP_MEMBERS_FREE`, `GZIP_MEMBER_BYTES`).

    `read_raw(n)` supplies compressed bytes ("" at the end). Multi-member gzip is read through;
    anything after the last gzip member that is not another member is ignored (as gzip does).
    """

    def __init__(self, read_raw: Callable[[int], bytes], *, wbits: int, limits: Limits, cap: int,
                 member: str | None = None) -> None:
        self._read_raw = read_raw
        self._wbits = wbits
        self._d = zlib.decompressobj(wbits)
        self._pending = b""
        self._limits = limits
        self._cap = cap
        self._member = member
        self.fed = 0  # compressed bytes taken from read_raw
        self.produced = 0
        self.members = 1
        self.finished = False

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = CHUNK
        while not self.finished:
            if self._d.eof and not self._next_gzip_member():
                self.finished = True
                break
            data = self._pending or self._take_raw()
            if not data:
                raise corrupt("compressed data ends early (truncated archive)", member=self._member)
            try:
                out = self._d.decompress(data, size)
            except zlib.error as exc:
                raise corrupt(f"bad compressed data ({exc})", member=self._member) from None
            self._pending = self._d.unconsumed_tail
            if out:
                self._account(len(out))
                return out
        return b""

    def _take_raw(self) -> bytes:
        data = self._read_raw(CHUNK)
        self.fed += len(data)
        return data

    def _next_gzip_member(self) -> bool:
        if self._wbits != GZIP_WBITS:
            return False
        rest = self._d.unused_data
        while len(rest) < 2:
            more = self._take_raw()
            if not more:
                break
            rest += more
        if not rest.startswith(b"\x1f\x8b"):
            return False  # trailing padding or garbage after the last member: ignored
        self.members += 1
        allowed = GZIP_MEMBERS_FREE + self.produced // GZIP_MEMBER_BYTES
        if self.members > allowed:
            raise too_large("gzip member count", allowed, member=self._member, configurable=False)
        self._d = zlib.decompressobj(self._wbits)
        self._pending = rest
        return True

    def _account(self, produced: int) -> None:
        self.produced += produced
        if self.produced > self._cap:
            raise too_large("uncompressed size", self._limits.max_uncompressed_bytes, member=self._member)
        if self.produced > self._limits.ratio_threshold_bytes:
            consumed = max(self.fed - len(self._pending), 1)
            if self.produced > self._limits.max_ratio * consumed:
                raise too_large("compression ratio", self._limits.max_ratio, member=self._member)


class ReadAhead:
    """`read(n)` of a source (an `Inflater`) that a thread of its own runs ahead of the reader,
    at most `depth` chunks: inflating (zlib lets go of the GIL) overlaps writing and hashing
    what came before. The chunks, their order, the checks and the errors are the source's: an
    error reaches the reader at the point of the stream where the source raised it. `close()`
    stops the thread and waits for it (call it before the source's file is closed)."""

    def __init__(self, source: Callable[[int], bytes], *, depth: int = 4) -> None:
        import queue  # here: only an archive of READ_AHEAD_BYTES or more is read ahead
        import threading

        self._source = source
        self._full = queue.Full
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, name="pkgmgr-inflate", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                chunk: Any = self._source(CHUNK)
            except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
                chunk = exc
            while not self._stop.is_set():
                try:
                    self._queue.put(chunk, timeout=0.1)
                    break
                except self._full:
                    continue
            if isinstance(chunk, BaseException) or not chunk:
                return

    def read(self, size: int = -1) -> bytes:
        """The next chunk (whatever its size: `_ForwardStream` splits it); b"" at the end."""
        if self._done:
            return b""
        item = self._queue.get()
        if isinstance(item, BaseException):
            self._done = True
            raise item
        if not item:
            self._done = True
        return item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
