"""The benchmark registry and the values a benchmark hands to the harness."""

from __future__ import annotations

import contextlib
import importlib
import io
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

BENCHMARKS: dict[str, "Benchmark"] = {}

# modules of this package that are part of the harness, not benchmarks
HARNESS_MODULES = frozenset({"registry", "harness", "support", "report", "scale", "__main__"})


@dataclass(frozen=True)
class Target:
    """What SPEC 12 asks. `max_seconds`: the median pkgmgr time must stay below it (absolute);
    `max_ratio`: the median of pkgmgr/baseline ratios must not exceed it. Both may be set; a
    target with neither is judged by the case's `verdict` alone."""

    text: str
    max_seconds: float | None = None
    max_ratio: float | None = None

    def met(self, median: float | None, ratio: float | None) -> bool | None:
        verdicts = []
        if self.max_seconds is not None and median is not None:
            verdicts.append(median < self.max_seconds)
        if self.max_ratio is not None and ratio is not None:
            verdicts.append(ratio <= self.max_ratio)
        return all(verdicts) if verdicts else None


@dataclass
class Case:
    """One prepared benchmark.

    - `subject`: the pkgmgr operation, timed.
    - `baseline`: the alternative it is compared with (timed), or None for an absolute target.
    - `reset` / `reset_baseline`: untimed, before every run of the subject / the baseline
      (e.g. deactivate what the subject activated).
    - `facts`: figures describing the data (sizes, counts), reported as they are.
    - `after`: untimed, once after the timed runs (skipped in smoke runs): more figures to
      report, e.g. a cold command-line run or request counts.
    - `verdict`: a check beyond timing (e.g. "only conditional requests were sent"), returning
      (met, explanation); combined with the timing target.
    - `min_repeat`: at least this many alternating pairs (quick subjects such as start-up,
      where many samples make the median trustworthy), whatever `--repeat` says.
    """

    subject: Callable[[], Any]
    baseline: Callable[[], Any] | None = None
    reset: Callable[[], Any] | None = None
    reset_baseline: Callable[[], Any] | None = None
    baseline_label: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    after: Callable[[], dict[str, Any]] | None = None
    verdict: Callable[[], tuple[bool, str]] | None = None
    min_repeat: int = 0


class BenchError(RuntimeError):
    """A benchmark could not run (its setup failed, or pkgmgr answered unexpectedly)."""


@dataclass
class Env:
    """What a benchmark gets: a private work directory (removed afterwards) and the run mode."""

    workdir: Path
    smoke: bool = False

    def pkgmgr(self, *args: Any, home: Path | None = None, expect: int | tuple[int, ...] = 0) -> str:
        """Run the pkgmgr command line in this process (no interpreter start-up) with `--home`
        (default `<workdir>/home`); returns stdout, raises BenchError on an unexpected exit."""
        from pkgmgr.cli import main

        home = home if home is not None else self.workdir / "home"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--home", str(home), *map(str, args)])
        if code not in ((expect,) if isinstance(expect, int) else expect):
            raise BenchError(f"pkgmgr {' '.join(map(str, args))} exited {code}: {err.getvalue().strip()}")
        return out.getvalue()


@dataclass(frozen=True)
class Benchmark:
    name: str
    summary: str
    target: Target
    setup: Callable[[Env], Iterator[Case]]


def benchmark(name: str, *, target: Target, summary: str) -> Callable[[Callable[[Env], Iterator[Case]]],
                                                                     Callable[[Env], Iterator[Case]]]:
    """Register a generator function `setup(env)` that yields one `Case` (see the package doc)."""

    def register(setup: Callable[[Env], Iterator[Case]]) -> Callable[[Env], Iterator[Case]]:
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} is registered twice")
        BENCHMARKS[name] = Benchmark(name, summary, target, setup)
        return setup

    return register


def discover() -> dict[str, Benchmark]:
    """Import every benchmark module of this package; returns the registry."""
    import bench

    for module in pkgutil.iter_modules(bench.__path__):
        if module.name not in HARNESS_MODULES and not module.name.startswith("_"):
            importlib.import_module(f"bench.{module.name}")
    return BENCHMARKS
