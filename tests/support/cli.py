"""Run the real `pkgmgr` entry point in-process (fast) or as a subprocess (faithful)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    def __repr__(self) -> str:  # shown by pytest on a failed assertion
        return f"Result(code={self.code}, stdout={self.stdout[-2000:]!r}, stderr={self.stderr[-2000:]!r})"


@contextlib.contextmanager
def _environ(env: Mapping[str, str | None]):
    saved = {k: os.environ.get(k) for k in env}
    try:
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_cli(args: Sequence[str], *, env: Mapping[str, str | None] | None = None, stdin: str = "",
            cwd: Path | None = None) -> Result:
    """Call `pkgmgr.cli.main` with captured stdio; `env` entries set (or, when None, unset)."""
    from pkgmgr.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    with _environ(env or {}), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        old_stdin = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            if cwd is not None:
                os.chdir(cwd)
            code = main([str(a) for a in args])
        finally:
            sys.stdin = old_stdin
            os.chdir(old_cwd)
    return Result(code, out.getvalue(), err.getvalue())


def run_subprocess(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                   timeout: float = 120) -> Result:
    """Run `python -m pkgmgr` in a child process."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "pkgmgr", *[str(a) for a in args]],
        capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)
