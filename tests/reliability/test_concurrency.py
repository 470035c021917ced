"""Concurrent writers (SPEC 4, 12): four `pkgmgr` processes started together against one scope.

Each process imports pkgmgr and builds its parser, then blocks on one byte of stdin: the test
releases all four at once (a barrier, no sleeps). Every command must either succeed or fail with
`locked` (exit 6) after its --lock-timeout; none may show an internal error or SQLite's
"database is locked". Afterwards `doctor --check` holds, and the visible state equals the state
that running the successful commands one after the other, in some order, gives (replayed
in-process from a copy of the starting state, the order in which they finished tried first).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.helpers import Saved, assert_no_internal, cli_json, doctor_problems, record, visible
from tests.support.cli import Result
from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import BUNDLED, Team, crew_archive

# Import everything a command needs before the barrier, so that the four start together.
BARRIER = ("import sys\n"
           "from pkgmgr.cli.app import build_parser, run\n"
           "build_parser()\n"
           "sys.stdin.buffer.read(1)\n"
           "sys.exit(run(sys.argv[1:]))\n")

EXTRA = ("alpha-crew", "beta-crew", "gamma-crew", "delta-crew")


@dataclass(frozen=True)
class Round:
    name: str
    commands: tuple[tuple[str, ...], ...]
    lock_timeout: float = 60.0
    fresh: bool = False  # no state.db yet: the four race to create and migrate it


# The starting state (unless fresh): team-crew 0.1.0 installed and activated, beta-crew and
# gamma-crew installed. The commands of a round succeed in any serial order.
ROUNDS = [
    Round("mixed", (("ext", "install", "alpha-crew@0.1.0"), ("ext", "install", f"{BUNDLED}@0.2.0"),
                    ("ext", "remove", "beta-crew"), ("bundle", "activate", "gamma-crew"))),
    Round("one-name", (("ext", "install", "delta-crew@0.1.0"), ("ext", "install", "delta-crew@0.2.0"),
                       ("ext", "install", "delta-crew@0.3.0"), ("bundle", "deactivate", "@act"))),
    Round("impatient", (("ext", "install", "alpha-crew@0.1.0"), ("ext", "install", f"{BUNDLED}@0.2.0"),
                        ("ext", "remove", "beta-crew"), ("bundle", "activate", "gamma-crew")), lock_timeout=0),
    Round("fresh-home", tuple(("ext", "install", f"{name}@0.1.0") for name in EXTRA), fresh=True),
    Round("readers", (("ext", "install", "alpha-crew@0.2.0"), ("ext", "list"), ("ext", "remove", "gamma-crew"),
                      ("resources", "list"))),
]
REPEATS = 2

pytestmark = pytest.mark.slow


def _prepare(team: Team, home: Path, fresh: bool) -> dict[str, str]:
    for name in EXTRA:
        for version in ("0.1.0", "0.2.0", "0.3.0"):
            team.registry.publish(name, version, data=crew_archive(name, version, prompt=f"{name} {version}"),
                                  write=False)
    team.registry.write()
    home.mkdir(parents=True)
    (home / "config.toml").write_text(f'[registries.team]\nsource = "{team.url}"\n', encoding="utf-8")
    if fresh:
        return {}
    for ref in (f"{BUNDLED}@0.1.0", "beta-crew@0.1.0", "gamma-crew@0.1.0"):
        assert cli_json("ext", "install", ref)[0] == 0
    code, document = cli_json("bundle", "activate", BUNDLED)
    assert code == 0, document
    return {"@act": document["activation"]["id"]}


def _start_together(commands: list[list[str]]) -> list[tuple[Result, float]]:
    procs = [subprocess.Popen([sys.executable, "-c", BARRIER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for args in commands]
    results: list[Any] = [None] * len(procs)

    def wait(index: int) -> None:
        out, err = procs[index].communicate(timeout=180)
        results[index] = (Result(procs[index].returncode, out, err), time.monotonic())

    threads = [threading.Thread(target=wait, args=(i,)) for i in range(len(procs))]
    for proc in procs:  # the barrier: every process is blocked on stdin until now
        assert proc.stdin is not None
        proc.stdin.write("x")
        proc.stdin.flush()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _serial_order(saved: Saved, candidates: list[list[str]], final: dict[str, Any]) -> list[list[str]] | None:
    """An order of `candidates` that, run one after the other from the saved starting state,
    succeeds command by command and ends in `final` (None when no order does)."""
    for order in itertools.permutations(candidates):
        saved.restore()
        if all(cli_json(*args)[0] == 0 for args in order) and visible() == final:
            return list(order)
    return None


@pytest.mark.parametrize("round_, repeat", [(r, n) for r in ROUNDS for n in range(REPEATS)],
                         ids=[f"{r.name}-{n}" for r in ROUNDS for n in range(REPEATS)])
def test_four_processes_at_once(round_: Round, repeat: int, team: Team, home: Path, tmp_path: Path) -> None:
    facts = _prepare(team, home, round_.fresh)
    saved = Saved([home], tmp_path / "saved")
    commands = [[facts.get(a, a) for a in args] + ["--lock-timeout", f"{round_.lock_timeout:g}", "-o", "json"]
                for args in round_.commands]
    results = _start_together(commands)
    outcomes = []
    for result, _ in results:
        assert_no_internal(result)
        if result.code != 0:
            assert result.code == 6 and result.json["error"]["code"] == "locked", result
        outcomes.append("ok" if result.code == 0 else "locked")
    assert doctor_problems() == []
    final = visible()
    finished = sorted(range(len(results)), key=lambda i: results[i][1])
    writers = [commands[i] for i in finished if outcomes[i] == "ok" and commands[i][1] not in ("list",)]
    order = _serial_order(saved, writers, final)
    assert order is not None, (outcomes, final)
    if round_.lock_timeout == 60:
        assert outcomes == ["ok"] * len(outcomes)
    record("concurrency", round=round_.name, repeat=repeat, processes=len(commands), lock_timeout=round_.lock_timeout,
           ok=outcomes.count("ok"), locked=outcomes.count("locked"), first_order_matched=order == writers)
