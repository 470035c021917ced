"""The figures script renders every section from the suites' records (a synthetic run)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.reliability import figures

ROWS = [
    {"kind": "crash", "command": "install", "label": "install.after_rename", "state": "old", "leftovers": 1},
    {"kind": "crash", "command": "install", "label": "install.after_commit", "state": "new", "leftovers": 1},
    {"kind": "random_kill", "command": "big-install", "seed": 0, "fraction": 0.5, "killed": True, "state": "old",
     "leftovers": 1},
    {"kind": "concurrency", "round": "mixed", "repeat": 0, "processes": 4, "lock_timeout": 0, "ok": 3, "locked": 1,
     "first_order_matched": True},
    {"kind": "network_fault", "fault": "endless-body", "code": "archive_too_large", "requests": 1},
    {"kind": "fuzz", "target": "manifest", "examples": 3, "accepted": 1,
     "outcomes": {"accepted": 1, "refused": 1, "invalid_manifest": 1}},
    {"kind": "secrets", "variable": "GH_TOKEN", "commands": 30, "files": 12},
    {"kind": "invariant", "broken": "staging-leftover", "check": "leftover", "repaired": True},
    {"kind": "state-damage", "fault": "flip-not-utf8", "table": "extensions", "column": "name", "detected": True,
     "clean": True, "anomalies": 0},
    {"kind": "disk-fault", "fault": "erofs", "detected": True, "clean": True, "anomalies": 0},
    {"kind": "registry_crash", "scenario": "publish", "label": "registry.switch.done", "settled": "new"},
    {"kind": "host_crash", "case": "terva-update", "label": "host.install.after_kept", "mid": "new", "settled": "new"},
    {"kind": "power_loss", "command": "switch", "point": "end", "cut": "at-exit", "state": "new", "repaired": True,
     "anomalies": []},
    {"kind": "power_loss", "command": "switch", "point": "install.after_commit", "cut": "at-exit", "state": "?",
     "repaired": False, "anomalies": ["doctor --check: install: ..."]},
]


def test_every_section_is_rendered(tmp_path: Path) -> None:
    report = tmp_path / "run.jsonl"
    report.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    text = figures.render(figures.load(report))
    assert "**2 distinct (command, crash point) pairs**" in text
    assert "| install | 2 | 1 old, 1 new | `install.after_rename`, `install.after_commit` |" in text
    assert "| big-install | 1 | 1 | 1 old | 1 |" in text
    assert "| mixed | 1 | 4 | 0 s | 3 | 1 | 1 |" in text
    assert "| endless-body | `archive_too_large` | 1 |" in text
    assert "| manifest | 3 | 1 | 1 `invalid_manifest`, 1 refused with the file's code |" in text
    assert "| `GH_TOKEN` | 30 | 12 | 0 |" in text
    assert "| staging-leftover | `leftover` | yes |" in text
    assert "**2 runs over 2 kinds**" in text and "| flip-not-utf8 | 1 | 1 | 1 | 0 |" in text
    assert "| erofs | 1 | 1 | 1 | 0 |" in text
    assert "adversarial archives" in text
    assert "**1 SIGKILLs** at the steps of signed publishing" in text and "| publish | 1 | 0 | 1 | 0 |" in text
    assert "| terva-update | 1 | 1 new | 1 new | `host.install.after_kept` |" in text
    assert "**2 power cuts** over 2 runs" in text
    assert "| switch | 2 | 2 | 1 new | 1 | 1 | `install.after_commit` |" in text
    assert "| power loss | 2 | 1 | 1 |" in text and "| read-only filesystem | 1 | 1 | 0 |" in text
    assert "| process kill (SIGKILL) | 3 | 3 | 0 |" in text and "| damaged rows | 1 | 1 | 0 |" in text
    assert figures.main([]) == 2
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Title\n\n{figures.BEGIN}\nold figures\n{figures.END}\n\nafter\n", encoding="utf-8")
    assert figures.main([str(report), "--doc", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8") == f"# Title\n\n{figures.BEGIN}\n{text}{figures.END}\n\nafter\n"
