"""`doctor --check` sees every host (issue 27 point 3, SPEC 4, 13): a host's tree deleted or
modified, its own records truncated or disagreeing, a stale lock of its own, the install table
missing. Each test changes one thing, asserts the code, and asserts that `--check` moved nothing."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from tests.hosts.helpers import UNVERIFIED, Homes, fail, ok, terva_extension, tree, vera_extension

VERA_ID = "acme.context-tools"


def _installed(tmp: Path) -> None:
    ok("ext", "install", terva_extension(tmp / "src" / "hello"), vera_extension(tmp / "src" / "ctx"), *UNVERIFIED)
    assert ok("doctor", "--check")["ok"] is True


def _problems(homes: Homes) -> list[dict[str, object]]:
    before = {name: tree(path) for name, path in (("terva", homes.terva), ("vera", homes.vera)) if path.exists()}
    problems = fail("state_inconsistent", "doctor", "--check")["problems"]
    after = {name: tree(path) for name, path in (("terva", homes.terva), ("vera", homes.vera)) if path.exists()}
    assert after == before  # --check reads only
    return problems  # type: ignore[no-any-return]


def test_a_deleted_host_tree_is_reported(tmp_path: Path, homes: Homes) -> None:
    _installed(tmp_path)
    shutil.rmtree(homes.terva / "extensions" / "hello")
    [problem] = _problems(homes)
    assert problem["check"] == "install" and "hello" in str(problem["message"]) and "missing" in str(problem["message"])
    assert problem["repairable"] is False


def test_a_modified_host_tree_is_reported(tmp_path: Path, homes: Homes) -> None:
    _installed(tmp_path)
    (homes.terva / "extensions" / "hello" / "run.sh").write_text("#!/bin/sh\necho changed\n")
    [problem] = _problems(homes)
    assert problem["check"] == "install" and "differs" in str(problem["message"])


def test_a_truncated_vera_registry_is_reported_as_vera_parses_it(tmp_path: Path, homes: Homes) -> None:
    _installed(tmp_path)
    (homes.vera / "extensions.json").write_bytes(b"")
    problems = _problems(homes)
    assert [p["check"] for p in problems] == ["host_records"], problems
    assert "extensions.json" in str(problems[0]["message"])


def test_a_vera_record_that_disagrees_with_the_install_is_reported(tmp_path: Path, homes: Homes) -> None:
    _installed(tmp_path)
    marker = homes.vera / "extensions" / ".managed" / f"{VERA_ID}.json"
    marker.write_text(marker.read_text().replace('"enabled": true', '"enabled": false'))
    problems = _problems(homes)
    assert [p["check"] for p in problems] == ["host_records"], problems
    assert "disabled" in str(problems[0]["message"])


def test_a_lock_a_power_cut_left_is_reported_and_reclaimed(tmp_path: Path, homes: Homes) -> None:
    """An empty `extensions.json.lock` older than the boot (the pid never reached the disk) ended
    every later Vera install with `locked`: `doctor --check` names it, `doctor` removes it."""
    _installed(tmp_path)
    lock = homes.vera / "extensions.json.lock"
    lock.write_bytes(b"")
    os.utime(lock, (1, 1))  # before any boot
    [problem] = _problems(homes)
    assert problem["check"] == "host_lock" and problem["repairable"] is True
    repaired = ok("doctor")
    assert any(r["check"] == "host_lock" for r in repaired["repaired"]), repaired
    assert not lock.exists()
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx", version="1.1.0"), *UNVERIFIED)


def test_a_lock_of_a_dead_process_is_reported_and_a_live_one_is_not(tmp_path: Path, homes: Homes) -> None:
    _installed(tmp_path)
    lock = homes.vera / "extensions.json.lock"
    lock.write_text(f'{{"pid":{os.getpid()}}}\n')  # alive: may be Vera at work
    assert ok("doctor", "--check")["ok"] is True
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    lock.write_text(f'{{"pid":{int(child.stdout)}}}\n')  # that process is gone
    [problem] = _problems(homes)
    assert problem["check"] == "host_lock" and "gone" in str(problem["message"])
    ok("doctor")
    assert not lock.exists()


def test_the_install_table_missing_is_state_inconsistent_never_a_crash(tmp_path: Path, homes: Homes) -> None:
    _installed(tmp_path)
    conn = sqlite3.connect(homes.pkgmgr / "state.db")
    conn.execute("DROP TABLE extensions")
    conn.commit()
    conn.close()
    problems = fail("state_inconsistent", "doctor", "--check")["problems"]
    assert problems
    fail("state_inconsistent", "doctor")
    for command in (["ext", "list"], ["ext", "status", "hello"], ["ext", "verify", "--all"]):
        fail("state_inconsistent", *command)
    fail("state_inconsistent", "ext", "install", terva_extension(tmp_path / "src" / "other", name="other"), *UNVERIFIED)
