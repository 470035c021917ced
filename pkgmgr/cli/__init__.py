"""The `pkgmgr` command line.

Kept free of imports: `pkgmgr --version` is answered here without loading argparse or the
rest of pkgmgr (SPEC 12: start-up), and `typing` is not imported for an annotation. The plain
spellings of `ext list -o json` are answered by `pkgmgr.cli.fast_list`, which hands anything
else back.
"""

import sys

GC_THRESHOLD = 200_000  # generation 0 (CPython's default: 700), as mypy does


def console() -> None:
    """The `pkgmgr` command (`scripts/pkgmgr`, `python -m pkgmgr`): `main`, then the end of a
    process that runs one command. The store's databases are closed here (a writer last: it
    checkpoints the WAL into `state.db`), then every object the command made is frozen
    (`gc.freeze`): the interpreter's last collections, which would walk them all to find garbage a
    process about to end does not need freed, skip them (~14 ms of CPU after an install of 20
    extensions, issue 30). Objects are still finalized as their references go; files pkgmgr writes
    are closed, and flushed to disk, where it writes them."""
    global _CONSOLE
    _CONSOLE = True
    code = main()
    db = sys.modules.get("pkgmgr.store.db")
    if db is not None:  # not after --version or the fast `ext list`, which open no connection of its own
        import gc

        db.close_connections()
        gc.freeze()
    sys.exit(code)


_CONSOLE = False  # main runs for `console`: the connections it opened are closed there


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args in (["--version"], ["-V"]):
        from pkgmgr import __version__

        try:
            sys.stdout.write(f"pkgmgr {__version__}\n")  # what argparse's version action prints
        except OSError as exc:
            return _stdout_failed(0, exc)
        return _flush(0)
    if "list" in args or "ls" in args:
        from pkgmgr.cli.fast_list import answer

        code = answer(args)
        if code is not None:
            return _flush(code)
    import gc

    # A command is short-lived and makes few reference cycles, but it builds tens of thousands of
    # objects (imports, a 10,000-entry index): the default thresholds ran ~140 collections in
    # one warm `ext search`, ~15 % of its CPU. Restored after, for callers running main()
    # in-process.
    thresholds = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *thresholds[1:])
    from pkgmgr import dataclass_code

    dataclass_code.install()  # before the modules that define dataclasses are imported
    from pkgmgr.cli.secrets import ScrubbedStream

    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ScrubbedStream(out), ScrubbedStream(err)  # secrets are never printed (SPEC 6)
    try:
        from pkgmgr.cli.app import run

        code = run(args)
    finally:
        gc.set_threshold(*thresholds)
        sys.stdout, sys.stderr = out, err
        dataclass_code.save()
        db = sys.modules.get("pkgmgr.store.db")
        if db is not None and not _CONSOLE:
            db.forget_connections()
    return _flush(code)


def _flush(code: int) -> int:
    """Flush standard output; when that fails (a full disk; a closed pipe is not an error) the
    command's status is `io_error`, reported on stderr, and nothing more is written there."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        return _stdout_failed(code, exc)
    return code


def _stdout_failed(code: int, exc: OSError) -> int:
    """Writing standard output failed: nothing more is written there; a reader that went away
    (a closed pipe) leaves `code` as it is, anything else is `io_error` on stderr."""
    from pkgmgr.cli.app import failure, report
    from pkgmgr.cli.output import abandon_stdout
    from pkgmgr.errors import io_error

    abandon_stdout()
    if isinstance(exc, BrokenPipeError):
        return code
    error = io_error(exc, "standard output")
    return report(error, json_mode=False) if error is not None else failure(exc, json_mode=False, verbose=False)
