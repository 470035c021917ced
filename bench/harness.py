"""Run registered benchmarks: alternate pkgmgr and its baseline, take medians, judge targets."""

from __future__ import annotations

import os
import platform
import resource
import shutil
import statistics
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench.registry import BenchError, Benchmark, Case, Env


@dataclass
class Result:
    name: str
    summary: str
    target: str
    smoke: bool
    runs: int = 0
    subject: list[float] = field(default_factory=list)  # wall seconds
    subject_cpu: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)
    baseline_cpu: list[float] = field(default_factory=list)
    baseline_label: str = ""
    ratios: list[float] = field(default_factory=list)
    cpu_ratios: list[float] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    met: bool | None = None
    error: str | None = None
    load: tuple[float, float] | None = None  # 1-minute load average when the benchmark started and ended

    @property
    def median(self) -> float | None:
        return _median(self.subject)

    @property
    def baseline_median(self) -> float | None:
        return _median(self.baseline)

    @property
    def cpu_median(self) -> float | None:
        return _median(self.subject_cpu)

    @property
    def ratio(self) -> float | None:
        """The median of the per-pair ratios pkgmgr / baseline (not the ratio of the medians)."""
        return _median(self.ratios)

    @property
    def cpu_ratio(self) -> float | None:
        """The same for CPU time: steadier than wall time on a shared machine (informative)."""
        return _median(self.cpu_ratios)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "summary": self.summary, "target": self.target, "smoke": self.smoke,
            "runs": self.runs,
            "pkgmgr": {"median_s": self.median, "samples_s": self.subject, "cpu_median_s": self.cpu_median,
                       "cpu_samples_s": self.subject_cpu},
            "baseline": ({"label": self.baseline_label, "median_s": self.baseline_median, "samples_s": self.baseline,
                          "cpu_median_s": _median(self.baseline_cpu)}
                         if self.baseline else None),
            "ratio": self.ratio, "cpu_ratio": self.cpu_ratio, "met": self.met, "facts": self.facts,
            "notes": self.notes, "error": self.error, "load_average_1min": self.load,
        }


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _cpu() -> float:
    """CPU seconds of this process and its finished children (subprocess-based subjects)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _timed(action: Callable[[], Any], reset: Callable[[], Any] | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `action`, after the untimed `reset`."""
    if reset is not None:
        reset()
    start, cpu = time.perf_counter(), _cpu()
    action()
    return time.perf_counter() - start, _cpu() - cpu


def run_benchmark(bench: Benchmark, *, repeat: int, smoke: bool, keep: bool = False) -> Result:
    """Set up, warm up, run `repeat` alternating pairs (one pass in a smoke run), tear down."""
    result = Result(bench.name, bench.summary, bench.target.text, smoke)
    load_start = _load()
    workdir = Path(tempfile.mkdtemp(prefix=f"pkgmgr-bench-{bench.name}-"))
    setup = bench.setup(Env(workdir, smoke))
    try:
        case: Case = next(setup)
        result.facts.update(case.facts)
        result.baseline_label = case.baseline_label
        pairs = 1 if smoke else max(1, repeat, case.min_repeat)
        if not smoke:  # warm-up: imports, compiled schemas and the page cache, untimed
            _timed(case.subject, case.reset)
            if case.baseline is not None:
                _timed(case.baseline, case.reset_baseline)
        for index in range(pairs):
            order = ["subject", "baseline"] if index % 2 == 0 else ["baseline", "subject"]  # ABBA
            times: dict[str, tuple[float, float]] = {}
            for which in order:
                if which == "subject":
                    times[which] = _timed(case.subject, case.reset)
                elif case.baseline is not None:
                    times[which] = _timed(case.baseline, case.reset_baseline)
            result.subject.append(times["subject"][0])
            result.subject_cpu.append(times["subject"][1])
            if "baseline" in times:
                wall = times["baseline"][0]
                result.baseline.append(wall)
                result.baseline_cpu.append(times["baseline"][1])
                result.ratios.append(times["subject"][0] / wall if wall > 0 else float("inf"))
                cpu = times["baseline"][1]
                if cpu > 0:
                    result.cpu_ratios.append(times["subject"][1] / cpu)
            result.runs += 1
        if not smoke and case.after is not None:
            result.facts.update(case.after())
        verdict: tuple[bool, str] | None = case.verdict() if case.verdict is not None else None
        if verdict is not None:
            result.notes.append(verdict[1])
        if smoke:
            result.notes.append("smoke run: executed once, no timing claims")
        else:
            met = bench.target.met(result.median, result.ratio)
            if verdict is not None:
                met = verdict[0] if met is None else (met and verdict[0])
            result.met = met
        _finish(setup)
    except Exception as exc:  # report and go on with the other benchmarks
        result.error = f"{type(exc).__name__}: {exc}"
        result.notes.append(traceback.format_exc(limit=5))
    finally:
        setup.close()  # after a failure: runs the generator's `finally` blocks
        if load_start is not None:
            result.load = (load_start, _load() or load_start)
        if keep:
            result.notes.append(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return result


def _load() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def _finish(setup: Any) -> None:
    """Resume the generator after its yield so its teardown runs; it must yield only once."""
    try:
        next(setup)
    except StopIteration:
        return
    raise BenchError("a benchmark must yield exactly one Case")


def machine() -> dict[str, Any]:
    """CPU model, cores, Python and OS, for the report."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "implementation": platform.python_implementation(), "system": f"{platform.system()} {platform.release()}",
            "load_average_1min": load}


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.3f} s"


def render(results: list[Result], info: dict[str, Any], *, smoke: bool, repeat: int) -> str:
    load = info.get("load_average_1min")
    lines = [f"machine: {info['cpu']}, {info['cores']} cores, {info['implementation']} {info['python']}, "
             f"{info['system']}" + (f", load average {load:.2f} when the report was made" if load is not None else ""),
             "smoke run: each benchmark once, no timing claims" if smoke
             else f"{repeat} (or more) alternating runs per benchmark after one warm-up; medians", ""]
    header = ("benchmark", "target", "runs", "pkgmgr", "pkgmgr cpu", "baseline", "ratio", "cpu ratio", "met")
    rows = []
    for r in results:
        met = "error" if r.error else ("-" if r.met is None else ("yes" if r.met else "NO"))
        rows.append((r.name, r.target, str(r.runs), _seconds(r.median), _seconds(r.cpu_median),
                     _seconds(r.baseline_median), f"{r.ratio:.2f}x" if r.ratio is not None else "-",
                     f"{r.cpu_ratio:.2f}x" if r.cpu_ratio is not None else "-", met))
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        lines.append("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    for r in results:
        details = [f"{key}: {value}" for key, value in r.facts.items()]
        if r.baseline_label:
            details.insert(0, f"baseline: {r.baseline_label}")
        if r.error:
            details.append(f"error: {r.error}")
        details.extend(note for note in r.notes
                       if (r.error or not note.startswith("Traceback")) and not note.startswith("smoke run"))
        if details:
            lines.append("")
            lines.append(f"{r.name} ({r.summary}):")
            lines.extend(f"  {line}" for detail in details for line in str(detail).rstrip().splitlines())
    return "\n".join(lines)
