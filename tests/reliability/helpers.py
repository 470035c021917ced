"""Shared machinery of the reliability suites: the state a user sees (through the CLI), doctor's
verdict, saving and restoring a home so that one operation can be observed twice, and the
recorder behind the figures of docs/reliability.md.

Figures: when the environment variable PKGMGR_RELIABILITY_REPORT names a file, the suites append
one JSON line per observation to it (safe across xdist workers: one O_APPEND write per line);
`python -m tests.reliability.figures FILE` turns them into the tables of docs/reliability.md.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
from pathlib import Path
from typing import Any, Sequence

from tests.support.cli import Result, run_cli

REPORT_ENV = "PKGMGR_RELIABILITY_REPORT"
# Every crash point of the fault matrices (the power-loss harness's host scenarios, the failing
# device's host lifecycles); without it the regular suite runs a sample that still meets every
# host, every verb and every crash point (`covering`)
SWEEP_ENV = "PKGMGR_FAULT_SWEEP"


def sweep() -> bool:
    return os.environ.get(SWEEP_ENV) == "1"


def covering(cases: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """A sample of `cases` — tuples whose last item is a crash point and whose other items name
    what runs (a host, a verb) — that runs each of those at least once and, for each verb (the
    item before the crash point), every crash point at least once, the points rotating over the
    hosts; all of `cases` with PKGMGR_FAULT_SWEEP=1. The order of `cases` is kept."""
    if sweep():
        return list(cases)
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for case in cases:
        groups.setdefault(case[:-1], []).append(case)
    chosen: set[tuple[Any, ...]] = set()
    covered: set[tuple[Any, Any]] = set()  # (verb, crash point)
    verbs = list(dict.fromkeys(case[-2] for case in cases))
    for turn, group in enumerate(groups.values()):
        start = (turn + verbs.index(group[0][-2])) % len(group)  # a host meets another point under each verb
        rotated = group[start:] + group[:start]
        pick = next((c for c in rotated if (c[-2], c[-1]) not in covered), rotated[0])
        chosen.add(pick)
        covered.add((pick[-2], pick[-1]))
    for case in cases:
        if (case[-2], case[-1]) not in covered:
            chosen.add(case)
            covered.add((case[-2], case[-1]))
    return [c for c in cases if c in chosen]

# The moments of an operation: they differ between two runs of the same operation.
_MOMENTS = ("confirmed_at",)


def record(kind: str, **fields: Any) -> None:
    """Append one observation to the figures file (nothing when PKGMGR_RELIABILITY_REPORT is unset)."""
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    line = (json.dumps({"kind": kind, **fields}, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def scope_args(workspace: Path | None) -> list[str]:
    return ["--scope", "workspace", "--workspace", str(workspace)] if workspace is not None else []


def cli_json(*args: Any, workspace: Path | None = None) -> tuple[int, dict[str, Any]]:
    result = run_cli([*scope_args(workspace), *map(str, args), "-o", "json"])
    assert result.stdout.strip(), result
    return result.code, result.json


def read(*args: Any, workspace: Path | None = None) -> dict[str, Any]:
    code, document = cli_json(*args, workspace=workspace)
    assert code == 0, document
    return document


def visible(workspace: Path | None = None) -> dict[str, Any]:
    """The state of a scope as `ext list`, `bundle list` and `resources list` show it, as units:
    `ext:NAME` (an installed extension), `act:ID` (an activation with the digests of the
    resources it owns), `resource:ID` (a resource whose owner is not listed: never expected),
    and for a workspace `lock` (pkgmgr.lock's text, or None)."""
    units: dict[str, Any] = {}
    for ext in read("ext", "list", workspace=workspace)["extensions"]:
        units[f"ext:{ext['scope']}:{ext['name']}"] = ext
    owned: dict[str, list[tuple[str, str, str]]] = {}
    for res in read("resources", "list", workspace=workspace)["resources"]:
        owned.setdefault(res["owner"], []).append((res["kind"], res["name"], res["digest"]))
    for act in read("bundle", "list", workspace=workspace)["activations"]:
        unit = {k: v for k, v in act.items() if k not in _MOMENTS}
        unit["resources"] = sorted(owned.pop(act["id"], []))
        units[f"act:{act['id']}"] = unit
    for owner, resources in owned.items():
        units[f"resource:{owner}"] = sorted(resources)
    if workspace is not None:
        lock = workspace / "pkgmgr.lock"
        units["lock"] = lock.read_text(encoding="utf-8") if lock.exists() else None
    return units


def mixed_units(mid: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Units of `mid` that are neither as `before` nor as `after` had them."""
    keys = sorted(set(mid) | set(before) | set(after))
    return [k for k in keys if mid.get(k) != before.get(k) and mid.get(k) != after.get(k)]


def doctor_problems(workspace: Path | None = None) -> list[dict[str, Any]]:
    """`doctor --check`: [] when every invariant holds, else the problems (exit 4, state_inconsistent)."""
    extra = ["--workspace", str(workspace)] if workspace is not None else []
    result = run_cli(["doctor", "--check", *extra, "-o", "json"])
    document = result.json
    if result.code == 0:
        assert document["ok"] is True and document["problems"] == [], result
        return []
    assert result.code == 4 and document["error"]["code"] == "state_inconsistent", result
    return document["problems"]


def only_leftovers(problems: Sequence[dict[str, Any]]) -> bool:
    """What an interrupted writer may leave: repairable leftovers, nothing else."""
    return all(p["check"] == "leftover" and p["repairable"] for p in problems)


def pending_rows(store: Path) -> list[tuple[str, str]]:
    """The `pending_trees` rows of the store at `store` (SPEC 4): (path, pending)."""
    import sqlite3

    if not (store / "state.db").exists():
        return []
    conn = sqlite3.connect(f"file:{store / 'state.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT path, pending FROM pending_trees ORDER BY path").fetchall()
    finally:
        conn.close()


class Saved:
    """A copy of some directories (a home, a workspace), to put them back exactly as they were
    (SQLite's WAL side files included: nothing may hold the databases open meanwhile)."""

    def __init__(self, directories: Sequence[Path], into: Path) -> None:
        gc.collect()  # a connection an in-process command left to the collector would checkpoint mid-copy
        self._copies: list[tuple[Path, Path | None]] = []
        for index, directory in enumerate(directories):
            if directory.exists():
                copy = into / f"saved-{index}"
                shutil.copytree(directory, copy, symlinks=True)
                self._copies.append((directory, copy))
            else:
                self._copies.append((directory, None))

    def restore(self) -> None:
        gc.collect()
        for directory, copy in self._copies:
            if directory.exists():
                shutil.rmtree(directory)
            if copy is not None:
                shutil.copytree(copy, directory, symlinks=True)


def assert_no_internal(result: Result) -> None:
    """Neither a traceback nor an internal error nor SQLite's busy error reached the user."""
    text = result.stdout + result.stderr
    assert "Traceback" not in text, result
    assert "database is locked" not in text, result
    assert "error[internal]" not in text and '"code": "internal"' not in text, result
