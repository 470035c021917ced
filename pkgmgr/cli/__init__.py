"""The `pkgmgr` command line."""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from pkgmgr.cli.app import run

    code = run(argv)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return code
