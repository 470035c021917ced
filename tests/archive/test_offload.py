"""The helper process that creates a large extraction's small files (`offload.FileWorker`,
`file_worker.py`): the tree, its modes and its checksum are the ones writing in-process gives;
its failures come back as the OSError of the file that failed, nothing more is written after
one, and once `abort` returns nothing writes in the tree."""

from __future__ import annotations

import errno
import io
import os
import signal
import stat
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.archive import files, offload
from pkgmgr.archive.checksum import TreeRecord
from pkgmgr.archive.extract import extract_archive
from pkgmgr.archive.file_worker import RECORD, TRUNCATED, serve
from pkgmgr.archive.files import TreeWriter
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError

FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def archive(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """A .tar.gz of `members` (name -> (content, mode)) and a manifest under `demo-1.0.0/`, in
    the order of their names (the tree checksum's, which the record then computes as it goes)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, (data, mode) in sorted({"extension.toml": (b'name = "demo"\nversion = "1.0.0"\n', 0o644),
                                          **members}.items()):
            info = tarfile.TarInfo(f"demo-1.0.0/{name}")
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return path


def extracted(source: Path, into: Path, *, offload_after: int) -> tuple[str | None, dict[str, tuple[int, bytes]]]:
    """Extract `source` with the worker taking over after `offload_after` files: the tree
    checksum the extraction recorded (None for members out of order: the record cannot tell),
    and every file's (mode, content) read back."""
    saved = files.OFFLOAD_AFTER
    files.OFFLOAD_AFTER = offload_after
    try:
        into.mkdir()
        record = TreeRecord()
        root = extract_archive(source, into, Limits(), record=record)
    finally:
        files.OFFLOAD_AFTER = saved
    result = record.result(into, root)
    tree = {str(p.relative_to(root)): (stat.S_IMODE(p.stat().st_mode), p.read_bytes())
            for p in root.rglob("*") if p.is_file()}
    assert all(stat.S_IMODE(d.stat().st_mode) == 0o755 for d in [root, *root.rglob("*")] if d.is_dir())
    return (result[0] if result is not None else None), tree


MEMBERS = {f"d{i % 7}/sub{i % 3}/f{i:03d}.txt": (b"line %d\n" % i * (i % 11), 0o755 if i % 5 == 0 else 0o644)
           for i in range(300)}


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_the_worker_writes_the_tree_writing_in_process_writes(tmp_path: Path, umask: int) -> None:
    source = archive(tmp_path / "a.tar.gz", MEMBERS)
    old = os.umask(umask)  # 077 cuts the modes: the worker fchmods as the writer does
    try:
        inline = extracted(source, tmp_path / "inline", offload_after=10 ** 9)
        worker = extracted(source, tmp_path / "worker", offload_after=5)
    finally:
        os.umask(old)
    assert worker == inline and worker[0] is not None
    assert len(worker[1]) == 301 and worker[1]["d0/sub0/f000.txt"][0] == 0o755


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(st.tuples(st.binary(max_size=3000), st.booleans()), min_size=1, max_size=40),
       offload_after=st.integers(min_value=0, max_value=45))
def test_any_tree_is_the_same_whoever_writes_it(tmp_path_factory: pytest.TempPathFactory,
                                                 contents: list[tuple[bytes, bool]], offload_after: int) -> None:
    base = tmp_path_factory.mktemp("any")
    source = archive(base / "a.tar.gz", {f"x{i % 4}/{i}.bin": (data, 0o755 if run else 0o600)
                                         for i, (data, run) in enumerate(contents)})
    assert (extracted(source, base / "worker", offload_after=offload_after)
            == extracted(source, base / "inline", offload_after=10 ** 9))


def test_a_failure_is_the_oserror_of_the_file_and_nothing_is_written_after_it(tmp_path: Path) -> None:
    (tmp_path / "taken").write_bytes(b"before")
    worker = offload.FileWorker(str(tmp_path), FLAGS)
    worker.create(str(tmp_path / "first"), b"1", 0o644, chmod=False)
    worker.create(str(tmp_path / "taken"), b"2", 0o644, chmod=False)
    worker.create(str(tmp_path / "after"), b"3", 0o644, chmod=False)
    with pytest.raises(FileExistsError) as caught:
        worker.finish()
    assert caught.value.errno == errno.EEXIST and caught.value.filename == str(tmp_path / "taken")
    assert (tmp_path / "first").read_bytes() == b"1" and (tmp_path / "taken").read_bytes() == b"before"
    assert not (tmp_path / "after").exists()


def test_a_failure_surfaces_at_a_later_create_once_the_worker_stopped_reading(tmp_path: Path) -> None:
    worker = offload.FileWorker(str(tmp_path), FLAGS)
    worker.create(str(tmp_path / "gone" / "x"), b"", 0o644, chmod=False)  # no such directory
    with pytest.raises(FileNotFoundError) as caught:
        for i in range(10_000):  # far more than the pipe holds: the worker stopped at the first
            worker.create(str(tmp_path / f"f{i}"), b"x" * 1000, 0o644, chmod=False)
    assert caught.value.filename == str(tmp_path / "gone" / "x")
    worker.abort()
    assert sorted(os.listdir(tmp_path)) == []


def test_a_worker_that_dies_without_a_word_is_eio_naming_the_tree(tmp_path: Path) -> None:
    worker = offload.FileWorker(str(tmp_path), FLAGS)
    os.kill(worker._process.pid, signal.SIGKILL)
    worker._process.wait()
    with pytest.raises(OSError) as caught:
        worker.finish()
    assert caught.value.errno == errno.EIO and caught.value.filename == str(tmp_path)
    assert "status -9" in str(caught.value)


def test_abort_returns_once_nothing_writes_any_more(tmp_path: Path) -> None:
    worker = offload.FileWorker(str(tmp_path), FLAGS)
    for i in range(2000):
        worker.create(str(tmp_path / f"f{i}"), b"x" * 500, 0o644, chmod=False)
    worker.abort()
    assert worker._process.poll() is not None
    written = sorted(os.listdir(tmp_path))
    assert sorted(os.listdir(tmp_path)) == written  # a second look: nothing new


def test_a_failed_extraction_stops_the_worker_before_emptying_staging(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    members = {f"d/f{i:04d}": (b"x", 0o644) for i in range(600)}
    members["zz/../../escape"] = (b"x", 0o644)  # refused after 600 files (sorted last), the worker at work
    source = archive(tmp_path / "bad.tar.gz", members)
    staging = tmp_path / "staging"
    staging.mkdir()
    started: list[offload.FileWorker] = []

    class Watched(offload.FileWorker):
        def __init__(self, root: str, flags: int) -> None:
            super().__init__(root, flags)
            started.append(self)

    monkeypatch.setattr(files, "OFFLOAD_AFTER", 10)
    monkeypatch.setattr(offload, "FileWorker", Watched)
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(source, staging, Limits())
    assert caught.value.code == "unsafe_archive" and "escape" in caught.value.message
    assert len(started) == 1 and started[0]._process.poll() is not None
    assert list(staging.iterdir()) == []


def test_the_writer_writes_in_process_where_no_worker_can_start(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise OSError(errno.EAGAIN, "no process")

    monkeypatch.setattr(files, "OFFLOAD_AFTER", 1)
    monkeypatch.setattr(offload, "FileWorker", refuse)
    writer = TreeWriter(tmp_path, offload=True)
    for i in range(5):
        writer.write_bytes(f"a/{i}", b"%d" % i, 0o644)
    writer.finish()
    assert [(tmp_path / "a" / str(i)).read_bytes() for i in range(5)] == [b"0", b"1", b"2", b"3", b"4"]


@pytest.mark.parametrize("cut", [1, RECORD.size, RECORD.size + 3])
def test_input_cut_mid_record_is_truncated_and_creates_nothing(tmp_path: Path, cut: int) -> None:
    path = os.fsencode(tmp_path / "f")
    record = RECORD.pack(len(path), 5, 0o644) + path + b"hello"
    read, write = os.pipe()
    report_read, report_write = os.pipe()
    os.write(write, record + record[:cut])  # one whole record, then the start of another
    os.close(write)
    (tmp_path / "f").unlink(missing_ok=True)
    try:
        assert serve(read, report_write, FLAGS) == TRUNCATED
    finally:
        for fd in (read, report_read, report_write):
            os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"hello"
    assert sorted(os.listdir(tmp_path)) == ["f"]


WRITER = """
import os, sys
from pathlib import Path
from pkgmgr.archive.offload import FileWorker
from pkgmgr.store.lock import ExclusiveLock
lock = ExclusiveLock(Path(sys.argv[1]), 0)
lock.acquire()
worker = FileWorker(sys.argv[2], int(sys.argv[3]))
worker.create(os.path.join(sys.argv[2], "first"), b"1", 0o644, chmod=False)
worker._send()  # the record is in the pipe; the rest of the batch logic is not what this tests
print(worker._process.pid, flush=True)
sys.stdin.readline()  # killed while waiting here
"""


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfd_open (Linux 5.3+) to wait for an orphan")
def test_a_killed_writer_keeps_its_lock_until_its_worker_stopped_writing(tmp_path: Path) -> None:
    """The next writer empties `.staging/` under the lock: it must not start while an orphaned
    worker still creates files there (the crash harness's random kill found it)."""
    import select
    import subprocess
    import sys

    from pkgmgr.store.lock import is_held

    lock, tree = tmp_path / "state.lock", tmp_path / "tree"
    tree.mkdir()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(lock), str(tree), str(FLAGS)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    worker_pid = int(writer.stdout.readline())
    pidfd = os.pidfd_open(worker_pid)
    try:
        os.kill(worker_pid, signal.SIGSTOP)  # the worker still has work: it cannot have exited
        writer.kill()
        writer.wait()
        assert is_held(lock)  # the writer is gone; its worker holds the lock
        os.kill(worker_pid, signal.SIGCONT)  # it creates what the pipe holds, sees its end, exits
        assert select.select([pidfd], [], [], 60)[0] == [pidfd]
    finally:
        os.close(pidfd)
    assert not is_held(lock)
    assert (tree / "first").read_bytes() == b"1"


def test_abort_after_an_interrupted_finish_still_stops_the_worker(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or any exception) while `finish` waits: the writer keeps its worker, so the failed
    extraction's `abort` kills and reaps it before staging is emptied."""
    monkeypatch.setattr(files, "OFFLOAD_AFTER", 0)
    writer = TreeWriter(tmp_path, offload=True)
    writer.write_bytes("a/one", b"1", 0o644)
    worker = writer._worker
    assert worker is not None

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(worker, "_collect", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writer.finish()
    assert writer._worker is worker  # still the writer's to stop
    writer.abort()
    assert writer._worker is None and worker._process.poll() is not None
