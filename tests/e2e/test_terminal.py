"""The `[y/N]` prompt and the tables as a person at a terminal meets them: `pkgmgr` runs as a
child process on a pseudo-terminal (stdlib `pty`), and the test types into it."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, ok

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals")
GIVE_UP = 60.0  # seconds without output before the test fails instead of hanging


class Terminal:
    """A child `python -m pkgmgr ...` whose stdin, stdout and stderr are one pseudo-terminal."""

    def __init__(self, args: list[str], home: Path, *, columns: int = 100) -> None:
        master, slave = pty.openpty()
        env = {**os.environ, "PKGMGR_HOME": str(home), "COLUMNS": str(columns), "LINES": "30", "NO_COLOR": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "pkgmgr", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.master = master
        self.seen = ""

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def expect(self, text: str) -> str:
        """Read until `text` has appeared (after what earlier calls consumed); returns the output."""
        while text not in self.seen:
            ready, _, _ = select.select([self.master], [], [], GIVE_UP)
            assert ready, f"no {text!r} in {self.seen!r}"
            try:
                chunk = os.read(self.master, 4096).decode(errors="replace")
            except OSError:  # the child closed the terminal
                chunk = ""
            assert chunk, f"the program ended without {text!r}: {self.seen!r}"
            self.seen += chunk
        found, self.seen = self.seen, self.seen[self.seen.index(text) + len(text):]
        return found

    def finish(self) -> tuple[int, str]:
        rest = self.seen
        while True:
            ready, _, _ = select.select([self.master], [], [], GIVE_UP)
            assert ready, rest
            try:
                chunk = os.read(self.master, 4096).decode(errors="replace")
            except OSError:
                break
            if not chunk:
                break
            rest += chunk
        os.close(self.master)
        return self.proc.wait(timeout=GIVE_UP), rest


def test_the_prompt_drops_typed_ahead_keys_reasks_and_is_offered_without_the_flag(home: Path) -> None:
    source = str(FIXTURES / "review-pack")
    term = Terminal(["ext", "install", source], home)  # no --allow-unverified: a person is asked
    term.type("y\n")  # typed while pkgmgr starts: must not answer the question
    term.expect("review-pack 0.1.0 (resource extension, source path, unverified)")
    term.expect("[y/N] ")
    term.type("maybe\n")
    term.expect("please answer y or n")
    term.expect("[y/N] ")
    term.type("n\n")
    code, rest = term.finish()
    assert code == 4 and "not confirmed" in rest
    assert ok("ext", "list")["extensions"] == []

    term = Terminal(["ext", "install", source], home)
    term.expect("[y/N] ")
    term.type("yes\n")
    code, rest = term.finish()
    assert code == 0 and "installed review-pack 0.1.0 (global scope, path, unverified)" in rest


def test_a_table_on_a_narrow_terminal_keeps_ids_whole(home: Path) -> None:
    from tests.cli.helpers import fail

    ok("ext", "install", "marketing-linear")
    activation = fail("confirmation_required", "bundle", "activate", "marketing-linear")["activation"]
    ok("bundle", "confirm", activation["id"], "--expected-version", "1")
    term = Terminal(["resources", "list"], home, columns=60)
    code, text = term.finish()
    assert code == 0, text
    lines = [line for line in text.replace("\r", "").splitlines() if line]
    ids = [r["id"] for r in ok("resources", "list")["resources"]]
    assert ids and all(any(i in line for line in lines) for i in ids)  # each id whole on one line
    assert all(line == line.rstrip() for line in lines)
    assert activation["id"].startswith("act_")
