"""Signed publishing is atomic (issue 27 point 5): SIGKILL a real `pkgmgr` child at every
file-changing step of publish, yank, build, sign and rotate-key on a signed index (the crash
points of registry/switch.py: each staged file, the journal, each rename, the end), then check
what is left:

- before `registry doctor`, `registry validate` never says all is well while a change is pending;
- after it (or after running the same command again, which settles first), the index is the old
  state or the new one — every file but the signed metadata byte for byte, the metadata at the
  versions of one or the other — and its signatures verify (`registry validate` is clean);
- the same command run again then succeeds and leaves a valid index.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.publish.helpers import packed
from tests.reliability.helpers import record
from tests.support.cli import run_cli, run_subprocess
from tests.support.signed import SignedIndex, signed_index

CRASH_ENV = "PKGMGR_TEST_CRASH_AT"
WHEN = "2026-01-01T00:00:00Z"  # publish's `published`: the same bytes in every run


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".pkgmgr-registry.lock"
            and ".pkgmgr-staging" not in p.relative_to(root).parts}


def state(root: Path) -> tuple[dict[str, str], dict[str, int]]:
    """(every file but the signed metadata, the metadata's versions): signatures carry times."""
    plain = {k: v for k, v in files(root).items() if not k.startswith("metadata/")}
    versions = {p.name: json.loads(p.read_bytes())["signed"]["version"] for p in sorted((root / "metadata").glob("*.json"))}
    return plain, versions


def validate(root: Path) -> list[dict[str, Any]]:
    result = run_cli(["registry", "validate", str(root), "-o", "json"])
    return [] if result.code == 0 else result.json["error"]["details"]["problems"]


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: Callable[[SignedIndex, Path], None]  # the starting state, beyond one published version
    command: Callable[[SignedIndex, Path], list[Any]]
    format: int = 1


def _hand_edit(idx: SignedIndex, tmp: Path) -> None:
    registry = idx.path / "registry.toml"
    registry.write_text(registry.read_text().replace('description = ""', 'description = "Acme"'))


SCENARIOS = [
    Scenario("publish", lambda idx, tmp: None,
             lambda idx, tmp: ["registry", "publish", packed(tmp, version="0.2.0"), "--index", idx.path,
                               "--keys", idx.keys, "--published", WHEN]),
    Scenario("yank", lambda idx, tmp: None,
             lambda idx, tmp: ["registry", "yank", idx.path, "review-pack", "0.1.0", "--keys", idx.keys]),
    Scenario("build", _hand_edit, lambda idx, tmp: ["registry", "build", idx.path, "--keys", idx.keys]),
    Scenario("rotate-key", lambda idx, tmp: None,
             lambda idx, tmp: ["registry", "rotate-key", idx.path, "timestamp", "--keys", idx.keys]),
    Scenario("publish-format-2", lambda idx, tmp: None,
             lambda idx, tmp: ["registry", "publish", packed(tmp, version="0.2.0"), "--index", idx.path,
                               "--keys", idx.keys, "--published", WHEN], format=2),
]


def start(tmp_path: Path, scenario: Scenario) -> SignedIndex:
    idx = signed_index(tmp_path / "index")
    if scenario.format == 2:
        assert run_cli(["registry", "build", str(idx.path), "--format", "2", "--keys", str(idx.keys)]).code == 0
    assert run_cli(["registry", "publish", str(packed(tmp_path, version="0.1.0")), "--index", str(idx.path),
                    "--keys", str(idx.keys), "--published", WHEN]).code == 0
    scenario.setup(idx, tmp_path)
    if scenario.name == "build":
        return idx
    assert validate(idx.path) == []
    return idx


_REFERENCE: dict[str, tuple[Any, Any, int]] = {}


def reference(tmp_path: Path, scenario: Scenario) -> tuple[Any, Any, int]:
    """(old state, new state, how many files the switch changes) from one run without a crash
    (once per scenario: the states hold relative paths and deterministic bytes)."""
    if scenario.name not in _REFERENCE:
        idx = start(tmp_path / "reference", scenario)
        old = state(idx.path)
        result = run_subprocess(scenario.command(idx, tmp_path), env={CRASH_ENV: "registry.switch.done"})
        assert result.code == -signal.SIGKILL, result  # killed with every file renamed: the journal tells
        (journal,) = (idx.path / ".pkgmgr-staging").glob("*/journal.json")
        count = len(json.loads(journal.read_bytes())["files"])
        assert run_cli(["registry", "doctor", str(idx.path)]).code == 0
        _REFERENCE[scenario.name] = (old, state(idx.path), count)
    return _REFERENCE[scenario.name]


def points() -> list[tuple[Scenario, str]]:
    """Each scenario at: the first and the last staged file, the journal, every rename, the end.
    The number of renames is counted by a reference run (`_COUNTS`, filled once per scenario)."""
    found = []
    for scenario in SCENARIOS:
        found += [(scenario, "registry.switch.staging#1"), (scenario, "registry.switch.staged"),
                  (scenario, "registry.switch.done")]
        found += [(scenario, f"registry.switch.renamed#{k}") for k in range(1, 17)]
    return found


@pytest.mark.parametrize("scenario, label", points(), ids=[f"{s.name}@{label}" for s, label in points()])
def test_a_kill_leaves_the_old_or_the_new_signed_index(tmp_path: Path, scenario: Scenario, label: str) -> None:
    old, new, count = reference(tmp_path, scenario)
    if label.startswith("registry.switch.renamed#") and int(label.rsplit("#", 1)[1]) > count:
        pytest.skip(f"{scenario.name} switches {count} files")
    idx = start(tmp_path / "crash", scenario)
    assert state(idx.path) == old
    result = run_subprocess(scenario.command(idx, tmp_path), env={CRASH_ENV: label})
    assert result.code == -signal.SIGKILL, (label, result)
    pending = (idx.path / ".pkgmgr-staging").exists()
    if pending:
        assert any("interrupted change" in p["message"] for p in validate(idx.path))  # never "all is well"
    doctor = run_cli(["registry", "doctor", str(idx.path), "-o", "json"])
    assert doctor.code == 0, doctor
    settled = state(idx.path)
    assert settled in (old, new), label
    assert not (idx.path / ".pkgmgr-staging").exists()
    if settled == new or scenario.name != "build":  # the build's starting state carries a hand edit
        assert validate(idx.path) == []
    rerun = run_subprocess(scenario.command(idx, tmp_path))  # completes the change, or is a no-op
    assert rerun.code == 0, rerun
    assert validate(idx.path) == []
    record("registry_crash", scenario=scenario.name, label=label, settled="new" if settled == new else "old")


def test_a_killed_staging_leaves_nothing_in_place(tmp_path: Path) -> None:
    """Killed while staging: nothing renamed; the next command discards the staging."""
    scenario = SCENARIOS[0]
    idx = start(tmp_path, scenario)
    before = files(idx.path)
    result = run_subprocess(scenario.command(idx, tmp_path), env={CRASH_ENV: "registry.switch.staging#2"})
    assert result.code == -signal.SIGKILL
    assert files(idx.path) == before
    shutil.copytree(idx.path, tmp_path / "copy")
    doctor = run_cli(["registry", "doctor", str(idx.path), "-o", "json"])
    assert len(doctor.json["discarded"]) == 1 and doctor.json["completed"] == []
    assert files(idx.path) == before and validate(idx.path) == []
