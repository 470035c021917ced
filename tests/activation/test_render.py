"""Operator-facing text: the exact confirm command, the exit-8 error, show's key/value block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pkgmgr.activation.render import activation_lines, activation_pairs, confirm_command, confirmation_error
from tests.support.cli import run_cli

from .helpers import NAME, OPS_DIGEST, installed, make_ext


def activation(**changes: Any) -> dict[str, Any]:
    base = {"id": "act_0123456789abcdef", "extension": NAME, "extension_version": "0.2.0", "bundle": "crew",
            "profile": "default", "scope": "global", "workspace": "", "version": 2,
            "status": "awaiting_confirmation", "network_digest": OPS_DIGEST, "activation_digest": "f" * 64,
            "primary_channel": "ops", "confirmed_version": None, "confirmed_digest": None, "confirmed_at": None,
            "confirmed_by": None}
    return {**base, **changes}


def test_confirm_command_names_the_scope_and_the_workspace_quoted() -> None:
    assert confirm_command(activation()) == "pkgmgr bundle confirm act_0123456789abcdef --expected-version 2"
    assert confirm_command(activation(scope="workspace", workspace="/srv/my project")) == \
        "pkgmgr --scope workspace --workspace '/srv/my project' bundle confirm act_0123456789abcdef " \
        "--expected-version 2"


def test_confirmation_error_lists_every_activation_with_its_command() -> None:
    error = confirmation_error([activation(), activation(id="act_fedcba9876543210", version=3, network_digest="")])
    assert error.code == "confirmation_required" and error.exit_code == 8
    assert error.message.startswith("2 activations await confirmation:")
    assert f"network requirement {OPS_DIGEST}" in error.message
    assert 'its new content (policy confirm = "always")' in error.message
    assert error.details["commands"] == [
        "pkgmgr bundle confirm act_0123456789abcdef --expected-version 2",
        "pkgmgr bundle confirm act_fedcba9876543210 --expected-version 3"]


def test_activation_lines_show_the_change_and_the_command() -> None:
    lines = activation_lines([activation(change="updated"), activation(status="active", change="unchanged"),
                              activation(status="deactivated", change="deactivated")])
    assert lines[0].endswith("awaiting_confirmation (updated); to confirm: pkgmgr bundle confirm "
                             "act_0123456789abcdef --expected-version 2")
    assert lines[1].endswith("v2 active (unchanged)")
    assert lines[2].endswith("v2 deactivated")


def test_show_says_who_confirmed_which_digest_when() -> None:
    pairs = dict(activation_pairs(activation(status="active", confirmed_version=1, confirmed_digest=OPS_DIGEST,
                                             confirmed_by="alice", confirmed_at="2026-01-02T03:04:05Z")))
    assert pairs["confirmed"] == (f"network digest {OPS_DIGEST} at version 1, by alice at 2026-01-02T03:04:05Z "
                                  "(still holds at version 2: the network digest did not change)")
    dropped = dict(activation_pairs(activation(status="active", network_digest="", confirmed_version=1,
                                               confirmed_digest=OPS_DIGEST, confirmed_by="alice",
                                               confirmed_at="2026-01-02T03:04:05Z")))
    assert dropped["confirmed"] == (f"network digest {OPS_DIGEST} at version 1, by alice at 2026-01-02T03:04:05Z "
                                    "(version 2 declares no network requirement)")
    assert dict(activation_pairs(activation()))["confirmed"] == \
        "not yet: run pkgmgr bundle confirm act_0123456789abcdef --expected-version 2"
    assert dict(activation_pairs(activation(status="active", network_digest="")))["confirmed"] == \
        "not needed (no network requirement)"


def test_human_activate_prints_the_command_to_run(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    result = run_cli(["bundle", "activate", NAME])
    assert result.code == 8
    assert "awaiting confirmation" in result.stdout and "nothing is projected" in result.stdout
    assert "pkgmgr bundle confirm act_" in result.stdout and "--expected-version 1" in result.stdout
    act = result.stdout.split("created ", 1)[1].split(",", 1)[0]
    shown = run_cli(["bundle", "show", act])
    assert "status:            awaiting_confirmation" in shown.stdout
    confirmed = run_cli(["bundle", "confirm", act, "--expected-version", "1", "--as", "alice"])
    assert confirmed.code == 0 and "by alice at" in confirmed.stdout and "agent.soul" in confirmed.stdout
    listed = run_cli(["bundle", "list"])
    assert "v1 by alice" in listed.stdout
