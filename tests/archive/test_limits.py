"""Streaming limit enforcement: counting reader, budget, and the inflater's ratio and cap."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest

from pkgmgr.archive.files import CHUNK
from pkgmgr.archive.limits import GZIP_WBITS, RAW_DEFLATE_WBITS, Budget, CountingReader, Inflater
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError
from tests.archive.corpus import noise


def _drain(inflater: Inflater) -> bytes:
    out = bytearray()
    while chunk := inflater.read(CHUNK):
        out += chunk
    return bytes(out)


def test_counting_reader_refuses_bytes_past_the_limit() -> None:
    reader = CountingReader(io.BytesIO(b"x" * 100), limit=60)
    assert reader.read(50) == b"x" * 50
    with pytest.raises(PkgmgrError) as caught:
        reader.read(50)
    assert caught.value.code == "archive_too_large"
    assert "compressed size" in caught.value.message


def test_budget_counts_entries_and_bytes() -> None:
    budget = Budget(Limits(max_entries=2, max_uncompressed_bytes=10))
    budget.entry("a")
    budget.entry("b")
    with pytest.raises(PkgmgrError):
        budget.entry("c")
    budget.take(10, "a")
    with pytest.raises(PkgmgrError) as caught:
        budget.take(1, "b")
    assert caught.value.details["member"] == "b"
    assert budget.written == 10


def test_inflater_reads_multi_member_gzip_and_ignores_trailing_padding() -> None:
    data = gzip.compress(b"one ") + gzip.compress(b"two") + b"\0" * 100
    stream = io.BytesIO(data)
    inflater = Inflater(lambda n: stream.read(min(n, 7)), wbits=GZIP_WBITS, limits=Limits(), cap=1000)
    assert _drain(inflater) == b"one two"


def test_inflater_stops_a_bomb_before_handing_out_more_than_one_chunk() -> None:
    bomb = gzip.compress(b"\0" * (8 * CHUNK))
    limits = Limits(max_ratio=50.0, ratio_threshold_bytes=1000)
    stream = io.BytesIO(bomb)
    inflater = Inflater(stream.read, wbits=GZIP_WBITS, limits=limits, cap=1 << 40)
    handed_out = 0
    with pytest.raises(PkgmgrError) as caught:
        while chunk := inflater.read(CHUNK):
            handed_out += len(chunk)
    assert caught.value.code == "archive_too_large"
    assert handed_out == 0  # the very first chunk already passes the threshold at ratio ~1000
    assert inflater.fed <= CHUNK  # it never read (let alone inflated) the whole bomb


def test_inflater_ratio_below_threshold_is_allowed() -> None:
    data = b"\0" * 5000
    stream = io.BytesIO(zlib.compress(data)[2:-4])  # raw deflate
    inflater = Inflater(stream.read, wbits=RAW_DEFLATE_WBITS,
                        limits=Limits(max_ratio=2.0, ratio_threshold_bytes=10_000), cap=1 << 20)
    assert _drain(inflater) == data


def test_inflater_cap() -> None:
    data = noise(3000)
    stream = io.BytesIO(gzip.compress(data))
    inflater = Inflater(stream.read, wbits=GZIP_WBITS, limits=Limits(), cap=2000)
    with pytest.raises(PkgmgrError) as caught:
        _drain(inflater)
    assert caught.value.code == "archive_too_large"


@pytest.mark.parametrize("data, reason", [
    (gzip.compress(b"x" * 1000, mtime=0)[:-10], "truncated"),  # mtime=0: the same test id on every xdist worker
    (b"\x1f\x8b\x08\x00garbage-garbage-garbage", "bad compressed data"),
])
def test_inflater_broken_streams(data: bytes, reason: str) -> None:
    stream = io.BytesIO(data)
    inflater = Inflater(stream.read, wbits=GZIP_WBITS, limits=Limits(), cap=1 << 20)
    with pytest.raises(PkgmgrError) as caught:
        _drain(inflater)
    assert caught.value.code == "invalid_archive"
    assert reason in caught.value.message
