from __future__ import annotations

import os
from pathlib import Path

import pytest

from pkgmgr.bundles.files import PackageTree, TreeError, child, normalize

from .helpers import write_tree


@pytest.fixture
def tree(tmp_path: Path) -> PackageTree:
    root = write_tree(tmp_path / "ext", {"a/b.toml": "x = 1\n", "a/c.json": "{}", "top.txt": "hi"})
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.toml").write_text("s = 1\n")
    return PackageTree.open(root)


def test_normalize_and_child():
    assert normalize("a/./b//c/") == "a/b/c"
    assert normalize("a/b/../c") == "a/b/../c"  # '..' resolves after symlinks, never lexically
    assert normalize("/etc/") == "/etc" and normalize("/") == "/."
    assert normalize("") == normalize("./") == "."
    assert child(".", "x") == "x" and child("a", "x") == "a/x"


def test_resolve_inside(tree):
    assert tree.resolve("a/b.toml") == tree.root / "a" / "b.toml"


@pytest.mark.parametrize("rel", ["../outside/secret.toml", "a/../../outside", "/etc/passwd"])
def test_resolve_escape(tree, rel):
    with pytest.raises(TreeError) as info:
        tree.resolve(rel)
    assert info.value.code == "path_escapes_root"


def test_dotdot_after_a_symlink_resolves_physically(tree):
    (tree.root.parent / "outside" / "deep").mkdir()
    os.symlink(tree.root.parent / "outside" / "deep", tree.root / "hop")
    # lexically 'hop/../a' is 'a' (inside); physically it is outside/a
    with pytest.raises(TreeError) as info:
        tree.resolve(normalize("hop/../a"))
    assert info.value.code == "path_escapes_root"


def test_resolve_symlink_escape(tree):
    os.symlink(tree.root.parent / "outside", tree.root / "link")
    with pytest.raises(TreeError) as info:
        tree.resolve("link/secret.toml")
    assert info.value.code == "path_escapes_root"


def test_backslash_and_nul_are_invalid_not_crashes(tree):
    with pytest.raises(TreeError) as info:
        tree.resolve("a\\b.toml")
    assert info.value.code == "invalid_bundle"
    with pytest.raises(TreeError) as info:
        tree.resolve("a\x00b")
    assert info.value.code == "invalid_bundle"


def test_symlink_loop_is_a_tree_error(tree):
    os.symlink("loop2", tree.root / "loop1")
    os.symlink("loop1", tree.root / "loop2")
    with pytest.raises(TreeError):
        tree.resolve("loop1/x")


def test_read_bounded(tree):
    assert tree.read("top.txt", limit=2) == b"hi"
    with pytest.raises(TreeError, match="larger than 1 bytes"):
        tree.read("top.txt", limit=1)
    with pytest.raises(TreeError, match="does not exist"):
        tree.read("nope.txt", limit=10)
    with pytest.raises(TreeError, match="is not a regular file") as info:
        tree.read("a", limit=10, code="invalid_layout")
    assert info.value.code == "invalid_layout"


def test_names_lists_entries_even_dangling_symlinks(tree):
    os.symlink("missing", tree.root / "dangling")
    assert tree.names(".") == {"a", "top.txt", "dangling", "extension.toml"}
    assert tree.names("nothing") == frozenset() and tree.names("../outside") == frozenset()


def test_read_document_files_problems_under_the_path(tree):
    value, found = tree.read_document("a/b.toml", kind="toml", limit=100)
    assert value == {"x": 1} and found == []
    write_tree(tree.root, {"bad.json": '{"a": 1, "a": 2}'})
    value, found = tree.read_document("bad.json", kind="json", limit=100, code="invalid_layout")
    assert value is None
    assert [(p.code, p.file) for p in found] == [("invalid_layout", "bad.json")]
    value, found = tree.read_document("../outside/secret.toml", kind="toml", limit=100)
    assert value is None and found[0].code == "path_escapes_root"


def test_walk_sorted_by_components_and_filtered(tree):
    write_tree(tree.root, {"a-b.toml": "", "a/z/y.toml": "", "a/readme.md": ""})
    files, issues = tree.walk(".", (".toml", ".json"))
    assert files == ["a/b.toml", "a/c.json", "a/z/y.toml", "a-b.toml", "extension.toml"]
    assert issues == []


def test_walk_follows_inner_symlinks_once_and_reports_escapes(tree):
    os.symlink(tree.root / "a", tree.root / "alias")
    os.symlink(tree.root, tree.root / "a" / "cycle")
    os.symlink(tree.root.parent / "outside", tree.root / "escape")
    files, issues = tree.walk(".", (".toml",))
    assert "a/b.toml" in files
    assert len(files) == len(set(files)) and all("cycle" not in f for f in files)
    assert [(path, error.code) for path, error in issues] == [("escape", "path_escapes_root")]


def test_walk_of_escaping_start_raises(tree):
    with pytest.raises(TreeError):
        tree.walk("../outside", (".toml",))


@pytest.mark.parametrize("rel", ["a" * 256, "x/" + "c" * 300, "d/" * 2100, "\ud800" * 100])
def test_a_path_too_long_to_exist_is_a_problem_not_an_oserror(tmp_path, rel) -> None:
    tree = PackageTree.open(tmp_path)
    with pytest.raises(TreeError, match="longer than a path can be"):
        tree.resolve(rel)
