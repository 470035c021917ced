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

    def __init__(self, args: list[str], home: Path, *, columns: int = 100, cwd: Path | None = None) -> None:
        master, slave = pty.openpty()
        env = {**os.environ, "PKGMGR_HOME": str(home), "COLUMNS": str(columns), "LINES": "30", "NO_COLOR": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "pkgmgr", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, close_fds=True, cwd=cwd)
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


def _shown(args: list[str], home: Path, *, columns: int, cwd: Path | None = None) -> list[str]:
    code, text = Terminal(args, home, columns=columns, cwd=cwd).finish()
    assert code in (0, 8), text
    return [line for line in text.replace("\r", "").splitlines() if line]


def _too_wide(lines: list[str], columns: int) -> list[str]:
    """The lines wider than the terminal, but for one word alone and a line naming an absolute
    path (a path is as long as it is)."""
    return [line for line in lines if len(line) > columns and len(line.split()) > 1 and " /" not in line
            and not line.lstrip().startswith("/")]


def test_what_the_operator_reviews_fits_80_columns_with_every_digest_whole(home: Path) -> None:
    """The operator's case (issue 29), at 80 columns: `bundle preview`, `bundle show`, `ext status`,
    `ext info`, `hosts` and `cache list` print no line wider than the terminal (a table that would
    be is printed as blocks), and each digest stays whole on a line."""
    from tests.cli.helpers import fail

    ok("ext", "install", "marketing-linear")
    activation = fail("confirmation_required", "bundle", "activate", "marketing-linear")["activation"]
    digest = activation["network_digest"]
    for args in (["bundle", "preview", "marketing-linear"], ["bundle", "show", activation["id"]], ["bundle", "list"],
                 ["ext", "status", "marketing-linear"], ["ext", "info", "marketing-linear"], ["hosts"],
                 ["cache", "list"]):
        lines = _shown(args, home, columns=80)
        assert _too_wide(lines, 80) == [], (args, lines)
        if args[:2] in (["bundle", "preview"], ["bundle", "show"]):
            assert any(line.strip().endswith(digest) for line in lines), (args, lines)


def test_trust_show_and_registry_init_fit_80_columns_and_their_commands_run_as_printed(home: Path,
                                                                                       tmp_path: Path) -> None:
    """The team lead's and the author's case: `trust --show` of a pkgmgr.toml declaring two hosts'
    extensions, and `registry init --sign`, at 80 columns; the commands they print, read as a
    shell reads them, are the commands printed on one line off a terminal."""
    import shlex

    from tests.hosts.helpers import terva_extension

    ws = tmp_path / "project"
    terva_extension(ws / "tools" / "hello")
    (ws / "pkgmgr.toml").write_text('[extensions]\nreview-pack = "*"\nmarketing-linear = "*"\n'
                                    'hello = { path = "tools/hello", host = "terva" }\n', encoding="utf-8")
    lines = _shown(["trust", "--show"], home, columns=80, cwd=ws)
    assert _too_wide(lines, 80) == [], lines
    digest = ok("trust", "--show", "--workspace", ws)["digest"]
    command = "\n".join(lines).split("approve exactly this with:", 1)[1].replace("\\\n", " ")
    assert shlex.split(command) == ["pkgmgr", "trust", "--digest", digest]
    lines = _shown(["registry", "init", str(tmp_path / "index"), "--sign", "--keys", str(tmp_path / "keys")], home,
                   columns=80)
    assert _too_wide(lines, 80) == [], lines
    text = "\n".join(lines).replace("\\\n", " ")
    root = text.split("root sha256: ", 1)[1].split()[0]
    added = shlex.split(text.split("clients add it with:", 1)[1].split("\n", 2)[1])
    assert added == ["pkgmgr", "registry", "add", "NAME", "SOURCE", "--root-sha256", root]
