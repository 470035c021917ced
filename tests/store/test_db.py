"""`state.db`: WAL, forward-only migrations, refusal of a newer or broken database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.store import db as dbmod
from tests.cli.helpers import FIXTURES, fail, install

LATEST = len(dbmod.MIGRATIONS)


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_fresh_database_reaches_the_latest_version_in_wal_mode(tmp_path: Path) -> None:
    conn = dbmod.connect(tmp_path / "state.db")
    assert dbmod.schema_version(conn) == LATEST >= 3
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert {"extensions", "registry_serials", "registry_versions", "activations", "resources"} <= tables(conn)
    conn.close()
    again = dbmod.connect(tmp_path / "state.db")  # reopening is a no-op
    assert dbmod.schema_version(again) == LATEST
    again.close()


def test_an_older_database_migrates_forward_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    old = sqlite3.connect(path)
    old.executescript(dbmod.MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.execute(
        "INSERT INTO extensions VALUES ('demo-ext', '0.1.0', 'extensions/demo-ext/0.1.0', 1, 0, 'path', '/src', NULL,"
        " NULL, NULL, 0, 1, NULL, 'abc', '{}', '{}', '', '[]', NULL, '2024-01-01T00:00:00Z', 'me')")
    old.commit()
    old.close()
    conn = dbmod.connect(path)
    assert dbmod.schema_version(conn) == LATEST
    assert "activations" in tables(conn)
    assert [tuple(r) for r in conn.execute("SELECT name, version FROM extensions")] == [("demo-ext", "0.1.0")]
    conn.close()


def test_each_step_applies_on_top_of_the_previous(tmp_path: Path) -> None:
    for start in range(LATEST):
        path = tmp_path / f"state-{start}.db"
        conn = sqlite3.connect(path)
        for step in range(start):
            conn.executescript(dbmod.MIGRATIONS[step])
        conn.execute(f"PRAGMA user_version = {start}")
        conn.close()
        migrated = dbmod.connect(path)
        assert dbmod.schema_version(migrated) == LATEST
        migrated.close()


def test_a_database_from_a_newer_pkgmgr_is_state_inconsistent(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.close()
    with pytest.raises(PkgmgrError) as caught:
        dbmod.connect(path)
    assert caught.value.code == "state_inconsistent" and "newer" in caught.value.message
    assert str(path) in caught.value.message


def test_a_file_that_is_not_a_database_is_state_inconsistent(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(PkgmgrError) as caught:
        dbmod.connect(path)
    assert caught.value.code == "state_inconsistent"


def test_the_cli_reports_a_newer_database(home: Path) -> None:
    install(FIXTURES / "review-pack")
    conn = sqlite3.connect(home / "state.db")
    conn.execute(f"PRAGMA user_version = {LATEST + 7}")
    conn.close()
    for args in (("ext", "list"), ("ext", "status", "review-pack"), ("doctor", "--check")):
        document = fail("state_inconsistent", *args)
        assert document["error"]["exit_code"] == 4
    fail("state_inconsistent", "ext", "install", FIXTURES / "prompt-enhancer", "--allow-unverified", "--yes")


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    conn = dbmod.connect(tmp_path / "state.db")
    with pytest.raises(RuntimeError):
        with dbmod.transaction(conn):
            conn.execute("INSERT INTO registry_serials VALUES ('s', 1, 'now')")
            raise RuntimeError("boom")
    assert conn.execute("SELECT COUNT(*) FROM registry_serials").fetchone()[0] == 0
    with dbmod.transaction(conn):
        conn.execute("INSERT INTO registry_serials VALUES ('s', 1, 'now')")
    assert conn.execute("SELECT COUNT(*) FROM registry_serials").fetchone()[0] == 1
    conn.close()


def test_connect_without_create_does_not_create(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        dbmod.connect(tmp_path / "state.db", create=False)
    assert not (tmp_path / "state.db").exists()


def test_statements_split_on_semicolons() -> None:
    assert dbmod._statements("CREATE TABLE a (x);\n\n CREATE TABLE b (y);  ") == ["CREATE TABLE a (x)",
                                                                              "CREATE TABLE b (y)"]


def _activation_row(conn: sqlite3.Connection, **changes: object) -> sqlite3.Row:
    values = {"id": "act_" + "0" * 16, "extension": "crew-ext", "extension_version": "0.1.0", "bundle": "crew",
              "profile": "default", "scope": "global", "workspace": "", "version": 1, "status": "active",
              "network_digest": "", "activation_digest": "a" * 64, "created_at": "2026-12-01T13:00:00Z",
              "updated_at": "2026-12-01T13:00:00Z", **changes}
    columns = ", ".join(values)
    conn.execute("DELETE FROM activations")
    conn.execute(f"INSERT INTO activations ({columns}) VALUES ({', '.join('?' for _ in values)})",
                 tuple(values.values()))
    return conn.execute("SELECT * FROM activations").fetchone()


def test_check_row_accepts_what_pkgmgr_writes(tmp_path: Path) -> None:
    conn = dbmod.connect(tmp_path / "state.db")
    row = _activation_row(conn)
    assert dbmod.check_row("activations", row) is row
    assert dbmod.rows(conn, "activations", "SELECT * FROM activations")[0]["id"] == row["id"]
    conn.close()


@pytest.mark.parametrize("column, value, why", [
    ("bundle", b"cr\xc3w", "text that is not UTF-8"),
    ("extension_version", "0.1", "unexpected value '0.1'"),
    ("activation_digest", "A" * 64, "unexpected value"),
    ("status", "paused", "unexpected value 'paused'"),
    ("version", 0, "unexpected value 0"),
    ("profile", "def\nault", "control characters"),
])
def test_check_row_names_the_table_row_and_column(tmp_path: Path, column: str, value: object, why: str) -> None:
    conn = dbmod.connect(tmp_path / "state.db")
    if isinstance(value, bytes):  # stored as TEXT with the raw bytes, as a flipped bit leaves it
        _activation_row(conn)
        conn.execute(f"UPDATE activations SET {column} = CAST(? AS TEXT)", (value,))
        row = conn.execute("SELECT * FROM activations").fetchone()
    else:
        row = _activation_row(conn, **{column: value})
    with pytest.raises(PkgmgrError) as caught:
        dbmod.check_row("activations", row)
    assert caught.value.code == "state_inconsistent" and why in caught.value.message
    assert caught.value.details == {"table": "activations", "row": "act_" + "0" * 16, "column": column}
    conn.close()


def test_a_reader_never_writes(tmp_path: Path) -> None:
    conn = dbmod.connect(tmp_path / "state.db")
    conn.close()
    reader = dbmod.connect_readonly(tmp_path / "state.db")
    assert reader is not None
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.execute("DELETE FROM extensions")
    reader.close()
