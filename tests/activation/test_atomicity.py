"""A failure in the middle of a projection leaves no resource and the activation unchanged:
injected in-process (an exception after some rows were inserted) and as a SIGKILL at the
crash point `activation.mid_projection` in a child process."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

import pytest

import pkgmgr.activation.lifecycle as lifecycle
from tests.support.cli import run_subprocess

from .helpers import FULL_RESOURCES, NAME, OPS_DIGEST, activate, cli, fail, installed, make_ext, ok, resources, state


class Fault:
    """While armed, `_project` inserts the first two resources and then raises."""

    def __init__(self) -> None:
        self.armed = False
        self.raised = 0


@pytest.fixture
def fault(monkeypatch: pytest.MonkeyPatch) -> Fault:
    real = lifecycle._project
    state_ = Fault()

    def project(conn, projection) -> None:
        if not state_.armed:
            return real(conn, projection)
        real(conn, dataclasses.replace(projection, resources=projection.resources[:2]))
        assert conn.execute("SELECT count(*) FROM resources").fetchone()[0] >= 2  # rows really inserted
        state_.raised += 1
        raise RuntimeError("injected failure in the middle of a projection")

    monkeypatch.setattr(lifecycle, "_project", project)
    return state_


def doctor_holds() -> None:
    assert ok("doctor", "--check")["ok"] is True


def test_failed_activation_writes_nothing(tmp_path: Path, home: Path, fault: Fault) -> None:
    make_ext(tmp_path / "src", scopes=None)
    installed(tmp_path / "src")
    before = state(home)
    fault.armed = True
    result = cli("bundle", "activate", NAME)
    assert result.code == 70 and fault.raised == 1, result
    assert "injected failure" in result.stderr and "Traceback" not in result.stderr
    assert state(home) == before and resources(home) == []
    doctor_holds()
    fault.armed = False
    assert activate()["activation"]["status"] == "active"  # and it works once the fault is gone


def test_failed_confirmation_leaves_the_activation_awaiting(tmp_path: Path, home: Path, fault: Fault) -> None:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    act = fail("confirmation_required", 8, "bundle", "activate", NAME)["activation"]["id"]
    before = state(home)
    fault.armed = True
    assert cli("bundle", "confirm", act, "--expected-version", "1").code == 70 and fault.raised == 1
    assert state(home) == before and resources(home) == []
    assert ok("bundle", "show", act)["activation"]["status"] == "awaiting_confirmation"
    doctor_holds()


def test_failed_reprojection_on_update_keeps_the_old_version_and_projection(tmp_path: Path, home: Path,
                                                                            fault: Fault) -> None:
    src = tmp_path / "src"
    make_ext(src, scopes=None)
    installed(src)
    act = activate()["activation"]["id"]
    before = state(home)
    make_ext(src, version="0.2.0", scopes=None, files={"agents/planner/SOUL.md": "# Soul\n\nNew.\n"})
    fault.armed = True
    assert cli("ext", "install", src, "--allow-unverified", "--yes").code == 70 and fault.raised == 1
    assert state(home) == before
    assert ok("bundle", "show", act)["activation"]["version"] == 1 and resources(home) == FULL_RESOURCES
    # the renamed 0.2.0 directory is an orphan that the next writer removes (doctor repairs it)
    ok("doctor")
    doctor_holds()


@pytest.mark.parametrize("confirm_first", [False, True])
def test_sigkill_in_the_middle_of_a_projection(tmp_path: Path, home: Path, confirm_first: bool) -> None:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    env = {"PKGMGR_HOME": str(home), "PKGMGR_TEST_CRASH_AT": "activation.mid_projection"}
    if confirm_first:
        act = fail("confirmation_required", 8, "bundle", "activate", NAME)["activation"]["id"]
        before = state(home)
        result = run_subprocess(["bundle", "confirm", act, "--expected-version", "1"], env=env)
    else:
        before = state(home)
        result = run_subprocess(["bundle", "activate", NAME, "--confirm-network-requirement", OPS_DIGEST], env=env)
    assert result.code == -signal.SIGKILL, result
    assert state(home) == before and resources(home) == []
    doctor_holds()
    if confirm_first:
        assert ok("bundle", "confirm", act, "--expected-version", "1")["activation"]["status"] == "active"
    else:
        assert activate(NAME, "--confirm-network-requirement", OPS_DIGEST)["activation"]["status"] == "active"
    assert resources(home) == FULL_RESOURCES
