"""A damaged `state.db` (SPEC 4 "The database is the only authority"): a missing, empty or
unreadable database beside installed trees is `state_inconsistent` for every command and never
leads to deleting a tree; a flipped byte in any text column of a real store is
`state_inconsistent` naming the table and the row (never exit 70), `doctor --check` finds it, and
`ext verify` never reports intact files as modified while `doctor` says all is well."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.activation.helpers import NAME, make_ext
from tests.cli.helpers import FIXTURES, tree
from tests.reliability.helpers import record
from tests.support.cli import Result, run_cli

OTHER = "review-pack"

# (table, column, the row's key column, its key): every text column that holds a value in the
# store the template builds (`workspace` is empty for a global activation, so it has no byte)
COLUMNS: list[tuple[str, str]] = [
    *(("extensions", c) for c in ("name", "version", "path", "source_kind", "source", "source_url", "tree_sha256",
                                  "tree_listing", "manifest", "network_digest", "grants", "installed_at",
                                  "installed_by")),
    *(("activations", c) for c in ("id", "extension", "extension_version", "bundle", "profile", "scope", "status",
                                   "network_digest", "activation_digest", "primary_channel", "confirmed_digest",
                                   "confirmed_at", "confirmed_by", "created_at", "updated_at")),
    *(("resources", c) for c in ("id", "activation_id", "kind", "name", "digest", "source_path", "record")),
]
# the row damaged in each table: the crew extension's, its activation, its SOUL.md resource
# (the one resource whose digest is over file bytes) and its agent
TARGETS = {"extensions": f"name = '{NAME}'", "activations": "1", "resources": "kind = 'agent.soul'"}
FLIPS = {"not-utf8": 0x80, "low-bit": 0x01}  # the first makes the byte undecodable, the second keeps it ASCII


def cli(home: Path, *args: Any) -> Result:
    return run_cli(["--home", str(home), *map(str, args), "-o", "json"])


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A global scope with two path installs and one confirmed activation projecting resources."""
    base = tmp_path_factory.mktemp("damage")
    home = base / "home"
    src = make_ext(base / "src")
    assert cli(home, "ext", "install", src, FIXTURES / OTHER, "--allow-unverified", "--yes").code == 0
    assert cli(home, "bundle", "activate", NAME).code == 8  # awaiting confirmation of its network requirement
    act = cli(home, "bundle", "list").json["activations"][0]
    assert cli(home, "bundle", "confirm", act["id"], "--expected-version", act["version"]).code == 0
    assert cli(home, "doctor", "--check").code == 0
    return home


def copy_home(template: Path, dest: Path) -> Path:
    home = dest / "home"
    shutil.copytree(template, home)
    return home


def flip(db: Path, table: str, column: str, mask: int) -> tuple[str, bytes]:
    """XOR one byte in the middle of `column` of the target row; returns the row's key and the old bytes."""
    conn = sqlite3.connect(db)
    conn.text_factory = bytes
    key_column = "name" if table == "extensions" else "id"
    rowid, key, raw = conn.execute(
        f"SELECT rowid, {key_column}, CAST({column} AS BLOB) FROM {table} WHERE {TARGETS[table]} LIMIT 1").fetchone()
    assert raw, (table, column)
    damaged = bytearray(raw)
    damaged[len(raw) // 2] ^= mask
    with conn:
        conn.execute(f"UPDATE {table} SET {column} = CAST(? AS TEXT) WHERE rowid = ?", (bytes(damaged), rowid))
    conn.close()
    return key.decode("utf-8"), raw


COMMANDS = (["ext", "list"], ["ext", "status", NAME], ["ext", "status", OTHER], ["ext", "verify", "--all"],
            ["ext", "update", "--all"], ["bundle", "list"], ["resources", "list"], ["doctor", "--check"], ["doctor"])


@pytest.mark.parametrize("flip_kind", list(FLIPS))
@pytest.mark.parametrize("table, column", COLUMNS)
def test_a_flipped_byte_is_never_an_internal_error(template: Path, tmp_path: Path, table: str, column: str,
                                                   flip_kind: str) -> None:
    home = copy_home(template, tmp_path)
    flip(home / "state.db", table, column, FLIPS[flip_kind])
    trees = tree(home / "extensions")
    results = {" ".join(args): cli(home, *args) for args in COMMANDS}
    check, verify = results["doctor --check"], results["ext verify --all"]
    record("state-damage", fault=f"flip-{flip_kind}", table=table, column=column, detected=check.code == 4,
           clean=tree(home / "extensions") == trees,
           anomalies=sum(r.code == 70 or "Traceback" in r.stderr for r in results.values())
           + (verify.code != 0 and check.code == 0))
    for command, result in results.items():
        assert result.code != 70 and "Traceback" not in result.stderr, (command, result)
        assert result.code in (0, 4, 5), (command, result)
        if result.code != 0:  # not_found: the name a status asks for is no longer in the damaged row
            assert result.json["error"]["code"] in ("state_inconsistent", "tree_modified", "not_found"), result
    assert tree(home / "extensions") == trees  # doctor deleted nothing
    if verify.code != 0:  # verify sees modified files: doctor must not call it well
        assert check.code == 4, check
    if flip_kind == "not-utf8":
        problems = check.json["problems"]
        assert check.code == 4 and [p for p in problems if p["check"] == "row" and f"of table {table}" in p["message"]
                                    and f"column {column}" in p["message"]], check
        assert results["ext list"].code == 4 if table == "extensions" else True


def test_damage_names_the_table_and_the_row(template: Path, tmp_path: Path) -> None:
    home = copy_home(template, tmp_path)
    key, _ = flip(home / "state.db", "extensions", "manifest", 0x80)
    error = cli(home, "ext", "list").json["error"]
    assert error["code"] == "state_inconsistent" and error["exit_code"] == 4
    assert error["details"] == {"table": "extensions", "row": key, "column": "manifest"}
    assert f"row '{key}' of table extensions" in error["message"]


def _break_database(home: Path, how: str) -> None:
    db = home / "state.db"
    for side in home.glob("state.db-*"):
        side.unlink()
    if how == "missing":
        db.unlink()
    elif how == "empty":
        db.write_bytes(b"")
    elif how == "garbage":
        db.write_bytes(b"this is not a database\n" * 300)
    elif how == "no-tables":  # a valid SQLite file that holds nothing
        db.unlink()
        sqlite3.connect(db).execute("VACUUM").connection.close()


@pytest.mark.parametrize("how", ["missing", "empty", "garbage", "no-tables"])
def test_a_lost_database_never_deletes_trees(template: Path, tmp_path: Path, how: str) -> None:
    home = copy_home(template, tmp_path)
    _break_database(home, how)
    trees = tree(home / "extensions")
    assert trees
    for args in (["ext", "list"], ["ext", "status", NAME], ["bundle", "list"], ["doctor", "--check"], ["doctor"],
                 ["ext", "install", FIXTURES / "prompt-enhancer", "--allow-unverified", "--yes"],
                 ["ext", "remove", OTHER]):
        result = cli(home, *args)
        assert result.code == 4 and result.json["error"]["code"] == "state_inconsistent", (args, result)
    assert "no extensions installed" not in run_cli(["--home", str(home), "ext", "list"]).stdout
    check = cli(home, "doctor", "--check").json
    assert [p["check"] for p in check["problems"]] == ["sqlite"], check  # not a leftover per tree
    assert tree(home / "extensions") == trees
    record("state-damage", fault=f"database-{how}", detected=True, clean=tree(home / "extensions") == trees,
           anomalies=0)


def test_an_empty_home_is_still_fresh(tmp_path: Path) -> None:
    """No trees, no database: nothing to disown, so a first install works as always."""
    home = tmp_path / "fresh"
    assert cli(home, "ext", "list").json == {"extensions": []}
    assert cli(home, "ext", "install", FIXTURES / OTHER, "--allow-unverified", "--yes").code == 0


@pytest.mark.parametrize("how", ["missing", "empty", "garbage", "no-tables"])
def test_doctor_rebuild_records_the_trees_found(template: Path, tmp_path: Path, how: str) -> None:
    home = copy_home(template, tmp_path)
    versions = {e["name"]: e["version"] for e in cli(home, "ext", "list").json["extensions"]}
    _break_database(home, how)
    trees = tree(home / "extensions")
    rebuilt = cli(home, "doctor", "--rebuild")
    assert rebuilt.code == 0 and rebuilt.json["ok"] is True, rebuilt
    messages = [r["message"] for r in rebuilt.json["repaired"]]
    assert [m for m in messages if m.startswith("recorded ")] == [
        f"recorded {name} {versions[name]} from extensions/{name}/{versions[name]} (provenance unknown, not verified)"
        for name in sorted(versions)]
    aside = sorted(p.name for p in home.glob("state.db.damaged-*") if not p.name.endswith(("-wal", "-shm")))
    assert len(aside) == (0 if how == "missing" else 1), aside  # the unusable database is kept, not deleted
    assert tree(home / "extensions") == trees
    listed = cli(home, "ext", "list").json["extensions"]
    assert [(e["name"], e["version"], e["source"], e["verified"]) for e in listed] == [
        (name, versions[name], "unknown", False) for name in sorted(versions)]
    assert cli(home, "ext", "verify", "--all").code == 0
    assert cli(home, "doctor", "--check").code == 0
    assert cli(home, "bundle", "list").json["activations"] == []  # they lived only in the database
    # provenance unknown: replacing it from a source is a deliberate act
    again = cli(home, "ext", "install", FIXTURES / OTHER, "--allow-unverified", "--yes")
    assert again.code == 6 and again.json["error"]["code"] == "source_conflict", again
    assert cli(home, "ext", "install", FIXTURES / OTHER, "--allow-unverified", "--yes", "--force").code == 0
    record("state-damage", fault=f"rebuild-{how}", detected=True, clean=True, anomalies=0)


def test_doctor_rebuild_leaves_a_sound_database_alone(template: Path, tmp_path: Path) -> None:
    home = copy_home(template, tmp_path)
    before = cli(home, "ext", "list").json
    rebuilt = cli(home, "doctor", "--rebuild")
    assert rebuilt.code == 0 and rebuilt.json["repaired"] == [], rebuilt
    assert cli(home, "ext", "list").json == before and not list(home.glob("state.db.damaged-*"))
