"""Member-name rules and the table of names seen in one tree."""

from __future__ import annotations

import pytest

from pkgmgr.archive.names import NameRefused, NameTable, split_member_name


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


def _add(table: NameTable, name: str) -> None:
    is_dir = name.endswith("/")
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
def test_table_refuses_clashes(names: list[str], reason: str) -> None:
    table = NameTable()
    for name in names[:-1]:
        _add(table, name)
    with pytest.raises(NameRefused) as caught:
        _add(table, names[-1])
    assert reason in caught.value.reason


def test_table_accepts_explicit_entries_for_implied_directories() -> None:
    table = NameTable()
    for name in ["a/b/c", "a/", "a/b/", "a/d", "./", "b"]:
        _add(table, name)
