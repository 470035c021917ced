"""Deterministic crash points for the crash-safety tests.

`crashpoint("install.after_rename")` kills the process with SIGKILL when the environment
variable PKGMGR_TEST_CRASH_AT names that label (read once at start-up), and stops it with
SIGSTOP when PKGMGR_TEST_STOP_AT does (a test then changes the world — fails the disk — and
lets it go on with SIGCONT); it does nothing otherwise. `LABEL#N` acts at the N-th time the
label is reached (a label inside a loop: the N-th file renamed). The crash-safety tests find
the labels by reading the calls in the source.
"""

from __future__ import annotations

import os
import signal


def _target(name: str) -> tuple[str | None, int]:
    """(label, the hit to act at; 0: every hit)."""
    text = os.environ.get(name) or None
    if text is None or "#" not in text:
        return text, 0
    label, _, count = text.rpartition("#")
    return label, int(count) if count.isdigit() and int(count) > 0 else 1


_TARGET, _TARGET_HIT = _target("PKGMGR_TEST_CRASH_AT")
_STOP, _STOP_HIT = _target("PKGMGR_TEST_STOP_AT")
_hits: dict[str, int] = {}


def crashpoint(label: str) -> None:
    if _TARGET is None and _STOP is None:
        return
    hit = _hits[label] = _hits.get(label, 0) + 1
    if _TARGET is not None and _TARGET == label and _TARGET_HIT in (0, hit):
        os.kill(os.getpid(), signal.SIGKILL)
    if _STOP is not None and _STOP == label and _STOP_HIT in (0, hit):
        os.kill(os.getpid(), signal.SIGSTOP)
