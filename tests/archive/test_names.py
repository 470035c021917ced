"""Member-name rules and the table of names seen in one tree."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.archive.names import NameRefused, NameTable, file_path, split_member_name


@pytest.mark.parametrize("name, is_dir, parts", [
    ("a/b.txt", False, ("a", "b.txt")),
    ("./a/./b.txt", False, ("a", "b.txt")),
    ("a//b", False, ("a", "b")),
    ("a/b/", True, ("a", "b")),
    ("./", True, ()),
    (".", True, ()),
    ("caf\u00e9/\u65e5\u672c", False, ("caf\u00e9", "\u65e5\u672c")),
    ("ab:c", False, ("ab:c",)),  # a colon that does not make a drive letter is an ordinary character
    ("..a/b..", False, ("..a", "b..")),
])
def test_accepted_names(name: str, is_dir: bool, parts: tuple[str, ...]) -> None:
    assert split_member_name(name, is_dir=is_dir) == parts


@pytest.mark.parametrize("name, reason", [
    ("", "empty name"),
    (".", "empty name"),
    ("/etc/passwd", "absolute"),
    ("//server/share", "absolute"),
    ("C:/x", "drive letter"),
    ("z:x", "drive letter"),  # drive-relative on Windows
    ("../x", "'..'"),
    ("a/../../x", "'..'"),
    ("a/..", "'..'"),
    ("a\\b", "backslash"),
    ("a\0b", "NUL"),
    ("a\nb", "U+000A"),
    ("a\x7fb", "U+007F"),
    ("a\x85b", "U+0085"),
    ("a\udcffb", "not valid UTF-8"),
    ("a/", "ends with '/'"),
    ("x" * 256, "component longer"),
    ("a/" * 1100 + "b", "name longer"),
])
def test_refused_names(name: str, reason: str) -> None:
    with pytest.raises(NameRefused) as caught:
        split_member_name(name, is_dir=False)
    assert reason in caught.value.reason
    assert caught.value.member == name


def _outcome(call, name: str) -> str:
    try:
        return "ok " + call(name)
    except NameRefused as refused:
        return f"refused {refused.member!r}: {refused.reason}"


# names built from what the rules look at: separators, dots, a drive colon, backslashes, control
# characters, spaces, non-ASCII, lone surrogates, long runs
_PIECES = st.sampled_from(["a", "B", "z", ".", "..", "/", "//", "./", ":", "\\", " ", "\0", "\n", "\x7f", "\x85",
                           "\u00e9", "\udcff", "-", "_", "~", "x" * 254, "y" * 300, "C:", "9"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join))
def test_the_plain_name_path_is_the_full_rules(name: str) -> None:
    """`file_path` decides a common name with one match: exactly what the full rules decide."""
    assert _outcome(file_path, name) == _outcome(lambda n: "/".join(split_member_name(n, is_dir=False)), name)


@pytest.mark.parametrize("name", ["a/b.txt", "..a/b..", "a b/c d", "ab:c", ".hidden/.x", "x" * 255, "~/-_.txt"])
def test_plain_names_are_themselves(name: str) -> None:
    assert file_path(name) == name == "/".join(split_member_name(name, is_dir=False))


def _add(table: NameTable, name: str, *, by_path: bool = False) -> None:
    is_dir = name.endswith("/")
    if by_path and not is_dir:
        table.add_file(file_path(name), name)
        return
    table.add(split_member_name(name, is_dir=is_dir), is_dir=is_dir, member=name)


@pytest.mark.parametrize("names, reason", [
    (["a", "a"], "duplicate name"),
    (["a/", "a/"], "duplicate directory"),
    (["a", "A"], "case-insensitively"),
    (["Dir/x", "dir/y"], "case-insensitively"),
    (["stra\u00dfe", "STRASSE"], "case-insensitively"),
    (["\u00e9", "e\u0301"], "Unicode normalisation"),
    (["a", "a/b"], "both a file and a directory"),
    (["a/b", "a"], "both a file and a directory"),
    (["a/", "a"], "both a file and a directory"),
    (["a", "a/"], "both a file and a directory"),
    (["x/a", "X/a/b"], "case-insensitively"),
])
@pytest.mark.parametrize("by_path", [False, True], ids=["parts", "add_file"])
def test_table_refuses_clashes(names: list[str], reason: str, by_path: bool) -> None:
    table = NameTable()
    for name in names[:-1]:
        _add(table, name, by_path=by_path)
    with pytest.raises(NameRefused) as caught:
        _add(table, names[-1], by_path=by_path)
    assert reason in caught.value.reason


def test_table_accepts_explicit_entries_for_implied_directories() -> None:
    table = NameTable()
    for name in ["a/b/c", "a/", "a/b/", "a/d", "./", "b"]:
        _add(table, name)
