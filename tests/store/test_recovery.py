"""Leftovers of interrupted writers: removed by the next writer and by `pkgmgr doctor`, reported
(and left alone) by `doctor --check` and by readers."""

from __future__ import annotations

import gc
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from pkgmgr.doctor import check_scope
from pkgmgr.store.leftovers import orphans, remove_leftovers, survey
from pkgmgr.store.recovery import repair_scope, staging_is_empty
from pkgmgr.store.scope import global_scope
from tests.cli.helpers import FIXTURES, fail, human, install, ok, tree
from tests.reliability.helpers import pending_rows


def record_pending(home: Path, rel: str, pending: str = "in") -> None:
    """A row of `pending_trees`, as a writer writes it before it moves `rel` (SPEC 4)."""
    _, name, version = rel.split("/")
    conn = sqlite3.connect(home / "state.db")
    with conn:
        conn.execute("INSERT INTO pending_trees (path, name, version, pending, recorded_at) VALUES (?, ?, ?, ?, ?)",
                     (rel, name, version.split("~")[0], pending, "2026-12-01T00:00:00Z"))
    conn.close()


def plant_leftovers(home: Path) -> list[str]:
    """What a crashed writer leaves: a staging directory, a tree it recorded before renaming it in,
    and one it stopped naming (a removed install) but had not deleted yet."""
    staged = home / ".staging" / "tx-crashed" / "pkg"
    staged.mkdir(parents=True)
    (staged / "extension.toml").write_text("half written")
    shutil.copytree(home / "extensions" / "review-pack" / "0.1.0", home / "extensions" / "review-pack" / "0.2.0")
    record_pending(home, "extensions/review-pack/0.2.0", "in")
    (home / "extensions" / "ghost" / "1.0.0").mkdir(parents=True)
    record_pending(home, "extensions/ghost/1.0.0", "out")
    return [".staging/tx-crashed", "extensions/ghost/1.0.0", "extensions/review-pack/0.2.0"]


def plant_unrecorded(home: Path) -> list[str]:
    """Trees state.db does not name at all (copied in by hand, or by a pkgmgr before SPEC 4's
    pending records): another version of an installed name, a name with no install, a stray file."""
    shutil.copytree(home / "extensions" / "review-pack" / "0.1.0", home / "extensions" / "review-pack" / "0.3.0")
    shutil.copytree(FIXTURES / "prompt-enhancer", home / "extensions" / "prompt-enhancer" / "0.1.0")
    (home / "extensions" / "stray-file").write_text("x")
    return ["extensions/prompt-enhancer/0.1.0", "extensions/review-pack/0.3.0", "extensions/stray-file"]


def unrecorded_message(rel: str) -> str:
    return f"{rel} is not named by state.db: left in place (run 'pkgmgr doctor --rebuild' to record it, or remove it by hand)"


def test_doctor_check_reports_leftovers_and_changes_nothing(home: Path) -> None:
    install(FIXTURES / "review-pack")
    expected = plant_leftovers(home)
    before = tree(home)
    document = fail("state_inconsistent", "doctor", "--check")
    assert document["error"]["exit_code"] == 4
    problems = document["error"]["details"]["problems"]
    assert [p["message"] for p in problems] == [f"{path} is a leftover of an interrupted command" for path in expected]
    assert all(p["check"] == "leftover" and p["repairable"] and p["scope"] == "global" for p in problems)
    assert document["problems"] == problems and document["repaired"] == [] and document["ok"] is False
    assert tree(home) == before
    text = human("doctor", "--check", code=4)
    assert "run 'pkgmgr doctor'" in text.stderr
    assert tree(home) == before


def test_doctor_repairs_leftovers_and_lists_them(home: Path) -> None:
    install(FIXTURES / "review-pack")
    expected = plant_leftovers(home)
    document = ok("doctor")
    assert [r["message"] for r in document["repaired"]] == [f"removed {path}" for path in expected]
    assert document["ok"] is True and document["problems"] == []
    assert tree(home / ".staging") == []
    assert sorted(p.name for p in (home / "extensions").iterdir()) == ["review-pack"]
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == ["0.1.0"]
    assert pending_rows(home) == []
    assert ok("doctor", "--check")["ok"] is True
    assert ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True
    assert human("doctor").stdout.startswith("all invariants hold: global")


def test_a_tree_state_db_does_not_name_is_reported_and_never_deleted(home: Path) -> None:
    """SPEC 4: with a sound state.db, a version directory no row names — not even as pending —
    is not a leftover: `doctor --check` and `doctor` report it, no writer deletes it."""
    install(FIXTURES / "review-pack")
    unrecorded = plant_unrecorded(home)
    before = tree(home)
    for args in (["doctor", "--check"], ["doctor"]):
        document = fail("state_inconsistent", *args)
        assert [(p["check"], p["message"], p["repairable"]) for p in document["problems"]] == [
            ("unrecorded", unrecorded_message(rel), False) for rel in unrecorded]
        assert document["repaired"] == []
        assert tree(home) == before
    install(FIXTURES / "marketing-linear")  # a writer
    ok("ext", "remove", "marketing-linear")  # and another
    assert tree(home) == before
    assert [(e["name"], e["version"]) for e in ok("ext", "list")["extensions"]] == [("review-pack", "0.1.0")]


def test_doctor_rebuild_adopts_an_unrecorded_tree_beside_a_sound_database(home: Path) -> None:
    install(FIXTURES / "review-pack")
    status = ok("ext", "status", "review-pack")
    unrecorded = plant_unrecorded(home)
    before = tree(home)
    document = fail("state_inconsistent", "doctor", "--rebuild")
    assert [r["message"] for r in document["repaired"]] == [
        "recorded prompt-enhancer 0.1.0 from extensions/prompt-enhancer/0.1.0 (provenance unknown, not verified)",
        "left extensions/review-pack/0.3.0 alone: review-pack is installed at 0.1.0 (extensions/review-pack/0.1.0)",
        "left extensions/stray-file alone: not a directory of installed trees"]
    assert [p["message"] for p in document["problems"]] == [unrecorded_message(rel) for rel in unrecorded[1:]]
    assert tree(home) == before  # recorded where it lies; nothing moved, nothing deleted
    adopted = ok("ext", "status", "prompt-enhancer")
    assert (adopted["provenance"]["source"], adopted["provenance"]["verified"], adopted["path"]) == (
        "unknown", False, str(home / "extensions/prompt-enhancer/0.1.0"))
    assert ok("ext", "status", "review-pack") == status  # a sound row is never rewritten
    assert ok("ext", "verify", "prompt-enhancer")["verified"][0]["ok"] is True


def test_readers_leave_leftovers_alone(home: Path) -> None:
    install(FIXTURES / "review-pack")
    plant_leftovers(home)
    before = tree(home)
    ok("ext", "list")
    ok("ext", "status", "review-pack")
    ok("ext", "verify", "review-pack")
    assert tree(home) == before
    assert len(pending_rows(home)) == 2


def test_the_next_writer_removes_leftovers(home: Path) -> None:
    install(FIXTURES / "review-pack")
    plant_leftovers(home)
    install(FIXTURES / "prompt-enhancer")
    assert tree(home / ".staging") == []
    assert sorted(p.name for p in (home / "extensions").iterdir()) == ["prompt-enhancer", "review-pack"]
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == ["0.1.0"]
    assert pending_rows(home) == []


@pytest.mark.parametrize("writer", [["ext", "disable", "review-pack"], ["ext", "remove", "prompt-enhancer"]])
def test_every_writer_cleans_up(writer: list[str], home: Path) -> None:
    install(FIXTURES / "review-pack", FIXTURES / "prompt-enhancer")
    plant_leftovers(home)
    ok(*writer)
    assert ok("doctor", "--check")["ok"] is True


def test_a_pending_row_whose_tree_is_gone_is_dropped(home: Path) -> None:
    """A writer that died after recording a tree but before renaming it (or after deleting it)."""
    install(FIXTURES / "review-pack")
    record_pending(home, "extensions/review-pack/0.2.0", "in")
    assert ok("doctor", "--check")["ok"] is True  # nothing on disk to repair
    install(FIXTURES / "prompt-enhancer")
    assert pending_rows(home) == []


def test_a_damaged_pending_path_deletes_nothing(home: Path) -> None:
    """A flipped byte that makes a pending row name another tree (the current install's) never
    makes that tree a leftover: the row is damaged, and every writer says so."""
    install(FIXTURES / "review-pack")
    record_pending(home, "extensions/review-pack/0.2.0", "in")
    conn = sqlite3.connect(home / "state.db")
    with conn:
        conn.execute("UPDATE pending_trees SET path = 'extensions/review-pack/0.1.0/..'")
    conn.close()
    before = tree(home)
    [problem] = fail("state_inconsistent", "doctor", "--check")["problems"]
    assert problem["check"] == "row" and "pending_trees" in problem["message"]
    assert "is damaged: column path" in fail("state_inconsistent", "ext", "install", FIXTURES / "prompt-enhancer",
                                             "--allow-unverified", "--yes")["error"]["message"]
    fail("state_inconsistent", "doctor")
    assert tree(home) == before


def test_interrupted_install_between_rename_and_commit(home: Path) -> None:
    """The new tree was recorded and renamed into place but the transaction never ran: the old state holds."""
    install(FIXTURES / "review-pack")
    shutil.copytree(home / "extensions" / "review-pack" / "0.1.0", home / "extensions" / "review-pack" / "0.9.0")
    record_pending(home, "extensions/review-pack/0.9.0", "in")
    (home / ".staging" / "tx-abc").mkdir()
    assert [(e["name"], e["version"]) for e in ok("ext", "list")["extensions"]] == [("review-pack", "0.1.0")]
    assert ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True
    assert fail("state_inconsistent", "doctor", "--check")["error"]["details"]["problems"][0]["check"] == "leftover"
    ok("doctor")
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == ["0.1.0"]


def test_interrupted_switch_after_commit(home: Path, tmp_path: Path) -> None:
    """The transaction switched to the new version but the tree it stopped naming (0.1.0, kept
    until 0.3.0 replaced 0.2.0, which is kept now) was not removed yet."""
    source = tmp_path / "rp"
    shutil.copytree(FIXTURES / "review-pack", source)
    install(source)
    old = home / "extensions" / "review-pack" / "0.1.0"
    kept = tmp_path / "kept-old"
    shutil.copytree(old, kept)
    manifest = source / "extension.toml"
    for version in ("0.2.0", "0.3.0"):
        manifest.write_text(re.sub(r'version = "[0-9.]+"', f'version = "{version}"', manifest.read_text(), count=1))
        install(source)
    shutil.copytree(kept, old)  # as if the process died before removing it (and forgetting its row)
    record_pending(home, "extensions/review-pack/0.1.0", "out")
    assert ok("ext", "status", "review-pack")["version"] == "0.3.0"
    fail("state_inconsistent", "doctor", "--check")
    install(FIXTURES / "prompt-enhancer")  # any writer
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == ["0.2.0", "0.3.0"]


def test_an_install_beside_an_unrecorded_tree_of_its_version_goes_elsewhere(home: Path) -> None:
    """`extensions/<name>/<version>` is taken by a tree no row names: the install goes to the
    `~<tree prefix>` directory and the stranger stays."""
    install(FIXTURES / "marketing-linear")  # a sound store
    shutil.copytree(FIXTURES / "review-pack", home / "extensions" / "review-pack" / "0.1.0")
    (home / "extensions" / "review-pack" / "0.1.0" / "README.md").write_text("someone else's\n")
    install(FIXTURES / "review-pack")
    path = ok("ext", "status", "review-pack")["path"]
    assert path.startswith(str(home / "extensions/review-pack/0.1.0~"))
    assert (home / "extensions" / "review-pack" / "0.1.0" / "README.md").read_text() == "someone else's\n"
    assert ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True
    [problem] = fail("state_inconsistent", "doctor", "--check")["problems"]
    assert problem["message"] == unrecorded_message("extensions/review-pack/0.1.0")


def test_doctor_reports_what_it_cannot_repair(home: Path) -> None:
    install(FIXTURES / "review-pack", FIXTURES / "prompt-enhancer")
    (home / "extensions" / "review-pack" / "0.1.0" / "README.md").write_text("tampered\n")
    shutil.rmtree(home / "extensions" / "prompt-enhancer" / "0.1.0")
    for args in (["doctor", "--check"], ["doctor"]):
        problems = fail("state_inconsistent", *args)["error"]["details"]["problems"]
        assert [(p["check"], p["repairable"]) for p in problems] == [("install", False), ("install", False)]
        assert "prompt-enhancer 0.1.0" in problems[0]["message"] and "missing" in problems[0]["message"]
        assert "review-pack 0.1.0" in problems[1]["message"] and "checksum" in problems[1]["message"]


def test_doctor_on_a_fresh_home_creates_nothing(home: Path) -> None:
    assert ok("doctor", "--check") == {"ok": True, "scopes": [{"scope": "global", "root": str(home)}],
                                       "legacy_store": None, "problems": [], "repaired": []}
    assert ok("doctor")["ok"] is True
    assert not home.exists()


# --- the module's functions -------------------------------------------------------------------------


def test_orphans_and_remove_leftovers(home: Path) -> None:
    install(FIXTURES / "review-pack")
    expected = plant_leftovers(home)
    unrecorded = plant_unrecorded(home)
    scope = global_scope(home)
    found = survey(scope)
    assert [p.relative_to(home).as_posix() for p in found.leftovers] == expected
    assert [p.relative_to(home).as_posix() for p in found.unrecorded] == unrecorded
    assert orphans(scope) == found.leftovers
    assert not staging_is_empty(scope)
    with scope.writer(1):
        assert scope.last_cleanup == expected
    assert orphans(scope) == [] and staging_is_empty(scope)
    assert [p.relative_to(home).as_posix() for p in survey(scope).unrecorded] == unrecorded
    assert remove_leftovers(scope) == []
    assert repair_scope(scope, 1) == []
    scope.close()


def test_repair_of_a_scope_that_does_not_exist(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "nothing")
    assert repair_scope(scope, 1) == [] and check_scope(scope, config=None) == []
    assert staging_is_empty(scope) and orphans(scope) == []
    assert not (tmp_path / "nothing").exists()


# --- a damaged database -------------------------------------------------------------------------------


def damage_a_page(db: Path, table: str) -> None:
    """Overwrite the root page of `table` (or an index) with garbage, as a bad disk would."""
    import sqlite3

    conn = sqlite3.connect(db)
    root, size = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0], \
        conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * size: root * size] = b"\xff" * size
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["index page", "not a database"])
def test_doctor_lists_a_damaged_database_and_repairs_nothing(damage: str, home: Path) -> None:
    install(FIXTURES / "review-pack")
    plant_leftovers(home)
    if damage == "index page":
        damage_a_page(home / "state.db", "activations_extension")
        expected = "integrity_check: database disk image is malformed"
    else:
        # the in-process install may leave its connection to the garbage collector; while it is
        # open, SQLite shares its WAL index with the next connection and never sees the damage
        gc.collect()
        for side in ("state.db-wal", "state.db-shm"):
            (home / side).unlink(missing_ok=True)
        (home / "state.db").write_bytes(b"not sqlite at all" * 64)
        expected = "the state database cannot be used"
    before = tree(home)
    for args in (["doctor", "--check"], ["doctor"]):
        document = fail("state_inconsistent", *args)
        assert [(p["check"], p["repairable"]) for p in document["problems"]] == [("sqlite", False)], document
        assert expected in document["problems"][0]["message"]
        assert document["repaired"] == []
        assert tree(home) == before  # nothing removed on the word of a database that cannot be read


def test_a_writer_meeting_a_damaged_database_says_so(home: Path) -> None:
    install(FIXTURES / "review-pack")
    damage_a_page(home / "state.db", "extensions")
    for args in (["ext", "list"], ["ext", "install", FIXTURES / "prompt-enhancer", "--allow-unverified", "--yes"]):
        document = fail("state_inconsistent", *args)
        assert "damaged" in document["error"]["message"]
        assert "doctor --check" in human(*args, code=4).stderr


def test_doctor_removes_partial_downloads_a_day_old(home: Path) -> None:
    import os
    import time

    install(FIXTURES / "review-pack")
    tmp = home / "cache" / "downloads" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "dl-old.part").write_bytes(b"interrupted")
    (tmp / "dl-running.part").write_bytes(b"another process is downloading")
    day_ago = time.time() - 25 * 3600
    os.utime(tmp / "dl-old.part", (day_ago, day_ago))
    assert ok("doctor", "--check")["ok"] is True  # not an invariant: the cache is content-addressed
    repaired = ok("doctor")["repaired"]
    assert [r["message"] for r in repaired] == ["removed 1 partial download(s) from cache/downloads/tmp"]
    assert sorted(p.name for p in tmp.iterdir()) == ["dl-running.part"]


@pytest.mark.parametrize("damage", ["deleted", "modified", "file-removed"])
def test_reinstalling_the_same_version_repairs_a_damaged_tree(damage: str, home: Path) -> None:
    """Same version, same content, same source: a no-op only while the installed tree is intact."""
    install(FIXTURES / "review-pack")
    assert "already installed" in human("ext", "install", FIXTURES / "review-pack", "--allow-unverified",
                                        "--yes").stdout
    directory = home / ok("ext", "status", "review-pack")["path"]
    if damage == "deleted":
        shutil.rmtree(directory)
    elif damage == "modified":
        (directory / "README.md").write_text("tampered\n")
    else:
        (directory / "README.md").unlink()
    fail("state_inconsistent", "doctor", "--check")
    result = human("ext", "install", FIXTURES / "review-pack", "--allow-unverified", "--yes")
    assert "already installed" not in result.stdout and "reinstalled" in result.stdout, result
    assert ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True
    assert ok("doctor", "--check")["ok"] is True
    assert sorted(p.name for p in (home / "extensions" / "review-pack").iterdir()) == [
        Path(ok("ext", "status", "review-pack")["path"]).name]
