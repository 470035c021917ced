"""Tree checksum (SPEC 3), listing and diff."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pkgmgr.archive import (
    TreeDiff,
    copy_source_tree,
    diff_listings,
    files_checksum_and_listing,
    select_files,
    tree_checksum,
    tree_checksum_and_listing,
    tree_listing,
)


def _tiny(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"hi\n")
    (root / "bin/run").write_bytes(b"x")
    os.chmod(root / "a.txt", 0o644)
    os.chmod(root / "bin/run", 0o755)
    (root / "empty-dir").mkdir()  # directories do not count
    return root


# sha256(b"file:a.txt\nmode:0644\nhi\n\0file:bin/run\nmode:0755\nx\0"), computed by hand below
TINY = "43c019bf9991672262979b7e1646f1104f2405d04ad2d7ecb38fdd35a8a8ac2a"


def test_hand_computed_value(tmp_path: Path) -> None:
    fed = b"file:a.txt\nmode:0644\n" + b"hi\n" + b"\0" + b"file:bin/run\nmode:0755\n" + b"x" + b"\0"
    assert hashlib.sha256(fed).hexdigest() == TINY
    assert tree_checksum(_tiny(tmp_path)) == TINY


def test_sort_order_is_by_relative_posix_path(tmp_path: Path) -> None:
    # "a.txt" < "a/b" because "." < "/": the order is the plain string order of the paths
    (tmp_path / "a").mkdir()
    (tmp_path / "a/b").write_bytes(b"1")
    (tmp_path / "a.txt").write_bytes(b"2")
    fed = b"file:a.txt\nmode:0644\n2\0file:a/b\nmode:0644\n1\0"
    assert tree_checksum(tmp_path) == hashlib.sha256(fed).hexdigest()


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
