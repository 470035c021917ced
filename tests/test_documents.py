from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.documents import (
    MAX_DEPTH,
    MAX_KEY_DEPTH,
    DocumentError,
    check_toml_keys,
    decode_text,
    load_document,
    plain_issues,
    size_text,
)


def load_json(text: str | bytes, max_bytes: int = 1 << 20):
    data = text.encode() if isinstance(text, str) else text
    return load_document(data, kind="json", max_bytes=max_bytes)


def test_json_object_decodes_without_issues():
    assert load_json('{"a": [1, 2.5, true, null, "x"]}') == ({"a": [1, 2.5, True, None, "x"]}, [])


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"a": 1, "a": 2}', "duplicate key \"a\""),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": Infinity}', "Infinity is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": 1e400}', "out of range"),
        ('{"a": 1} {"b": 2}', "trailing data"),
        ('{"a": 1}\n[]', "trailing data"),
        ("", "not valid JSON"),
        ('{"a": }', "not valid JSON"),
        ('{"a": 1' + "1" * 5000 + "}", "not valid JSON"),
    ],
)
def test_json_rejections(text, fragment):
    with pytest.raises(DocumentError) as info:
        load_json(text)
    assert fragment in info.value.message


def test_json_error_carries_line():
    with pytest.raises(DocumentError) as info:
        load_json('{\n"a": 1,\n"b": }')
    assert info.value.line == 3


def test_trailing_whitespace_is_fine():
    assert load_json('{"a": 1}\n\n  ')[0] == {"a": 1}


def test_size_limit_is_checked_before_decoding():
    with pytest.raises(DocumentError, match="larger than 10 bytes"):
        load_json('{"a": "0123456789"}', max_bytes=10)


def test_utf8_required_and_bom_rejected():
    with pytest.raises(DocumentError, match="not valid UTF-8"):
        load_json(b'{"a": "\xff"}')
    with pytest.raises(DocumentError, match="byte order mark"):
        load_json(b"\xef\xbb\xbf{}")
    assert decode_text("é".encode()) == "é"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5000, 200_000])
def test_deep_json_is_a_document_error_not_a_recursion_error(depth):
    with pytest.raises(DocumentError, match="nested deeper"):
        load_json("[" * depth + "]" * depth, max_bytes=1 << 22)


def test_depth_at_the_limit_is_accepted():
    value, issues = load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert issues == [] and isinstance(value, list)


def test_lone_surrogates_are_issues():
    value, issues = load_json('{"a": "x\\ud800", "\\udc00": 1}')
    assert ("a", "contains a lone surrogate; it is not valid Unicode") in issues
    assert any("is not valid Unicode" in message and key == "" for key, message in issues)


def test_toml_decodes_and_reports_dates():
    value, issues = load_document(b'name = "x"\nwhen = 2024-01-01\n[t]\nat = 10:00:00\n', kind="toml", max_bytes=1000)
    assert value["name"] == "x"
    assert [key for key, _ in issues] == ["t.at", "when"]
    assert "write it as a string" in issues[0][1]


def test_toml_syntax_error_has_line():
    with pytest.raises(DocumentError) as info:
        load_document(b'a = 1\nb = = 2\n', kind="toml", max_bytes=1000)
    assert info.value.line == 2 and "not valid TOML" in info.value.message


def test_toml_non_finite_floats_are_issues():
    _, issues = load_document(b"a = nan\nb = inf\n", kind="toml", max_bytes=1000)
    assert [key for key, _ in issues] == ["a", "b"]


def test_deep_toml_is_a_document_error():
    with pytest.raises(DocumentError, match="nested deeper"):
        load_document(("a = " + "[" * 3000 + "]" * 3000).encode(), kind="toml", max_bytes=1 << 20)


def test_plain_issues_flags_non_json_values():
    issues = plain_issues({"d": datetime.date(2024, 1, 1), "s": {1, 2}, 3: "x", "ok": [1, "a"], "f": float("nan")})
    keys = [key for key, _ in issues]
    assert keys == ["", "d", "f", "s"]


def test_plain_issues_bounds_values():
    shared = list(range(100))
    with pytest.raises(DocumentError, match="more than"):
        plain_issues([shared] * 100, max_values=5000)


def test_size_text():
    assert size_text(4 * 1024 * 1024) == "4 MiB"
    assert size_text(64 * 1024) == "64 KiB"
    assert size_text(1000) == "1000 bytes"


# --- TOML: one bounded decoder --------------------------------------------------------------------


def load_toml(text: str | bytes, max_bytes: int = 1 << 20):
    data = text.encode() if isinstance(text, str) else text
    return load_document(data, kind="toml", max_bytes=max_bytes)


@pytest.mark.parametrize("text", [
    "a" + ".a" * MAX_KEY_DEPTH + " = 1\n",  # a dotted key
    "[" + ".".join(["t"] * (MAX_KEY_DEPTH + 1)) + "]\n",  # a table header
    "[[" + " . ".join(['"q"'] * (MAX_KEY_DEPTH + 1)) + "]]\n",  # quoted parts, blanks between
    "x = {" + ".".join(["k"] * (MAX_KEY_DEPTH + 1)) + " = 1}\n",  # inside an inline table
    "ok = 1\n# a.b\n" + "a." * 40_000 + "b = 1\n",  # the red team's 80 KB key
])
def test_deep_dotted_keys_are_refused_before_tomllib(text: str) -> None:
    with pytest.raises(DocumentError) as info:
        load_toml(text)
    assert f"more than {MAX_KEY_DEPTH} dotted parts" in info.value.message
    assert info.value.line == text.count("\n")  # the last line holds the key


def test_the_refused_key_is_located() -> None:
    with pytest.raises(DocumentError) as info:
        load_toml('a = "x"\n\n[t]\n' + "k." * 50 + "v = 1\n")
    assert info.value.line == 4


@pytest.mark.parametrize("text", [
    "a" + ".a" * (MAX_KEY_DEPTH - 1) + " = 1\n",  # at the limit
    'url = "' + "a." * 500 + '"\n',  # dots in a string
    "path = '" + "a." * 500 + "'\n",
    'doc = """\n' + "a." * 500 + '\n"""\n',
    "doc = '''\n" + "a." * 500 + "\n'''\n",
    'q = """ends with a quote""""\n' + "v = [" + ", ".join(["1.5"] * 500) + "]\n",
    'e = "esc \\" ' + "a." * 500 + '"\n',
    "# " + "a." * 500 + "\nx = 1\n",  # dots in a comment
    "versions = [" + ", ".join(f'"1.{i}.0"' for i in range(200)) + "]\n",
    "when = 1979-05-27T07:32:00.999999-07:00\nf = [" + ",".join(["6.626e-34"] * 100) + "]\n",
])
def test_dots_outside_keys_do_not_count(text: str) -> None:
    assert load_toml(text)[0]


def test_a_byte_order_mark_starts_a_toml_document() -> None:
    assert load_toml(b"\xef\xbb\xbfa = 1\n")[0] == {"a": 1}
    with pytest.raises(DocumentError):
        load_toml(b"a = 1\n\xef\xbb\xbf")  # only at the start


@pytest.mark.parametrize("text", ["n = 1" + "0" * 5000 + "\n", "n = [1" + "0" * 5000 + "]\n"])
def test_an_integer_beyond_pythons_digit_limit_is_a_document_error(text: str) -> None:
    with pytest.raises(DocumentError, match="not valid TOML"):
        load_toml(text)


TOML_PIECES = ["a", "b", ".", ". ", '"x.y"', "'a.b'", " ", "\n", " = ", "1", "1.5", "[", "]", "[[", "]]", "{", "}",
               ",", "# c.d\n", '"""q.\n."""', "'''r.'''", '"\\"."', "\\"]


@given(st.one_of(st.lists(st.sampled_from(TOML_PIECES), max_size=150).map("".join),
                 st.text(alphabet="ab.\"' \t\n#=[]{},\\1", max_size=300)))
@settings(max_examples=500, deadline=None)
def test_the_key_scan_only_refuses_what_tomllib_would_see_as_a_deep_key(text: str) -> None:
    """Whatever the text, the scan is a DocumentError or nothing; a document it refuses that
    tomllib reads has a key path of more than MAX_KEY_DEPTH parts."""
    import tomllib

    try:
        check_toml_keys(text)
    except DocumentError:
        try:
            value = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError, ValueError):
            return
        assert _depth(value) > MAX_KEY_DEPTH


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_depth(v) for v in value), default=0)
    return 0


@given(st.integers(MAX_KEY_DEPTH, 3 * MAX_KEY_DEPTH), st.sampled_from(["k = 1", "[t]", "[[t]]"]))
@settings(max_examples=50, deadline=None)
def test_every_deep_key_shape_is_refused(parts: int, shape: str) -> None:
    key = ".".join(f"p{i}" for i in range(parts + 1))
    text = shape.replace("k", key, 1) if shape.startswith("k") else shape.replace("t", key)
    with pytest.raises(DocumentError):
        check_toml_keys(text + "\n")


def test_pkgmgrs_own_documents_accept_a_byte_order_mark(tmp_path) -> None:
    """pkgmgr.toml, pkgmgr.lock, config.toml and the registry's files are pkgmgr's own formats:
    an editor's BOM is not an error there (an extension's JSON documents follow Compozy: refused)."""
    import json as jsonlib
    from pathlib import Path

    from pkgmgr.config import parse_config
    from pkgmgr.registry.index_format import parse_entry, parse_index, parse_registry
    from pkgmgr.workspace.declaration import parse_workspace_manifest
    from pkgmgr.workspace.lockfile import parse_lock
    from tests.fuzz.strategies import as_toml
    from tests.fuzz.test_documents import CONFIG, ENTRY, LOCK, REGISTRY

    bom = b"\xef\xbb\xbf"
    assert parse_config(bom + as_toml(CONFIG), Path("config.toml")).host_version == "1.2.0"
    assert parse_workspace_manifest(bom + b'[extensions]\n"a-ext" = "*"\n', tmp_path).extensions
    assert len(parse_lock(bom + as_toml(LOCK)).entries) == 3
    assert parse_registry(bom + as_toml(REGISTRY)).name == "acme"
    assert parse_entry(bom + as_toml(ENTRY), "extensions/de/demo-ext.toml", expected_name="demo-ext").name == "demo-ext"
    index = {"format": 1, "serial": 1, "extensions": []}
    assert parse_index(bom + jsonlib.dumps(index).encode()) is not None


# --- the one bounded JSON decoder of documents from outside (issue 25 point 8) -----------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=4), inner,
                                                                 max_size=3),
    max_leaves=40,
)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@given(_json_values, st.integers(0, 12))
def test_the_depth_scan_agrees_with_the_values_depth(value, limit: int) -> None:
    """Brackets inside strings (escaped quotes too) never count; the scan refuses exactly the
    documents deeper than the limit."""
    import json

    from pkgmgr.documents import check_json_depth

    text = json.dumps(value)
    if _depth(value) > limit:
        with pytest.raises(DocumentError):
            check_json_depth(text, limit)
    else:
        check_json_depth(text, limit)


@settings(max_examples=300)
@given(st.binary(max_size=300) | st.text(alphabet='[]{}"\\:,0123456789.eE+-tfnul ', max_size=300).map(str.encode))
def test_decode_json_raises_only_document_errors(data: bytes) -> None:
    from pkgmgr.documents import decode_json

    try:
        decode_json(data, max_bytes=200, max_depth=8)
    except DocumentError:
        pass


@pytest.mark.parametrize("text", ["[" * 200_000, '{"a":' * 100_000, "[" * 65 + "]" * 65])
def test_decode_json_refuses_deep_documents_before_parsing(text: str) -> None:
    from pkgmgr.documents import decode_json

    with pytest.raises(DocumentError, match="nested deeper than 64 levels"):
        decode_json(text.encode(), max_bytes=1 << 20)


def test_decode_json_is_strict_and_bounded() -> None:
    from pkgmgr.documents import decode_json

    assert decode_json(b'{"a": ["[[[", {"b": "\\"]]"}]}', max_bytes=100) == {"a": ["[[[", {"b": '"]]'}]}
    for bad, words in ((b'{"a": 1, "a": 2}', "duplicate key"), (b"[NaN]", "NaN"), (b"[1] [2]", "trailing data"),
                       (b"\xef\xbb\xbf[]", "byte order mark"), (b"[1e999]", "out of range"),
                       (b"[" + b"0" * 300 + b"]", "larger than 256 bytes")):
        with pytest.raises(DocumentError, match=words):
            decode_json(bad, max_bytes=256)


def test_read_json_file_refuses_what_is_not_a_regular_file(tmp_path) -> None:
    import os

    from pkgmgr.documents import read_json_file
    from pkgmgr.fsutil import NotRegularFile

    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "real.json").write_text('{"pid": 1}')
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    with pytest.raises(NotRegularFile, match="FIFO"):
        read_json_file(tmp_path / "fifo.json", max_bytes=100)  # at once: opened without blocking
    with pytest.raises(NotRegularFile, match="symbolic link"):
        read_json_file(tmp_path / "link.json", max_bytes=100)
    assert read_json_file(tmp_path / "link.json", max_bytes=100, follow_symlinks=True) == {"pid": 1}
    with pytest.raises(DocumentError, match="larger than"):
        read_json_file(tmp_path / "real.json", max_bytes=4)
