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
