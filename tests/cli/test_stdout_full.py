"""Standard output that cannot be written (a full disk: /dev/full) is `io_error` (exit 9) on
stderr, never a traceback — for the fast paths (`--version`, `ext list -o json`) and the full
command line, in JSON mode too, where even the error document cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")


@pytest.mark.parametrize("argv", [
    ["--version"],
    ["ext", "list"],
    ["ext", "list", "-o", "json"],
    ["ext", "list", "-o", "json", "--scope", "global"],
    ["ext", "search", "-o", "json", "--offline"],
])
def test_a_full_stdout_is_io_error_without_a_traceback(argv: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "PKGMGR_HOME": str(tmp_path / "home")}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "pkgmgr", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert proc.returncode == 9, proc.stderr
    assert "error[io_error]" in proc.stderr and "No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_a_closed_pipe_is_not_an_error(tmp_path: Path) -> None:
    env = {**os.environ, "PKGMGR_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "pkgmgr", "--help"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before anything is read
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err
