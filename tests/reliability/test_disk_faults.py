"""A failing disk (SPEC 11, exit 9 `io_error`): real conditions, not mocks — a tmpfs of 512 KiB that
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import FIXTURES, tree
from tests.reliability.helpers import covering, record
from tests.support.builders import minimal_manifest, tar_gz, write_extension
from tests.support.cli import Result, run_cli

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
    """A 512 KiB tmpfs (a store of one install, its WAL included, takes ~250 KiB), unmounted afterwards whatever happened."""
    yield from _tmpfs(tmp_path, "512k")


def _tmpfs(tmp_path: Path, size: str) -> Iterator[Path]:
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) on this machine")
    point = tmp_path / "mnt"
    point.mkdir()
    done = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(point))
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
                          {"data/blob.bin": os.urandom(600_000)})
    error = assert_io_error(pkgmgr(home, "ext", "install", big, *UNVERIFIED), home, "No space left on device")
    assert error["details"]["errno"] == "ENOSPC"
    assert state(home) == {"review-pack": True}
    assert tree(home / ".staging") == []  # nothing half-done: the staging tree went with the failure
    assert_clean(home)
    assert pkgmgr(home, "ext", "install", OTHER, *UNVERIFIED).code == 0  # the space it took is back
    record("disk-fault", fault="enospc-install", detected=True, clean=True, anomalies=0)


@pytest.fixture
def tmpfs_2m(tmp_path: Path) -> Iterator[Path]:
    yield from _tmpfs(tmp_path, "2m")


def test_disk_full_while_a_helper_process_creates_the_files(tmpfs_2m: Path, tmp_path: Path) -> None:
    """An archive of many small files: pkgmgr writes the first OFFLOAD_AFTER itself, a helper
    process the rest (`archive.offload`) — and runs out of space there (a file takes a 4 KiB page
    of this 2 MiB tmpfs). The error is the same io_error as for a file written in-process (naming
    the home: staging is private), and nothing is left behind."""
    from pkgmgr.archive.files import OFFLOAD_AFTER

    home = tmpfs_2m / "home"
    source = tar_gz(tmp_path / "many-1.0.0.tar.gz", {
        "extension.toml": 'name = "many"\nversion = "1.0.0"\n',
        **{f"files/f{i:04d}.txt": f"file {i}\n" for i in range(700)}}, prefix="many-1.0.0/")
    assert 700 > 2 * OFFLOAD_AFTER  # the first OFFLOAD_AFTER pages fit; the helper's do not
    error = assert_io_error(pkgmgr(home, "ext", "install", source, *UNVERIFIED), home, "No space left on device")
    assert error["details"]["errno"] == "ENOSPC" and error["details"]["path"] == str(home)  # as written in-process
    assert tree(home / ".staging") == []
    assert_clean(home)
    record("disk-fault", fault="enospc-extract-helper", detected=True, clean=True, anomalies=0)


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


# --- a failing device: real EIO from the kernel --------------------------------------------------------
#
# There is no device-mapper here (no `error` or `flakey` target), but ext4 itself can be made to
# fail as a dying disk makes it fail: EXT4_IOC_SHUTDOWN (what xfstests' "godown" uses) puts the
# mounted filesystem in the state ext4 enters when its device stops answering — every read, write,
# open and fsync returns EIO from then on, and what the journal had not committed is lost (the
# NOLOGFLUSH flag). The image is then unmounted and mounted again (the journal replays, as after a
# reboot with the disk back) and checked: the old state, nothing half-done.

EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 2
OLD = "0.1.0"


def _shut_down(mount_point: Path) -> None:
    import fcntl
    import struct

    fd = os.open(mount_point, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
    finally:
        os.close(fd)


@pytest.fixture
def failing_disk(tmp_path: Path) -> Iterator[Any]:
    """A loop-mounted ext4 image that `fail()` shuts down; `remount()` brings it back. Unmounted
    afterwards whatever happened (a shut-down ext4 unmounts normally)."""
    from tests.reliability.test_power_loss import Disk, DiskError, _unavailable

    reason = _unavailable(tmp_path / "probe")
    if reason is not None:
        pytest.skip(f"failing device: {reason}")
    disk = Disk(tmp_path / "disk.img", tmp_path / "mnt")
    disk.make()
    disk.mount(disk.image)
    try:
        try:
            (disk.mnt / "probe").mkdir()
            _shut_down(disk.mnt / "probe")
        except OSError as exc:
            pytest.skip(f"failing device: this kernel refuses EXT4_IOC_SHUTDOWN ({exc.strerror})")
        disk.umount()
        disk.mount(disk.image)
        disk.fail = lambda: _shut_down(disk.mnt)  # type: ignore[attr-defined]
        disk.remount = lambda: (disk.umount(), disk.mount(disk.image))  # type: ignore[attr-defined]
        yield disk
    finally:
        try:
            disk.umount()
        except DiskError:
            _run("umount", "-l", str(disk.mnt))


def _raised(source: Path) -> Path:
    """The copy of review-pack at `source` (outside the failing disk: it stays readable) raised to 0.2.0."""
    manifest = source / "extension.toml"
    manifest.write_text(manifest.read_text().replace(f'version = "{OLD}"', 'version = "0.2.0"'))
    return source


def _stopped_then_failed(disk: Any, home: Path, label: str, *args: Any) -> Result:
    """Run pkgmgr until it reaches crash point `label` (PKGMGR_TEST_STOP_AT: it stops itself),
    shut the disk down while it waits, then let it go on against the failed device."""
    return _child(disk, args, {"PKGMGR_HOME": str(home)}, label)


def _child(disk: Any, args: Sequence[Any], env: dict[str, str], stop_at: str | None) -> Result:
    """`python -m pkgmgr ARGS -o json` with `env`; with `stop_at`, stopped there while the disk
    fails under it, then let go on."""
    import signal
    import tempfile

    env = {**os.environ, **env, **({"PKGMGR_TEST_STOP_AT": stop_at} if stop_at else {})}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen([sys.executable, "-m", "pkgmgr", *map(str, args), "-o", "json"], stdout=out,
                                 stderr=err, env=env, cwd=disk.image.parent)
        try:
            if stop_at is not None:
                _, status = os.waitpid(child.pid, os.WUNTRACED)
                assert os.WIFSTOPPED(status), f"{stop_at} was not reached (status {status})"
                disk.fail()
                os.kill(child.pid, signal.SIGCONT)
            child.wait(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        out.seek(0)
        err.seek(0)
        return Result(child.returncode, out.read(), err.read())


EIO_CASES = [
    # (the case, the crash point at which the disk fails (None: before the command starts), the
    # path the error names, below the home: the first file that failed; "" for the home itself,
    # where the failing flush was of pkgmgr's private staging; several: any of them, e.g. the
    # directories a batch's renames changed, fsynced together after the last rename)
    ("install-on-a-failed-disk", None, ("state.lock",)),
    ("verify-on-a-failed-disk", None, ("state.db",)),
    ("switch-failing-after-extract", "install.after_extract", ("",)),
    ("switch-failing-after-rename", "install.after_rename", ("extensions/review-pack", "extensions", "")),
    ("switch-failing-in-the-commit", "install.before_commit", ("state.db",)),
]


@pytest.mark.parametrize("case, label, where", EIO_CASES, ids=[c for c, _, _ in EIO_CASES])
def test_a_failing_device_is_io_error_and_nothing_is_half_done(case: str, label: str | None, where: tuple[str, ...],
                                                               failing_disk: Any, tmp_path: Path) -> None:
    home = failing_disk.mnt / "home"
    source = tmp_path / "rp"
    shutil.copytree(SMALL, source)
    assert pkgmgr(home, "ext", "install", source, *UNVERIFIED).code == 0
    failing_disk.remount()  # everything of the setup on the image
    before = tree(home)
    if label is None:
        failing_disk.fail()
        args = ["ext", "verify", "--all"] if case.startswith("verify") else ["ext", "install", OTHER, *UNVERIFIED]
        result = pkgmgr(home, *args)
    else:
        result = _stopped_then_failed(failing_disk, home, label, "ext", "install", _raised(source), *UNVERIFIED)
    error = assert_io_error(result, home, "Input/output error")
    assert error["details"]["errno"] == "EIO", error
    assert error["details"]["path"] in {str(home / rel).rstrip("/") for rel in where}, error
    failing_disk.remount()  # the disk is back: what reached it is what a reboot finds
    assert pkgmgr(home, "ext", "status", "review-pack").json["version"] == OLD  # the old state
    check = pkgmgr(home, "doctor", "--check")
    problems = check.json["problems"] if check.code else []
    assert all(p["check"] == "leftover" and p["repairable"] for p in problems), check  # nothing but leftovers
    if problems:
        assert pkgmgr(home, "doctor").code == 0
    assert_clean(home)
    assert tree(home) == before  # nothing moved: the failed command's trees are gone, the old one intact
    record("disk-fault", fault=f"eio-{case}", detected=True, clean=True, anomalies=0)


# --- the hosts' folders on a failing device (issue 27) ---------------------------------------------------

VERA_ID = "acme.context-tools"
VERA_POINTS = ("host.install.after_pending", "host.install.after_rename", "host.install.after_commit",
               "host.install.after_host_records")


def _vera_env(disk: Any) -> dict[str, str]:
    return {"PKGMGR_HOME": str(disk.mnt / "home"), "VERA_HOME": str(disk.mnt / "vera")}


def _vera_run(disk: Any, *args: Any, stop_at: str | None = None) -> Result:
    """pkgmgr with its home and Vera's on the failing disk; with `stop_at`, stopped there while the
    disk fails under it."""
    return _child(disk, args, _vera_env(disk), stop_at)


def _vera_seen(disk: Any) -> dict[str, Any]:
    """What Vera loads, as it parses its records: each record's version, enabled state and whether
    its digest is the digest of the tree in its folder (Vera refuses a mismatch: `tree_modified`)."""
    import json

    from pkgmgr.hosts.vera import digest

    vera = disk.mnt / "vera"
    records = json.loads((vera / "extensions.json").read_text())["extensions"]
    return {r["id"]: (r["version"], r["enabled"], r["digest"] == digest(vera / r["directory"])) for r in records}


@pytest.mark.parametrize("label", VERA_POINTS)
def test_a_vera_update_on_a_failing_device_leaves_no_lock_and_records_that_agree(label: str, failing_disk: Any,
                                                                                 tmp_path: Path) -> None:
    """Issue 27: "EIO after Vera's records: Vera's lock left behind, its record naming a version over
    the old tree". The disk fails while a Vera update holds Vera's lock — before its tree moves,
    after the rename, after the commit, after Vera's records are written: the command fails with
    `io_error` (or had finished what it reports), and once the disk is back Vera's records name the
    tree in place (old or new, never one over the other); a lock the dead command left is listed
    by `doctor --check` and removed by `doctor`, after which Vera installs again."""
    from tests.hosts.helpers import vera_extension

    disk = failing_disk
    source = vera_extension(tmp_path / "src" / "ctx", VERA_ID, "1.0.0")
    assert _vera_run(disk, "ext", "install", source, *UNVERIFIED).code == 0
    disk.remount()
    old = _vera_seen(disk)
    assert old == {VERA_ID: ("1.0.0", True, True)}
    vera_extension(tmp_path / "src" / "ctx", VERA_ID, "1.1.0")

    result = _vera_run(disk, "ext", "install", source, *UNVERIFIED, stop_at=label)
    assert result.code in (0, 9) and "Traceback" not in result.stderr, result  # never exit 70
    if result.code == 9:
        error = result.json["error"]
        assert error["code"] == "io_error" and "Input/output error" in error["details"]["os_message"], error
    disk.remount()  # what reached the disk is what a reboot finds

    status = _vera_run(disk, "ext", "status", VERA_ID)
    assert status.code == 0, status
    version = status.json["version"]
    assert version in ("1.0.0", "1.1.0")
    check = _vera_run(disk, "doctor", "--check")
    problems = check.json["problems"] if check.code else []
    assert all(p["repairable"] for p in problems), check.stdout  # a stale lock, a pending change: doctor's to settle
    assert _vera_run(disk, "doctor").code == 0
    lock = disk.mnt / "vera" / "extensions.json.lock"
    assert not lock.exists()
    seen = _vera_seen(disk)
    assert seen in (old, {VERA_ID: ("1.1.0", True, True)}), seen  # old or new, the record over its own tree
    assert seen[VERA_ID][0] == _vera_run(disk, "ext", "status", VERA_ID).json["version"]
    assert _vera_run(disk, "doctor", "--check").code == 0
    assert _vera_run(disk, "ext", "verify", "--all").code == 0
    assert _vera_run(disk, "--lock-timeout", "0", "ext", "install", source, *UNVERIFIED).code == 0  # not `locked`
    assert _vera_seen(disk) == {VERA_ID: ("1.1.0", True, True)}
    record("disk-fault", fault=f"eio-vera-update@{label}", detected=True, clean=True, anomalies=0,
           left="new" if version == "1.1.0" else "old", lock_left=any(p["check"] == "host_lock" for p in problems))


# --- every folder host, sync, TUF metadata and signed publishing on a failing device (issue 27) --------
#
# The power-loss harness's scenarios (tests/reliability/test_power_loss.py: their setups, commands,
# what each host loads, their own checks), run on the failing disk: the starting state is built
# and the command run to its end on a copy of the image (the new state); then, from the starting
# state again, the command is stopped at a crash point, the disk fails under it, and it goes on.
# Once the disk is back, the power-loss harness's checks of a cut apply as they are.

HOSTS = ("terva", "eva", "vera", "gemini", "claude")  # the hosts of test_power_loss.HOST_NAMES, in its order
HOST_UPDATE_POINTS = ("host.install.after_pending", "host.install.after_rename", "host.install.after_commit",
                      "host.install.after_host_records")


def _one_host(index: int, verb: str) -> Any:
    """The power-loss harness's host scenario for the host at `index` of HOST_NAMES alone: `update`
    (its first release installed, its second installed over it), `disable` or `enable`."""
    from tests.reliability.test_power_loss import HOST_NAMES, Scenario, _host_sources

    name = HOST_NAMES[index]

    def installed(w: Any) -> None:
        w.run("ext", "install", _host_sources(w, 0)[index], *UNVERIFIED)
        if verb == "enable":
            w.run("ext", "disable", name)

    def command(w: Any) -> list[str]:
        if verb == "update":
            return ["ext", "install", _host_sources(w, 1)[index], *UNVERIFIED, "--force"]
        return ["ext", verb, name]

    return Scenario(f"{HOSTS[index]}-{verb}", installed, command, (), hosts=True)


def _next_install(w: Any) -> list[str]:
    """An install after the failure (issue 27: "the next install is not `locked`"): every host's
    second release, waiting for no lock."""
    from tests.reliability.test_power_loss import _host_sources

    return ["--lock-timeout", "0", "ext", "install", *_host_sources(w, 1), *UNVERIFIED, "--force"]


def _failed_under(scenario: Any, label: str, disk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  *, codes: tuple[int, ...] = (0, 9), facts: dict[str, str] | None = None
                  ) -> tuple[Any, Result, dict[str, Any]]:
    """Run `scenario` on the failing disk with the disk failing at crash point `label`; check the
    result (one of `codes`, `io_error` with the OS's EIO when 9, never a traceback), bring the disk
    back and check what is left as the power-loss harness checks a cut. Returns the world, the
    failed command's result and the outcome ({state: old/new/partial, repaired, anomalies})."""
    from tests.reliability.test_power_loss import HOST_HOMES, World, _check_cut, _view

    w = World(disk, "", dict(facts or {}))
    monkeypatch.setenv("PKGMGR_HOME", str(w.home))
    monkeypatch.setenv("HOME", str(disk.mnt / "user-home"))
    for variable, folder in HOST_HOMES.items():
        monkeypatch.setenv(variable, str(disk.mnt / folder))
    scenario.setup(w)
    disk.remount()
    old = _view(w, scenario)
    disk.umount()
    base = tmp_path / "base.img"
    shutil.copyfile(disk.image, base)
    disk.mount(disk.image)
    finished = _child(disk, scenario.command(w), {}, None)  # to its end: the new state
    assert finished.code == 0, finished
    new = _view(w, scenario)
    disk.umount()
    shutil.copyfile(base, disk.image)
    base.unlink()
    disk.mount(disk.image)

    result = _child(disk, scenario.command(w), {}, label)
    assert result.code in codes and "Traceback" not in result.stderr, result  # never exit 70
    if result.code == 9:
        error = result.json["error"]
        assert error["code"] == "io_error" and error["details"]["errno"] == "EIO", error
        assert "Input/output error" in error["details"]["os_message"], error
    disk.remount()  # what reached the disk is what a reboot finds
    outcome = {**_check_cut(w, scenario, old, new), "old": old, "new": new}
    return w, result, outcome


def _assert_settled(outcome: dict[str, Any], scope: Path | None = None) -> None:
    """`_check_cut` ran `doctor` where `doctor --check` listed only repairable problems: now nothing
    is left for it, and no anomaly was seen (a host refusing its records, a mixed state)."""
    from tests.reliability.helpers import doctor_problems

    assert not outcome["anomalies"], outcome
    assert doctor_problems(scope) == []


# Vera's update at these points is test_a_vera_update_on_a_failing_device_leaves_no_lock_and_records_that_agree;
# disable and enable move Eva's script aside and back (`host.enable.after_move`); every other host's
# rewrite its own files in place (terva's manifest, Vera's marker, Gemini's enablement file, Claude's
# settings: `host.enable.after_host_files`)
ALL_HOST_CASES = [(index, "update", label) for index, host in enumerate(HOSTS) if host != "vera"
                  for label in HOST_UPDATE_POINTS]
ALL_HOST_CASES += [(index, verb, label) for verb in ("disable", "enable") for index, host in enumerate(HOSTS)
                   for label in ("host.enable.after_pending",
                                 "host.enable.after_move" if host == "eva" else "host.enable.after_host_files")]
HOST_CASES = covering(ALL_HOST_CASES)  # every host, verb and crash point; all with PKGMGR_FAULT_SWEEP=1


@pytest.mark.parametrize("index, verb, label", HOST_CASES,
                         ids=[f"{HOSTS[i]}-{verb}@{label}" for i, verb, label in HOST_CASES])
def test_a_host_change_on_a_failing_device_leaves_the_host_old_or_new(
        index: int, verb: str, label: str, failing_disk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27 point 8: an update of each folder host (terva, Eva, Gemini CLI, Claude Code; Vera's
    above), its home on the failing disk with pkgmgr's, the disk failing before the tree's rename,
    after it, after the commit and after the host's records; terva's disable and enable, failing
    before its manifest is rewritten in place and after it: `io_error` or finished, and once the
    disk is back the host loads the old or the new state (its records parsed as it parses them,
    digests matching its tree, terva's manifest decoding, never torn); `doctor` settles what
    `doctor --check` lists (all of it repairable), `ext verify --all` passes and the next install
    does not find a lock left behind."""
    scenario = _one_host(index, verb)
    w, result, outcome = _failed_under(scenario, label, failing_disk, tmp_path, monkeypatch)
    _assert_settled(outcome)
    assert outcome["state"] in ("old", "new"), outcome
    assert run_cli(_next_install(w)).code == 0
    record("disk-fault", fault=f"eio-{scenario.name}@{label}", detected=True, clean=True, anomalies=0,
           left=outcome["state"], exit=result.code)


SYNC_POINTS = ("install.after_pending", "host.install.after_rename", "install.after_commit", "sync.after_lock_write")


@pytest.mark.parametrize("label", SYNC_POINTS)
def test_a_sync_across_three_hosts_on_a_failing_device_is_all_old_or_all_new(
        label: str, failing_disk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sync` of a workspace declaring a terva extension, an Eva script and a Compozy extension:
    the three installs are one batch, so after the disk failed and `doctor` ran the three are all
    old or all new (pkgmgr.lock, written after them, on its own)."""
    from tests.reliability.test_power_loss import HOST_SCENARIOS

    scenario = next(s for s in HOST_SCENARIOS if s.name == "sync-three-hosts")
    w, result, outcome = _failed_under(scenario, label, failing_disk, tmp_path, monkeypatch)
    _assert_settled(outcome)
    _assert_settled(outcome, w.ws)
    assert outcome["state"] in ("old", "new", "partial"), outcome  # partial: the batch whole, pkgmgr.lock behind it
    assert run_cli([*scenario.command(w), "-o", "json"]).code == 0
    record("disk-fault", fault=f"eio-sync-three-hosts@{label}", detected=True, clean=True, anomalies=0,
           left=outcome["state"], exit=result.code)


@pytest.mark.parametrize("index_at", ["off-the-disk", "on-the-disk"])
def test_a_signed_install_whose_metadata_refresh_fails_is_io_error(
        index_at: str, failing_disk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TUF: the trusted metadata (`<home>/tuf/`) on the failing disk, which fails as ngclient is
    about to refresh it (a new version was published: new timestamp, snapshot and targets to
    write), the signed index (a local registry) elsewhere or on that disk too: `io_error` — not
    exit 70, which an OSError out of ngclient, or out of the read of a local registry's file, was —
    and once the disk is back the registry refreshes and the next signed install completes."""
    from tests.reliability.test_power_loss import TRUST_SCENARIOS

    scenario = next(s for s in TRUST_SCENARIOS if s.name == "signed-install")
    facts = {"index_at": str(tmp_path / "elsewhere")} if index_at == "off-the-disk" else {}
    w, result, outcome = _failed_under(scenario, "registry.tuf.before_refresh", failing_disk, tmp_path,
                                       monkeypatch, codes=(9,), facts=facts)
    _assert_settled(outcome)
    assert outcome["state"] == "old", outcome
    assert run_cli([*scenario.command(w), "-o", "json"]).code == 0
    record("disk-fault", fault=f"eio-signed-install-index-{index_at}@registry.tuf.before_refresh", detected=True,
           clean=True, anomalies=0, left=outcome["state"], exit=result.code)


PUBLISH_POINTS = ("registry.switch.staged", "registry.switch.renamed#3", "registry.switch.done")


@pytest.mark.parametrize("label", PUBLISH_POINTS)
def test_a_signed_publish_on_a_failing_device_is_io_error_and_the_index_recovers(
        label: str, failing_disk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Signed `registry publish`, the index on the failing disk, failing after the new files are
    staged, amid the renames and after the last: `io_error` (or finished); once the disk is back
    `registry doctor DIR` completes or discards it, `registry validate` passes on the old or the
    new signed state, and publishing again completes it."""
    from tests.reliability.test_power_loss import TRUST_SCENARIOS, _index_state

    scenario = next(s for s in TRUST_SCENARIOS if s.name == "registry-publish")
    w, result, outcome = _failed_under(scenario, label, failing_disk, tmp_path, monkeypatch)
    _assert_settled(outcome)
    assert outcome["state"] in ("old", "new"), outcome
    if outcome["state"] == "old":  # publishing again completes it
        assert run_cli([*scenario.command(w), "-o", "json"]).code == 0
    assert _index_state(w) == {k: outcome["new"][k] for k in ("index", "metadata")}  # the new signed state
    record("disk-fault", fault=f"eio-registry-publish@{label}", detected=True, clean=True, anomalies=0,
           left=outcome["state"], exit=result.code)


# --- remove, link/unlink and rollback on a failing device, every host (issue 27's gap) -------------------
#
# The same harness for what the cases above leave out: `ext remove` of an installed extension,
# `ext link PATH` over an install and `ext unlink` of that link (the kept install restored), and
# `ext rollback` (the kept previous version put back), each host's home on the failing disk with
# pkgmgr's. The disk fails before the host's records change, after they changed (the tree moved,
# the commit not made) and after the commit.

ALL_HOSTS = (*HOSTS, "compozy")  # Compozy: pkgmgr's own store is what it loads
COMPOZY = "demo-ext"


def _compozy_source(w: Any, generation: int) -> str:
    """A Compozy extension at its first (0) or second (1) release, on the image."""
    version = ("1.0.0", "1.1.0")[generation]
    return str(write_extension(w.disk.mnt / "src" / COMPOZY, minimal_manifest(name=COMPOZY, version=version),
                               files={"note.txt": version}))


def _source_of(host: str, w: Any, generation: int) -> str:
    from tests.reliability.test_power_loss import _host_sources

    return _compozy_source(w, generation) if host == "compozy" else _host_sources(w, generation)[HOSTS.index(host)]


def _working_folder(host: str, w: Any) -> str:
    """The folder `ext link` makes the host load: a development version of the host's extension,
    on the image (it is read while the disk fails)."""
    from tests.hosts.helpers import claude_plugin, eva_script, gemini_extension, terva_extension, vera_extension

    work = w.disk.mnt / "work"

    def script() -> Path:  # Eva's scripts carry no version: the content changes
        made = eva_script(work, "notes")
        made.write_text(made.read_text(encoding="utf-8") + "# in the works\n", encoding="utf-8")
        return made

    made = {"terva": lambda: terva_extension(work / "tv-hello", "tv-hello", "0.3.0"), "eva": script,
            "vera": lambda: vera_extension(work / "ctx", version="2.0.0"),
            "gemini": lambda: gemini_extension(work / "gm-hello", "gm-hello", "2.0.0"),
            "claude": lambda: claude_plugin(work / "cl-hello", "cl-hello", "2.0.0"),
            "compozy": lambda: write_extension(work / COMPOZY, minimal_manifest(name=COMPOZY, version="2.0.0"),
                                               files={"note.txt": "2.0.0-dev"})}
    return str(made[host]())


def _name_of(host: str) -> str:
    from tests.reliability.test_power_loss import HOST_NAMES

    return COMPOZY if host == "compozy" else HOST_NAMES[HOSTS.index(host)]


def _lifecycle(host: str, verb: str) -> Any:
    """The power-loss harness's Scenario for `verb` of the host's extension: `remove` (installed),
    `rollback` (its first release installed, its second over it: the first kept), `link` (installed,
    then a working folder linked over it), `unlink` (installed and linked: the install restored)."""
    from tests.reliability.test_power_loss import Scenario

    name = _name_of(host)

    def setup(w: Any) -> None:
        w.run("ext", "install", _source_of(host, w, 0), *UNVERIFIED)
        if verb == "rollback":
            w.run("ext", "install", _source_of(host, w, 1), *UNVERIFIED, "--force")
        if verb == "unlink":
            w.run("ext", "link", _working_folder(host, w))

    def command(w: Any) -> list[str]:
        return ["ext", "link", _working_folder(host, w)] if verb == "link" else ["ext", verb, name]

    return Scenario(f"{host}-{verb}", setup, command, (), hosts=host != "compozy")


def _next_install_of(host: str, w: Any) -> list[str]:
    """The next install (not `locked`, whatever the dead command held): every folder host's second
    release, or Compozy's."""
    if host == "compozy":
        return ["--lock-timeout", "0", "ext", "install", _compozy_source(w, 1), *UNVERIFIED, "--force"]
    return _next_install(w)


REMOVE_POINTS = {"compozy": ("writer.locked", "remove.before_commit", "remove.after_commit"),
                 # Claude's records go first (its records never name a folder that is gone)
                 "claude": ("writer.locked", "host.remove.after_host_records", "host.remove.after_rename",
                            "host.remove.after_commit")}
SWITCH_POINTS = {"compozy": ("install.after_pending", "install.after_rename", "install.after_commit")}
FOLDER_REMOVE = ("writer.locked", "host.remove.after_rename", "host.remove.after_commit")
FOLDER_SWITCH = ("host.install.after_pending", "host.install.after_rename", "host.install.after_commit")

ALL_LIFECYCLE_CASES = [(host, "remove", label) for host in ALL_HOSTS
                       for label in REMOVE_POINTS.get(host, FOLDER_REMOVE)]
ALL_LIFECYCLE_CASES += [(host, verb, label) for verb in ("link", "unlink", "rollback")
                        for host in ALL_HOSTS for label in SWITCH_POINTS.get(host, FOLDER_SWITCH)]
LIFECYCLE_CASES = covering(ALL_LIFECYCLE_CASES)  # every host, verb and crash point; all with PKGMGR_FAULT_SWEEP=1


@pytest.mark.parametrize("full", [ALL_HOST_CASES, ALL_LIFECYCLE_CASES], ids=["host-changes", "lifecycles"])
def test_the_sample_meets_every_host_verb_and_crash_point(full: list[tuple[Any, str, str]],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PKGMGR_FAULT_SWEEP", raising=False)
    sample = covering(full)
    assert {(host, verb) for host, verb, _ in sample} == {(host, verb) for host, verb, _ in full}
    assert {(verb, label) for _, verb, label in sample} == {(verb, label) for _, verb, label in full}
    assert len(sample) < len(full)
    monkeypatch.setenv("PKGMGR_FAULT_SWEEP", "1")
    assert covering(full) == full


@pytest.mark.parametrize("host, verb, label", LIFECYCLE_CASES,
                         ids=[f"{host}-{verb}@{label}" for host, verb, label in LIFECYCLE_CASES])
def test_a_remove_link_unlink_or_rollback_on_a_failing_device_leaves_the_host_old_or_new(
        host: str, verb: str, label: str, failing_disk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ext remove`, `ext link PATH`, `ext unlink` and `ext rollback` of each host's extension, the
    disk failing before the host's records change, after they changed and after the commit:
    `io_error` or finished (never exit 70), and once the disk is back every host loads the old state
    (failed before the commit) or the new one (after it), its records parsed as it parses them;
    `doctor` settles what `doctor --check` lists (all of it repairable), `ext verify --all` passes
    and the next install is not `locked`."""
    scenario = _lifecycle(host, verb)
    w, result, outcome = _failed_under(scenario, label, failing_disk, tmp_path, monkeypatch)
    _assert_settled(outcome)
    # the commit is durable when it returns: from then on the new state, before it the old one
    assert outcome["state"] == ("new" if label.endswith("after_commit") else "old"), outcome
    if label in ("writer.locked", "host.install.after_pending", "install.after_pending"):
        assert result.code == 9, result  # the first write met the failed disk
    assert run_cli(_next_install_of(host, w)).code == 0
    record("disk-fault", fault=f"eio-{scenario.name}@{label}", detected=True, clean=True, anomalies=0,
           left=outcome["state"], exit=result.code)


# one command over the five hosts' extensions (test_power_loss.HOST_SCENARIOS): each host's change is
# its own unit, so the disk failing between two of them leaves those before it new, the rest old
BATCH_CASES = [("hosts-remove", "host.remove.after_rename#2"), ("hosts-remove", "host.remove.after_commit#3"),
               ("hosts-disable", "host.enable.after_host_files#2"), ("hosts-enable", "host.enable.after_move")]


@pytest.mark.parametrize("name, label", BATCH_CASES, ids=[f"{name}@{label}" for name, label in BATCH_CASES])
def test_one_command_over_every_host_on_a_failing_device_leaves_each_host_old_or_new(
        name: str, label: str, failing_disk: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ext remove`, `ext disable` and `ext enable` of the five hosts' extensions in one command, the
    disk failing between two hosts: `io_error` (never exit 70), and once the disk is back each host
    loads its old state or its new one, never a mix within a host — those before the failure new, the
    rest old; `doctor` settles what `doctor --check` lists and the next install is not `locked`."""
    from tests.reliability.test_power_loss import HOST_SCENARIOS

    (scenario,) = [s for s in HOST_SCENARIOS if s.name == name]
    w, result, outcome = _failed_under(scenario, label, failing_disk, tmp_path, monkeypatch)
    _assert_settled(outcome)
    # each point is past the first host's change and before the last one's: some hosts new, the rest old
    assert result.code == 9 and outcome["state"] == "partial", (result, outcome)
    assert run_cli(_next_install(w)).code == 0
    record("disk-fault", fault=f"eio-{scenario.name}@{label}", detected=True, clean=True, anomalies=0,
           left=outcome["state"], exit=result.code)
