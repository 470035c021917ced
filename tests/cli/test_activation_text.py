"""The human text of activations: the line per touched activation, `bundle show`'s key/value block."""

from __future__ import annotations

from pkgmgr.cli.activation_text import activation_lines, activation_pairs
from tests.activation.helpers import OPS_DIGEST
from tests.activation.test_confirmation import activation


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
        "not yet"  # the command is printed once, below the block or by the exit-8 error
    assert dict(activation_pairs(activation(status="active", network_digest="")))["confirmed"] == \
        "not needed (no network requirement)"
