"""Fuzzing format 2's summary parsers (pkgmgr.registry.summary), the files a client reads from a
registry it does not trust: the shard list, a summary shard and a changes chunk. Whatever their
bytes hold — mutations of a valid document (values of every JSON type in every place), edits of
its text, arbitrary bytes — a parser returns its value or raises `ValidationFailed` with
`invalid_index`, whose JSON can be printed: never anything else, never exit 70.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.errors import Code, ValidationFailed
from pkgmgr.registry.layout import chunk_path, shard_of, summary_path
from pkgmgr.registry.summary import (
    Change,
    parse_chunk,
    parse_shard,
    parse_shards,
    render_chunk,
    render_shard,
    render_shards,
    shard_info,
)
from tests.bundles.test_fuzz import mutations
from tests.fuzz.strategies import FUZZ, edited, encoded, ran

pytestmark = pytest.mark.slow

NAME = "review-pack"
SHARD = shard_of(NAME)
RECORD = {"name": NAME, "description": "Review skills", "tier": "community", "latest": "1.1.0",
          "versions": [{"version": "1.0.0", "yanked": True, "min_compozy_version": "0.0.0"},
                       {"version": "1.1.0", "yanked": False, "min_compozy_version": "0.5.0"}]}
SHARD_BYTES = render_shard(SHARD, [RECORD])
CHUNK_BYTES = render_chunk(0, [Change(1, "publish", NAME, None, RECORD), Change(2, "yank", NAME, None, RECORD),
                               Change(3, "reset", None, None)])
SHARDS_BYTES = render_shards(3, {SHARD: shard_info(SHARD_BYTES, 1)})

TARGETS: dict[str, tuple[bytes, Callable[[bytes], Any]]] = {
    "shard list": (SHARDS_BYTES, parse_shards),
    "shard": (SHARD_BYTES, lambda raw: parse_shard(raw, summary_path(SHARD), SHARD)),
    "chunk": (CHUNK_BYTES, lambda raw: parse_chunk(raw, chunk_path(0), 0)),
}


def judged(target: str, raw: bytes) -> None:
    parse = TARGETS[target][1]
    try:
        parse(raw)
    except ValidationFailed as exc:
        assert exc.code == Code.INVALID_INDEX
        json.dumps(exc.to_json())
        ran(target, exc.code.value)
        return
    ran(target, True)


def test_the_valid_documents_parse() -> None:
    for target, (raw, parse) in TARGETS.items():
        assert parse(raw), target


@pytest.mark.parametrize("target", sorted(TARGETS))
@FUZZ
@given(data=st.data())
def test_mutated_documents(target: str, data: st.DataObject) -> None:
    document = data.draw(mutations(json.loads(TARGETS[target][0])))
    judged(target, json.dumps(document, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("target", sorted(TARGETS))
@FUZZ
@given(data=st.data())
def test_edited_text(target: str, data: st.DataObject) -> None:
    judged(target, data.draw(encoded(edited(TARGETS[target][0].decode()))))


@pytest.mark.parametrize("target", sorted(TARGETS))
@FUZZ
@given(raw=st.binary(max_size=512))
def test_arbitrary_bytes(target: str, raw: bytes) -> None:
    judged(target, raw)
