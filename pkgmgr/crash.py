"""Deterministic crash points for the crash-safety tests.

`crashpoint("install.after_rename")` kills the process with SIGKILL when the environment
variable PKGMGR_TEST_CRASH_AT names that label (read once at start-up), and stops it with
SIGSTOP when PKGMGR_TEST_STOP_AT does (a test then changes the world — fails the disk — and
lets it go on with SIGCONT); it does nothing otherwise. The crash-safety tests find the labels
by reading the calls in the source.
"""

from __future__ import annotations

import os
import signal

_TARGET = os.environ.get("PKGMGR_TEST_CRASH_AT") or None
_STOP = os.environ.get("PKGMGR_TEST_STOP_AT") or None


def crashpoint(label: str) -> None:
    if _TARGET is not None and _TARGET == label:
        os.kill(os.getpid(), signal.SIGKILL)
    if _STOP is not None and _STOP == label:
        os.kill(os.getpid(), signal.SIGSTOP)
