"""`pkgmgr doctor --check` sees activation invariants broken behind pkgmgr's back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from .helpers import NAME, OPS_DIGEST, activate, db_path, fail, installed, make_ext, ok


@pytest.fixture
def act(tmp_path: Path, home: Path) -> str:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    act = activate(NAME, "--confirm-network-requirement", OPS_DIGEST)["activation"]["id"]
    assert ok("doctor", "--check")["ok"] is True
    return act


def tamper(home: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(db_path(home))
    with conn:
        conn.execute(sql, params)
    conn.close()


@pytest.mark.parametrize("sql, fragment", [
    ("UPDATE activations SET status = 'awaiting_confirmation'", "without an active, confirmed activation"),
    ("UPDATE activations SET confirmed_digest = NULL", "never confirmed"),
    ("DELETE FROM resources WHERE kind = 'job'", "1 missing or different"),
    (f"UPDATE resources SET digest = '{'0' * 64}' WHERE kind = 'agent'", "1 missing or different"),
    ("UPDATE resources SET digest = 'x' WHERE kind = 'agent'", "of table resources is damaged: column digest"),
    ("UPDATE activations SET status = 'paused'", "of table activations is damaged: column status"),
])
def test_doctor_check_reports_broken_activation_invariants(act: str, home: Path, sql: str, fragment: str) -> None:
    tamper(home, sql)
    document = fail("state_inconsistent", 4, "doctor", "--check")
    assert any(fragment in p["message"] for p in document["error"]["details"]["problems"]), document


def test_doctor_check_reports_an_activation_of_a_removed_extension(act: str, home: Path) -> None:
    tamper(home, "UPDATE activations SET extension = 'gone-ext'")
    document = fail("state_inconsistent", 4, "doctor", "--check")
    assert any("gone-ext, which is not installed" in p["message"] for p in document["error"]["details"]["problems"])


PREVIOUS_DIGEST = "ab" * 32  # the network digest of a version that is no longer installed


@pytest.mark.parametrize("sql, fragment", [
    # the previous version's confirmation kept after a switch to a version requiring another digest
    (f"UPDATE activations SET network_digest = '{PREVIOUS_DIGEST}', confirmed_digest = '{PREVIOUS_DIGEST}'",
     "its confirmation is not this version's"),
    ("UPDATE activations SET extension_version = '0.0.9'", f"records {NAME} 0.0.9, but 0.1.0 is installed"),
    (f"UPDATE activations SET activation_digest = '{'cd' * 32}'", "records activation digest"),
    ("UPDATE resources SET record = '{\"name\":\"daily\"}' WHERE kind = 'job'", "record no longer matches its digest"),
    ("UPDATE resources SET record = replace(record, 'Calm', 'Loud') WHERE kind = 'agent.soul'",
     "record no longer matches its digest"),
    ("UPDATE resources SET kind = 'channel' WHERE kind = 'job'", "1 missing or different"),
])
def test_doctor_check_reports_what_no_longer_belongs_to_the_installed_version(act: str, home: Path, sql: str,
                                                                               fragment: str) -> None:
    tamper(home, sql)
    problems = fail("state_inconsistent", 4, "doctor", "--check")["error"]["details"]["problems"]
    assert [p for p in problems if fragment in p["message"]], problems
    assert fail("state_inconsistent", 4, "doctor")["problems"] == problems  # none of it is a leftover


def test_doctor_check_leaves_a_live_writers_staging_alone(act: str, home: Path) -> None:
    """A writer holding the scope's lock owns `.staging/` and the version directory it moves in."""
    from pkgmgr.store.lock import ExclusiveLock
    from tests.store.test_recovery import record_pending

    (home / ".staging" / "tx-live" / "pkg").mkdir(parents=True)
    (home / "extensions" / NAME / "0.2.0").mkdir()
    record_pending(home, f"extensions/{NAME}/0.2.0")
    with ExclusiveLock(home / "state.lock", 0):
        assert ok("doctor", "--check")["ok"] is True
    problems = fail("state_inconsistent", 4, "doctor", "--check")["error"]["details"]["problems"]
    assert sorted(p["message"] for p in problems) == [".staging/tx-live is a leftover of an interrupted command",
                                                      f"extensions/{NAME}/0.2.0 is a leftover of an interrupted command"]
