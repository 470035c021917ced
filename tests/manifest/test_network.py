from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.manifest import network_digest, network_json, normalize_network
from pkgmgr.manifest.network import go_trim_space

REPO = Path(__file__).resolve().parents[2]
VECTORS_PATH = REPO / "tests" / "vectors" / "network_digest.json"
SHARED_VECTORS_PATH = REPO.parent / "shared" / "vectors" / "network_digest.json"
VECTORS = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", VECTORS["valid"], ids=lambda case: case["name"])
def test_valid_vectors(case: dict[str, Any]) -> None:
    assert network_digest(case["block"]) == case["digest"]
    assert network_json(case["block"]) == case["canonical_json"]


@pytest.mark.parametrize("case", VECTORS["invalid"], ids=lambda case: case["name"])
def test_invalid_vectors(case: dict[str, Any]) -> None:
    normalised, problems = normalize_network(case["block"])
    assert normalised is None and problems
    with pytest.raises(ValueError):
        network_digest(case["block"])


def test_repository_copy_matches_the_shared_vectors() -> None:
    if not SHARED_VECTORS_PATH.is_file():
        pytest.skip("../shared/vectors/network_digest.json is not beside the repository")
    assert json.loads(SHARED_VECTORS_PATH.read_text(encoding="utf-8")) == VECTORS


def test_normalised_block() -> None:
    block = {"required": True, "mode": "\tLIVE\n", "channel_scopes": ["release", " builders", "release", "", "  "]}
    expected = {"required": True, "mode": "live", "channel_scopes": ["builders", "release"]}
    assert normalize_network(block) == (expected, [])
    assert normalize_network(None) == (None, [])
    assert normalize_network({}) == ({"required": False, "mode": "", "channel_scopes": []}, [])


def test_not_required_with_blank_mode_and_scopes_is_fine() -> None:
    assert normalize_network({"required": False, "mode": "  ", "channel_scopes": [" "]})[1] == []
    assert network_digest({"required": False, "mode": " "}) == ""


@pytest.mark.parametrize(
    ("block", "key", "message"),
    [
        ("live", "network_participation", "must be a table"),
        ({"required": "yes"}, "network_participation.required", "must be a boolean"),
        ({"required": True, "mode": 1}, "network_participation.mode", "must be a string"),
        ({"required": True, "mode": "live", "channel_scopes": "a"}, "network_participation.channel_scopes", "list"),
        ({"required": True, "mode": "live", "channel_scopes": [1]}, "network_participation.channel_scopes[0]",
         "string"),
        ({"required": False, "channel_scopes": ["x"]}, "network_participation.required", "required = false"),
        ({"required": True, "mode": "batch"}, "network_participation.mode", 'needs mode "live", got "batch"'),
    ],
)
def test_invalid_blocks_name_the_key(block: Any, key: str, message: str) -> None:
    normalised, problems = normalize_network(block)
    assert normalised is None
    assert any(k == key and message in m for k, m in problems), problems


def test_compozy_decoder_leniency() -> None:
    # json.Unmarshal ignores unknown keys and reads null as the zero value (issue 14, item 4)
    live = network_digest({"required": True, "mode": "live"})
    assert network_digest({"required": True, "mode": "live", "extra": 1}) == live
    assert network_digest({"required": True, "mode": "live", "channel_scopes": None}) == live
    assert network_digest({"required": None, "mode": None, "channel_scopes": None}) == ""
    # Go's strings.ToLower maps U+0130 to "i": "LİVE" is live in Compozy
    assert network_digest({"required": True, "mode": "LİVE"}) == live


def test_trim_follows_go_not_python() -> None:
    # Go's strings.TrimSpace keeps U+001C..U+001F; Python's str.strip() would drop them.
    assert go_trim_space("\x1clive\x1f") == "\x1clive\x1f"
    assert go_trim_space("\u3000live\u2029\u0085") == "live"


scopes = st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=8), max_size=6)


@settings(max_examples=200, deadline=None)
@given(scopes, st.sampled_from(["live", " LIVE", "Live\t"]), st.randoms(use_true_random=False))
def test_digest_ignores_order_padding_duplicates_and_case(raw: list[str], mode: str, rnd: Any) -> None:
    block = {"required": True, "mode": mode, "channel_scopes": raw}
    shuffled = [f" {scope}\t" for scope in raw] + raw
    rnd.shuffle(shuffled)
    assert network_digest(block) == network_digest({"required": True, "mode": "live", "channel_scopes": shuffled})
    normalised, problems = normalize_network(block)
    assert problems == []
    assert normalize_network(normalised) == (normalised, [])
    assert network_digest(normalised) == network_digest(block)
