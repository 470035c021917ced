"""errors: every code has the exit status of SPEC 11's table; Problem, ValidationFailed, ProblemSink."""

from __future__ import annotations

import json

import pytest

from pkgmgr.errors import (
    EXIT_CODES,
    PkgmgrError,
    Problem,
    ProblemSink,
    ValidationFailed,
    exit_code_for,
    raise_problems,
)

# SPEC section 11, transcribed: exit status -> error codes.
SPEC_TABLE: dict[int, list[str]] = {
    2: ["usage"],
    3: ["invalid_manifest", "invalid_bundle", "invalid_layout", "invalid_archive", "invalid_index", "invalid_config",
        "path_escapes_root", "agent_reference_not_found"],
    4: ["unsafe_archive", "archive_too_large", "checksum_mismatch", "metadata_mismatch", "unverified_source",
        "grant_not_allowed", "registry_rollback", "registry_checksum_changed", "registry_expired",
        "registry_signature_invalid",
        "incompatible_host", "trust_required", "auth_required", "tree_modified", "state_inconsistent"],
    5: ["not_found", "version_not_found"],
    6: ["already_active", "agent_conflict", "stale_version", "network_digest_mismatch",
        "extension_has_active_bundles", "bundle_missing", "source_conflict", "ambiguous_asset", "version_exists",
        "lock_outdated", "locked"],
    7: ["network_error", "http_error", "rate_limited"],
    8: ["confirmation_required"],
    9: ["io_error"],
    70: ["internal"],
}
SPEC_CODES = {code: status for status, codes in SPEC_TABLE.items() for code in codes}


def test_the_table_is_exactly_the_spec() -> None:
    assert EXIT_CODES == SPEC_CODES


@pytest.mark.parametrize("code, status", sorted(SPEC_CODES.items()))
def test_each_code_maps_to_its_exit_status(code: str, status: int) -> None:
    error = PkgmgrError("something", code=code)
    assert (error.code, error.exit_code, exit_code_for(code)) == (code, status, status)
    assert error.to_json() == {"code": code, "message": "something", "exit_code": status, "details": {}}


def test_unknown_code_is_a_bug() -> None:
    assert exit_code_for("no_such_code") == 70
    with pytest.raises(ValueError):
        PkgmgrError("x", code="no_such_code")


def test_default_code_is_internal_and_subclasses_may_set_one() -> None:
    assert PkgmgrError("x").code == "internal"

    class Usage(PkgmgrError):
        code = "usage"

    assert Usage("bad").exit_code == 2


def test_error_fields_are_json_safe() -> None:
    error = PkgmgrError("msg", code="locked", details={"path": "/x"}, hint="wait", partial={"installed": []})
    assert json.loads(json.dumps(error.to_json())) == error.to_json()
    assert (error.hint, error.partial, str(error)) == ("wait", {"installed": []}, "msg")
    assert repr(error) == "PkgmgrError('locked', 'msg')"


def test_problem_rendering() -> None:
    problem = Problem("invalid_manifest", "extension.toml", "extension.version", '"1.0" is not a semantic version')
    assert str(problem) == 'extension.toml: extension.version: "1.0" is not a semantic version'
    assert problem.to_json() == {"code": "invalid_manifest", "file": "extension.toml", "key": "extension.version",
                                 "message": '"1.0" is not a semantic version'}
    assert str(Problem("invalid_config", "config.toml", "", "not valid TOML")) == "config.toml: not valid TOML"
    with_line = Problem("invalid_bundle", "b.toml", "k", "m", line=3)
    assert str(with_line) == "b.toml:3: k: m" and with_line.to_json()["line"] == 3


def test_validation_failed_carries_every_problem_and_the_first_code() -> None:
    problems = [Problem("path_escapes_root", "extension.toml", "resources.skills[0]", "escapes"),
                Problem("invalid_manifest", "extension.toml", "name", "bad")]
    error = ValidationFailed(problems, summary="2 problems")
    assert error.code == "path_escapes_root" and error.exit_code == 3
    assert error.message == "2 problems\nextension.toml: resources.skills[0]: escapes\nextension.toml: name: bad"
    assert error.details == {"problems": [p.to_json() for p in problems]}
    with pytest.raises(ValueError):
        ValidationFailed([])


def test_problem_sink_collects_then_raises() -> None:
    sink = ProblemSink("bundles/a.toml", "invalid_bundle")
    assert not sink
    sink.raise_if_any()
    raise_problems([])
    sink.add("name", "missing")
    sink.add("profiles[0].layouts[0]", "bad layout", code="invalid_layout", line=7)
    sink.extend([Problem("invalid_bundle", "bundles/a.toml", "x", "y")])
    assert sink and len(sink.problems) == 3
    with pytest.raises(ValidationFailed) as caught:
        sink.raise_if_any()
    assert caught.value.code == "invalid_bundle"
    assert [p.code for p in caught.value.problems] == ["invalid_bundle", "invalid_layout", "invalid_bundle"]
    assert caught.value.problems[1].line == 7


# --- Code: the enumeration is the table --------------------------------------------------------------


def test_code_enumerates_exactly_the_spec_table() -> None:
    from pkgmgr.errors import Code

    assert {code.value: code.exit_status for code in Code} == SPEC_CODES
    assert Code.NOT_FOUND == "not_found" and PkgmgrError("x", code="not_found").code is Code.NOT_FOUND


def test_an_unknown_code_is_a_bug() -> None:
    with pytest.raises(ValueError, match="unknown error code"):
        PkgmgrError("x", code="no_such_code")


def test_structured_fields_are_attributes_and_details() -> None:
    cause = PkgmgrError("inner", code="not_found")
    error = PkgmgrError("outer", code="checksum_mismatch", path="/a/b", key="sha256", expected="ab", actual="cd",
                        causes=[cause])
    assert (error.path, error.key, error.expected, error.actual, error.causes) == ("/a/b", "sha256", "ab", "cd",
                                                                                   (cause,))
    assert error.details == {"path": "/a/b", "key": "sha256", "expected": "ab", "actual": "cd",
                             "causes": [cause.to_json()]}
    json.dumps(error.to_json())


def test_one_problem_type_keeps_each_spec_shape() -> None:
    """Validation, the scope rules of activation and doctor's invariants share `Problem` (issue 12
    item 5); each keeps the JSON shape it always had."""
    from pkgmgr.errors import Code

    assert Problem("invalid_manifest", "extension.toml", "name", "bad", 3).to_json() == {
        "code": "invalid_manifest", "file": "extension.toml", "key": "name", "message": "bad", "line": 3}
    rule = Problem.scope_rule("agent_conflict", "agent", "a", "taken", "agents/a/AGENT.md", "name")
    assert rule.to_json() == {"code": "agent_conflict", "kind": "agent", "name": "a", "message": "taken",
                              "file": "agents/a/AGENT.md", "key": "name"}
    found = Problem.invariant("global", "install", "demo-ext 1.0.0: missing", name="demo-ext")
    assert found.to_json() == {"scope": "global", "check": "install", "message": "demo-ext 1.0.0: missing",
                               "repairable": False}
    assert found.code == Code.STATE_INCONSISTENT and found.name == "demo-ext"
    assert Problem.invariant("global", "leftover", "removed x", True).to_json()["repairable"] is True
