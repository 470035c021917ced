"""Reproducible packing (SPEC 3)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import time
from pathlib import Path

import pytest

from pkgmgr.archive import (
    extract_archive,
    files_checksum_and_listing,
    pack_directory,
    select_files,
    tree_checksum_and_listing,
)
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError

FILES = {
    "extension.toml": b'name = "demo-ext"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n',
    "bin/run.sh": b"#!/bin/sh\necho hi\n",
    "skills/a/SKILL.md": b"# A\n",
    "a.txt": b"sorted before a/",
    "\u65e5\u672c/\u00e9.md": b"non-ascii names",
    "deep/" + "/".join(["long-directory-name"] * 6) + "/file.txt": b"needs a pax path record",
}


def _make(root: Path, *, umask: int = 0o022, mtime: float | None = None, exec_mode: int = 0o755) -> Path:
    old = os.umask(umask)
    try:
        for rel, data in FILES.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    finally:
        os.umask(old)
    os.chmod(root / "bin/run.sh", exec_mode)
    if mtime is not None:
        for path in [root, *root.rglob("*")]:
            os.utime(path, (mtime, mtime))
    return root


def _tar_stream(archive: Path) -> bytes:
    return gzip.decompress(archive.read_bytes())


def test_same_tree_twice_is_byte_identical(tmp_path: Path) -> None:
    root = _make(tmp_path / "src")
    first = pack_directory(root, "demo-ext", "0.1.0", tmp_path / "one.tar.gz")
    second = pack_directory(root, "demo-ext", "0.1.0", tmp_path / "two.tar.gz")
    assert first.sha256 == second.sha256
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.size == first.path.stat().st_size
    assert first.sha256 == hashlib.sha256(first.path.read_bytes()).hexdigest()


def test_same_content_elsewhere_with_other_mtimes_modes_and_umask(tmp_path: Path) -> None:
    a = _make(tmp_path / "x/one", umask=0o022, mtime=time.time())
    b = _make(tmp_path / "elsewhere/deeper/two", umask=0o077, mtime=1_000_000_000, exec_mode=0o700)
    pa = pack_directory(a, "demo-ext", "0.1.0", tmp_path / "a.tar.gz")
    pb = pack_directory(b, "demo-ext", "0.1.0", tmp_path / "b.tar.gz")
    assert pa.path.read_bytes() == pb.path.read_bytes()


def test_entries_and_headers(tmp_path: Path) -> None:
    root = _make(tmp_path / "src")
    result = pack_directory(root, "demo-ext", "0.1.0", tmp_path / "out.tar.gz")
    raw = result.path.read_bytes()
    assert raw[:4] == b"\x1f\x8b\x08\x00"  # gzip, deflate, no FNAME (or any other) flag
    assert raw[4:8] == b"\0\0\0\0"  # header mtime 0
    with tarfile.open(fileobj=io.BytesIO(_tar_stream(result.path))) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names)
    assert names[0] == "demo-ext-0.1.0"
    assert all(n == "demo-ext-0.1.0" or n.startswith("demo-ext-0.1.0/") for n in names)
    assert {"demo-ext-0.1.0/bin", "demo-ext-0.1.0/skills", "demo-ext-0.1.0/skills/a"} <= set(names)
    for m in members:
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
        assert m.isdir() or m.isfile()
        expected = 0o755 if m.isdir() or m.name.endswith("run.sh") else 0o644
        assert m.mode == expected, m.name
        assert set(m.pax_headers) <= {"path"}, m.pax_headers  # never mtimes/atimes


def test_tar_stream_is_machine_independent(tmp_path: Path) -> None:
    """The uncompressed tar stream depends only on the tree: its hash is fixed here."""
    root = tmp_path / "src"
    root.mkdir()
    (root / "extension.toml").write_bytes(FILES["extension.toml"])
    (root / "run").write_bytes(b"x")
    os.chmod(root / "run", 0o700)
    result = pack_directory(root, "demo-ext", "0.1.0", tmp_path / "out.tar.gz")
    stream = _tar_stream(result.path)
    assert len(stream) == 10240
    assert hashlib.sha256(stream).hexdigest() == GOLDEN_TAR_SHA256


GOLDEN_TAR_SHA256 = "7a2e821442402834dd2e5095ed78b8db58b03cebdad296300d251514dc1cde45"


def test_round_trip_through_extraction(tmp_path: Path) -> None:
    root = _make(tmp_path / "src")
    result = pack_directory(root, "demo-ext", "0.1.0", tmp_path / "out.tar.gz")
    staging = tmp_path / "staging"
    staging.mkdir()
    extracted = extract_archive(result.path, staging, Limits())
    assert extracted == staging / "demo-ext-0.1.0"
    assert tree_checksum_and_listing(extracted) == files_checksum_and_listing(select_files(root))


def test_ignore_vcs_and_symlinks(tmp_path: Path) -> None:
    root = _make(tmp_path / "src")
    (root / ".pkgmgrignore").write_text("*.log\nnode_modules/\n")
    (root / "debug.log").write_text("x")
    (root / "node_modules/pkg").mkdir(parents=True)
    (root / "node_modules/pkg/index.js").write_text("x")
    (root / ".git").mkdir()
    (root / ".git/HEAD").write_text("ref: refs/heads/main\n")
    (root / "alias.md").symlink_to("skills/a/SKILL.md")
    result = pack_directory(root, "demo-ext", "0.1.0", tmp_path / "out.tar.gz")
    with tarfile.open(result.path) as tar:
        names = {m.name.removeprefix("demo-ext-0.1.0/") for m in tar.getmembers()}
        alias = tar.getmember("demo-ext-0.1.0/alias.md")
        assert alias.isfile() and tar.extractfile(alias).read() == b"# A\n"
    assert ".pkgmgrignore" in names
    assert not {n for n in names if n.endswith(".log") or n.startswith(("node_modules", ".git"))}


@pytest.mark.parametrize("target", ["/etc/hostname", "../outside", "missing"])
def test_escaping_or_dangling_link_refuses_to_pack(tmp_path: Path, target: str) -> None:
    (tmp_path / "outside").write_text("secret")
    root = _make(tmp_path / "src")
    (root / "link").symlink_to(target)
    output = tmp_path / "out.tar.gz"
    output.write_bytes(b"previous")
    with pytest.raises(PkgmgrError) as caught:
        pack_directory(root, "demo-ext", "0.1.0", output)
    assert caught.value.code == "path_escapes_root"
    assert output.read_bytes() == b"previous"  # untouched, and no temporary file left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.tar.gz", "outside", "src"]


def test_output_inside_the_root_is_not_packed_into_itself(tmp_path: Path) -> None:
    root = _make(tmp_path / "src")
    output = root / "demo-ext-0.1.0.tar.gz"
    first = pack_directory(root, "demo-ext", "0.1.0", output)
    second = pack_directory(root, "demo-ext", "0.1.0", output)
    assert first.sha256 == second.sha256
    with tarfile.open(output) as tar:
        assert "demo-ext-0.1.0/demo-ext-0.1.0.tar.gz" not in tar.getnames()
