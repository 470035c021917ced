"""The exclusive writer lock (`pkgmgr.store.lock`): one holder at a time across threads and
processes, a wait bounded by the timeout (polled, never busy), released on exit and when its
holder dies; and the `locked` error a scope's writer turns a timeout into."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.errors import PkgmgrError, exit_code_for
from pkgmgr.store import lock as lockmod
from pkgmgr.store.lock import POLL_SECONDS, ExclusiveLock, LockTimeout
from pkgmgr.store.scope import global_scope

REPO = Path(__file__).resolve().parents[2]


class FakeClock:
    """Stands in for the `time` module of pkgmgr.store.lock: sleeping advances the clock
    instantly, and `on_sleep` runs at every poll (in the polling thread)."""

    def __init__(self, on_sleep=None) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(len(self.sleeps))


def fake_time(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> FakeClock:
    monkeypatch.setattr(lockmod, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    return clock


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


# --- one holder at a time ------------------------------------------------------------------------


def test_acquire_creates_the_file_and_excludes_another_holder(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    first = ExclusiveLock(path, timeout=0)
    first.acquire()
    try:
        assert path.is_file()
        with pytest.raises(LockTimeout) as exc:
            ExclusiveLock(path, timeout=0).acquire()
        assert str(path) in str(exc.value)
    finally:
        first.release()
    second = ExclusiveLock(path, timeout=0)
    second.acquire()  # free again
    second.release()


def test_context_manager_holds_the_lock_and_releases_it_on_exit(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    with ExclusiveLock(path, timeout=0) as held:
        assert isinstance(held, ExclusiveLock) and held.path == path
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()
    with ExclusiveLock(path, timeout=0):
        pass


def test_released_when_the_body_raises(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    with pytest.raises(KeyError):
        with ExclusiveLock(path, timeout=0):
            raise KeyError("boom")
    with ExclusiveLock(path, timeout=0):
        pass


def test_the_lock_excludes_a_plain_flock_on_the_same_file(tmp_path: Path) -> None:
    """Compatible with other flock users (filelock on POSIX locks the same way)."""
    path = tmp_path / "state.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()
        fcntl.flock(fd, fcntl.LOCK_UN)
        with ExclusiveLock(path, timeout=0):
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_filelock_and_the_lock_exclude_each_other(tmp_path: Path) -> None:
    filelock = pytest.importorskip("filelock")
    path = tmp_path / "state.lock"
    with filelock.UnixFileLock(str(path), timeout=0):
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()
    with ExclusiveLock(path, timeout=0):
        with pytest.raises(filelock.Timeout):
            filelock.UnixFileLock(str(path), timeout=0).acquire()


def test_the_file_content_is_never_touched(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    path.write_bytes(b"left by someone else\n")
    with ExclusiveLock(path, timeout=0):
        pass
    assert path.read_bytes() == b"left by someone else\n"


def test_acquiring_twice_is_a_bug_and_keeps_the_first_hold(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    lock = ExclusiveLock(path, timeout=0)
    lock.acquire()
    try:
        before = open_fds()
        with pytest.raises(RuntimeError):
            lock.acquire()
        assert open_fds() == before  # nothing opened for the refused call
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()  # still held
    finally:
        lock.release()


def test_release_without_a_hold_does_nothing(tmp_path: Path) -> None:
    lock = ExclusiveLock(tmp_path / "state.lock", timeout=0)
    lock.release()
    lock.acquire()
    lock.release()
    lock.release()  # twice
    assert not (tmp_path / "other.lock").exists()
    lock.acquire()  # the same object can take it again
    lock.release()


def test_a_missing_directory_is_an_os_error_not_a_timeout(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ExclusiveLock(tmp_path / "missing" / "state.lock", timeout=5).acquire()


def test_the_descriptor_is_not_inherited(tmp_path: Path) -> None:
    lock = ExclusiveLock(tmp_path / "state.lock", timeout=0)
    with lock:
        assert lock._fd is not None and not os.get_inheritable(lock._fd)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_timeout_leaks_no_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    with ExclusiveLock(path, timeout=0):
        before = open_fds()
        for _ in range(20):
            with pytest.raises(LockTimeout):
                ExclusiveLock(path, timeout=0).acquire()
        assert open_fds() == before
    before = open_fds()
    with ExclusiveLock(path, timeout=0) as lock:
        fd = lock._fd
    assert fd is not None and open_fds() == before
    with pytest.raises(OSError):
        os.fstat(fd)  # closed on release


# --- waiting -------------------------------------------------------------------------------------


def test_timeout_zero_is_a_single_try(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.lock"
    clock = fake_time(monkeypatch, FakeClock())
    with ExclusiveLock(path, timeout=0):
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=-3).acquire()  # a negative timeout is no timeout
    assert clock.sleeps == []


def test_waits_in_polls_until_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.lock"
    clock = fake_time(monkeypatch, FakeClock())
    with ExclusiveLock(path, timeout=0):
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=30).acquire()
    assert sum(clock.sleeps) == pytest.approx(30)
    assert max(clock.sleeps) <= POLL_SECONDS
    assert len(clock.sleeps) == pytest.approx(30 / POLL_SECONDS, abs=1)


def test_the_last_poll_never_oversleeps_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.lock"
    clock = fake_time(monkeypatch, FakeClock())
    with ExclusiveLock(path, timeout=0):
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0.12).acquire()
    assert clock.sleeps == pytest.approx([0.05, 0.05, 0.02])


def test_a_waiter_gets_the_lock_once_the_holder_releases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread B waits while A holds the lock; A releases at B's third poll; B gets it."""
    path = tmp_path / "state.lock"
    holder = ExclusiveLock(path, timeout=0)
    holder.acquire()

    def on_sleep(polls: int) -> None:
        if polls == 3:
            holder.release()

    clock = fake_time(monkeypatch, FakeClock(on_sleep))
    waiter = ExclusiveLock(path, timeout=30)
    waiter.acquire()
    try:
        assert len(clock.sleeps) == 3  # it waited, and stopped waiting as soon as it was free
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()  # now the waiter holds it
    finally:
        waiter.release()


def test_two_threads_take_turns(tmp_path: Path) -> None:
    """Real threads, real clock: the second thread is refused while the first holds the lock,
    then waits for it; the events order every step, nothing sleeps to wait for a result."""
    path = tmp_path / "state.lock"
    held, refused, release, acquired = (threading.Event() for _ in range(4))
    order: list[str] = []
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with ExclusiveLock(path, timeout=0):
                order.append("first in")
                held.set()
                assert release.wait(10)
                order.append("first out")
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    def second() -> None:
        try:
            assert held.wait(10)
            try:
                ExclusiveLock(path, timeout=0).acquire()
            except LockTimeout:
                refused.set()
            with ExclusiveLock(path, timeout=10):
                order.append("second in")
                acquired.set()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert refused.wait(10)
    assert not acquired.is_set()
    release.set()
    for thread in threads:
        thread.join(10)
    assert errors == []
    assert acquired.is_set() and order == ["first in", "first out", "second in"]


# --- across processes ------------------------------------------------------------------------------

HOLDER = """
import sys
from pathlib import Path
from pkgmgr.store.lock import ExclusiveLock
lock = ExclusiveLock(Path(sys.argv[1]), timeout=10)
lock.acquire()
print("held", flush=True)
if sys.stdin.readline().strip() == "release":
    lock.release()
    print("released", flush=True)
    sys.stdin.readline()
"""


def holder_process(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_another_process_holds_then_releases(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    proc = holder_process(path)
    try:
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("release\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        with ExclusiveLock(path, timeout=0):
            pass  # the child is still alive: only its release freed the lock
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(10)


def test_the_lock_dies_with_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "state.lock"
    proc = holder_process(path)
    try:
        with pytest.raises(LockTimeout):
            ExclusiveLock(path, timeout=0).acquire()
    finally:
        proc.kill()  # SIGKILL: no chance to release
        proc.wait(10)
    with ExclusiveLock(path, timeout=0):
        pass
    assert path.exists()  # the file stays; only the lock went away


def test_a_waiting_process_gets_the_lock_after_release(tmp_path: Path) -> None:
    """This process holds the lock; a child waits for it (timeout 10 s) and gets it once we
    release — the child reports 'waiting' before trying, and its result after."""
    path = tmp_path / "state.lock"
    waiter = (
        "import sys\n"
        "from pathlib import Path\n"
        "from pkgmgr.store.lock import ExclusiveLock, LockTimeout\n"
        "try:\n"
        "    ExclusiveLock(Path(sys.argv[1]), timeout=0).acquire()\n"
        "    print('not refused', flush=True)\n"
        "except LockTimeout:\n"
        "    print('refused', flush=True)\n"
        "with ExclusiveLock(Path(sys.argv[1]), timeout=10):\n"
        "    print('acquired', flush=True)\n"
    )
    lock = ExclusiveLock(path, timeout=0)
    lock.acquire()
    proc = subprocess.Popen([sys.executable, "-c", waiter, str(path)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "refused"  # the child met our hold
        lock.release()
        assert proc.stdout.readline().strip() == "acquired"
        assert proc.wait(10) == 0
    finally:
        lock.release()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


# --- a scope's writer lock: timeout -> `locked` ----------------------------------------------------


def test_scope_writer_timeout_is_a_locked_error(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scope = global_scope(home)
    clock = fake_time(monkeypatch, FakeClock())
    with scope.writer(timeout=0):
        other = global_scope(home)
        with pytest.raises(PkgmgrError) as exc:
            with other.writer(timeout=2.5):
                pytest.fail("a second writer got in")
        other.close()
    error = exc.value
    assert error.code == "locked" and error.exit_code == exit_code_for("locked") == 6
    assert str(home) in error.message and "2.5 s" in error.message
    assert error.hint and "--lock-timeout" in error.hint
    assert sum(clock.sleeps) == pytest.approx(2.5)
    scope.close()


def test_scope_writer_releases_on_exit_and_on_error(home: Path) -> None:
    scope = global_scope(home)
    with scope.writer(timeout=0) as held:
        assert held is scope and scope.lock_path.is_file()
    with pytest.raises(ValueError):
        with scope.writer(timeout=0):
            raise ValueError("body failed")
    with ExclusiveLock(scope.lock_path, timeout=0):  # free
        pass
    scope.close()


# --- the lock file must be a regular file, reached without a link (issue 12) ------------------------


def test_a_symlinked_lock_file_is_refused_and_its_target_never_created(tmp_path: Path) -> None:
    from pkgmgr.store.lock import UnsafeLockFile, is_held

    target = tmp_path / "elsewhere" / "created-by-the-attack"
    target.parent.mkdir()
    link = tmp_path / "state.lock"
    link.symlink_to(target)
    with pytest.raises(UnsafeLockFile) as caught:
        ExclusiveLock(link, 0).acquire()
    assert caught.value.code == "state_inconsistent" and "symbolic link" in caught.value.message
    assert not target.exists() and not is_held(link)


def test_a_fifo_as_lock_file_is_refused_without_blocking(tmp_path: Path) -> None:
    from pkgmgr.store.lock import UnsafeLockFile

    fifo = tmp_path / "state.lock"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeLockFile, match="not a regular file"):
        ExclusiveLock(fifo, 0).acquire()
