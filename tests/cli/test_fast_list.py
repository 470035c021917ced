"""`pkgmgr.cli.fast_list`: the start-up fast path of `ext list -o json` prints exactly what the full
command line prints, with the same exit status, or hands the command line back untouched —
for every spelling it takes, every one it must not, empty and damaged stores, workspaces, host
installs and failing output."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.cli import fast_list
from tests.cli.helpers import FIXTURES, install, ok
from tests.support.cli import Result, run_cli

NAMES = ("review-pack", "prompt-enhancer", "marketing-linear")


def both(args: list[str], monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> tuple[Result, bool]:
    """The command line run with the fast path and without it: they must agree. Returns the result
    and whether the fast path answered."""
    answered: list[int | None] = []
    real = fast_list.answer

    def spy(argv: list[str]) -> int | None:
        answered.append(real(argv))
        return answered[-1]

    monkeypatch.setattr(fast_list, "answer", spy)
    fast = run_cli(args, **kwargs)
    monkeypatch.setattr(fast_list, "answer", lambda argv: None)
    full = run_cli(args, **kwargs)
    monkeypatch.setattr(fast_list, "answer", real)
    assert (fast.code, fast.stdout, fast.stderr) == (full.code, full.stdout, full.stderr)
    return fast, bool(answered) and answered[0] is not None


@pytest.fixture
def installed(home: Path) -> Path:
    install(*(FIXTURES / name for name in NAMES))
    return home


def execute(home: Path, sql: str, *params: Any) -> None:
    conn = sqlite3.connect(home / "state.db", isolation_level=None)
    conn.execute(sql, params)
    conn.close()


@pytest.mark.parametrize("args", [
    ["ext", "list", "-o", "json"],
    ["list", "--json"],
    ["-ojson", "ext", "ls"],
    ["ext", "-o", "json", "list", "--json"],
    ["--scope", "global", "ext", "list", "-o", "json"],
    ["ext", "list", "--scope=global", "--json"],
])
def test_the_spellings_it_answers(args: list[str], installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, answered = both(args, monkeypatch)
    assert answered and result.code == 0
    assert [e["name"] for e in json.loads(result.stdout)["extensions"]] == sorted(NAMES)


@pytest.mark.parametrize("form", ["--home {}", "--home={}", "--home {}/", "--home {}/.", "--home {}//"])
def test_a_home_option(form: str, installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PKGMGR_HOME")
    args = [*form.format(installed).split(), "ext", "list", "-o", "json"]
    result, answered = both(args, monkeypatch)
    assert answered == (form in ("--home {}", "--home={}"))  # a home pathlib would respell: the full path
    assert len(json.loads(result.stdout)["extensions"]) == 3


def test_a_relative_and_a_tilde_home(installed: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PKGMGR_HOME")
    result, answered = both(["--home", installed.name, "list", "--json"], monkeypatch, cwd=installed.parent)
    assert answered and len(result.json["extensions"]) == 3
    monkeypatch.setenv("HOME", str(installed.parent))
    result, answered = both(["--home", f"~/{installed.name}", "list", "--json"], monkeypatch)
    assert answered and result.json["extensions"][0]["path"].startswith(str(installed))


@pytest.mark.parametrize("args", [
    ["ext", "list"],  # human output
    ["ext", "list", "-o", "human"],
    ["ext", "list", "-o", "json", "--outdated"],
    ["ext", "list", "-o", "json", "--host", "compozy"],
    ["--scope", "workspace", "ext", "list", "-o", "json"],
    ["ext", "list", "-o", "json", "extra"],
    ["ext", "list", "-o", "json", "-v"],
    ["ext", "list", "-o=json"],
    ["ext", "list", "--jso"],  # argparse's abbreviation
    ["--home", "", "ext", "list", "-o", "json"],
    ["--home", "-x", "ext", "list", "-o", "json"],
    ["--home", "/a", "--home", "/b", "ext", "list", "-o", "json"],
    ["ext", "list", "-o", "json", "--", "x"],
    ["ext", "list", "-o", "json", "--help"],
    ["ext", "list", "--scope"],
    ["ls", "-o", "json"],  # not an alias: an error
    ["registry", "list", "-o", "json"],
])
def test_what_it_hands_back(args: list[str], installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast_list.recognise(args) is None
    _, answered = both(args, monkeypatch)
    assert not answered


def test_an_empty_store_and_a_missing_one(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered and result.stdout == '{\n  "extensions": []\n}\n'  # no state.db: the full path
    install(FIXTURES / "review-pack")
    ok("ext", "remove", "review-pack")
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert answered and result.stdout == '{\n  "extensions": []\n}\n'


@pytest.mark.parametrize(("column", "value"), [
    ("version", "one"), ("name", "Bad Name"), ("enabled", 2), ("source_kind", "floppy"), ("sha256", "abc"),
    ("installed_at", "yesterday"), ("tree_sha256", "x"), ("path", "extensions/other/1.0.0"),
    ("path", "extensions/review-pack/0.2.0~XYZ"), ("manifest", "["), ("manifest", "[]"), ("grants", '["a", 1]'),
    ("grants", "{}"), ("tree_listing", '{"a": 1}'), ("tree_listing", "null"), ("tier", "a\x00b"),
    ("installed_by", "root\n"), ("registry", b"\xff\xfe"), ("source_url", b"x\x80"), ("name", b"review-pack\xff"),
])
def test_a_damaged_row_is_the_full_paths_error(column: str, value: Any, installed: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    marker = "CAST(? AS TEXT)" if isinstance(value, bytes) else "?"  # text that is not UTF-8
    execute(installed, f"UPDATE extensions SET {column} = {marker} WHERE name = 'review-pack'", value)
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered
    assert result.code == 4 and json.loads(result.stdout)["error"]["code"] == "state_inconsistent"


def test_a_sound_but_unusual_row_is_answered(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    execute(installed, "UPDATE extensions SET source = ?, source_url = ?, registry = NULL, grants = '[\"net\"]', "
                       "sha256 = NULL, tier = 'x' WHERE name = 'review-pack'", 'a "quoted"\tpath\\ and ünïcode', "a\x00b")
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert answered and result.code == 0


def test_an_older_schema_is_migrated_by_the_full_path(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    execute(installed, "PRAGMA user_version = 6")
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered and result.code == 0 and len(result.json["extensions"]) == 3


def test_a_database_that_is_not_one(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(FIXTURES / "review-pack")
    (home / "state.db").write_bytes(b"not a database" * 100)
    for name in ("state.db-wal", "state.db-shm"):
        (home / name).unlink(missing_ok=True)
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered and result.code == 4


def test_a_lost_database_with_trees(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (installed / name).unlink(missing_ok=True)
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered and json.loads(result.stdout)["error"]["code"] == "state_inconsistent"


def test_a_relative_pkgmgr_home_is_a_usage_error(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKGMGR_HOME", "relative/home")
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered and result.code == 2


def test_a_home_that_needs_quoting_in_a_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spaced = tmp_path / "my home?#"
    monkeypatch.setenv("PKGMGR_HOME", str(spaced))
    install(FIXTURES / "review-pack")
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered and result.json["extensions"][0]["path"].startswith(str(spaced))


def test_the_default_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PKGMGR_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    install(FIXTURES / "review-pack")
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert answered and result.json["extensions"][0]["path"].startswith(str(tmp_path / "data"))


def test_inside_a_workspace_or_below_a_pkgmgr_toml(installed: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pkgmgr.toml").write_text("[extensions]\n")
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch, cwd=project / "src")
    assert not answered and result.code == 0
    (project / "pkgmgr.toml").unlink()
    (project / "pkgmgr.toml").mkdir()  # not a file: no workspace, but the fast path does not judge
    _, answered = both(["ext", "list", "-o", "json"], monkeypatch, cwd=project / "src")
    assert not answered
    _, answered = both(["--scope", "global", "ext", "list", "-o", "json"], monkeypatch, cwd=project / "src")
    assert answered  # --scope global looks for no workspace


def test_host_installs_are_the_full_paths(installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.hosts.helpers import terva_extension

    monkeypatch.setenv("TERVA_HOME", str(tmp_path / "terva-home"))
    install(terva_extension(tmp_path / "src" / "hello"))
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert not answered and {e["host"] for e in result.json["extensions"]} == {"compozy", "terva"}


def test_the_token_is_masked_as_everywhere(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_TOKEN", "review-pack")  # what a token looks like does not matter
    result, answered = both(["ext", "list", "-o", "json"], monkeypatch)
    assert answered and "review-pack" not in result.stdout and "***" in result.stdout


class FailingStdout(io.StringIO):
    """Its first write raises `exc` (the document); the next ones (the error's) are written."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc: BaseException | None = exc

    def write(self, text: str) -> int:
        exc, self.exc = self.exc, None
        if exc is not None:
            raise exc
        return super().write(text)


@pytest.mark.parametrize("exc", [BrokenPipeError(errno.EPIPE, "Broken pipe"), OSError(errno.ENOSPC, "No space"),
                                 UnicodeEncodeError("ascii", "é", 0, 1, "ordinal not in range")])
def test_failing_output(exc: BaseException, installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.cli import main

    results = []
    for answer in (fast_list.answer, lambda argv: None):
        monkeypatch.setattr(fast_list, "answer", answer)
        out, err = FailingStdout(exc), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["ext", "list", "-o", "json"])
        results.append((code, out.getvalue(), err.getvalue()))
    assert results[0] == results[1]
    assert results[0][0] == {BrokenPipeError: 0, OSError: 9, UnicodeEncodeError: 70}[type(exc)]


def test_an_interrupt_is_reported_as_everywhere(installed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(home: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fast_list, "_installed", interrupted)
    result = run_cli(["ext", "list", "-o", "json"])
    assert (result.code, result.stdout, result.stderr) == (130, "", "interrupted\n")


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(st.lists(st.dictionaries(TEXT, st.one_of(TEXT, st.booleans()), min_size=1, max_size=4), max_size=3))
def test_render_is_json_dumps(items: list[dict[str, object]]) -> None:
    expected = json.dumps({"extensions": items}, indent=2, ensure_ascii=False, default=str)
    assert fast_list.render(items) == expected


def test_a_fresh_process_imports_no_argparse_typing_pathlib_or_dataclasses(installed: Path) -> None:
    code = ("import sys, io, contextlib\nfrom pkgmgr.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert main(['ext', 'list', '-o', 'json']) == 0\n"
            "print(' '.join(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PKGMGR_HOME": str(installed)})
    loaded = set(proc.stdout.split())
    assert loaded.isdisjoint({"argparse", "typing", "pathlib", "dataclasses", "platformdirs", "pkgmgr.cli.app",
                              "pkgmgr.errors", "pkgmgr.store.scope", "urllib.parse"}), loaded
