"""extract_archive: the adversarial corpus, streaming limits, modes, and fuzzed member names."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.archive import extract_archive
from pkgmgr.archive.files import CHUNK
from pkgmgr.config import Limits
from pkgmgr.errors import PkgmgrError
from tests.archive.conftest import Sandbox, make_sandbox
from tests.archive.corpus import ATTACKS, MANIFEST, SMALL, ZEROS, Attack, T, Z, noise, ok_tar, ok_zip, tar_gz, zip_file


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_attack_is_refused_and_nothing_escapes(attack: Attack, sandbox: Sandbox) -> None:
    archive = attack.build(sandbox.archives / attack.id, sandbox.top)
    before = sandbox.snapshot()
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(archive, sandbox.staging, attack.limits)
    assert caught.value.code == attack.code, caught.value.message
    sandbox.assert_untouched(before)


def test_corpus_is_large_and_covers_both_formats() -> None:
    assert len({a.id for a in ATTACKS}) == len(ATTACKS) >= 40
    assert sum(a.id.startswith("zip-") for a in ATTACKS) >= 15
    assert sum(a.id.startswith("tar-") for a in ATTACKS) >= 15


def test_unsafe_error_names_the_member(sandbox: Sandbox) -> None:
    archive = ok_tar(sandbox.archives / "a.tar.gz", T("pkg/../../evil.sh", b"x"))
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(archive, sandbox.staging, Limits())
    assert "pkg/../../evil.sh" in caught.value.message
    assert caught.value.details["member"] == "pkg/../../evil.sh"
    assert caught.value.exit_code == 4


class WriteMonitor:
    """Counts the bytes extraction writes (every file write goes through os.write)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.total = 0
        real = os.write

        def write(fd: int, data: bytes) -> int:
            n = real(fd, data)
            self.total += n
            return n

        monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("build", [
    lambda p: ok_tar(p.with_suffix(".tar.gz"), T("pkg/zeros", ZEROS)),
    lambda p: ok_zip(p.with_suffix(".zip"), Z("pkg/zeros", ZEROS, declared_size=100)),
    lambda p: ok_zip(p.with_suffix(".zip"), Z("pkg/zeros", ZEROS, declared_size=100, descriptor=True)),
], ids=["tar.gz", "zip-lying", "zip-descriptor"])
def test_bomb_is_stopped_while_streaming(build, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    limits = Limits(max_ratio=20.0, ratio_threshold_bytes=64 * 1024)  # large size limits: only the ratio stops it
    archive = build(sandbox.archives / "bomb")
    monitor = WriteMonitor(monkeypatch)
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(archive, sandbox.staging, limits)
    assert caught.value.code == "archive_too_large"
    assert "ratio" in caught.value.message
    assert monitor.total <= limits.ratio_threshold_bytes + CHUNK
    assert list(sandbox.staging.iterdir()) == []


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_uncompressed_limit_is_never_passed_by_a_write(fmt: str, sandbox: Sandbox,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    data = noise(400 * 1024)
    if fmt == "zip":  # declared sizes lie, so only counting actual output can stop it
        archive = ok_zip(sandbox.archives / "big.zip", Z("pkg/a", data, declared_size=1), Z("pkg/b", data))
    else:
        archive = ok_tar(sandbox.archives / "big.tar.gz", T("pkg/a", data[:200 * 1024]), T("pkg/b", data))
    monitor = WriteMonitor(monkeypatch)
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(archive, sandbox.staging, SMALL)
    assert caught.value.code == "archive_too_large"
    assert monitor.total <= SMALL.max_uncompressed_bytes
    assert list(sandbox.staging.iterdir()) == []


def test_tar_gz_round_trip_with_dot_prefixes_and_directory_entries(sandbox: Sandbox) -> None:
    archive = tar_gz(sandbox.archives / "ok.tar.gz", [
        T("./", kind=tarfile.DIRTYPE),
        T("./owner-repo-1a2b3c/", kind=tarfile.DIRTYPE),
        T("./owner-repo-1a2b3c/extension.toml", MANIFEST),
        T("./owner-repo-1a2b3c/skills/", kind=tarfile.DIRTYPE),
        T("./owner-repo-1a2b3c/skills/a/SKILL.md", b"# a\n"),
        T("owner-repo-1a2b3c/empty/", kind=tarfile.DIRTYPE),
    ])
    root = extract_archive(archive, sandbox.staging, Limits())
    assert root == sandbox.staging / "owner-repo-1a2b3c"
    assert (root / "extension.toml").read_bytes() == MANIFEST
    assert (root / "skills/a/SKILL.md").read_text() == "# a\n"
    assert (root / "empty").is_dir()


def test_zip_round_trip(sandbox: Sandbox) -> None:
    archive = zip_file(sandbox.archives / "ok.zip", [
        Z("pkg/", unix_mode=stat.S_IFDIR | 0o755),
        Z("pkg/extension.toml", MANIFEST),
        Z("pkg/stored.bin", noise(5000), method=0),
        Z("pkg/deflated.txt", b"hello " * 5000),
        Z("pkg/dos.txt", b"no unix mode", unix_mode=None),
    ])
    root = extract_archive(archive, sandbox.staging, Limits())
    assert root == sandbox.staging / "pkg"
    assert (root / "deflated.txt").read_bytes() == b"hello " * 5000
    assert len((root / "stored.bin").read_bytes()) == 5000
    assert stat.S_IMODE((root / "dos.txt").stat().st_mode) == 0o644


def test_manifest_at_the_archive_root(sandbox: Sandbox) -> None:
    archive = tar_gz(sandbox.archives / "flat.tar.gz", [T("extension.toml", MANIFEST), T("README.md", b"r")])
    assert extract_archive(archive, sandbox.staging, Limits()) == sandbox.staging
    assert stat.S_IMODE(sandbox.staging.stat().st_mode) == 0o755  # the extension root, like any directory


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_modes_are_sanitised_not_refused(fmt: str, sandbox: Sandbox) -> None:
    modes = {"setuid": 0o4755, "setgid": 0o2711, "sticky-world": 0o1777, "world-write": 0o666, "no-read": 0o000,
             "exec-group-only": 0o654}
    if fmt == "zip":
        archive = ok_zip(sandbox.archives / "m.zip", Z("pkg/sub/", unix_mode=stat.S_IFDIR | 0o7777),
                         *[Z(f"pkg/sub/{name}", b"#!/bin/sh\n", unix_mode=stat.S_IFREG | mode)
                           for name, mode in modes.items()])
    else:
        archive = ok_tar(sandbox.archives / "m.tar.gz", T("pkg/sub", kind=tarfile.DIRTYPE, mode=0o7777),
                         *[T(f"pkg/sub/{name}", b"#!/bin/sh\n", mode=mode) for name, mode in modes.items()])
    old = os.umask(0o077)
    try:
        root = extract_archive(archive, sandbox.staging, Limits())
    finally:
        os.umask(old)
    got = {name: stat.S_IMODE((root / "sub" / name).stat().st_mode) for name in modes}
    assert got == {"setuid": 0o755, "setgid": 0o755, "sticky-world": 0o755, "world-write": 0o644,
                   "no-read": 0o644, "exec-group-only": 0o644}
    assert stat.S_IMODE((root / "sub").stat().st_mode) == 0o755
    assert stat.S_IMODE(root.stat().st_mode) == 0o755


def test_magic_bytes_decide_the_format_not_the_suffix(sandbox: Sandbox) -> None:
    zipped = ok_zip(sandbox.archives / "x.zip")
    disguised = sandbox.archives / "x.tar.gz"
    disguised.write_bytes(zipped.read_bytes())
    assert extract_archive(disguised, sandbox.staging, Limits()).name == "pkg"


def test_missing_archive_is_not_found(sandbox: Sandbox) -> None:
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(sandbox.archives / "nope.tar.gz", sandbox.staging, Limits())
    assert caught.value.code == "not_found"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_archive_path_that_is_not_a_file_is_refused_without_blocking(kind: str, sandbox: Sandbox) -> None:
    path = sandbox.archives / "special"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(PkgmgrError) as caught:
        extract_archive(path, sandbox.staging, Limits())
    assert caught.value.code == "invalid_archive"


def test_staging_must_be_empty(sandbox: Sandbox) -> None:
    (sandbox.staging / "leftover").write_text("x")
    with pytest.raises(ValueError):
        extract_archive(ok_tar(sandbox.archives / "a.tar.gz"), sandbox.staging, Limits())
    assert (sandbox.staging / "leftover").exists()


def test_failure_late_in_the_archive_removes_what_was_written(sandbox: Sandbox) -> None:
    archive = ok_tar(sandbox.archives / "late.tar.gz", *[T(f"pkg/d{i}/f", b"x" * 100) for i in range(20)],
                     T("pkg/link", kind=tarfile.SYMTYPE, linkname="/"))
    before = sandbox.snapshot()
    with pytest.raises(PkgmgrError):
        extract_archive(archive, sandbox.staging, Limits())
    sandbox.assert_untouched(before)


def test_multi_member_gzip_is_read_through(sandbox: Sandbox) -> None:
    import gzip

    from tests.archive.corpus import tar_bytes

    raw = tar_bytes([T("pkg/extension.toml", MANIFEST), T("pkg/data", b"d" * 3000)])
    path = sandbox.archives / "multi.tar.gz"
    path.write_bytes(gzip.compress(raw[:1500]) + gzip.compress(raw[1500:]))
    root = extract_archive(path, sandbox.staging, Limits())
    assert (root / "data").read_bytes() == b"d" * 3000


# --- fuzzing member names -----------------------------------------------------------------

_HOSTILE = st.sampled_from(list("ab.-_/\\:~ ") + ["..", "./", "//", "\x00", "\x01", "\x7f", "\u009b", "C:", "é",
                                                  "e\u0301", "A", "\udcff", "\u202e"])
_NAME = st.lists(_HOSTILE, min_size=0, max_size=10).map("".join)
_MEMBERS = st.lists(st.tuples(_NAME, st.booleans()), min_size=1, max_size=6)


def _fuzz(members: list[tuple[str, bool]], fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        box = make_sandbox(Path(tmp))
        target = Path(tmp) / "pwned"  # an absolute name might aim here
        names = [(name.replace("~", str(target)), is_dir) for name, is_dir in members]
        if fmt == "zip":
            archive = ok_zip(box.archives / "f.zip", *[Z(n + ("/" if d else ""), b"" if d else b"x") for n, d in names])
        else:
            archive = ok_tar(box.archives / "f.tar.gz",
                             *[T(n, kind=tarfile.DIRTYPE if d else tarfile.REGTYPE) for n, d in names])
        before = box.snapshot()
        try:
            root = extract_archive(archive, box.staging, Limits())
        except PkgmgrError as exc:
            assert exc.code in {"unsafe_archive", "invalid_archive", "archive_too_large"}
            box.assert_untouched(before)
        else:
            assert root == box.staging / "pkg" or root.is_relative_to(box.staging)
            assert box.snapshot() == before
            for path in box.staging.rglob("*"):
                assert not path.is_symlink()
                assert path.resolve().is_relative_to(box.staging.resolve())


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_MEMBERS)
def test_fuzzed_tar_names_only_raise_pkgmgr_errors(members: list[tuple[str, bool]]) -> None:
    _fuzz(members, "tar.gz")


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_MEMBERS)
def test_fuzzed_zip_names_only_raise_pkgmgr_errors(members: list[tuple[str, bool]]) -> None:
    _fuzz(members, "zip")


@pytest.mark.skipif(shutil.which("tar") is None, reason="needs a tar binary")
def test_archive_made_by_the_tar_tool(sandbox: Sandbox, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "bin").mkdir(parents=True)
    (src / "extension.toml").write_bytes(MANIFEST)
    (src / "bin/run").write_text("#!/bin/sh\n")
    os.chmod(src / "bin/run", 0o750)
    archive = sandbox.archives / "tool.tgz"
    subprocess.run(["tar", "-czf", str(archive), "-C", str(src), "."], check=True)
    root = extract_archive(archive, sandbox.staging, Limits())
    assert root == sandbox.staging
    assert stat.S_IMODE((root / "bin/run").stat().st_mode) == 0o755
