"""Crash safety (SPEC 4, 12): SIGKILL a real `pkgmgr` child process in the middle of install,
switch, update, remove, activate, confirm, deactivate, doctor and sync, and check what is left.

Each case observes one operation twice from the same starting state: once in-process without a
crash (the reference: the *new* state), then, with the home and the workspace put back exactly
as they were, in a child process killed with SIGKILL —

- at a deterministic crash point (`PKGMGR_TEST_CRASH_AT=<label>`; `pkgmgr/crash.py`): one test
  id per (command, label), and every label must actually be reached (the child dies by SIGKILL);
- after a delay drawn from a seeded RNG, while a large archive (1,500 files, 3 MiB)
  is downloaded, extracted, hashed and switched: wherever the kill lands, the same checks hold.

After the kill: the visible state (`ext list`, `bundle list`, `resources list`, pkgmgr.lock) is
the old one or the new one, never a mix — for `sync`, whose steps are each atomic, every
extension, activation and the lock is old or new on its own; `doctor --check` finds nothing but
repairable leftovers; the next command (the same one again when the old state is visible, else
another writer) succeeds; `doctor --check` then holds and the state is exactly the new one.
"""

from __future__ import annotations

import functools
import io
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.hosts.test_crash import POINTS as HOST_POINTS
from tests.hosts.test_crash_windows import KEPT_POINTS
from tests.reliability.helpers import (
    Saved,
    cli_json,
    doctor_problems,
    mixed_units,
    only_leftovers,
    pending_rows,
    record,
    visible,
)
from tests.reliability.test_registry_crash import points as registry_points
from tests.store.test_recovery import record_pending
from tests.support.cli import run_subprocess
from tests.support.stores import store_root
from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import BUNDLED, STORY_MANIFEST, Team, copy_release_crew

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
BYSTANDER = "prompt-enhancer"  # installed beside, never touched: `ext enable` of it is a harmless writer
UNVERIFIED = ("--allow-unverified", "--yes")
CRASH_ENV = "PKGMGR_TEST_CRASH_AT"


@dataclass
class World:
    """The team registry on loopback, the user's home, a workspace, and what setups learnt."""

    team: Team
    home: Path
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def ws(self) -> Path:
        return self.team.ws

    def run(self, *args: Any, code: int = 0) -> dict[str, Any]:
        status, document = cli_json(*args)
        assert status == code, document
        return document

    def snapshot(self, scenario: "Scenario") -> dict[str, Any]:
        """`visible()` of the scenario's scope, with this test's directories and server named
        generically (so that snapshots of two tests of one scenario compare)."""
        units = visible(self.ws if scenario.workspace else None)
        text = json.dumps(units, sort_keys=True)
        for value, name in ((str(self.home), "<home>"), (str(self.ws), "<ws>"), (self.team.url, "<registry>/")):
            text = text.replace(value, name)
        return json.loads(text)


Setup = Callable[[World], None]
Command = Callable[[World], list[str]]


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: Setup
    command: Command
    labels: tuple[str, ...]
    workspace: bool = False  # the operation acts on the workspace's store
    unitwise: bool = False  # sync: each of its steps is atomic on its own
    neutral: Command | None = None  # the next writer when the new state is visible (default: enable the bystander)


# --- setups ----------------------------------------------------------------------------------------


def _registry(w: World) -> None:
    w.run("registry", "add", "team", w.team.url)


def _configured(w: World) -> None:
    """The registry configured by hand: `registry add` would create the state database."""
    w.home.mkdir(parents=True)
    (w.home / "config.toml").write_text(f'[registries.team]\nsource = "{w.team.url}"\n', encoding="utf-8")


def _base(w: World) -> None:
    _registry(w)
    w.run("ext", "install", FIXTURES / BYSTANDER, *UNVERIFIED)


def _installed(w: World) -> None:
    _base(w)
    w.run("ext", "install", f"{BUNDLED}@0.1.0")


def _activated(w: World) -> None:
    _installed(w)
    w.facts["act"] = w.run("bundle", "activate", BUNDLED)["activation"]["id"]


def _awaiting(w: World) -> None:
    _base(w)
    source = copy_release_crew(w.home.parent / "release-crew")
    w.run("ext", "install", source, *UNVERIFIED)
    w.facts["act"] = w.run("bundle", "activate", "release-crew", code=8)["activation"]["id"]


def _leftovers(w: World) -> None:
    _installed(w)
    staged = w.home / ".staging" / "tx-crashed"
    for index in range(3):
        (staged / f"pkg/file-{index}").parent.mkdir(parents=True, exist_ok=True)
        (staged / f"pkg/file-{index}").write_text("half written")
    shutil.copytree(w.home / "extensions" / BUNDLED / "0.1.0", w.home / "extensions" / BUNDLED / "0.9.0")
    record_pending(w.home, f"extensions/{BUNDLED}/0.9.0")  # recorded by the writer that died (SPEC 4)


def _trusted(w: World) -> None:
    w.team.write_manifest(STORY_MANIFEST)
    w.run("trust", "--workspace", w.ws)


def _synced(w: World) -> None:
    _trusted(w)
    w.run("sync", "--workspace", w.ws)


def _edit_manifest(w: World, old: str, new: str) -> None:
    manifest = w.ws / "pkgmgr.toml"
    text = manifest.read_text(encoding="utf-8")
    assert old in text
    manifest.write_text(text.replace(old, new), encoding="utf-8")
    w.run("trust", "--workspace", w.ws)


def _synced_then_raised(w: World) -> None:
    _synced(w)
    _edit_manifest(w, f'{BUNDLED} = "<0.2"', f'{BUNDLED} = ">=0.2"')


def _synced_then_dropped(w: World) -> None:
    _synced(w)
    manifest = w.ws / "pkgmgr.toml"
    text = manifest.read_text(encoding="utf-8").split("# Activate")[0]
    manifest.write_text(re.sub(rf"(?m)^{BUNDLED} = .*\n", "", text), encoding="utf-8")
    w.run("trust", "--workspace", w.ws)


def _sync(w: World) -> list[str]:
    return ["sync", "--workspace", str(w.ws)]


INSTALL = ("install.after_extract", "install.after_pending", "install.after_rename", "install.before_commit",
           "install.after_commit")
DOWNLOAD = ("cache.before_replace", "cache.after_replace")

SCENARIOS = [
    Scenario("install", _base, lambda w: ["ext", "install", f"{BUNDLED}@0.1.0"],
             ("memory.before_commit", *DOWNLOAD, "writer.locked", *INSTALL)),
    Scenario("install-first", _configured, lambda w: ["ext", "install", f"{BUNDLED}@0.1.0"],
             ("db.migrate.before_commit", "memory.before_commit", "writer.locked"),
             neutral=lambda w: ["ext", "install", f"{BUNDLED}@0.1.0"]),
    Scenario("switch", _activated, lambda w: ["ext", "install", f"{BUNDLED}@0.2.0"],
             ("cache.before_replace", "install.after_extract", "install.after_pending", "install.after_rename",
              "activation.mid_projection",
              "install.before_commit", "install.after_commit", "install.after_old_removed")),
    # no memory.before_commit: the install before it remembered both versions and the serial, so the
    # update's registry memory has nothing new to commit (registry.memory.Memory.record)
    Scenario("update", _activated, lambda w: ["ext", "update", BUNDLED],
             (*DOWNLOAD, "writer.locked", "install.after_extract", "install.after_rename",
              "activation.mid_projection", "install.before_commit", "install.after_commit",
              "install.after_old_removed")),
    # a batch: a new ref and a switch of an activated one, committed in one transaction (SPEC 4
    # "ext install"): a kill leaves the old state for both refs or the new one for both
    Scenario("install-batch", _activated,
             lambda w: ["ext", "install", FIXTURES / "review-pack", f"{BUNDLED}@0.2.0", *UNVERIFIED],
             ("install.after_extract", "install.after_pending", "install.after_rename", "activation.mid_projection",
              "install.before_commit", "install.after_commit", "install.after_old_removed")),
    Scenario("remove", _activated, lambda w: ["ext", "remove", BUNDLED, "--deactivate"],
             ("writer.locked", "remove.mid_deactivate", "remove.before_commit", "remove.after_commit",
              "remove.after_tree_removed")),
    Scenario("activate", _installed, lambda w: ["bundle", "activate", BUNDLED],
             ("writer.locked", "activation.mid_projection", "activate.before_commit", "activate.after_commit")),
    Scenario("confirm", _awaiting, lambda w: ["bundle", "confirm", w.facts["act"], "--expected-version", "1"],
             ("writer.locked", "activation.mid_projection", "confirm.before_commit", "confirm.after_commit")),
    Scenario("deactivate", _activated, lambda w: ["bundle", "deactivate", w.facts["act"]],
             ("writer.locked", "deactivate.before_commit", "deactivate.after_commit")),
    Scenario("doctor", _leftovers, lambda w: ["doctor"], ("writer.locked", "recovery.mid_cleanup")),
    Scenario("sync-first", _trusted, _sync,
             ("store.after_register", "db.migrate.before_commit", "writer.locked", "memory.before_commit", *DOWNLOAD,
              *INSTALL, "sync.before_lock", "trust.approve.before_commit", "trust.keep.before_write",
              "sync.after_lock_write", "activation.mid_projection", "activate.before_commit",
              "activate.after_commit"),
             workspace=True, unitwise=True, neutral=_sync),
    Scenario("sync-switch", _synced_then_raised, _sync,
             ("install.after_rename", "activation.mid_projection", "install.after_commit",
              "install.after_old_removed", "trust.keep.before_write", "sync.after_lock_write"),
             workspace=True, unitwise=True, neutral=_sync),
    Scenario("sync-remove", _synced_then_dropped, _sync,
             ("deactivate.before_commit", "deactivate.after_commit", "remove.before_commit", "remove.after_commit",
              "remove.after_tree_removed", "sync.after_lock_write"),
             workspace=True, unitwise=True, neutral=_sync),
]
POINTS = [(s, label) for s in SCENARIOS for label in s.labels]
REGISTRY_POINTS = registry_points()


def test_the_harness_kills_at_more_than_fifty_distinct_points() -> None:
    pairs = {(s.name, label) for s, label in POINTS}
    assert len(pairs) == len(POINTS) >= 50
    record("crash_points", count=len(pairs), by_command=[[s.name, list(s.labels)] for s in SCENARIOS])


def test_every_label_in_the_source_is_exercised() -> None:
    """The crash points in pkgmgr/ are found by reading the calls (crash.py's docstring says so)."""
    found = set()
    for path in (REPO / "pkgmgr").rglob("*.py"):
        found.update(re.findall(r'crashpoint\("([a-z_.]+)"\)', path.read_text(encoding="utf-8")))
    used = {label for _, label in POINTS} | {"save.after_write"}  # save: tests/e2e/test_workspace_crash.py
    used |= {label for _, label in HOST_POINTS}  # the hosts' installs: tests/hosts/test_crash.py
    used |= {label for _, _, label in KEPT_POINTS}  # kept trees: tests/hosts/test_crash_windows.py
    used |= {label.split("#")[0] for _, label in REGISTRY_POINTS}  # signed publishing: test_registry_crash.py
    used |= {"registry.tuf.before_refresh"}  # a failing disk under ngclient's refresh: test_disk_faults.py
    assert found - used == set() and used - found == set(), (found - used, used - found)


# --- one observation -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    before: dict[str, Any]
    after: dict[str, Any]
    reference_code: int


def observe_reference(w: World, scenario: Scenario, tmp_path: Path) -> Observed:
    """Run the operation in-process from the starting state (the new state), then put the
    starting state back."""
    before = w.snapshot(scenario)
    saved = Saved([w.home, w.ws], tmp_path / "saved")
    code, document = cli_json(*scenario.command(w))
    assert code in (0, 8), document
    after = w.snapshot(scenario)
    saved.restore()
    assert w.snapshot(scenario) == before
    return Observed(before, after, code)


def check_after_kill(w: World, scenario: Scenario, seen: Observed) -> tuple[str, int]:
    """The checks of the module docstring; returns which state the kill left (old, new, or for
    sync partial: some steps done) and how many leftovers doctor found."""
    ws = w.ws if scenario.workspace else None
    mid = w.snapshot(scenario)
    if scenario.unitwise:
        assert mixed_units(mid, seen.before, seen.after) == [], (mid, seen.before, seen.after)
    else:
        assert mid in (seen.before, seen.after), (mid, seen.before, seen.after)
    problems = doctor_problems(ws)
    assert only_leftovers(problems), problems
    state = "old" if mid == seen.before else "new" if mid == seen.after else "partial"
    if state == "new":
        neutral = scenario.neutral(w) if scenario.neutral else ["ext", "enable", BYSTANDER]
        code, document = cli_json(*neutral)
        assert code in (0, seen.reference_code), document
    else:
        code, document = cli_json(*scenario.command(w))
        assert code == seen.reference_code, document
    assert doctor_problems(ws) == []
    assert w.snapshot(scenario) == seen.after
    root = store_root(w.ws, w.home) if ws else w.home
    staging = root / ".staging"
    assert not staging.exists() or not any(staging.iterdir())
    assert pending_rows(root) == []  # every tree the killed command recorded is settled
    return state, len(problems)


@pytest.mark.slow
@pytest.mark.parametrize("scenario, label", POINTS, ids=[f"{s.name}-{label}" for s, label in POINTS])
def test_kill_at_a_crash_point(scenario: Scenario, label: str, team: Team, home: Path, tmp_path: Path) -> None:
    w = World(team, home)
    scenario.setup(w)
    seen = observe_reference(w, scenario, tmp_path)
    result = run_subprocess([*scenario.command(w), "-o", "json"], env={CRASH_ENV: label})
    assert result.code == -signal.SIGKILL, f"{label} was not reached by {scenario.name}: {result}"
    state, leftovers = check_after_kill(w, scenario, seen)
    record("crash", command=scenario.name, label=label, state=state, leftovers=leftovers)


# --- randomly timed kills during large installs ------------------------------------------------------

BIG = "big-ext"
BIG_FILES = 1500
BIG_BYTES = 3 * 1024 * 1024
RANDOM_KILLS = 6  # per scenario


@functools.cache
def big_archive(version: str) -> bytes:
    """A .tar.gz of BIG_FILES incompressible files, BIG_BYTES in all (the same bytes every run)."""
    rng = random.Random(f"{BIG}-{version}")
    buffer = io.BytesIO()
    import gzip

    manifest = f'name = "{BIG}"\nversion = "{version}"\nmin_compozy_version = "0.5.0"\n'.encode()
    members = [("extension.toml", manifest)]
    size = BIG_BYTES // BIG_FILES
    members += [(f"data/{i // 100:02d}/file-{i:04d}.bin", rng.randbytes(size)) for i in range(BIG_FILES)]
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=1) as gz, \
            tarfile.open(fileobj=gz, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(f"{BIG}-{version}/{name}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _big_registry(w: World) -> None:
    for version in ("0.1.0", "0.2.0"):
        if not any(v["version"] == version for v in w.team.registry.entries.get(BIG, {}).get("versions", [])):
            w.team.registry.publish(BIG, version, data=big_archive(version))
    _base(w)


def _big_installed(w: World) -> None:
    _big_registry(w)
    w.run("ext", "install", f"{BIG}@0.1.0")


BIG_SCENARIOS = [
    Scenario("big-install", _big_registry, lambda w: ["ext", "install", f"{BIG}@0.1.0"], ()),
    Scenario("big-switch", _big_installed, lambda w: ["ext", "install", f"{BIG}@0.2.0"], ()),
]
RANDOM_POINTS = [(s, seed) for s in BIG_SCENARIOS for seed in range(RANDOM_KILLS)]
_durations: dict[str, float] = {}
_references: dict[str, Observed] = {}


def child_duration(w: World, scenario: Scenario) -> float:
    """How long the operation takes in a child process here (measured once per worker, on a
    throw-away copy of the starting state), so that the random delays span the whole run."""
    if scenario.name not in _durations:
        saved = Saved([w.home], w.home.parent / "timing")
        start = time.monotonic()
        result = run_subprocess([*scenario.command(w), "-o", "json"])
        _durations[scenario.name] = time.monotonic() - start
        assert result.code == 0, result
        saved.restore()
    return _durations[scenario.name]


@pytest.mark.slow
@pytest.mark.parametrize("scenario, seed", RANDOM_POINTS, ids=[f"{s.name}-seed{n}" for s, n in RANDOM_POINTS])
def test_kill_at_a_random_moment(scenario: Scenario, seed: int, team: Team, home: Path, tmp_path: Path) -> None:
    w = World(team, home)
    scenario.setup(w)
    if scenario.name not in _references:  # a large install costs: observed once per worker
        _references[scenario.name] = observe_reference(w, scenario, tmp_path)
    seen = _references[scenario.name]
    assert w.snapshot(scenario) == seen.before
    fraction = random.Random(f"{scenario.name}:{seed}").uniform(0.1, 1.0)
    delay = fraction * child_duration(w, scenario)
    child = subprocess.Popen([sys.executable, "-m", "pkgmgr", *scenario.command(w), "-o", "json"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        child.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        child.kill()  # SIGKILL (nothing, if it finished in between)
        child.wait()
    killed = child.returncode == -signal.SIGKILL
    assert killed or child.returncode == 0, child.returncode
    state, leftovers = check_after_kill(w, scenario, seen)
    record("random_kill", command=scenario.name, seed=seed, fraction=round(fraction, 3), killed=killed, state=state,
           leftovers=leftovers)
