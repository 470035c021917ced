"""Stable ids (SPEC 9.1), each expected value computed here with hashlib."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pkgmgr.activation.ids import RESOURCE_PREFIXES, activation_id, resource_id, stable_id

from .helpers import NAME, activate, installed, make_ext, ok, profile


def expected(prefix: str, *parts: str) -> str:
    return prefix + "_" + hashlib.sha256("\n".join(p.strip() for p in parts).encode("utf-8")).hexdigest()[:16]


def test_stable_id_strips_each_part_and_keeps_sixteen_hex() -> None:
    assert stable_id("x", [" a ", "b\n"]) == expected("x", "a", "b")
    # Go's strings.TrimSpace keeps U+001C..U+001F, which Python's str.strip() would drop
    assert stable_id("x", ["\x1ca\x1f"]) == "x_" + hashlib.sha256(b"\x1ca\x1f").hexdigest()[:16]
    assert stable_id("x", ["a", "b"]) == "x_" + hashlib.sha256(b"a\nb").hexdigest()[:16]
    assert len(stable_id("act", ["only"])) == len("act_") + 16


def test_activation_id_keeps_names_as_written_and_the_workspace_path() -> None:
    # Compozy's ActivationResourceID hashes the names as written (internal/bundles/ids.go stableID)
    assert activation_id("Crew-Ext", "Crew", "Default", "global", "") == \
        "act_" + hashlib.sha256(b"Crew-Ext\nCrew\nDefault\nglobal\n").hexdigest()[:16]
    assert activation_id("marketing-team", "marketing", "default", "global", "") != \
        activation_id("marketing-team", "Marketing", "Default", "global", "")
    ws = "/srv/work/Project"
    assert activation_id("crew-ext", "crew", "default", "workspace", ws) == \
        expected("act", "crew-ext", "crew", "default", "workspace", ws)
    assert activation_id("a", "b", "c", "global", "") != activation_id("a", "b", "c", "workspace", ws)


# Compozy's own golden values (internal/bundles service_refac_test.go TestStableIDGoldenValues at
# 8eeb8a381), as literals: these are not recomputed here, so a change of formula shows
@pytest.mark.parametrize("prefix, parts, value", [
    ("bun", (" marketing-team ", " marketing "), "bun_71abf3d73c5a934f"),
    ("act", ("marketing-team", "marketing", "default", "workspace", "ws-001"), "act_05c52a0fc3434e04"),
    ("job", ("act_abc", "daily-sync"), "job_44e1af1b7cb594ac"),
    ("agt", ("act_abc", "marketer"), "agt_2d25fbd1cf05ff42"),
    ("bri", ("act_abc", "telegram-main"), "bri_879455ae8928252c"),
    ("act", ("", " spaced ", "", "global", ""), "act_7958a67dc6e347a1"),
])
def test_stable_id_gives_compozys_golden_values(prefix: str, parts: tuple[str, ...], value: str) -> None:
    assert stable_id(prefix, parts) == value


def test_activation_id_of_compozys_marketing_default_example(tmp_path: Path, home: Path) -> None:
    # issue 14's act_d118... is ActivationResourceID("marketing-team", "Marketing", "Default", global, "")
    # (internal/bundles resource.go: Compozy's test extension marketing-team, names as written)
    value = "act_d11878dd6945955e"
    assert activation_id("marketing-team", "Marketing", "Default", "global", "") == value
    make_ext(tmp_path / "src", name="marketing-team", bundle_name="Marketing", scopes=None,
             profiles=[profile("Default")])
    installed(tmp_path / "src")
    assert activate("marketing-team:Marketing/Default")["activation"]["id"] == value


@pytest.mark.parametrize("kind, prefix", [("agent", "agt"), ("agent.soul", "sol"), ("agent.heartbeat", "hbt"),
                                          ("channel", "chn"), ("job", "job"), ("trigger", "trg"),
                                          ("window_layout", "lay")])
def test_resource_prefixes(kind: str, prefix: str) -> None:
    assert RESOURCE_PREFIXES[kind] == prefix
    assert resource_id(kind, "act_0123456789abcdef", "planner") == expected(prefix, "act_0123456789abcdef", "planner")


def test_ids_of_a_real_activation_in_both_scopes(tmp_path: Path, home: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "src")
    installed(tmp_path / "src", workspace=workspace)
    act = expected("act", NAME, "crew", "default", "global", "")
    assert activate()["activation"]["id"] == act
    ws_act = expected("act", NAME, "crew", "default", "workspace", str(workspace))
    # the workspace activation needs its own agent names: deactivate the global one first
    ok("bundle", "deactivate", act)
    document = activate(workspace=workspace)
    assert document["activation"]["id"] == ws_act
    ids = {(r["kind"], r["name"]): r["id"] for r in document["resources"]}
    assert ids == {
        ("agent", "planner"): expected("agt", ws_act, "planner"),
        ("agent.soul", "planner"): expected("sol", ws_act, "planner"),
        ("channel", "ops"): expected("chn", ws_act, "ops"),
        ("job", "daily"): expected("job", ws_act, "daily"),
        ("trigger", "on-issue"): expected("trg", ws_act, "on-issue"),
        ("window_layout", "two-up"): expected("lay", ws_act, "two-up"),
    }


def test_lookups_of_activation_ids_are_case_insensitive(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "src")
    act = activate("CREW-EXT:Crew/DEFAULT")["activation"]["id"]
    assert act == expected("act", NAME, "crew", "default", "global", "")
    assert ok("bundle", "show", act.upper().replace("ACT_", "Act_"))["activation"]["id"] == act
    assert ok("bundle", "show", f" {act.upper()} ")["activation"]["id"] == act
    assert ok("bundle", "deactivate", act.upper())["deactivated"]["id"] == act
