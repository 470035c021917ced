"""Operator-facing commands: the exact confirm command and the exit-8 error (the human text of
`bundle show` and `bundle activate` is tests/cli/test_activation_text.py's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pkgmgr.activation.confirmation import confirm_command, confirmation_error
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


def test_human_activate_prints_the_command_to_run(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    result = run_cli(["bundle", "activate", NAME])
    assert result.code == 8
    assert "awaiting confirmation" in result.stdout and "nothing is projected" in result.stdout
    assert "pkgmgr bundle confirm act_" not in result.stdout  # once: in the exit-8 error
    assert result.stderr.count("pkgmgr bundle confirm act_") == 1 and "--expected-version 1" in result.stderr
    act = result.stdout.split("created ", 1)[1].split(",", 1)[0]
    shown = run_cli(["bundle", "show", act])
    assert "status:            awaiting_confirmation" in shown.stdout
    confirmed = run_cli(["bundle", "confirm", act, "--expected-version", "1", "--as", "alice"])
    assert confirmed.code == 0 and "by alice at" in confirmed.stdout and "agent.soul" in confirmed.stdout
    listed = run_cli(["bundle", "list"])
    assert "v1 by alice" in listed.stdout
