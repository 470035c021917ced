"""The benchmark harness (`python -m bench`) runs: the activation benchmark as a smoke run, and
the harness's own mechanics with a tiny benchmark (alternation, medians, targets, teardown)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.harness import render, run_benchmark
from bench.registry import Benchmark, Case, Env, Target, discover

REPO = Path(__file__).resolve().parents[2]


def test_activation_benchmark_smoke_run() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench", "activation", "--smoke", "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    document = json.loads(proc.stdout)
    assert document["smoke"] is True and document["machine"]["cores"] >= 1
    (result,) = document["results"]
    assert result["name"] == "activation" and result["error"] is None and result["met"] is None
    assert result["runs"] == 1 and len(result["pkgmgr"]["samples_s"]) == 1
    assert result["facts"]["resources projected"] == 730


def test_registry_discovers_the_benchmarks() -> None:
    registry = discover()
    assert "activation" in registry
    assert registry["activation"].target.max_seconds == 0.5  # SPEC 12: < 0.5 s as a fresh process


def test_harness_alternates_and_judges_the_target(tmp_path: Path) -> None:
    log: list[str] = []

    def setup(env: Env):
        assert env.workdir.is_dir() and not env.smoke
        log.append("setup")
        yield Case(subject=lambda: log.append("s"), baseline=lambda: log.append("b"),
                   reset=lambda: log.append("r"), facts={"size": 3}, after=lambda: {"extra": 1},
                   verdict=lambda: (True, "all good"))
        log.append("teardown")

    bench = Benchmark("tiny", "a tiny benchmark", Target("< 1 s", max_seconds=1.0, max_ratio=1000.0), setup)
    result = run_benchmark(bench, repeat=3, smoke=False)
    assert result.error is None and result.met is True and result.runs == 3
    # warm-up, then ABBA order; reset before every subject run
    assert log == ["setup", "r", "s", "b", "r", "s", "b", "b", "r", "s", "r", "s", "b", "teardown"]
    assert len(result.subject) == len(result.baseline) == len(result.ratios) == 3
    assert result.facts == {"size": 3, "extra": 1} and "all good" in result.notes
    text = render([result], {"cpu": "cpu", "cores": 1, "python": "3", "implementation": "CPython", "system": "x"},
                  smoke=False, repeat=3)
    assert "tiny" in text and "yes" in text and "size: 3" in text


def test_harness_reports_a_failing_benchmark_and_tears_down() -> None:
    log: list[str] = []

    def setup(env: Env):
        try:
            yield Case(subject=lambda: 1 / 0)
        finally:
            log.append("teardown")

    result = run_benchmark(Benchmark("broken", "fails", Target("< 1 s", max_seconds=1.0), setup), repeat=2,
                           smoke=True)
    assert result.error == "ZeroDivisionError: division by zero" and log == ["teardown"]
    assert result.to_json()["met"] is None


def test_targets() -> None:
    assert Target("< 1 s", max_seconds=1.0).met(0.5, None) is True
    assert Target("< 1 s", max_seconds=1.0).met(1.0, None) is False
    assert Target("<= 1.3x", max_ratio=1.3).met(9.0, 1.3) is True
    assert Target("<= 1.3x", max_ratio=1.3).met(9.0, 1.31) is False
    assert Target("requests only").met(1.0, 1.0) is None
