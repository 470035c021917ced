"""Claude Code conformance: pkgmgr's rules (pkgmgr/hosts/claude.py) give the verdict the real
Claude Code gave on every corpus case (cases.py; the CLI's verdicts, recorded by record.py, are in
verdicts.json). A plugin `claude plugin validate` refuses, or one Claude Code installs but cannot
load from a directory marketplace (a load error, or not enabled), is refused; one it validates,
installs and loads is accepted, unless the case says which rule of pkgmgr's refuses it. Where
`--strict` fails a plugin Claude Code takes, pkgmgr warns, on the keys Claude names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.errors import Code, PkgmgrError, ValidationFailed
from pkgmgr.hosts.claude import Claude, name_problems, parse_manifest, path_problem, url_ok
from tests.hosts.claude.cases import CASES
from tests.hosts.claude.record import load
from tests.hosts.conformance import assert_refused, build, check_bookkeeping, manifests

RECORDED = load()
VERDICTS: dict[str, dict[str, Any]] = RECORDED["cases"]
CODES = {Code.INVALID_MANIFEST, Code.PATH_ESCAPES_ROOT}


def host_takes(verdict: dict[str, Any]) -> bool:
    install = verdict["install"]
    return verdict["validate"]["passed"] and install["installed"] and install["enabled"] and \
        not install["load_error"]


def judge(tmp_path: Path, case: dict[str, Any]) -> Any:
    return Claude().judge(build(tmp_path / "market" / "plugins" / "p", case["files"]))


def test_the_verdicts_are_the_pinned_clis_and_every_case_says_where_it_comes_from() -> None:
    check_bookkeeping("claude", RECORDED, CASES, host_takes)


def test_the_corpus_covers_both_verdicts_and_the_load_only_refusals() -> None:
    taken = [c for c in CASES if host_takes(VERDICTS[c["id"]])]
    assert len(taken) >= 50 and len(CASES) - len(taken) >= 50
    assert any(VERDICTS[c["id"]]["validate"]["passed"] and not host_takes(VERDICTS[c["id"]]) for c in CASES), \
        "the corpus holds plugins validate passes and Claude Code cannot load"
    assert any(not VERDICTS[c["id"]]["validate"]["passed"] and VERDICTS[c["id"]]["install"]["installed"]
               for c in CASES), "the corpus holds plugins validate refuses and Claude Code installs anyway"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_pkgmgr_gives_claude_codes_verdict(tmp_path: Path, case: dict[str, Any]) -> None:
    verdict = VERDICTS[case["id"]]
    if host_takes(verdict) and not case.get("pkgmgr_rule"):
        judged = judge(tmp_path, case)
        assert judged.host == "claude" and judged.kind == "plugin"
        # --strict fails on the manifest keys Claude warns about: pkgmgr warns about each of them
        keys = {w.split(":", 1)[0] for w in judged.warnings}
        for path in verdict["validate"]["warnings"]:
            if ":" not in path:
                assert path.split(".")[0] in {k.split(".")[0] for k in keys}, (path, judged.warnings)
        return
    with pytest.raises(PkgmgrError) as caught:
        judge(tmp_path, case)
    assert_refused(caught.value, case)


# --- the codec and the pure rules on arbitrary input ------------------------------------------------------

_FIELDS = ["name", "version", "description", "author", "homepage", "repository", "license", "keywords", "commands",
           "agents", "skills", "outputStyles", "hooks", "mcpServers", "lspServers", "userConfig", "dependencies"]


@settings(max_examples=300, deadline=None)
@given(manifests(_FIELDS))
def test_parse_manifest_never_raises_anything_but_problems(raw: bytes) -> None:
    try:
        manifest = parse_manifest(raw)
    except ValidationFailed as exc:
        assert exc.problems and {p.code for p in exc.problems} <= CODES
        return
    assert isinstance(manifest.name, str) and manifest.name


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_the_pure_rules_take_any_text(text: str) -> None:
    refusals, warnings = name_problems(text)
    assert all(isinstance(m, str) for m in refusals + warnings)
    found = path_problem(text)
    assert found is None or found[0] in CODES
    assert url_ok(text) in (True, False)


@pytest.mark.parametrize("path, escapes", [("./a", False), ("./a/../b", False), ("./a/../../b", True),
                                           ("./..", True), ("./.", False), ("./a\\..\\..\\b", True)])
def test_a_component_path_may_not_leave_the_plugin(path: str, escapes: bool) -> None:
    found = path_problem(path)
    assert (found is not None and found[0] == Code.PATH_ESCAPES_ROOT) is escapes


def test_the_config_dir_follows_claude_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.hosts.claude import claude_config_dir

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert claude_config_dir({}) == tmp_path / "home" / ".claude"
    assert claude_config_dir({"CLAUDE_CONFIG_DIR": ""}) == tmp_path / "home" / ".claude"
    assert claude_config_dir({"CLAUDE_CONFIG_DIR": str(tmp_path / "c")}) == tmp_path / "c"


@pytest.mark.parametrize("name, refused, warned", [
    ("my-plugin", False, False), ("claude", True, False), ("cl-aude", True, False), ("claude-helper", True, False),
    ("claudette", False, False), ("my-claude", False, True), ("a--b", False, True), ("a b", True, False),
    ("a/b", True, False), ("a@b", True, False), ("日本", False, True)])
def test_plugin_names(name: str, refused: bool, warned: bool) -> None:
    refusals, warnings = name_problems(name)
    assert (bool(refusals), bool(warnings)) == (refused, warned)
