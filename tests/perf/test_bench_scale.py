"""bench/scale.py (`python -m bench registry-scale --entries N`) writes a format-2 index directly;
it must be exactly what `registry build` would write, or the benchmark measures something else."""

from __future__ import annotations

from pathlib import Path

from bench.scale import generate, render_table
from tests.publish.helpers import ok


def test_the_generated_index_is_what_build_writes(tmp_path: Path) -> None:
    root = tmp_path / "index"
    generate(root, 300, "a" * 64, 100)
    assert ok("registry", "validate", root)["checked"]["entries"] == 300
    built = ok("registry", "build", root)
    assert built["changed"] is False and built["extensions"] == 300


def test_the_table_says_the_load() -> None:
    row = {"entries": 1000, "generate_s": 0.5, "build": (1.0, 30.0), "validate": (1.0, 30.0),
           "validate_changed": (0.5, 20.0), "publish": (0.7, 40.0), "yank": (0.6, 30.0), "unyank": (0.6, 30.0),
           "search_warm_s": 0.2, "search_matches": 10, "sync_cold": (1.5, 50.0, 200000), "refresh": (0.3, 1500, 2)}
    table = render_table([row], "1-minute load average 1.0–2.0 on 2 cores during the runs")
    assert "| 1,000 |" in table and "load average 1.0–2.0" in table
