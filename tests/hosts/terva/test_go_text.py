"""Go's reading of JSON text (pkgmgr.gokeys): broken UTF-8 one U+FFFD per byte, escaped lone
surrogates as U+FFFD, pairs kept — the values terva's harness printed for the same inputs
(tests/hosts/terva/recorded.json holds the cases that load)."""

from __future__ import annotations

import json

import pytest

from pkgmgr.gokeys import go_json_text, go_utf8
from pkgmgr.hosts import jsonfmt, terva


@pytest.mark.parametrize("raw, text", [
    (b"abc", "abc"),
    (b"a\xe2\x82A", "a\ufffd\ufffdA"),  # a cut 3-byte sequence: two bytes, two U+FFFD (Python's "replace": one)
    (b"\xed\xa0\x80", "\ufffd" * 3),  # an encoded surrogate is three invalid bytes
    (b"\xf4\x90\x80\x80", "\ufffd" * 4),  # beyond U+10FFFF
    (b"\xc3\xa9\xff", "\u00e9\ufffd"),
])
def test_go_utf8_replaces_each_broken_byte(raw: bytes, text: str) -> None:
    assert go_utf8(raw) == text


@pytest.mark.parametrize("escaped, value", [
    (r'"\ud800"', "\ufffd"),
    (r'"\udc00x"', "\ufffdx"),
    (r'"\ud83d\ude00"', "\U0001f600"),  # a pair stays a pair
    (r'"\ude00\ud83d"', "\ufffd\ufffd"),  # reversed: two lone halves
    (r'"\ud800\u0041"', "\ufffdA"),
    (r'"\ud800\ud83d\ude00"', "\ufffd\U0001f600"),
    (r'"\\ud800"', "\\ud800"),  # an escaped backslash: no escape follows
    (r'"\\\ud800"', "\\\ufffd"),
    (r'"\uDBFF\uDFFF"', "\U0010ffff"),
])
def test_go_json_text_replaces_lone_surrogates(escaped: str, value: str) -> None:
    assert json.loads(go_json_text(escaped)) == value


def test_tervas_decoder_reads_as_go_and_never_keeps_a_surrogate() -> None:
    document = jsonfmt.plain(terva.decode(b'{"name":"x\\ud800","description":"\xff","name":"y\\udfff"}'))
    assert document == {"name": "y\ufffd", "description": "\ufffd"}
    json.dumps(document, ensure_ascii=False).encode("utf-8")  # nothing left that UTF-8 cannot hold
