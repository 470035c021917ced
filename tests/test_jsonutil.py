"""jsonutil: canonical JSON, Go-compatible JSON, sha256 and key paths."""

from __future__ import annotations

import json

import pytest

from pkgmgr.jsonutil import canonical_json, go_json, join_key, key_path, sha256_hex


def test_canonical_json_sorts_keys_and_keeps_utf8() -> None:
    assert canonical_json({"b": 1, "a": [True, None, "é"], "c": {"z": 1, "y": 2}}) == (
        '{"a":[true,null,"é"],"b":1,"c":{"y":2,"z":1}}')
    assert canonical_json({"b": 1, "a": 2}) == canonical_json({"a": 2, "b": 1})


def test_canonical_json_refuses_nan() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_go_json_keeps_order_and_escapes_like_go() -> None:
    assert go_json({"b": "<a&b>", "a": "\u2028\u2029é"}) == '{"b":"\\u003ca\\u0026b\\u003e","a":"\\u2028\\u2029é"}'
    assert json.loads(go_json({"x": "<&>\u2028"})) == {"x": "<&>\u2028"}
    assert go_json([1, "two", None]) == '[1,"two",null]'


def test_sha256_hex() -> None:
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_hex(b"") == sha256_hex("") == empty
    assert sha256_hex("é") == sha256_hex("é".encode())


@pytest.mark.parametrize("parts, rendered", [
    ([], ""), (["a"], "a"), (["resources", "hooks", 0, "command"], "resources.hooks[0].command"),
    ([0], "[0]"), ([0, 1, "x"], "[0][1].x"), (["profiles", 0, "jobs", 1, "schedule", "expr"],
                                              "profiles[0].jobs[1].schedule.expr"),
])
def test_key_path(parts: list, rendered: str) -> None:
    assert key_path(parts) == rendered


def test_join_key() -> None:
    assert join_key("", "a", 0) == "a[0]"
    assert join_key("resources", "skills", 2) == "resources.skills[2]"
    assert join_key("items", 3) == "items[3]"
    assert join_key("x") == "x"
