"""The registry memory (SPEC 5.4): per source, the highest serial seen and every (name,
version, sha256) — in the global state.db, read without creating it, written in one
transaction that never lowers a serial nor rewrites a known checksum."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pkgmgr.registry.memory import Memory
from pkgmgr.versions import parse_semver

REPO = Path(__file__).resolve().parents[2]
SRC = "https://registry.example/index/"
A, B, C = "a" * 64, "b" * 64, "c" * 64


@pytest.fixture
def memory(home: Path):
    m = Memory(home)
    yield m
    m.close()


def rows(home: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_reads_of_a_fresh_home_create_nothing(home: Path, memory: Memory) -> None:
    assert memory.serial(SRC) is None
    assert memory.known(SRC, "demo-ext") == {}
    memory.forget(SRC)
    memory.record(SRC, None, [])  # nothing to remember: no database either
    assert not home.exists()


def test_record_then_read(home: Path, memory: Memory) -> None:
    memory.record(SRC, 3, [("demo-ext", "1.0.0", A, False), ("demo-ext", "1.1.0-rc.1", B, False),
                           ("other-ext", "0.1.0", C, False)])
    assert memory.serial(SRC) == 3
    known = memory.known(SRC, "demo-ext")
    assert known == {parse_semver("1.0.0"): ("1.0.0", A), parse_semver("1.1.0-rc.1"): ("1.1.0-rc.1", B)}
    assert list(memory.known(SRC, "other-ext").values()) == [("0.1.0", C)]
    assert memory.known(SRC, "unknown-ext") == {}
    assert (home / "state.db").is_file()


def test_a_yank_is_sticky(home: Path, memory: Memory) -> None:
    memory.record(SRC, 1, [("demo-ext", "1.0.0", A, False), ("demo-ext", "2.0.0", B, True)])
    # a later read "unyanks" 2.0.0 and yanks 1.0.0: an unsigned client cannot tell a stale entry
    # from a real unyank, so both stay yanked
    memory.record(SRC, 2, [("demo-ext", "1.0.0", A, True), ("demo-ext", "2.0.0", B, False)])
    assert memory.yanked(SRC, "demo-ext") == {"1.0.0", "2.0.0"}
    assert memory.yanked(SRC, "other-ext") == frozenset()
    assert memory.yanked("https://elsewhere.example/", "demo-ext") == frozenset()
    assert memory.known(SRC, "demo-ext") == {parse_semver("1.0.0"): ("1.0.0", A), parse_semver("2.0.0"): ("2.0.0", B)}
    memory.record(SRC, 3, [("demo-ext", "3.0.0", C, False)])
    for source in (SRC, "https://elsewhere.example/"):  # `seen`: both answers in one query
        for name in ("demo-ext", "other-ext"):
            assert memory.seen(source, name) == (memory.known(source, name), memory.yanked(source, name))


def test_another_instance_sees_what_was_recorded(home: Path, memory: Memory) -> None:
    memory.record(SRC, 7, [("demo-ext", "1.0.0", A, False)])
    other = Memory(home)
    try:
        assert other.serial(SRC) == 7 and list(other.known(SRC, "demo-ext").values()) == [("1.0.0", A)]
    finally:
        other.close()


def test_a_serial_is_raised_never_lowered(memory: Memory) -> None:
    memory.record(SRC, 5, [])
    memory.record(SRC, 9, [])
    assert memory.serial(SRC) == 9
    memory.record(SRC, 4, [])
    assert memory.serial(SRC) == 9
    memory.record(SRC, 9, [])
    assert memory.serial(SRC) == 9
    memory.record(SRC, None, [("demo-ext", "1.0.0", A, False)])  # versions only: the serial stays
    assert memory.serial(SRC) == 9


def test_the_serial_row_carries_a_utc_time(home: Path, memory: Memory) -> None:
    memory.record(SRC, 1, [])
    [(source, serial, updated_at)] = rows(home, "SELECT source, serial, updated_at FROM registry_serials")
    assert (source, serial) == (SRC, 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", updated_at)


def test_versions_without_a_serial(memory: Memory) -> None:
    memory.record(SRC, None, [("demo-ext", "1.0.0", A, False)])
    assert memory.serial(SRC) is None
    assert list(memory.known(SRC, "demo-ext").values()) == [("1.0.0", A)]


def test_a_known_checksum_keeps_its_first_value(memory: Memory) -> None:
    memory.record(SRC, 1, [("demo-ext", "1.0.0", A, False)])
    memory.record(SRC, 2, [("demo-ext", "1.0.0", B, False), ("demo-ext", "2.0.0", C, False)])
    assert sorted(memory.known(SRC, "demo-ext").values()) == [("1.0.0", A), ("2.0.0", C)]


def test_sources_and_names_are_kept_apart(memory: Memory) -> None:
    other = "/srv/another-index"
    memory.record(SRC, 10, [("demo-ext", "1.0.0", A, False)])
    memory.record(other, 2, [("demo-ext", "1.0.0", B, False)])
    assert (memory.serial(SRC), memory.serial(other)) == (10, 2)
    assert list(memory.known(SRC, "demo-ext").values()) == [("1.0.0", A)]
    assert list(memory.known(other, "demo-ext").values()) == [("1.0.0", B)]
    assert memory.serial(SRC.rstrip("/")) is None  # keyed by the exact source text


def test_unparsable_versions_are_left_out_of_known(memory: Memory) -> None:
    memory.record(SRC, 1, [("demo-ext", "not-a-version", A, False), ("demo-ext", "1.2.3", B, False)])
    assert list(memory.known(SRC, "demo-ext").values()) == [("1.2.3", B)]


def test_forget_drops_one_source_only(home: Path, memory: Memory) -> None:
    other = "/srv/another-index"
    memory.record(SRC, 4, [("demo-ext", "1.0.0", A, False)])
    memory.record(other, 6, [("demo-ext", "1.0.0", B, False)])
    memory.forget(SRC)
    assert memory.serial(SRC) is None and memory.known(SRC, "demo-ext") == {}
    assert memory.serial(other) == 6 and len(memory.known(other, "demo-ext")) == 1
    memory.record(SRC, 1, [])  # forgotten: a lower serial is accepted again
    assert memory.serial(SRC) == 1


def test_a_record_is_one_transaction(home: Path, memory: Memory) -> None:
    memory.record(SRC, 1, [("demo-ext", "1.0.0", A, False)])
    with pytest.raises(sqlite3.Error):  # the second row cannot be stored, after the serial was written
        memory.record(SRC, 8, [("demo-ext", "2.0.0", B, False), ("demo-ext", "3.0.0", object(), False)])  # type: ignore[list-item]
    assert memory.serial(SRC) == 1
    assert list(memory.known(SRC, "demo-ext").values()) == [("1.0.0", A)]


def test_the_memory_survives_close(memory: Memory) -> None:
    memory.record(SRC, 2, [])
    memory.close()
    assert memory.serial(SRC) == 2  # reopened on demand
    memory.record(SRC, 3, [])
    assert memory.serial(SRC) == 3


def test_a_crash_before_commit_records_nothing(home: Path) -> None:
    code = ("import sys; from pathlib import Path; from pkgmgr.registry.memory import Memory; "
            "Memory(Path(sys.argv[1])).record(sys.argv[2], 12, [('demo-ext', '9.0.0', 'd' * 64, False)])")
    memory = Memory(home)
    memory.record(SRC, 2, [("demo-ext", "1.0.0", A, False)])
    memory.close()
    proc = subprocess.run([sys.executable, "-c", code, str(home), SRC], cwd=REPO, capture_output=True,
                          env={"PKGMGR_TEST_CRASH_AT": "memory.before_commit", "PATH": "/usr/bin:/bin"},
                          timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    memory = Memory(home)
    try:
        assert memory.serial(SRC) == 2
        assert list(memory.known(SRC, "demo-ext").values()) == [("1.0.0", A)]
    finally:
        memory.close()


def test_a_record_that_changes_nothing_writes_nothing(home: Path, memory: Memory) -> None:
    memory.record(SRC, 3, [("demo-ext", "1.0.0", A, False), ("demo-ext", "2.0.0", B, True)])
    before = rows(home, "SELECT * FROM registry_serials") + rows(home, "SELECT * FROM registry_versions")
    again = Memory(home)
    try:  # the same serial or a lower one, known versions, a yank already remembered, a yank undone
        again.record(SRC, 3, [("demo-ext", "1.0.0", A, False), ("demo-ext", "2.0.0", B, True)])
        again.record(SRC, 2, [("demo-ext", "2.0.0", B, False)])
        again.record(SRC, None, [("demo-ext", "1.0.0", B, False)])  # a known version keeps its sha256 anyway
        assert again._scope._conn is None  # no write connection, no transaction
    finally:
        again.close()
    assert rows(home, "SELECT * FROM registry_serials") + rows(home, "SELECT * FROM registry_versions") == before


@pytest.mark.parametrize(("serial", "versions", "changed"), [
    (4, [], "serial"),
    (None, [("demo-ext", "1.0.0", A, True)], "yank"),
    (None, [("demo-ext", "3.0.0", C, False)], "version"),
    (None, [("other-ext", "1.0.0", A, False)], "version"),
])
def test_a_record_that_changes_something_writes_it(home: Path, memory: Memory, serial: int | None,
                                                    versions: list, changed: str) -> None:
    memory.record(SRC, 3, [("demo-ext", "1.0.0", A, False)])
    again = Memory(home)
    try:
        again.record(SRC, serial, versions)
        assert again._scope._conn is not None
    finally:
        again.close()
    assert memory.serial(SRC) == (serial or 3)
    if changed == "yank":
        assert memory.yanked(SRC, "demo-ext") == {"1.0.0"}
    if changed == "version":
        assert (versions[0][1], versions[0][2]) in memory.known(SRC, versions[0][0]).values()


def test_a_remembered_value_pkgmgr_never_writes_is_written_over_as_before(home: Path, memory: Memory) -> None:
    memory.record(SRC, 3, [("demo-ext", "1.0.0", A, False)])
    conn = sqlite3.connect(home / "state.db", isolation_level=None)
    conn.execute("UPDATE registry_versions SET yanked = 'x'")
    conn.execute("UPDATE registry_serials SET serial = 'x'")
    conn.close()
    again = Memory(home)
    try:
        again.record(SRC, 3, [("demo-ext", "1.0.0", A, True)])
        assert again._scope._conn is not None
    finally:
        again.close()
