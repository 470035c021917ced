"""`index_format.canonical_toml`, the fast reader of entries in the form `registry publish`
writes: whatever it accepts, it reads exactly as tomllib does; everything else is left to
tomllib (None)."""

from __future__ import annotations

import tomllib

from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.registry.index_format import canonical_toml

KEYS = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)
PLAIN = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
VALUES = st.one_of(
    PLAIN.map(lambda s: '"' + s + '"'),
    st.integers(min_value=-5, max_value=10**19).map(str),
    st.sampled_from(["true", "false", "True", "0", "00", "-0", "+1", "1_000", "1.5", "nan", "inf"]),
    st.sampled_from(["2026-11-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-29T00:00:00+02:00",
                     "2026-11-29t00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T00:00:60Z", "2026-11-29",
                     "2026-11-29T00:00:00+24:00", "2026-11-29T00:00:00.5Z", "1979-05-27T07:32:00-08:00"]),
    st.lists(PLAIN, max_size=3).map(lambda items: "[" + ", ".join('"' + s + '"' for s in items) + "]"),
    st.sampled_from(['[ "a" ]', '["a",]', "[1, 2]", '"a" # c', "'literal'", '"""x"""', '"\\n"', "{}"]),
)
LINES = st.one_of(
    st.tuples(KEYS, VALUES).map(lambda kv: f"{kv[0]} = {kv[1]}"),
    st.sampled_from(["", "[[versions]]", "[versions]", "# a comment", "  a = 1", "a=1", "a.b = 1", "[x]",
                     "versions = []", "\ufeffa = 1", "a = 1\r"]),
)


def _tomllib(raw: bytes):  # noqa: ANN202
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None


@settings(max_examples=300, deadline=None)
@given(st.lists(LINES, max_size=14))
def test_canonical_reads_exactly_what_tomllib_reads(lines: list[str]) -> None:
    raw = "\n".join(lines).encode("utf-8", "surrogatepass")
    fast = canonical_toml(raw)
    if fast is not None:
        assert fast == _tomllib(raw)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(raw: bytes) -> None:
    fast = canonical_toml(raw)
    if fast is not None:
        assert fast == _tomllib(raw)


def test_the_form_publish_writes_is_read_fast() -> None:
    raw = b'''name = "review-pack"
description = "Review skills, hooks, and MCP helpers \xc3\xa9"
tier = "official"

[[versions]]
version = "0.1.0"
url = "archives/review-pack-0.1.0.tar.gz"
sha256 = "0ee8594e63e1d36d8c2b7323c40abb57e600d0cff5dc5dbf71a5f01f047e34a8"
size = 1153
min_compozy_version = "0.5.0"
network_digest = ""
permissions = ["session.read", "fs.read"]
published = 2026-11-29T00:00:00Z
yanked = false

[[versions]]
version = "0.2.0"
url = "archives/review-pack-0.2.0.tar.gz"
sha256 = "a2c52c29e39949c86f9f3a54dc17cb2b96d07d22638c50200638311ec489ebd1"
size = 1222
permissions = []
yanked = true
'''
    fast = canonical_toml(raw)
    assert fast is not None and fast == tomllib.loads(raw.decode())


def test_what_it_leaves_to_tomllib() -> None:
    for text in ('# c\nname = "a"\n', 'name = "a\\"b"\n', 'name = "a"\nname = "b"\n', "versions = 1\n[[versions]]\n",
                 "[x]\na = 1\n", 'a = "x"\r\n', "size = 01\n"):
        assert canonical_toml(text.encode()) is None, text


def test_the_fast_parse_of_an_entry_equals_the_slow_one(monkeypatch) -> None:  # noqa: ANN001
    """parse_entry through canonical_toml gives what it gives through tomllib."""
    from pkgmgr.registry import index_format
    from pkgmgr.registry.index_format import parse_entry

    raw = ('name = "review-pack"\ndescription = "R"\ntier = "official"\n\n[[versions]]\nversion = "0.1.0"\n'
           'url = "archives/r.tar.gz"\nsha256 = "' + "a" * 64 + '"\nsize = 1\nmin_compozy_version = "0.5.0"\n'
           'permissions = ["session.read"]\npublished = 2026-11-29T00:00:00+02:00\nyanked = false\n\n[[versions]]\n'
           'version = "0.2.0"\nurl = "archives/s.tar.gz"\nsha256 = "' + "b" * 64 + '"\nsize = 2\n'
           'min_compozy_version = "0.5.0"\npublished = 2026-11-30T00:00:00Z\n').encode()
    fast = parse_entry(raw, "x")
    monkeypatch.setattr(index_format, "canonical_toml", lambda raw, stamps=None: None)
    assert parse_entry(raw, "x") == fast and fast.versions[0].published is not None
