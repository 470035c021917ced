"""Deterministic crash points for the crash-safety tests.

`crashpoint("install.after_rename")` kills the process with SIGKILL when the environment
variable PKGMGR_TEST_CRASH_AT names that label (read once at start-up); it does nothing
otherwise. The crash-safety tests find the labels by reading the calls in the source.
"""

from __future__ import annotations

import os
import signal

_TARGET = os.environ.get("PKGMGR_TEST_CRASH_AT") or None


def crashpoint(label: str) -> None:
    if _TARGET is not None and _TARGET == label:
        os.kill(os.getpid(), signal.SIGKILL)
