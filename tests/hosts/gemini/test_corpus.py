"""Gemini CLI conformance: pkgmgr's rules (pkgmgr/hosts/gemini.py) give the verdict the real
Gemini CLI gave on every corpus case (cases.py; the CLI's verdicts, recorded by record.py, are in
verdicts.json): a manifest `gemini extensions validate` refuses, or one its `install` cannot take,
is refused; one both take is accepted, unless the case says which rule of pkgmgr's refuses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.errors import Code, PkgmgrError, ValidationFailed
from pkgmgr.hosts.gemini import Gemini, context_file_problem, parse_manifest, semver_valid
from tests.hosts.conformance import assert_refused, build, check_bookkeeping, json_values, manifests
from tests.hosts.gemini.cases import CASES
from tests.hosts.gemini.record import load

RECORDED = load()
VERDICTS: dict[str, dict[str, Any]] = RECORDED["cases"]


def host_takes(verdict: dict[str, Any]) -> bool:
    """Gemini CLI validates it, installs it and lists it afterwards."""
    return verdict["validate"] == "ok" and verdict["install"] == "ok" and verdict.get("listed") is True


def judge(tmp_path: Path, case: dict[str, Any]) -> Any:
    return Gemini().judge(build(tmp_path / "src" / "ext", case["files"]))


def test_the_verdicts_are_the_pinned_clis_and_every_case_says_where_it_comes_from() -> None:
    check_bookkeeping("gemini", RECORDED, CASES, host_takes)


def test_the_corpus_covers_both_verdicts_and_the_install_only_refusals() -> None:
    taken = [c for c in CASES if host_takes(VERDICTS[c["id"]])]
    install_only = [c for c in CASES if VERDICTS[c["id"]]["validate"] == "ok" and not host_takes(VERDICTS[c["id"]])]
    assert len(taken) >= 40 and len(CASES) - len(taken) >= 40
    assert install_only, "the corpus holds manifests `validate` passes and `install` cannot take"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_pkgmgr_gives_gemini_clis_verdict(tmp_path: Path, case: dict[str, Any]) -> None:
    verdict = VERDICTS[case["id"]]
    if host_takes(verdict) and not case.get("pkgmgr_rule"):
        judged = judge(tmp_path, case)
        assert judged.host == "gemini" and judged.layout == "directory"
        assert bool(judged.warnings) == ("version-not-semver" in verdict["warnings"]), judged.warnings
        return
    with pytest.raises(PkgmgrError) as caught:
        judge(tmp_path, case)
    assert_refused(caught.value, case)


@pytest.mark.parametrize("case", [c for c in CASES if host_takes(VERDICTS[c["id"]]) and not c.get("pkgmgr_rule")][:3],
                         ids=lambda c: c["id"])
def test_an_accepted_case_keeps_its_name_and_version(tmp_path: Path, case: dict[str, Any]) -> None:
    import json

    judged = judge(tmp_path, case)
    document = json.loads(case["files"]["gemini-extension.json"])
    assert (judged.name, judged.version) == (document["name"], document["version"])


# --- the codec on arbitrary input: a manifest or problems, never another exception ----------------------

_FIELDS = ["name", "version", "contextFileName", "mcpServers", "excludeTools", "settings", "themes", "plan",
           "migratedTo", "description"]


@settings(max_examples=300, deadline=None)
@given(manifests(_FIELDS))
def test_parse_manifest_never_raises_anything_but_problems(raw: bytes) -> None:
    try:
        manifest = parse_manifest(raw)
    except ValidationFailed as exc:
        assert exc.problems and {p.code for p in exc.problems} <= {Code.INVALID_MANIFEST, Code.PATH_ESCAPES_ROOT}
        return
    assert isinstance(manifest.name, str) and isinstance(manifest.version, str)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30) | json_values())
def test_the_pure_rules_take_any_value(value: Any) -> None:
    found = context_file_problem(value)
    assert found is None or found[0] in (Code.INVALID_MANIFEST, Code.PATH_ESCAPES_ROOT)
    assert semver_valid(value) in (True, False)


@pytest.mark.parametrize("version, valid", [("1.0.0", True), ("v1.0.0", True), (" 1.0.0 ", True), ("1.0", False),
                                            ("01.0.0", False), ("1.0.0-beta.1+b.2", True), ("1.0.0-01", False),
                                            ("9007199254740992.0.0", False), ("=1.0.0", False), ("\ufeff1.0.0", True),
                                            ("\x851.0.0", False)])
def test_semver_valid_is_semvers_strict_valid(version: str, valid: bool) -> None:
    assert semver_valid(version) is valid


def test_the_extensions_folder_follows_gemini_cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.hosts.gemini import extensions_folder, gemini_home

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert extensions_folder({}) == tmp_path / "home" / ".gemini" / "extensions"
    assert extensions_folder({"GEMINI_CLI_HOME": ""}) == tmp_path / "home" / ".gemini" / "extensions"
    assert gemini_home({"GEMINI_CLI_HOME": str(tmp_path / "g")}) == tmp_path / "g"
    assert gemini_home({"GEMINI_CLI_HOME": "rel"}) == Path("rel")  # as written: relative to the working directory
