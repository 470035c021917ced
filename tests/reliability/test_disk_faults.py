"""A failing disk (SPEC 11, exit 9 `io_error`): real conditions, not mocks — a tmpfs of 256 KiB that
fills up, a filesystem remounted read-only, a root process without CAP_DAC_OVERRIDE on a
store it may not write. Each failure names the path and the OS message, nothing is half-done (the
state is the old one, `doctor --check` holds), and a read-only store can still be read.

These need `mount` (root, as on the development machines and in CI); they skip with the reason
where it is not permitted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import FIXTURES, tree
from tests.reliability.helpers import record
from tests.support.builders import minimal_manifest, write_extension
from tests.support.cli import Result

SMALL, OTHER = FIXTURES / "review-pack", FIXTURES / "prompt-enhancer"
UNVERIFIED = ("--allow-unverified", "--yes")


def pkgmgr(home: Path, *args: Any, prefix: tuple[str, ...] = ()) -> Result:
    """`python -m pkgmgr ... -o json` in a child process (no connection of this process keeps the
    mount busy)."""
    proc = subprocess.run([*prefix, sys.executable, "-m", "pkgmgr", *map(str, args), "-o", "json"],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PKGMGR_HOME": str(home)}, cwd=home.parent)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, unmounted afterwards whatever happened."""
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) on this machine")
    point = tmp_path / "mnt"
    point.mkdir()
    done = _run("mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(point))
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield point
    finally:
        if _run("umount", str(point)).returncode != 0:
            _run("umount", "-l", str(point))


def state(home: Path) -> dict[str, Any]:
    listed = pkgmgr(home, "ext", "list")
    assert listed.code == 0, listed
    return {e["name"]: e["enabled"] for e in listed.json["extensions"]}


def assert_io_error(result: Result, home: Path, os_message: str) -> dict[str, Any]:
    assert result.code == 9 and "Traceback" not in result.stderr, result
    error = result.json["error"]
    assert error["code"] == "io_error" and error["exit_code"] == 9, error
    assert error["details"]["path"].startswith(str(home)) and os_message in error["details"]["os_message"], error
    assert error["details"]["path"] in error["message"] and "error[io_error]" in result.stderr
    return error


def assert_clean(home: Path) -> None:
    check = pkgmgr(home, "doctor", "--check")
    assert check.code == 0 and check.json["ok"] is True, check
    assert pkgmgr(home, "ext", "verify", "--all").code == 0


def test_disk_full_while_installing(tmpfs: Path, tmp_path: Path) -> None:
    home = tmpfs / "home"
    assert pkgmgr(home, "ext", "install", SMALL, *UNVERIFIED).code == 0
    big = write_extension(tmp_path / "big", minimal_manifest("big-ext", "1.0.0"),
                          {"data/blob.bin": os.urandom(400_000)})
    error = assert_io_error(pkgmgr(home, "ext", "install", big, *UNVERIFIED), home, "No space left on device")
    assert error["details"]["errno"] == "ENOSPC"
    assert state(home) == {"review-pack": True}
    assert tree(home / ".staging") == []  # nothing half-done: the staging tree went with the failure
    assert_clean(home)
    assert pkgmgr(home, "ext", "install", OTHER, *UNVERIFIED).code == 0  # the space it took is back
    record("disk-fault", fault="enospc-install", detected=True, clean=True, anomalies=0)


def test_disk_full_while_committing(tmpfs: Path) -> None:
    home = tmpfs / "home"
    assert pkgmgr(home, "ext", "install", SMALL, *UNVERIFIED).code == 0
    filler = tmpfs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:  # take every block left
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    error = assert_io_error(pkgmgr(home, "ext", "disable", "review-pack"), home, "No space left on device")
    assert error["details"]["errno"] == "ENOSPC"
    filler.unlink()
    assert state(home) == {"review-pack": True}  # the transaction never committed
    assert_clean(home)
    record("disk-fault", fault="enospc-commit", detected=True, clean=True, anomalies=0)


def test_a_read_only_store_can_be_read(tmpfs: Path) -> None:
    home = tmpfs / "home"
    assert pkgmgr(home, "ext", "install", SMALL, OTHER, *UNVERIFIED).code == 0
    before = tree(home)
    remounted = _run("mount", "-o", "remount,ro", str(tmpfs))
    if remounted.returncode != 0:
        pytest.skip(f"remounting read-only is not permitted here: {remounted.stderr.strip()}")
    assert state(home) == {"prompt-enhancer": True, "review-pack": True}
    for args in (["ext", "status", "review-pack"], ["bundle", "list"], ["resources", "list"]):
        assert pkgmgr(home, *args).code == 0, args
    assert_clean(home)
    error = assert_io_error(pkgmgr(home, "ext", "remove", "review-pack"), home, "Read-only file system")
    assert error["details"]["errno"] == "EROFS"
    assert_io_error(pkgmgr(home, "doctor"), home, "Read-only file system")
    assert tree(home) == before
    record("disk-fault", fault="erofs", detected=True, clean=True, anomalies=0)


def test_permission_denied(tmp_path: Path) -> None:
    """Root ignores file modes; without CAP_DAC_OVERRIDE (setpriv drops it from the bounding set)
    it meets them like any user."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv(1) to drop CAP_DAC_OVERRIDE")
    home = tmp_path / "home"
    assert pkgmgr(home, "ext", "install", SMALL, *UNVERIFIED).code == 0
    before = tree(home)
    for path in [home, *home.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    jailed = ("setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner")
    try:
        listed = pkgmgr(home, "ext", "list", prefix=jailed)
        assert listed.code == 0 and [e["name"] for e in listed.json["extensions"]] == ["review-pack"], listed
        assert pkgmgr(home, "doctor", "--check", prefix=jailed).code == 0
        error = assert_io_error(pkgmgr(home, "ext", "install", OTHER, *UNVERIFIED, prefix=jailed), home,
                                "Permission denied")
        assert error["details"]["errno"] == "EACCES"
    finally:
        for path in [home, *home.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
    assert tree(home) == before
    assert_clean(home)
    record("disk-fault", fault="eacces", detected=True, clean=True, anomalies=0)
