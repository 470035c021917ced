"""The tree checksum recorded while extracting (`TreeRecord`) is exactly the one read back from
the extracted tree, or it declines — whatever the member order, root layout or format."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.archive import TreeRecord, extract_archive, tree_checksum_and_listing
from pkgmgr.config import Limits
from tests.archive.corpus import MANIFEST, T, Z, tar_gz, zip_file

NAMES = st.sampled_from(["a.txt", "b/c.md", "b/d/e.py", "b-x", "b.y", "c/z", "bin/run", "é.txt", "z"])
FILES = st.dictionaries(NAMES, st.tuples(st.binary(max_size=300), st.booleans()), max_size=6)


def extract(archive: Path) -> tuple[TreeRecord, Path, Path]:
    staging = Path(tempfile.mkdtemp())
    record = TreeRecord()
    return record, staging, extract_archive(archive, staging, Limits(), record=record)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=FILES, prefix=st.sampled_from(["", "pkg/", "pkg/inner/", "./pkg/"]), order=st.sampled_from(
    ["sorted", "reversed", "manifest-last"]), fmt=st.sampled_from(["tar", "zip"]))
def test_the_recorded_checksum_is_the_tree_read_back(files, prefix, order, fmt) -> None:
    members = [("extension.toml", MANIFEST, False), *((name, data, x) for name, (data, x) in files.items()
                                                       if name != "extension.toml")]
    if order == "sorted":
        members.sort()
    elif order == "reversed":
        members.sort(reverse=True)
    work = Path(tempfile.mkdtemp())
    try:
        if fmt == "tar":
            archive = tar_gz(work / "a.tar.gz", [T(prefix + n, d, mode=0o755 if x else 0o644) for n, d, x in members])
        else:
            archive = zip_file(work / "a.zip", [Z(prefix.removeprefix("./") + n, d) for n, d, _ in members])
        record, staging, root = extract(archive)
        try:
            recorded = record.result(staging, root)
            if recorded is not None:
                assert recorded == tree_checksum_and_listing(root)
            if fmt == "tar" and order == "sorted" and prefix in ("pkg/", "./pkg/"):
                assert recorded is not None  # the common case (`ext pack`, `git archive`) is recorded
        finally:
            shutil.rmtree(staging)
    finally:
        shutil.rmtree(work)
