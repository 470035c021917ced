"""`state.db`: WAL, forward-only migrations, refusal of a newer or broken database."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from pkgmgr.archive import tree_checksum
from pkgmgr.errors import PkgmgrError
from pkgmgr.store import db as dbmod
from pkgmgr.store import pending
from tests.cli.helpers import FIXTURES, fail, install, ok, tree
from tests.support.builders import format1_tree_checksum

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
            migration = dbmod.MIGRATIONS[step]
            if callable(migration):
                migration(conn, tmp_path)
            else:
                conn.executescript(migration)
        conn.execute(f"PRAGMA user_version = {start}")
        conn.commit()  # a step that writes rows (migration 10's) opened a transaction: kept, not rolled back
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


# --- migration 5: tree checksums in format 2 -----------------------------------------------------


def _resplit(directory: Path) -> None:
    """The red team's attack on format 1: the hook swallows the next file's record (the skill,
    removed), so the hook's content changes while format 1 fed the same bytes (SPEC 3)."""
    hook, skill = directory / "hooks" / "session-ready.sh", directory / "skills" / "code-review" / "SKILL.md"
    before = format1_tree_checksum(directory)
    hook.write_bytes(hook.read_bytes() + b"\0file:skills/code-review/SKILL.md\nmode:0644\n" + skill.read_bytes())
    skill.unlink()
    assert format1_tree_checksum(directory) == before


def _as_written_before_format_2(home: Path) -> tuple[Path, str]:
    """The global state as a pkgmgr before format 2 left it: schema 4, format-1 tree checksums."""
    install(FIXTURES / "review-pack")
    directory = home / "extensions" / "review-pack" / "0.1.0"
    old = format1_tree_checksum(directory)
    conn = sqlite3.connect(home / "state.db")
    conn.execute("UPDATE extensions SET tree_sha256 = ?", (old,))
    conn.execute("ALTER TABLE registry_versions DROP COLUMN yanked")  # migration 6 came later
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    return directory, old


def _recorded_tree(home: Path) -> str:
    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute("SELECT tree_sha256 FROM extensions WHERE name = 'review-pack'").fetchone()[0]
    finally:
        conn.close()


def test_migration_recomputes_format_1_tree_checksums_from_the_installed_tree(home: Path) -> None:
    directory, _ = _as_written_before_format_2(home)
    assert ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True  # the first open migrates
    assert _recorded_tree(home) == tree_checksum(directory)
    assert ok("doctor", "--check")["ok"] is True
    assert ok("ext", "status", "review-pack")["tree_sha256"] == tree_checksum(directory)


def test_migration_never_takes_a_format_1_value_for_a_re_split_tree(home: Path) -> None:
    directory, old = _as_written_before_format_2(home)
    _resplit(directory)  # tampered before the upgrade: format 1 could not see it
    before = tree(directory)
    document = fail("state_inconsistent", "doctor", "--check")
    assert [p["check"] for p in document["problems"]] == ["install"]
    assert "migrated to format 2" in document["problems"][0]["message"]
    assert _recorded_tree(home) == "sha256-1:" + old  # marked, never equal to a format-2 value
    [result] = fail("tree_modified", "ext", "verify", "review-pack")["error"]["details"]["extensions"]
    assert (result["removed"], result["modified"]) == (["skills/code-review/SKILL.md"], ["hooks/session-ready.sh"])
    assert tree(directory) == before


def test_migration_of_a_missing_tree_marks_it(home: Path) -> None:
    directory, old = _as_written_before_format_2(home)
    shutil.rmtree(directory)
    fail("state_inconsistent", "doctor", "--check")
    assert _recorded_tree(home) == "sha256-1:" + old


def test_doctor_and_verify_see_a_re_split_tree(home: Path) -> None:
    install(FIXTURES / "review-pack")
    directory = home / "extensions" / "review-pack" / "0.1.0"
    recorded = _recorded_tree(home)
    _resplit(directory)
    before = tree(home)
    [problem] = fail("state_inconsistent", "doctor", "--check")["problems"]
    assert problem["check"] == "install" and "tree checksum differs" in problem["message"]
    [result] = fail("tree_modified", "ext", "verify", "review-pack")["error"]["details"]["extensions"]
    assert result["recorded_tree_sha256"] == recorded != result["tree_sha256"]
    assert (tree(home), _recorded_tree(home)) == (before, recorded)


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


def _database_at(path: Path, version: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    for step in range(version):
        migration = dbmod.MIGRATIONS[step]
        if callable(migration):
            migration(conn, path.parent)
        else:
            conn.executescript(migration)
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


_TREE = "sha256-2:" + "ab" * 32


def _rows_of_schema_8(path: Path, folder: Path) -> None:
    """A store of schema 8 with a Compozy install and a host install whose switch was under way."""
    conn = _database_at(path, 8)
    conn.execute(
        "INSERT INTO extensions VALUES ('demo-ext', '0.1.0', 'extensions/demo-ext/0.1.0', 1, 0, 'path', '/src', NULL,"
        f" NULL, NULL, 0, 1, NULL, '{_TREE}', '{{}}', '{{}}', '', '[\"session.read\"]', NULL, '2024-01-01T00:00:00Z',"
        " 'me')")
    row = {"host": "terva", "name": "hello", "version": "0.2.0", "path": str(folder / "hello"), "layout": "directory",
           "enabled": 1, "disabled_path": None, "pinned": 0, "source_kind": "path", "source": "/src/hello",
           "registry": None, "source_url": None, "sha256": None, "verified": 0, "tier": None, "tree_sha256": _TREE,
           "tree_listing": "{}", "manifest": "{}", "capabilities": '["connector"]', "pending": None,
           "installed_at": "2024-01-01T00:00:00Z", "installed_by": "me"}
    pending = json.dumps({"row": row, "tx": str(folder.parent / ".pkgmgr-staging" / "tx-1"),
                          "place": str(folder / "hello"), "action": "install"})
    conn.execute("INSERT INTO host_extensions VALUES ('terva', 'hello', '0.1.0', ?, 'directory', 1, NULL, 0, 'path', "
                 f"'/src/hello', NULL, NULL, NULL, 0, NULL, '{_TREE}', '{{}}', '{{}}', '[\"connector\"]', ?, "
                 "'2024-01-01T00:00:00Z', 'me')", (str(folder / "hello"), pending))
    conn.commit()
    conn.close()


def test_schema_9_merges_the_host_installs_into_extensions_and_a_kill_leaves_schema_8(tmp_path: Path) -> None:
    """Migration 9 is one transaction: SIGKILL before its commit leaves the store of schema 8 exactly
    as it was (both tables, every row), and the next open migrates it, keyed by host and name."""
    import signal
    import subprocess
    import sys

    from pkgmgr.store import records
    from pkgmgr.store.scope import global_scope

    path = tmp_path / "state.db"
    _rows_of_schema_8(path, tmp_path / "terva" / "extensions")
    killed = subprocess.run([sys.executable, "-c", f"from pathlib import Path; from pkgmgr.store import db; db.connect(Path({str(path)!r}))"],
                            env={**__import__("os").environ, "PKGMGR_TEST_CRASH_AT": "db.migrate.before_commit"},
                            capture_output=True, check=False, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 8
    assert {"extensions", "host_extensions"} <= tables(raw)
    assert raw.execute("SELECT name FROM extensions").fetchall() == [("demo-ext",)]
    assert raw.execute("SELECT host, name FROM host_extensions").fetchall() == [("terva", "hello")]
    raw.close()

    conn = dbmod.connect(path)
    assert dbmod.schema_version(conn) == LATEST and "host_extensions" not in tables(conn)
    assert [tuple(r) for r in conn.execute("SELECT host, name, grants, allow_unverified FROM extensions ORDER BY host")] == [
        ("compozy", "demo-ext", '["session.read"]', 1), ("terva", "hello", '["connector"]', 1)]
    conn.close()
    scope = global_scope(tmp_path)
    demo, hello = records.list_rows(scope)
    assert (demo.host, demo.in_store, demo.directory) == ("compozy", True, tmp_path / "extensions/demo-ext/0.1.0")
    assert (hello.host, hello.grants, hello.place) == ("terva", ("connector",), tmp_path / "terva/extensions/hello")
    [intent] = pending.intents(scope.db, "terva")  # the switch a writer of schema 8 left, moved by migration 10
    assert (intent.path, intent.version, intent.pending, intent.action) == (
        str(tmp_path / "terva/extensions/hello"), "0.2.0", "in", "install")
    assert intent.tx == str(tmp_path / "terva" / ".pkgmgr-staging" / "tx-1")
    scope.close()


def _rows_of_schema_9(path: Path, folder: Path) -> None:
    """A store of schema 9: a terva update under way (its `pending` column), a first Vera install
    under way (its placeholder row), a Compozy tree being moved in (`pending_trees`)."""
    conn = _database_at(path, 9)
    conn.execute(
        "INSERT INTO extensions (host, name, version, path, enabled, pinned, source_kind, source, verified, "
        "allow_unverified, tree_sha256, tree_listing, manifest, network_digest, grants, installed_at, installed_by) "
        f"VALUES ('compozy', 'demo-ext', '0.1.0', 'extensions/demo-ext/0.1.0', 1, 0, 'path', '/src', 0, 1, '{_TREE}', "
        "'{}', '{}', '', '[]', '2024-01-01T00:00:00Z', 'me')")
    conn.execute("INSERT INTO pending_trees VALUES ('extensions/demo-ext/0.2.0', 'demo-ext', '0.2.0', 'in', "
                 "'2024-01-01T00:00:00Z')")
    for host, name, version, checksum, record in (
            ("terva", "hello", "0.1.0", _TREE, {"row": {"host": "terva", "name": "hello", "version": "0.2.0"},
                                               "tx": str(folder / ".pkgmgr-staging" / "tx-1"),
                                               "place": str(folder / "extensions" / "hello"), "action": "install"}),
            ("vera", "acme.ctx", "1.0.0", "sha256-2:" + "0" * 64,
             {"row": {"host": "vera", "name": "acme.ctx", "version": "1.0.0"}, "tx": "/v/.pkgmgr-staging/tx-2",
              "place": "/v/extensions/acme.ctx", "action": "install"}),
            ("eva", "notes", "", _TREE, "not JSON")):
        conn.execute(
            "INSERT INTO extensions (host, name, version, path, enabled, pinned, source_kind, source, verified, "
            "allow_unverified, tree_sha256, tree_listing, manifest, network_digest, grants, installed_at, installed_by, "
            "pending) VALUES (?, ?, ?, ?, 1, 0, 'path', '/src', 0, 1, ?, '{}', '{}', '', '[]', "
            "'2024-01-01T00:00:00Z', 'me', ?)",
            (host, name, version, f"/{host}/extensions/{name}", checksum,
             json.dumps(record) if isinstance(record, dict) else record))
    conn.commit()
    conn.close()


def test_schema_10_moves_every_pending_change_to_one_table_and_a_kill_leaves_schema_9(tmp_path: Path) -> None:
    """Migration 10 (one pending record for every host) is one transaction: SIGKILL before its
    commit leaves the store of schema 9 exactly as it was; the next open moves each folder host's
    `pending` column into `pending_trees` (phase `in`: its commit never happened), drops a first
    install's placeholder row and the column, and keeps the scope store's pending trees."""
    import signal
    import subprocess
    import sys

    from pkgmgr.store import records
    from pkgmgr.store.scope import global_scope

    path = tmp_path / "state.db"
    _rows_of_schema_9(path, tmp_path / "terva")
    before = sqlite3.connect(path)
    dump = list(before.iterdump())
    before.close()
    killed = subprocess.run([sys.executable, "-c", f"from pathlib import Path; from pkgmgr.store import db; db.connect(Path({str(path)!r}))"],
                            env={**__import__("os").environ, "PKGMGR_TEST_CRASH_AT": "db.migrate.before_commit"},
                            capture_output=True, check=False, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 9
    assert [line for line in raw.iterdump() if "journal_mode" not in line] == dump  # exactly as it was
    raw.close()

    conn = dbmod.connect(path)
    assert dbmod.schema_version(conn) == LATEST
    assert "pending" not in {row[1] for row in conn.execute("PRAGMA table_info(extensions)")}
    conn.close()
    scope = global_scope(tmp_path)
    assert [(r.host, r.name) for r in records.list_rows(scope)] == [("compozy", "demo-ext"), ("eva", "notes"),
                                                                     ("terva", "hello")]  # the placeholder is gone
    found = {(i.host, i.name): i for i in pending.intents(scope.db)}
    assert set(found) == {("compozy", "demo-ext"), ("terva", "hello"), ("vera", "acme.ctx")}  # eva's did not parse
    assert (found["compozy", "demo-ext"].path, found["compozy", "demo-ext"].action) == ("extensions/demo-ext/0.2.0", "tree")
    hello = found["terva", "hello"]
    assert (hello.path, hello.version, hello.pending, hello.action, hello.tx) == (
        str(tmp_path / "terva" / "extensions" / "hello"), "0.2.0", "in", "install",
        str(tmp_path / "terva" / ".pkgmgr-staging" / "tx-1"))
    assert hello.row == {"row": {"host": "terva", "name": "hello", "version": "0.2.0"}}
    assert list(pending.recorded(scope.db)) == ["extensions/demo-ext/0.2.0"]  # the store's own, as before
    scope.close()


def test_visible_names_read_every_hosts_names_even_past_a_damaged_row(tmp_path: Path) -> None:
    """The did-you-mean list a command takes before it runs (`cli.app.installed_before`): the
    name column of every host's rows, no row decoded or checked, none for a scope never written."""
    from pkgmgr.store import records
    from pkgmgr.store.scope import global_scope

    assert records.visible_names([global_scope(tmp_path / "never-written")]) == set()
    path = tmp_path / "state.db"
    _rows_of_schema_8(path, tmp_path / "terva" / "extensions")
    dbmod.connect(path).close()  # migrated: one table, both hosts
    raw = sqlite3.connect(path)
    raw.execute("UPDATE extensions SET version = CAST(X'ff' AS TEXT) WHERE name = 'hello'")  # a flipped bit
    raw.commit()
    raw.close()
    scope = global_scope(tmp_path)
    with pytest.raises(PkgmgrError, match="undecodable|cannot be decoded|not UTF-8|version"):
        records.visible([scope])
    assert records.visible_names([scope]) == {"demo-ext", "hello"}


@pytest.mark.parametrize("code", [sqlite3.SQLITE_BUSY, sqlite3.SQLITE_BUSY_RECOVERY], ids=["busy", "busy-recovery"])
def test_a_fresh_database_opened_by_another_process_meanwhile_still_becomes_wal(
        code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite refuses the switch to WAL at once ("database is locked", without its busy handler)
    when it meets another connection's lock — four processes opening a fresh home together met it
    in about one round of ten. The switch is retried, the mode read again first: here the first
    attempt is refused as SQLite refuses it."""
    refused: list[str] = []

    class Contended(sqlite3.Connection):
        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
            if sql == "PRAGMA journal_mode = WAL" and not refused:
                refused.append(sql)
                busy = sqlite3.OperationalError("database is locked")
                busy.sqlite_errorcode = code  # type: ignore[attr-defined]
                raise busy
            return super().execute(sql, *args)

    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, **k, factory=Contended))
    conn = dbmod.connect(tmp_path / "state.db")
    assert refused and conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert dbmod.schema_version(conn) == LATEST
    conn.close()
