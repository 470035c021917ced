"""The byte-preserving edit of a host's JSON settings file (`pkgmgr.hosts.jsonedit`): the edited
document says what was intended, a new member undone restores the file byte for byte, and a
member replaced leaves every byte outside its value as it was; files in the hosts' own format come
out byte-identical to what the hosts write (`JSON.stringify(value, null, 2)`)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.hosts.jsonedit import BOM, Document, EditError

MAX = 1 << 20
keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
                      max_leaves=8)
documents = st.dictionaries(keys, values, max_size=5)
styles = st.sampled_from([None, 2, 4, "\t", "  "])


def _text(document: dict[str, Any], indent: Any, bom: bool, newline: bool, ascii_only: bool) -> bytes:
    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only) + ("\n" if newline else "")
    return (BOM if bom else b"") + text.encode("utf-8")


@settings(max_examples=150, deadline=None)
@given(documents, styles, st.booleans(), st.booleans(), st.booleans(), keys, keys, values)
def test_a_new_member_says_what_was_meant_and_undone_restores_every_byte(
        document: dict[str, Any], indent: Any, bom: bool, newline: bool, ascii_only: bool, outer: str, inner: str,
        value: Any) -> None:
    raw = _text(document, indent, bom, newline, ascii_only)
    edit = Document.parse(raw, max_bytes=MAX)
    path: tuple[str, ...]
    if isinstance(document.get(outer), dict) and inner not in document[outer]:
        path = (outer, inner)
    elif outer not in document:
        path = (outer, inner)
    else:
        return
    edit.set(path, value)
    expected = copy.deepcopy(document)
    expected.setdefault(outer, {})[inner] = value
    after = edit.bytes()
    assert json.loads(after.removeprefix(BOM)) == expected
    assert after.startswith(BOM) == bom and after.endswith(b"\n") == newline
    assert edit.remove(path)
    if outer not in document:
        assert edit.remove((outer,))
    assert edit.bytes() == raw


@settings(max_examples=150, deadline=None)
@given(documents.filter(bool), styles, st.data(), values)
def test_a_replaced_value_leaves_every_other_byte(document: dict[str, Any], indent: Any, data: st.DataObject,
                                                 value: Any) -> None:
    raw = _text(document, indent, False, True, False)
    edit = Document.parse(raw, max_bytes=MAX)
    key = data.draw(st.sampled_from(sorted(document)))
    [member] = [m for m in edit.root.members or [] if m.key == key]
    start, end = member.value.start, member.value.end
    edit.set((key,), value)
    after = edit.bytes()
    assert json.loads(after) == {**document, key: value}
    text, new = raw.decode(), after.decode()
    assert new[:start] == text[:start] and new.endswith(text[end:])


def test_the_hosts_own_format_comes_out_as_the_host_writes_it() -> None:
    """Claude's settings.json (`JSON.stringify(v, null, 2)` + newline) after `claude plugin
    install`, and Gemini's enablement file (no newline) after `gemini extensions enable`."""
    known = {"extraKnownMarketplaces": {"pkgmgr": {"source": {"source": "directory", "path": "/m"}}}}
    edit = Document.parse((json.dumps(known, indent=2) + "\n").encode(), max_bytes=MAX)
    edit.set(("enabledPlugins", "hello@pkgmgr"), True)
    assert edit.bytes() == (json.dumps({**known, "enabledPlugins": {"hello@pkgmgr": True}}, indent=2) + "\n").encode()
    edit.remove(("enabledPlugins", "hello@pkgmgr"))
    assert json.loads(edit.bytes()) == {**known, "enabledPlugins": {}}
    assert b'"enabledPlugins": {}' in edit.bytes()
    gemini = Document.parse(b"", max_bytes=MAX)
    gemini.set(("hello",), {"overrides": ["/h/*"]}, final_newline=False)
    assert gemini.bytes() == json.dumps({"hello": {"overrides": ["/h/*"]}}, indent=2).encode()
    gemini.set(("hello", "overrides"), ["!/h/*", "/h/w/*"])
    assert gemini.bytes() == json.dumps({"hello": {"overrides": ["!/h/*", "/h/w/*"]}}, indent=2).encode()
    gemini.remove(("hello",))
    assert gemini.bytes() == b"{}"


@pytest.mark.parametrize("raw", [b"{", b"[]", b'"x"', b'{"a": 1, "a": 2}', b"{'a': 1}", b'{"a": NaN}',
                                 b"{} {}", b"\xff", b"[" * 100 + b"]" * 100])
def test_what_is_not_one_json_object_is_refused(raw: bytes) -> None:
    with pytest.raises(EditError):
        Document.parse(raw, max_bytes=MAX)


def test_a_key_on_the_way_that_holds_no_object_is_refused() -> None:
    edit = Document.parse(b'{"enabledPlugins": []}', max_bytes=MAX)
    with pytest.raises(EditError):
        edit.set(("enabledPlugins", "a@b"), True)
    assert edit.bytes() == b'{"enabledPlugins": []}'
