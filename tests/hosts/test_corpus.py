"""The hosts' conformance corpora (tests/hosts/{terva,eva,vera}/cases.py): every input gets the
host's verdict from pkgmgr — through the host's rules directly and through `pkgmgr ext
validate` — except where a case records that the refusal is pkgmgr's own rule or that pkgmgr
cannot see what the host sees (a divergence, documented in docs/hosts.md)."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.hosts.detect import detect, for_host
from tests.hosts.eva.cases import CASES as EVA
from tests.hosts.terva.cases import CASES as TERVA
from tests.hosts.vera.cases import CASES as VERA
from tests.support.cli import run_cli

ALL = [("terva", c) for c in TERVA] + [("eva", c) for c in EVA] + [("vera", c) for c in VERA]


def write(root: Path, rel: str, spec: Any) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o644
    if isinstance(spec, dict):
        mode = int(spec.get("mode", 0o644))
        data = base64.b64decode(spec["base64"]) if "base64" in spec else spec["text"].encode("utf-8")
    else:
        data = spec.encode("utf-8")
    path.write_bytes(data)
    os.chmod(path, mode)


def build(tmp_path: Path, host: str, case: dict[str, Any]) -> tuple[Path, str, str | None]:
    """The case's input on disk: (the path to validate, its layout, the name it installs under)."""
    if "script" in case:
        name, text = case["script"]
        folder = tmp_path / "src"
        folder.mkdir()
        write(folder, name, text)
        return folder / name, "script", case.get("name")
    root = tmp_path / (case.get("name") or "ext")
    root.mkdir(parents=True)
    for rel, spec in case["files"].items():
        write(root, rel, spec)
    return root, "directory", case.get("name") if host == "eva" else None


def expected_refusal(case: dict[str, Any]) -> bool:
    if case.get("divergence"):
        return False  # pkgmgr accepts what only compiling can refuse
    return case["verdict"] == "refuse" or bool(case.get("pkgmgr_rule"))


def judge(host: str, path: Path, layout: str, name: str | None, *, loads: bool) -> Any:
    """The host's rules; an input the host loads is also detected as that host's."""
    if layout == "directory":
        assert detect(path, host) == host
        if loads:
            assert detect(path) == host
    return for_host(host).judge(path, name_hint=name, layout=layout)  # type: ignore[attr-defined]


def test_every_case_says_what_decides_it() -> None:
    for _host, case in ALL:
        assert case["verdict"] in ("load", "refuse"), case["id"]
        assert case["decided_by"] and case["from"], case["id"]
        if expected_refusal(case):
            assert case.get("code") and case.get("message"), case["id"]
    ids = [f"{host}/{case['id']}" for host, case in ALL]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("host, case", ALL, ids=[f"{h}/{c['id']}" for h, c in ALL])
def test_the_hosts_rules(tmp_path: Path, host: str, case: dict[str, Any]) -> None:
    path, layout, name = build(tmp_path, host, case)
    if expected_refusal(case):
        with pytest.raises((ValidationFailed, PkgmgrError)) as caught:
            judge(host, path, layout, name, loads=False)
        error = caught.value
        problems = getattr(error, "problems", None) or []
        codes = {p.code for p in problems} | {error.code}
        text = " ".join([error.message, *(str(p) for p in problems)])
        assert case["code"] in codes, (case["id"], codes, text)
        assert case["message"] in text, (case["id"], text)
        return
    judged = judge(host, path, layout, name, loads=True)
    if "name" in case:
        assert judged.name == case["name"]
    for key in ("kind", "version"):
        if key in case:
            assert getattr(judged, key) == case[key], (key, judged)
    if "module" in case:
        assert judged.entry == case["module"]
    if "capabilities" in case:
        assert list(judged.capabilities) == case["capabilities"]
    if "enabled" in case:
        assert judged.details["enabled"] is case["enabled"]
    if "warning" in case:
        assert any(case["warning"] in w for w in judged.warnings)


@pytest.mark.parametrize("host, case", ALL, ids=[f"{h}/{c['id']}" for h, c in ALL])
def test_ext_validate_gives_the_same_verdict(tmp_path: Path, host: str, case: dict[str, Any]) -> None:
    path, _layout, _ = build(tmp_path, host, case)
    result = run_cli(["ext", "validate", path, "--host", host, "-o", "json"])
    document = result.json
    if expected_refusal(case):
        assert result.code in (3, 4), result
        error = document["error"]
        codes = {error["code"], *(p["code"] for p in error.get("details", {}).get("problems", []))}
        assert case["code"] in codes, result
        return
    assert result.code == 0, result
    assert document["valid"] is True and document["host"] == host
    if "name" in case:
        assert document["name"] == case["name"]
