"""Fuzzing archive member lists: tar.gz and zip archives whose members have hostile names, every
member type (files, directories, symlinks, hard links, FIFOs, devices), odd modes, pax path
overrides, duplicates and case collisions. `extract_archive` either gives an extension root
inside staging — holding only regular files and directories, no setuid/setgid/sticky or
group/other-writable bits — or raises unsafe_archive / invalid_archive / archive_too_large with
staging left empty; nothing outside staging ever changes. 1,000 examples.

The names come from the archive tests' hostile alphabet (tests/archive/test_extract.py), the
archives from its corpus builders (tests/archive/corpus.py).
"""

from __future__ import annotations

import stat
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.archive import extract_archive
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError
from tests.archive.conftest import make_sandbox
from tests.archive.corpus import MANIFEST, T, Z, tar_gz, zip_file
from tests.archive.test_extract import _NAME
from tests.fuzz.strategies import FUZZ, ran

pytestmark = pytest.mark.slow

LIMITS = Limits(max_archive_bytes=1 << 20, max_uncompressed_bytes=64 << 10, max_entries=12, max_ratio=50.0,
                ratio_threshold_bytes=16 << 10)
CODES = {"unsafe_archive", "invalid_archive", "archive_too_large"}
NAMES = st.sampled_from(["pkg/", "pkg/extension.toml", "pkg/extension.json", "pkg/SKILL.md", "pkg/a", "pkg/A",
                         "pkg/a/b", "pkg/a/", "extension.toml", "other/", "other/x", "~/x", "pkg/../pkg/a",
                         "./pkg/a", "pkg//a", "pkg/ä", "pkg/a\u0308", "pkg/" + "n" * 300]) | _NAME
KINDS = [tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE,
         tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.CONTTYPE]
BENIGN = st.sampled_from(["pkg/", "pkg/a", "pkg/b/c", "pkg/b/", "pkg/bin/run", "pkg/README.md", "pkg/ä",
                          "pkg/skills/s/SKILL.md", "pkg/x y"])
MODES = st.sampled_from([0o644, 0o755, 0o4755, 0o2755, 0o1777, 0o777, 0o000, 0o7777, 0o100644])
DATA = st.sampled_from([b"", b"x", MANIFEST, b"\0" * 40_000, bytes(range(256)) * 40])


@st.composite
def member_lists(draw: st.DrawFn) -> tuple[str, list[tuple]]:
    fmt = draw(st.sampled_from(["tar.gz", "zip"]))
    benign = draw(st.booleans())  # half the lists could be a real extension: exercise what is accepted
    members = []
    if benign or draw(st.booleans()):
        members.append(("pkg/extension.toml", tarfile.REGTYPE, 0o644, MANIFEST, "", None))
    if benign:
        for name in draw(st.lists(BENIGN, unique=True, max_size=8)):
            kind = tarfile.DIRTYPE if name.endswith("/") else draw(st.sampled_from([tarfile.REGTYPE, tarfile.AREGTYPE,
                                                                                   tarfile.CONTTYPE]))
            members.append((name, kind, draw(MODES), draw(st.sampled_from([b"", b"x", b"#!/bin/sh\n"])), "", None))
        return fmt, draw(st.permutations(members))
    for _ in range(draw(st.integers(0, 8))):
        members.append((draw(NAMES), draw(st.sampled_from(KINDS)), draw(MODES), draw(DATA),
                        draw(NAMES | st.just("/etc/passwd")), draw(st.none() | NAMES)))
    if members and draw(st.booleans()):
        members.append(members[draw(st.integers(0, len(members) - 1))])  # a duplicate
    return fmt, draw(st.permutations(members))


def _build(directory: Path, fmt: str, members: list[tuple], target: Path) -> Path:
    def real(name: str) -> str:
        return name.replace("~", str(target))  # an absolute name aiming at a file beside the sandbox

    if fmt == "zip":
        zipped = []
        for name, kind, mode, data, linkname, _ in members:
            kind_bits = {tarfile.DIRTYPE: stat.S_IFDIR, tarfile.SYMTYPE: stat.S_IFLNK,
                         tarfile.FIFOTYPE: stat.S_IFIFO}.get(kind, stat.S_IFREG)
            suffix = "/" if kind == tarfile.DIRTYPE and not name.endswith("/") else ""
            body = real(linkname).encode("utf-8", "surrogateescape") if kind == tarfile.SYMTYPE else data
            zipped.append(Z(real(name) + suffix, body, unix_mode=kind_bits | (mode & 0o7777)))
        return zip_file(directory / "f.zip", zipped)
    tarred = []
    for name, kind, mode, data, linkname, pax in members:
        regular = kind in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE)
        tarred.append(T(real(name), data if regular else b"", kind=kind, mode=mode & 0o7777, linkname=real(linkname),
                        pax={"path": real(pax)} if pax else {}))
    return tar_gz(directory / "f.tar.gz", tarred)


@FUZZ
@given(member_lists())
def test_archive_member_lists(case: tuple[str, list[tuple]]) -> None:
    fmt, members = case
    with tempfile.TemporaryDirectory() as tmp:
        box = make_sandbox(Path(tmp))
        archive = _build(box.archives, fmt, members, Path(tmp) / "pwned")
        before = box.snapshot()
        try:
            root = extract_archive(archive, box.staging, LIMITS)
        except PkgmgrError as error:
            assert error.code in CODES, error
            box.assert_untouched(before)
            ran("archive member list", error.code)
            return
        assert root.resolve().is_relative_to(box.staging.resolve())
        assert (root / "extension.toml").is_file() or (root / "extension.json").is_file()
        after = box.snapshot()
        if root == box.staging:  # the manifest at the archive root: staging is the extension's root, 0755
            after.pop("sandbox/staging"), before.pop("sandbox/staging")
        assert after == before
        for path in box.staging.rglob("*"):
            info = path.lstat()
            assert stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode), path
            assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH), path
        ran("archive member list", True)
