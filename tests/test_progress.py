"""Progress reporting: the no-op `Reporter` the core calls, the rich `RichReporter`
(`cli/progress_bars.py`) the CLI passes only to a person at a terminal, and the choice between
them (`Context.show_progress`, `reporter_for`)."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from pkgmgr.cli.app import make_context, parse
from pkgmgr.cli.context import Context
from pkgmgr.cli.install_common import reporter_for
from pkgmgr.cli.progress_bars import RichReporter
from pkgmgr.config import NetworkSettings
from pkgmgr.net.cache import DownloadCache
from pkgmgr.net.http import HttpClient
from pkgmgr.progress import Reporter
from tests.support.servers import StaticFileServer

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"


class Terminal(io.StringIO):
    """A stream that says it is a terminal (what rich and `isatty` look at)."""

    def isatty(self) -> bool:
        return True


class ClosedTerminal(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


def tty_stderr(monkeypatch: pytest.MonkeyPatch, stream: io.StringIO | None = None) -> io.StringIO:
    """Make `stream` (a terminal by default) sys.stderr for the rest of the test; RichReporter's
    console follows sys.stderr. Called in the test body: pytest re-installs its own capture
    streams between a fixture's setup and the test call."""
    stream = Terminal() if stream is None else stream
    monkeypatch.setenv("TERM", "xterm-256color")
    for var in ("FORCE_TERMINAL", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)  # rich reads these when the console is created
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


# --- the default reporter ------------------------------------------------------------------------


def test_default_reporter_accepts_every_event_and_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    reporter = Reporter()
    assert reporter.download_started("k", "demo.tar.gz", 10) is None
    assert reporter.download_started("u", "unknown size", None) is None
    assert reporter.download_advanced("k", 10) is None
    assert reporter.download_advanced("never-started", 3) is None
    assert reporter.download_finished("k") is None
    assert reporter.download_finished("never-started") is None
    assert reporter.step("extracting") is None
    assert capsys.readouterr() == ("", "")


def test_the_core_module_never_imports_rich() -> None:
    code = ("import sys, pkgmgr.progress as p; p.Reporter().step('x'); "
            "print(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# --- which reporter the CLI picks -----------------------------------------------------------------


@pytest.mark.parametrize(("output", "quiet", "no_progress", "tty", "shown"), [
    ("human", False, False, True, True),
    ("human", False, False, False, False),  # a pipe or a file
    ("human", False, True, True, False),  # --no-progress
    ("human", True, False, True, False),  # -q
    ("json", False, False, True, False),  # -o json
    ("json", True, True, True, False),
])
def test_show_progress_only_for_a_person_at_a_terminal(output: str, quiet: bool, no_progress: bool, tty: bool,
                                                       shown: bool) -> None:
    ctx = Context(output=output, quiet=quiet, no_progress=no_progress,
                  stderr=Terminal() if tty else io.StringIO())
    assert ctx.show_progress is shown
    reporter = reporter_for(ctx)
    assert isinstance(reporter, RichReporter) is shown
    assert type(reporter) is (RichReporter if shown else Reporter)


def test_a_stream_whose_isatty_fails_is_no_terminal() -> None:
    assert Context(stderr=ClosedTerminal()).show_progress is False
    assert type(reporter_for(Context(stderr=ClosedTerminal()))) is Reporter


@pytest.mark.parametrize(("argv", "shown"), [
    (["ext", "install", "demo-ext"], True),
    (["ext", "install", "demo-ext", "--no-progress"], False),
    (["--no-progress", "ext", "install", "demo-ext"], False),
    (["ext", "install", "demo-ext", "-q"], False),
    (["-q", "ext", "install", "demo-ext"], False),
    (["ext", "install", "demo-ext", "--quiet"], False),
    (["ext", "install", "demo-ext", "-o", "json"], False),
    (["-o", "json", "ext", "install", "demo-ext"], False),
    (["ext", "install", "demo-ext", "--json"], False),
    (["ext", "install", "demo-ext", "-o", "human"], True),
])
def test_global_options_turn_progress_off(argv: list[str], shown: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = tty_stderr(monkeypatch)
    ctx = make_context(parse(argv))
    assert ctx.err is terminal
    assert ctx.show_progress is shown
    assert type(reporter_for(ctx)) is (RichReporter if shown else Reporter)


def test_parsed_options_on_a_pipe_never_show_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    tty_stderr(monkeypatch, io.StringIO())
    assert make_context(parse(["ext", "install", "demo-ext"])).show_progress is False


# --- the rich reporter ---------------------------------------------------------------------------


def test_rich_reporter_draws_on_the_terminal_and_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = tty_stderr(monkeypatch)
    reporter = RichReporter()
    reporter.download_started("demo", "demo-ext-0.1.0.tar.gz", 100)
    reporter.download_advanced("demo", 40)
    reporter.download_advanced("demo", 60)
    reporter.step("extracting demo-ext")  # printed above the live bars, which are drawn again
    reporter.download_finished("demo")
    text = terminal.getvalue()
    assert text.startswith(HIDE_CURSOR) and text.rstrip("\r").endswith(SHOW_CURSOR)  # stopped: cursor back
    assert "extracting demo-ext\n" in text
    assert "demo-ext-0.1.0.tar.gz" in text.split("extracting demo-ext\n", 1)[1]
    assert reporter._progress.tasks == [] and not reporter._progress.live.is_started


def test_rich_reporter_overlapping_downloads_stop_after_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = tty_stderr(monkeypatch)
    reporter = RichReporter()
    reporter.download_started("a", "a.tar.gz", 10)
    reporter.download_started("b", "b.tar.gz", None)  # unknown size
    assert len(reporter._progress.tasks) == 2
    assert [t.description for t in reporter._progress.tasks] == ["a.tar.gz (waiting for the server)",
                                                                "b.tar.gz (waiting for the server)"]
    reporter.download_answered("b", None)
    reporter.download_advanced("b", 7)
    reporter.download_finished("a")
    assert reporter._progress.live.is_started  # b still running
    assert [t.description for t in reporter._progress.tasks] == ["b.tar.gz"]
    assert reporter._progress.tasks[0].completed == 7 and reporter._progress.tasks[0].total is None
    reporter.download_finished("b")
    assert not reporter._progress.live.is_started
    assert terminal.getvalue().count(SHOW_CURSOR) == 1


def test_rich_reporter_counts_bytes_per_download(monkeypatch: pytest.MonkeyPatch) -> None:
    tty_stderr(monkeypatch)
    reporter = RichReporter()
    reporter.download_started("a", "a.tar.gz", 100)
    reporter.download_started("b", "b.tar.gz", 100)
    reporter.download_answered("a", 100)
    reporter.download_answered("b", 100)
    for amount in (10, 20, 30):
        reporter.download_advanced("a", amount)
    reporter.download_advanced("b", 5)
    completed = {t.description: t.completed for t in reporter._progress.tasks}
    assert completed == {"a.tar.gz": 60, "b.tar.gz": 5}
    reporter.download_finished("a")
    reporter.download_finished("b")


def test_rich_reporter_ignores_unknown_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = tty_stderr(monkeypatch)
    reporter = RichReporter()
    reporter.download_advanced("nobody", 10)
    reporter.download_finished("nobody")  # never started: nothing to stop
    assert terminal.getvalue() == ""
    reporter.download_started("a", "a.tar.gz", 1)
    reporter.download_finished("a")
    reporter.download_finished("a")  # a second finish is harmless
    reporter.download_advanced("a", 1)
    assert not reporter._progress.live.is_started


def test_rich_reporter_starts_again_for_a_later_download(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = tty_stderr(monkeypatch)
    reporter = RichReporter()
    for key in ("first", "second", "third"):
        reporter.download_started(key, f"{key}.tar.gz", 3)
        assert reporter._progress.live.is_started
        reporter.download_advanced(key, 3)
        reporter.step(f"verified {key}")
        reporter.download_finished(key)
        assert not reporter._progress.live.is_started
    text = terminal.getvalue()
    assert text.count(HIDE_CURSOR) == text.count(SHOW_CURSOR) == 3
    positions = [text.index(f"verified {key}\n") for key in ("first", "second", "third")]
    assert positions == sorted(positions)


def test_rich_reporter_step_prints_text_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = tty_stderr(monkeypatch)
    reporter = RichReporter()
    reporter.step("[bold]not markup[/bold] http://example.com 1.2.3")
    assert terminal.getvalue() == "[bold]not markup[/bold] http://example.com 1.2.3\n"  # no markup, no colours


def test_rich_reporter_on_a_plain_stream_writes_no_escape_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = tty_stderr(monkeypatch, io.StringIO())
    reporter = RichReporter()
    reporter.download_started("a", "a.tar.gz", 4)
    reporter.download_advanced("a", 4)
    reporter.download_finished("a")
    assert "\x1b" not in stream.getvalue()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[StaticFileServer, bytes]]:
    root = tmp_path / "www"
    root.mkdir()
    data = bytes(range(256)) * 1024  # 256 KiB: several chunks
    (root / "demo-ext-0.1.0.tar.gz").write_bytes(data)
    with StaticFileServer(root) as server:
        yield server, data
    assert server.errors == []


def _download(served: tuple[StaticFileServer, bytes], tmp_path: Path, reporter: RichReporter, sha256: str):
    """The served archive through a real client into a fresh cache, `reporter` watching."""
    server, data = served
    client = HttpClient(NetworkSettings(connect_timeout=2.0, read_timeout=2.0, retries=1), sleep=lambda s: None)
    try:
        return client.download(
            f"{server.url}/demo-ext-0.1.0.tar.gz", expected_sha256=sha256, expected_size=len(data),
            cache=DownloadCache(tmp_path / "cache"), reporter=reporter, key="demo-ext@0.1.0",
            label="demo-ext 0.1.0", max_bytes=len(data))
    finally:
        client.close()


def test_rich_reporter_through_a_real_download(served: tuple[StaticFileServer, bytes], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = tty_stderr(monkeypatch)
    data = served[1]
    reporter = RichReporter()
    downloaded = _download(served, tmp_path, reporter, hashlib.sha256(data).hexdigest())
    assert downloaded.path.read_bytes() == data and not downloaded.from_cache
    assert reporter._tasks == {} and not reporter._progress.live.is_started
    text = terminal.getvalue()
    assert text.startswith(HIDE_CURSOR) and SHOW_CURSOR in text


def test_rich_reporter_finishes_a_failed_download(served: tuple[StaticFileServer, bytes], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.errors import PkgmgrError

    terminal = tty_stderr(monkeypatch)
    reporter = RichReporter()
    with pytest.raises(PkgmgrError) as exc:
        _download(served, tmp_path, reporter, "0" * 64)
    assert exc.value.code == "checksum_mismatch"
    assert reporter._tasks == {} and not reporter._progress.live.is_started  # the bar is gone
    assert terminal.getvalue().count(SHOW_CURSOR) == 1
