"""cli.doctor_cmds: which scopes `doctor` looks at (global, and the workspace's store only when
this user's pkgmgr created it), what it prints after repairing, and how a failure reads.
tests/store/test_recovery.py covers the checks and repairs themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, fail, human, install, tree


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


def test_a_known_workspace_store_is_checked_and_repaired_too(home: Path, ws: Path) -> None:
    install(FIXTURES / "review-pack", extra=("--scope", "workspace", "--workspace", str(ws)))
    (ws / ".pkgmgr" / ".staging" / "tx-crashed").mkdir(parents=True)
    document = fail("state_inconsistent", "doctor", "--check", "--workspace", ws)
    assert document["scopes"] == [{"scope": "global", "root": str(home)},
                                  {"scope": "workspace", "root": str(ws / ".pkgmgr")}]
    assert [(p["scope"], p["check"]) for p in document["problems"]] == [("workspace", "leftover")]
    result = human("doctor", cwd=ws)  # discovered from the current directory
    assert result.stdout.splitlines() == [
        "repaired (workspace): removed .staging/tx-crashed",
        f"all invariants hold: global ({home}), workspace ({ws / '.pkgmgr'})"]


@pytest.mark.parametrize("args", [["doctor", "--check"], ["doctor"]])
def test_an_unknown_workspace_store_is_reported_and_never_opened(args: list[str], home: Path, ws: Path) -> None:
    store = ws / ".pkgmgr"
    (store / "extensions" / "stray" / "1.0.0").mkdir(parents=True)  # would be an orphan in a known store
    (store / "store-id").write_text("copied-from-elsewhere\n")
    before = tree(store)
    document = fail("state_inconsistent", *args, "--workspace", ws)
    assert document["scopes"] == [{"scope": "global", "root": str(home)}]
    [problem] = document["problems"]
    assert problem["scope"] == "workspace" and "adopt it with 'pkgmgr trust'" in problem["message"]
    assert str(store) in problem["message"]
    assert document["repaired"] == []
    assert tree(store) == before  # neither opened, migrated nor repaired


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
