"""File primitives: normalised modes, opening regular files only, the O_EXCL tree writer."""

from __future__ import annotations

import inspect
import os
import stat
import sys
from pathlib import Path

import pytest

from pkgmgr.archive.files import TreeWriter, empty_directory, file_mode, mode_label, open_regular
from pkgmgr.errors import PkgmgrError


@pytest.mark.parametrize("mode, expected", [
    (0o644, 0o644), (0o755, 0o755), (0o4755, 0o755), (0o2755, 0o755), (0o1777, 0o755), (0o666, 0o644),
    (0o000, 0o644), (0o100, 0o755), (0o011, 0o644), (stat.S_IFREG | 0o700, 0o755),
])
def test_file_mode_keeps_only_the_owner_execute_bit(mode: int, expected: int) -> None:
    assert file_mode(mode) == expected
    assert mode_label(mode) == ("0755" if expected == 0o755 else "0644")


def test_open_regular_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PkgmgrError) as caught:
        open_regular(fifo, display="fifo")
    assert caught.value.code == "invalid_archive"
    assert "FIFO" in caught.value.message


def test_open_regular_refuses_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("x")
    (tmp_path / "link").symlink_to("real")
    with pytest.raises(PkgmgrError) as caught:
        open_regular(tmp_path / "link", display="link")
    assert caught.value.code == "path_escapes_root"


def test_tree_writer_modes_are_independent_of_umask(tmp_path: Path) -> None:
    writer = TreeWriter(tmp_path)
    old = os.umask(0o077)
    try:
        writer.write("a/b/run.sh", [b"#!/bin/sh\n", b"true\n"], 0o755)
        writer.write("a/doc.txt", [], 0o644)
        writer.mkdir("empty/deeper")
        writer.finish()
    finally:
        os.umask(old)
    assert (tmp_path / "a/b/run.sh").read_bytes() == b"#!/bin/sh\ntrue\n"
    assert stat.S_IMODE((tmp_path / "a/b/run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "a/doc.txt").stat().st_mode) == 0o644
    for directory in ("a", "a/b", "empty", "empty/deeper"):
        assert stat.S_IMODE((tmp_path / directory).stat().st_mode) == 0o755


def test_tree_writer_never_overwrites_or_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("precious")
    root = tmp_path / "root"
    root.mkdir()
    (root / "planted").symlink_to(outside)
    writer = TreeWriter(root)
    with pytest.raises(FileExistsError):
        writer.write("planted", [b"evil"], 0o644)
    assert outside.read_text() == "precious"


def test_tree_writer_does_not_recurse_per_directory_level(tmp_path: Path) -> None:
    rel = "/".join(["d"] * 120) + "/f"
    writer = TreeWriter(tmp_path)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 60)  # fewer frames than the path has levels
    try:
        writer.write(rel, [b"deep"], 0o644)
    finally:
        sys.setrecursionlimit(limit)
    writer.finish()
    assert (tmp_path / rel).read_bytes() == b"deep"


def test_empty_directory_keeps_the_directory(tmp_path: Path) -> None:
    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "a/b/f").write_text("x")
    os.chmod(tmp_path / "a/b", 0o500)
    (tmp_path / "link").symlink_to("/")
    empty_directory(tmp_path)
    assert tmp_path.is_dir() and list(tmp_path.iterdir()) == []
