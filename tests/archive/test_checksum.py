"""Tree checksum (SPEC 3, format 2), listing and diff."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.archive import (
    SourceFile,
    TreeDiff,
    copy_source_tree,
    diff_listings,
    files_checksum_and_listing,
    select_files,
    tree_checksum,
    tree_checksum_and_listing,
    tree_listing,
)
from pkgmgr.archive.checksum import is_tree_checksum
from pkgmgr.errors import PkgmgrError
from tests.support.builders import format1_tree_checksum

REPO = Path(__file__).resolve().parents[2]
VECTORS_PATH = REPO / "tests" / "vectors" / "tree_checksum.json"
SHARED_VECTORS_PATH = REPO.parent / "shared" / "vectors" / "tree_checksum.json"
VECTORS = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))


def _write(root: Path, files: dict[str, tuple[bytes, bool]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, (content, executable) in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.chmod(path, 0o755 if executable else 0o644)
    return root


def _vector_files(case: dict[str, Any]) -> dict[str, tuple[bytes, bool]]:
    return {rel: (base64.b64decode(f["content_b64"]), f["executable"]) for rel, f in case["files"].items()}


def _tiny(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"hi\n")
    (root / "bin/run").write_bytes(b"x")
    os.chmod(root / "a.txt", 0o644)
    os.chmod(root / "bin/run", 0o755)
    (root / "empty-dir").mkdir()  # directories do not count
    return root


TINY_FED = b"5:a.txt,0644,3:hi\n," + b"7:bin/run,0755,1:x,"
TINY = "sha256-2:" + hashlib.sha256(TINY_FED).hexdigest()


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda case: case["name"])
def test_vectors(tmp_path: Path, case: dict[str, Any]) -> None:
    tree = _vector_files(case)
    root = _write(tmp_path / "tree", tree)
    assert tree_checksum(root) == case["checksum"]
    files = [SourceFile(rel, root / rel, 0o755 if executable else 0o644) for rel, (_, executable) in tree.items()]
    assert files_checksum_and_listing(files)[0] == case["checksum"]


def test_repository_copy_matches_the_shared_vectors() -> None:
    if not SHARED_VECTORS_PATH.is_file():
        pytest.skip("../shared/vectors/tree_checksum.json is not beside the repository")
    assert json.loads(SHARED_VECTORS_PATH.read_text(encoding="utf-8")) == VECTORS


def test_hand_computed_value(tmp_path: Path) -> None:
    assert TINY == "sha256-2:0c8a9bf4b9fd0eeaf55217bfcb0b515fe53a402e1e9203ec9628e85c1c581321"
    assert tree_checksum(_tiny(tmp_path)) == TINY
    assert is_tree_checksum(TINY)
    assert not is_tree_checksum(TINY.removeprefix("sha256-2:"))  # a format-1 value is not one
    assert not is_tree_checksum(TINY + "\n")


def test_sort_order_is_by_relative_posix_path(tmp_path: Path) -> None:
    # "a.txt" < "a/b" because "." < "/": the order is the byte order of the whole paths
    (tmp_path / "a").mkdir()
    (tmp_path / "a/b").write_bytes(b"1")
    (tmp_path / "a.txt").write_bytes(b"2")
    fed = b"5:a.txt,0644,1:2," + b"3:a/b,0644,1:1,"
    assert tree_checksum(tmp_path) == "sha256-2:" + hashlib.sha256(fed).hexdigest()


def _collision(name: str) -> tuple[dict[str, tuple[bytes, bool]], dict[str, tuple[bytes, bool]]]:
    case = {c["name"]: c for c in VECTORS["cases"]}
    return _vector_files(case[f"{name}, tree 1"]), _vector_files(case[f"{name}, tree 2"])


def test_the_format_1_collision_no_longer_collides(tmp_path: Path) -> None:
    one, two = _collision("format-1 collision")
    first, second = _write(tmp_path / "one", one), _write(tmp_path / "two", two)
    assert format1_tree_checksum(first) == format1_tree_checksum(second)  # the attack: one file's content re-split as two
    assert tree_checksum(first) != tree_checksum(second)


def test_content_imitating_a_record_is_not_that_record(tmp_path: Path) -> None:
    one = _write(tmp_path / "one", {"a": (b"1:b,0644,0:,", False)})
    two = _write(tmp_path / "two", {"a": (b"", False), "b": (b"", False)})
    assert tree_checksum(one) != tree_checksum(two)


def test_only_the_owner_execute_bit_counts(tmp_path: Path) -> None:
    root = _tiny(tmp_path)
    for mode in (0o600, 0o666, 0o640, 0o654):
        os.chmod(root / "a.txt", mode)
        assert tree_checksum(root) == TINY, oct(mode)
    for mode in (0o700, 0o744, 0o711):
        os.chmod(root / "bin/run", mode)
        assert tree_checksum(root) == TINY, oct(mode)
    os.chmod(root / "a.txt", 0o744)
    assert tree_checksum(root) != TINY
    os.chmod(root / "a.txt", 0o644)
    os.chmod(root / "bin/run", 0o644)
    assert tree_checksum(root) != TINY


def test_content_and_names_count(tmp_path: Path) -> None:
    root = _tiny(tmp_path)
    (root / "a.txt").write_bytes(b"hi!\n")
    assert tree_checksum(root) != TINY
    (root / "a.txt").write_bytes(b"hi\n")
    (root / "a.txt").rename(root / "b.txt")
    assert tree_checksum(root) != TINY


def test_listing(tmp_path: Path) -> None:
    root = _tiny(tmp_path)
    assert tree_listing(root) == {
        "a.txt": "0644:" + hashlib.sha256(b"hi\n").hexdigest(),
        "bin/run": "0755:" + hashlib.sha256(b"x").hexdigest(),
    }
    assert tree_checksum_and_listing(root) == (TINY, tree_listing(root))


def test_a_planted_symlink_changes_checksum_and_listing(tmp_path: Path) -> None:
    root = _tiny(tmp_path)
    (root / "evil").symlink_to("/etc/passwd")
    checksum, listing = tree_checksum_and_listing(root)
    assert checksum != TINY
    assert listing["evil"] == "link:" + hashlib.sha256(b"/etc/passwd").hexdigest()


def test_source_checksum_equals_the_checksum_of_its_copy(tmp_path: Path) -> None:
    src = _tiny(tmp_path / "src")
    (src / ".git").mkdir()
    (src / ".git/HEAD").write_text("ref")
    (src / "alias").symlink_to("bin/run")
    os.chmod(src / "a.txt", 0o600)
    dest = tmp_path / "dest"
    dest.mkdir()
    copy_source_tree(src, dest)
    assert files_checksum_and_listing(select_files(src)) == tree_checksum_and_listing(dest)


def test_diff_listings() -> None:
    recorded = {"a": "0644:1", "b": "0644:2", "c": "0755:3"}
    current = {"a": "0644:1", "b": "0755:2", "d": "0644:4"}
    diff = diff_listings(recorded, current)
    assert diff == TreeDiff(added=["d"], removed=["c"], modified=["b"])
    assert diff
    assert not diff_listings(recorded, dict(recorded))


def test_a_file_that_keeps_changing_size_while_hashed_is_refused(tmp_path: Path, monkeypatch) -> None:
    from pkgmgr.archive import checksum

    root = _tiny(tmp_path)
    real_fstat = os.fstat
    grown = iter(range(1, 100))

    def growing_fstat(fd: int) -> os.stat_result:  # the size the record announces is never the one read
        st = real_fstat(fd)
        return os.stat_result((*st[:6], st.st_size + next(grown), *st[7:]))

    monkeypatch.setattr(checksum.os, "fstat", growing_fstat)
    with pytest.raises(PkgmgrError) as caught:
        tree_checksum(root)
    assert caught.value.code == "tree_modified"


@pytest.mark.parametrize("change", ["edit", "chmod", "add", "remove"])
def test_tamper_detection(tmp_path: Path, change: str) -> None:
    root = _tiny(tmp_path)
    recorded = tree_listing(root)
    if change == "edit":
        (root / "a.txt").write_bytes(b"tampered")
    elif change == "chmod":
        os.chmod(root / "a.txt", 0o755)
    elif change == "add":
        (root / "empty-dir/new").write_bytes(b"")
    else:
        (root / "bin/run").unlink()
    diff = diff_listings(recorded, tree_listing(root))
    expected = {"edit": ([], [], ["a.txt"]), "chmod": ([], [], ["a.txt"]), "add": (["empty-dir/new"], [], []),
                "remove": ([], ["bin/run"], [])}[change]
    assert (diff.added, diff.removed, diff.modified) == expected


# Injectivity. Names and contents are drawn from the characters both formats use as delimiters,
# and every generated tree is also compared with its "re-split" twins: a file whose content
# swallows the next file's record, written as format 1 spelt it and as format 2 spells it
# (format 1 fails this test: its re-split twin hashed the same).

_PART = st.text(alphabet="ab:,0164-.é\n", min_size=1, max_size=4).filter(lambda p: p not in (".", ".."))
_NAME = st.lists(_PART, min_size=1, max_size=2).map("/".join)
_CONTENT = st.binary(max_size=12) | st.sampled_from([b"", b",", b"0:", b"1:b,0644,0:,", b"\0file:b\nmode:0644\n"])
_TREE = st.dictionaries(_NAME, st.tuples(_CONTENT, st.booleans()), max_size=4).filter(
    lambda tree: not any(other.startswith(name + "/") for name in tree for other in tree))  # file or dir, not both


def _resplit(tree: dict[str, tuple[bytes, bool]]) -> list[dict[str, tuple[bytes, bool]]]:
    """Each pair of neighbouring files merged into the first, the second's record embedded."""
    names = sorted(tree, key=str.encode)
    twins = []
    for first, second in itertools.pairwise(names):
        content, mode = tree[second][0], b"0755" if tree[second][1] else b"0644"
        embedded = (b"\0file:%s\nmode:%s\n" % (second.encode(), mode) + content,
                    b",%d:%s,%s,%d:" % (len(second.encode()), second.encode(), mode, len(content)) + content)
        for boundary in embedded:
            twin = {k: v for k, v in tree.items() if k != second}
            twin[first] = (tree[first][0] + boundary, tree[first][1])
            twins.append(twin)
    return twins


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one=_TREE, two=_TREE)
def test_distinct_trees_have_distinct_checksums(one, two) -> None:
    work = Path(tempfile.mkdtemp())
    try:
        trees = [one, two, *_resplit(one)]
        checksums: dict[str, dict[str, tuple[bytes, bool]]] = {}
        for index, tree in enumerate(trees):
            checksum = tree_checksum(_write(work / str(index), tree))
            if checksum in checksums:
                assert checksums[checksum] == tree, "two different trees share one checksum"
            checksums[checksum] = tree
    finally:
        shutil.rmtree(work)


@pytest.mark.parametrize("declared", [None, 2, 4])
def test_a_record_whose_size_is_unknown_or_wrong_declines(tmp_path: Path, declared: int | None) -> None:
    """The length goes before the content: a recording that cannot tell it, or was told another
    one, gives no checksum (the tree is read back) rather than a wrong one."""
    from pkgmgr.archive import TreeRecord

    def record(size: int | None) -> TreeRecord:
        tree = TreeRecord()
        take = tree.file("pkg/a.txt", 0o644, size)
        take(b"hi")
        take(b"!")
        tree.end()
        return tree

    root = _write(tmp_path / "pkg", {"a.txt": (b"hi!", False)})
    assert record(3).result(tmp_path, root) == tree_checksum_and_listing(root)
    assert record(declared).result(tmp_path, root) is None
