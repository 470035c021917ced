"""`parse_index`'s one-pass fast path gives the slow path's `Index` for a valid index.json and
steps aside (None) for anything the slow path would refuse or report."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.errors import ValidationFailed
from pkgmgr.registry import index_format
from tests.perf.test_fastschema import OPS, SEEDS, mutate


def slow(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> index_format.Index:
    with monkeypatch.context() as patch:
        patch.setattr(index_format, "_index_fast", lambda doc: None)
        return index_format.parse_index(raw)


def big_index() -> dict:
    versions = [{"version": "1.0.0", "yanked": False, "min_compozy_version": "0.5.0"},
                {"version": "1.1.0", "yanked": True, "min_compozy_version": "0.5.0"}]
    extensions = [{"name": f"ext-{i:04d}", "description": f"extension {i}", "tier": "community", "latest": "1.1.0",
                   "versions": versions} for i in range(300)]
    return {"format": 1, "serial": 7, "extensions": extensions}


@pytest.mark.parametrize("doc", [*SEEDS["index"], big_index()], ids=["shipped", "generated"])
def test_the_fast_path_gives_the_same_index(doc: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = json.dumps(doc).encode()
    assert index_format._index_fast(json.loads(raw)) is not None
    assert index_format.parse_index(raw) == slow(raw, monkeypatch)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_fast_path_steps_aside_for_any_problem(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = mutate(big_index() if data.draw(st.booleans()) else SEEDS["index"][0],
                 data.draw(st.lists(OPS, min_size=1, max_size=3)))
    raw = json.dumps(doc).encode()
    try:
        expected = slow(raw, monkeypatch)
    except ValidationFailed:
        assert index_format._index_fast(json.loads(raw)) is None
    else:
        fast = index_format._index_fast(json.loads(raw))
        assert fast is None or fast == expected
