"""The `pkgmgr` command line.

Kept free of imports: `pkgmgr --version` is answered here without loading argparse or the
rest of pkgmgr (SPEC 12: start-up), and `typing` is not imported for an annotation.
"""

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["--version"], ["-V"]):
        from pkgmgr import __version__

        try:
            sys.stdout.write(f"pkgmgr {__version__}\n")  # what argparse's version action prints
            sys.stdout.flush()
        except BrokenPipeError:
            pass
        return 0
    from pkgmgr.cli.app import run

    code = run(args)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return code
