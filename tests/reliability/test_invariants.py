"""`pkgmgr doctor` in a workspace store: each invariant broken by hand, one at a time, is listed
by `doctor --check` (exit 4, state_inconsistent) under the workspace scope while the global scope
stays clean; `doctor` repairs only what is safe (leftovers: staging, trees recorded as pending) and
says so (an unrecorded tree is reported, never removed). The global-scope cases live in tests/store/test_recovery.py and
tests/activation/test_invariants.py."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Callable

import pytest

from tests.activation.helpers import NAME, make_ext
from tests.reliability.helpers import cli_json, record
from tests.store.test_recovery import damage_a_page
from tests.support.stores import store_root


def _sql(statement: str) -> Callable[[Path], None]:
    def run(store: Path) -> None:
        conn = sqlite3.connect(store / "state.db")
        with conn:
            conn.execute(statement)
        conn.close()
    return run


def _version_dir(store: Path) -> Path:
    return store / "extensions" / NAME / "0.1.0"


def _pending_copy(store: Path, version: str) -> None:
    """A tree a writer recorded in pending_trees and renamed in, then died (SPEC 4)."""
    shutil.copytree(_version_dir(store), _version_dir(store).with_name(version))
    _sql("INSERT INTO pending_trees (path, name, version, pending, recorded_at) VALUES "
         f"('extensions/{NAME}/{version}', '{NAME}', '{version}', 'in', '2026-12-01T00:00:00Z')")(store)


BREAKS: dict[str, tuple[Callable[[Path], None], str, str, bool]] = {
    # name: (break it, the check that reports it, a fragment of its message, repairable); the
    # activation whose files or resources went wrong is reported too (check "activation")
    "tree-modified": (lambda s: (_version_dir(s) / "agents" / "planner" / "AGENT.md").write_text("tampered\n"),
                      "install", "tree checksum differs", False),
    "version-dir-missing": (lambda s: shutil.rmtree(_version_dir(s)), "install", "is missing", False),
    "resource-without-activation": (_sql("UPDATE resources SET activation_id = 'act_0000000000000000' WHERE kind = 'job'"),
                                    "resource", "without an active, confirmed activation", False),
    "activation-missing-resources": (_sql("DELETE FROM resources WHERE kind = 'agent'"), "activation",
                                     "missing or different", False),
    "projected-while-awaiting": (_sql("UPDATE activations SET status = 'awaiting_confirmation'"), "resource",
                                 "without an active, confirmed activation", False),
    "staging-leftover": (lambda s: (s / ".staging" / "tx-crashed" / "pkg").mkdir(parents=True), "leftover",
                         "leftover of an interrupted command", True),
    "pending-version-dir": (lambda s: _pending_copy(s, "0.0.9"), "leftover", "leftover of an interrupted command",
                            True),
    "unrecorded-version-dir": (lambda s: shutil.copytree(_version_dir(s), _version_dir(s).with_name("0.0.9")),
                               "unrecorded", "not named by state.db", False),
    "sqlite-damaged": (lambda s: damage_a_page(s / "state.db", "resources_kind_name"), "sqlite", "malformed",
                       False),
}


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_broken_invariant_is_listed_for_the_workspace(name: str, tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "project"
    ws.mkdir(parents=True)
    at = ["--scope", "workspace", "--workspace", str(ws)]
    make_ext(tmp_path / "src", scopes=None)
    assert cli_json("ext", "install", tmp_path / "src", "--allow-unverified", "--yes", *at)[0] == 0
    assert cli_json("bundle", "activate", NAME, *at)[0] == 0
    assert cli_json("doctor", "--check", "--workspace", ws) == (0, {"ok": True, "scopes": [
        {"scope": "global", "root": str(tmp_path / "pkgmgr-home")},
        {"scope": "workspace", "root": str(store_root(ws)), "workspace": str(ws)}],
        "legacy_store": None, "problems": [], "repaired": []})
    corrupt, check, fragment, repairable = BREAKS[name]
    corrupt(store_root(ws))
    code, document = cli_json("doctor", "--check", "--workspace", ws)
    assert code == 4 and document["error"]["code"] == "state_inconsistent", document
    problems = document["problems"]
    assert {p["scope"] for p in problems} == {"workspace"}, problems
    assert {p["check"] for p in problems} - {check} <= {"activation"}, problems
    assert [p for p in problems if p["check"] == check and fragment in p["message"]], problems
    assert all(p["repairable"] == repairable for p in problems), problems
    code, repaired = cli_json("doctor", "--workspace", ws)
    if repairable:
        assert code == 0 and repaired["ok"] is True, repaired
        assert [(r["scope"], r["check"]) for r in repaired["repaired"]] == [("workspace", "leftover")]
    else:
        assert code == 4 and repaired["repaired"] == [] and repaired["problems"] == problems, repaired
    record("invariant", broken=name, check=check, repaired=repairable)
