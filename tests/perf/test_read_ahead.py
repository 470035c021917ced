"""Inflating in a thread ahead of the extraction (`ReadAhead`, used from 4 MiB of compressed
data on) changes nothing but the speed: the adversarial corpus, the streaming limits and the
round trips of tests/archive/test_extract.py run again here with it forced on every archive."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pkgmgr.archive import extract_archive, tar_reader
from pkgmgr.archive.limits import ReadAhead
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError
from tests.archive.conftest import sandbox  # noqa: F401 - the fixture of the tests imported below
from tests.archive.corpus import T, noise, ok_tar
from tests.archive.test_extract import (  # noqa: F401 - collected again, with read-ahead forced
    test_attack_is_refused_and_nothing_escapes,
    test_bomb_is_stopped_while_streaming,
    test_tar_gz_round_trip_with_dot_prefixes_and_directory_entries,
    test_uncompressed_limit_is_never_passed_by_a_write,
)


@pytest.fixture(autouse=True)
def _read_ahead_always(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tar_reader, "READ_AHEAD_BYTES", 0)


def test_no_thread_outlives_an_extraction(tmp_path: Path) -> None:
    good = ok_tar(tmp_path / "good.tar.gz", T("pkg/data", noise(3 * 1024 * 1024)))
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])  # truncated
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    extract_archive(good, tmp_path / "a", Limits())
    with pytest.raises(PkgmgrError):
        extract_archive(bad, tmp_path / "b", Limits())
    assert [t.name for t in threading.enumerate() if t.name == "pkgmgr-inflate"] == []


def test_errors_arrive_in_stream_order_and_close_stops_the_thread() -> None:
    chunks = iter([b"a", b"b", ValueError("broken")])

    def source(size: int) -> bytes:
        item = next(chunks)
        if isinstance(item, Exception):
            raise item
        return item

    ahead = ReadAhead(source)
    assert ahead.read() == b"a" and ahead.read() == b"b"
    with pytest.raises(ValueError):
        ahead.read()
    assert ahead.read() == b""
    ahead.close()

    endless = ReadAhead(lambda size: b"x" * size, depth=2)
    assert endless.read() == b"x" * (1024 * 1024)
    endless.close()  # the thread waits on a full queue: close must still end it
    assert not any(t.name == "pkgmgr-inflate" for t in threading.enumerate())
