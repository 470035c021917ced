"""The hosts' files as durable as the store (issue 27 points 4, 6, 7; issue 25 point 5): Eva's
approval given again when its trust file lost it, nothing after the commit failing the command
(a link loop in Eva's folder), never touching Vera's in-flight work while Vera holds its lock,
and a host folder on another filesystem whose disk fills up. Each test changes one thing,
asserts the code, and asserts that nothing moved."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hosts.helpers import UNVERIFIED, Homes, eva_script, fail, ok, terva_extension, tree, vera_extension


def _workspace(tmp: Path) -> Path:
    project = tmp / "project"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")
    return project


def test_a_rerun_with_approve_host_trust_approves_again_when_eva_lost_the_approval(tmp_path: Path,
                                                                                  homes: Homes) -> None:
    """A power cut after an approval left `trust.json` 0 bytes, and re-running the install said
    "unchanged" without approving again."""
    project = _workspace(tmp_path)
    folder = project / ".eva" / "extensions"
    source = eva_script(tmp_path / "src", "notes")
    ok("--scope", "workspace", "ext", "install", source, *UNVERIFIED, "--approve-host-trust", cwd=project)
    approved = json.loads((homes.eva / "trust.json").read_text())["extension_dirs"][str(folder)]
    (homes.eva / "trust.json").write_bytes(b"")
    done = ok("--scope", "workspace", "ext", "install", source, *UNVERIFIED, "--approve-host-trust", cwd=project)
    assert [item["name"] for item in done["unchanged"]] == ["notes"], done
    again = json.loads((homes.eva / "trust.json").read_text())["extension_dirs"][str(folder)]
    assert again["content_hash"] == approved["content_hash"]
    # without --approve-host-trust nothing is approved
    (homes.eva / "trust.json").write_bytes(b"")
    ok("--scope", "workspace", "ext", "install", source, *UNVERIFIED, cwd=project)
    assert (homes.eva / "trust.json").read_bytes() == b""


def test_a_link_loop_in_evas_folder_fails_before_the_switch(tmp_path: Path, homes: Homes) -> None:
    """Issue 25: the trust hash followed a directory link without limit and gave exit 70 after
    the install was switched and recorded. It is computed before anything moves now, and an
    approval of a hash pkgmgr cannot take is refused (`hosts.approval`)."""
    project = _workspace(tmp_path)
    folder = project / ".eva" / "extensions"
    folder.mkdir(parents=True)
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    before = tree(project)
    error = fail("trust_required", "--scope", "workspace", "ext", "install", eva_script(tmp_path / "src", "notes"),
                 *UNVERIFIED, "--approve-host-trust", cwd=project)
    assert "a link to a directory that holds it (a loop)" in error["error"]["message"]
    assert tree(project) == before  # nothing switched
    assert ok("--scope", "workspace", "ext", "list", cwd=project)["extensions"] == []
    assert not (homes.eva / "trust.json").exists()


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def test_vera_holding_its_lock_is_waited_for_and_its_work_in_flight_is_left_alone(tmp_path: Path,
                                                                                 homes: Homes) -> None:
    """Installing while Vera's own manager held its lock deleted Vera's in-flight
    `.managed/*.tmp`, which aborted Vera's install."""
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    managed = homes.vera / "extensions" / ".managed"
    in_flight = managed / f"other.json.{os.getpid()}.0f0f.tmp"  # a live process's write
    in_flight.write_text("{}")
    lock = homes.vera / "extensions.json.lock"
    lock.write_text(json.dumps({"pid": os.getpid()}))  # Vera at work
    before = tree(homes.vera)
    fail("locked", "ext", "install", vera_extension(tmp_path / "src" / "two", ext_id="acme.two"), *UNVERIFIED,
         "--lock-timeout", "0")
    fail("locked", "ext", "disable", "acme.context-tools", "--lock-timeout", "0")
    assert tree(homes.vera) == before  # nothing of Vera's touched, its temporary file kept
    assert ok("ext", "list")["extensions"][0]["enabled"] is True
    lock.unlink()
    ok("ext", "list")
    assert in_flight.exists()  # a read never removes another writer's work
    in_flight.rename(managed / f"other.json.{_dead_pid()}.0f0f.tmp")  # its writer died
    ok("ext", "install", vera_extension(tmp_path / "src" / "two", ext_id="acme.two"), *UNVERIFIED)
    assert not list(managed.glob("*.tmp"))  # removed by a writer holding Vera's lock


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EIO])
def test_a_host_folder_on_another_filesystem_that_fails_is_io_error_and_staging_goes(
        tmp_path: Path, homes: Homes, monkeypatch: pytest.MonkeyPatch, failure: int) -> None:
    """Disk full when a host's folder is on another filesystem than PKGMGR_HOME: exit 70 from
    copytree and a `.pkgmgr-staging/tx-*` left behind. The tree is copied to the host's
    filesystem (the rename says EXDEV) and the disk fails in the middle of the copy."""
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    staging = homes.terva / ".pkgmgr-staging"
    real_rename, real_copy = os.rename, shutil.copy2
    copied: list[str] = []

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if str(staging) in os.fspath(dst) and str(homes.pkgmgr) in os.fspath(src):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), os.fspath(src))
        real_rename(src, dst)

    def copy2(src: str, dst: str, *, follow_symlinks: bool = True) -> object:
        if copied:
            raise OSError(failure, os.strerror(failure), dst)
        copied.append(dst)
        return real_copy(src, dst, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(shutil, "copy2", copy2)
    before = tree(homes.terva / "extensions")
    error = fail("io_error", "ext", "install", terva_extension(tmp_path / "src" / "hello", version="0.2.0"),
                 *UNVERIFIED)
    assert error["error"]["details"]["errno"] == errno.errorcode[failure], error
    monkeypatch.setattr(os, "rename", real_rename)
    monkeypatch.setattr(shutil, "copy2", real_copy)
    assert copied  # the copy began on the host's filesystem
    assert tree(homes.terva / "extensions") == before
    assert not list(staging.iterdir()) if staging.exists() else True
    listed = ok("ext", "list")["extensions"]
    assert [(e["name"], e["version"]) for e in listed] == [("hello", "0.1.0")], listed
    assert ok("doctor", "--check")["ok"] is True
