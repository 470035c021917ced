"""terva's verdicts recorded from its own code running (tests/hosts/terva/recorded.json): every
case gets terva's verdict from pkgmgr — through terva's rules and through `pkgmgr ext validate`,
which never exits 70 — except where the case says why pkgmgr differs on purpose (`differs`: a
rule of pkgmgr's, which its refusal says, or a verdict only the machine terva runs on decides,
which pkgmgr warns about).

A case: `files` (relative path -> text, or {"text"|"base64"|"parts", "mode"}, {"symlink": target},
{"fifo": true}, {"dir": true}; a path may start with `../`: beside the extension folder),
`terva` (`verdict`, the `stage` terva stopped at, the system's `errno` there, the `name` it
loaded), `pkgmgr` (`code` of a refusal), `differs`, `as_root`.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts.detect import detect
from pkgmgr.hosts.terva import Terva
from tests.support.cli import run_cli

RECORDED = json.loads((Path(__file__).parent / "recorded.json").read_text(encoding="utf-8"))
CASES = RECORDED["cases"]
MACHINE = "decided by the machine terva runs on"


def materialise(ext: Path, files: dict[str, Any]) -> Path:
    """The case's files under `ext` (modes set last, so a mode 000 file is still written)."""
    ext.mkdir(parents=True)
    modes = []
    for rel, spec in files.items():
        path = ext / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, str):
            path.write_bytes(spec.encode("utf-8"))
        elif "symlink" in spec:
            path.symlink_to(spec["symlink"])
        elif spec.get("fifo"):
            os.mkfifo(path)
        elif spec.get("dir"):
            path.mkdir(exist_ok=True)
        else:
            if "parts" in spec:
                data = "".join(text * count for text, count in spec["parts"]).encode("utf-8")
            elif "base64" in spec:
                data = base64.b64decode(spec["base64"])
            else:
                data = spec["text"].encode("utf-8")
            path.write_bytes(data)
            modes.append((path, spec.get("mode", 0o644)))
    for path, mode in modes:
        os.chmod(path, mode)
    return ext


def verdict(ext: Path) -> tuple[str, Any]:
    """pkgmgr's verdict through terva's rules: ("load", Judged) or ("refuse", the error)."""
    try:
        return "load", Terva().judge(ext)
    except PkgmgrError as error:
        return "refuse", error


def expected(case: dict[str, Any]) -> str:
    """What pkgmgr says: terva's verdict, or the other one where pkgmgr differs on purpose."""
    terva = case["terva"]["verdict"]
    if "differs" not in case:
        return terva
    return "refuse" if terva == "load" else "load"


def test_the_corpus_names_the_code_it_was_recorded_with() -> None:
    assert RECORDED["host"] == "terva-sh/terva"
    assert all(len(commit) == 40 for commit in RECORDED["recorded_with"].values())
    assert {"packages/agent/extensions/manager.go", "packages/agent/extdriver/driver.go"} <= set(RECORDED["recorded_with"])
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids))
    for case in CASES:
        assert case["terva"]["verdict"] in ("load", "refuse"), case["id"]
        assert (expected(case) == "refuse") == ("pkgmgr" in case), case["id"]
        if "differs" in case:
            assert case["differs"].startswith(("pkgmgr's rule", "pkgmgr's bound", MACHINE)), case["id"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_pkgmgr_gives_tervas_verdict(tmp_path: Path, case: dict[str, Any]) -> None:
    if case.get("as_root") and os.geteuid() != 0:
        pytest.skip(case["as_root"])
    ext = materialise(tmp_path / "case" / "ext", case["files"])
    got, result = verdict(ext)
    assert got == expected(case), (case, result)
    if got == "refuse":
        problems = getattr(result, "problems", None) or []
        codes = {result.code, *(problem.code for problem in problems)}
        assert case["pkgmgr"]["code"] in codes, (case["id"], codes)
        if "differs" in case:
            text = " ".join([result.message, *(problem.message for problem in problems)])
            assert "pkgmgr's" in text, (case["id"], text)  # the refusal says it is pkgmgr's rule
        return
    if case["terva"]["verdict"] == "load":
        assert result.name == case["terva"]["name"]  # the name terva reads (Go's U+FFFD included)
        assert detect(ext) == "terva"
    else:  # only the machine decides: pkgmgr loads it and warns
        assert case["differs"].startswith(MACHINE) and result.warnings, case["id"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_ext_validate_gives_the_same_verdict(tmp_path: Path, case: dict[str, Any]) -> None:
    if case.get("as_root") and os.geteuid() != 0:
        pytest.skip(case["as_root"])
    ext = materialise(tmp_path / "case" / "ext", case["files"])
    result = run_cli(["ext", "validate", str(ext), "--host", "terva", "-o", "json"])
    if expected(case) == "load":
        assert result.code == 0, result
        assert result.json["valid"] is True
        if case["terva"]["verdict"] == "load":
            assert result.json["name"] == case["terva"]["name"]
    else:
        assert result.code in (3, 4), result
        error = result.json["error"]
        codes = {error["code"], *(p["code"] for p in error.get("details", {}).get("problems", []))}
        assert codes & {case["pkgmgr"]["code"], "invalid_archive"}, result
