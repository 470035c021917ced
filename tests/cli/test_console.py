"""The end of the `pkgmgr` command (`pkgmgr.cli.console`): the store's databases are closed by the
command, read-only connections first, so the last to close is a writer and `state.db` alone holds
every commit afterwards (no `-wal` left) — as before, when the garbage collector closed them in its
own order; its exit status is the command's; and a caller of `main` in its own process keeps no
connection of pkgmgr's between commands."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pkgmgr.cli import main
from pkgmgr.store import db as dbmod
from tests.cli.helpers import FIXTURES

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pkgmgr"


def _command(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PKGMGR_HOME": str(home)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_the_command_leaves_state_db_whole_after_a_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = _command(home, "ext", "install", str(FIXTURES / "review-pack"), "--allow-unverified", "--yes", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert [item["name"] for item in json.loads(done.stdout)["installed"]] == ["review-pack"]
    assert not (home / "state.db-wal").exists() and not (home / "state.db-shm").exists()
    raw = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)  # the file alone, no -wal beside it
    assert raw.execute("SELECT name FROM extensions").fetchall() == [("review-pack",)]
    raw.close()
    listed = _command(home, "ext", "list", "-o", "json", "-v")  # -v: the full command line, not the fast list
    assert listed.returncode == 0 and "review-pack" in listed.stdout


def test_the_command_exits_with_the_commands_status(tmp_path: Path) -> None:
    missing = _command(tmp_path / "home", "ext", "remove", "nothing-here", "-o", "json")
    assert missing.returncode == 5, missing.stderr
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"
    assert _command(tmp_path / "home", "--version").returncode == 0


def test_close_connections_closes_readers_first_so_a_writer_checkpoints(tmp_path: Path) -> None:
    dbmod.forget_connections()
    path = tmp_path / "state.db"
    writer = dbmod.connect(path)
    writer.execute("CREATE TABLE probe (x)")
    writer.execute("INSERT INTO probe VALUES (1)")
    reader = dbmod.connect_readonly(path)
    assert reader is not None and (tmp_path / "state.db-wal").exists()
    dbmod.close_connections()
    for conn in (writer, reader):
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
    assert not (tmp_path / "state.db-wal").exists()
    assert dbmod._opened == []


def test_main_in_its_callers_process_keeps_no_connection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code = main(["--home", str(home), "ext", "install", str(FIXTURES / "review-pack"), "--allow-unverified", "--yes",
                 "-o", "json"])
    assert code == 0
    assert dbmod._opened == []
