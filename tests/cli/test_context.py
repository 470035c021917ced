"""cli.context: the per-invocation Context (prompts, notes, warnings, progress), the default
home, the workspace and the scopes a command reads and writes."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from pkgmgr.cli.context import Context, default_home, target_scope, visible_scopes, workspace_dir
from pkgmgr.errors import PkgmgrError
from tests.cli.helpers import FIXTURES, install, ok
from tests.support.stores import store_root


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Closed(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


def ctx(home: Path, **kwargs) -> Context:  # noqa: ANN003
    return Context(home=home, **kwargs)


# --- interactive, progress ----------------------------------------------------------------------


@pytest.mark.parametrize("stdin, stderr, output, expected", [
    (Terminal(), Terminal(), "human", True),
    (Terminal(), Terminal(), "json", False),  # a JSON reader is a program: nobody to ask
    (io.StringIO(), Terminal(), "human", False),  # piped input
    (Terminal(), io.StringIO(), "human", False),  # stderr redirected: the question would be invisible
    (Closed(), Terminal(), "human", False),
])
def test_interactive_needs_human_output_and_two_terminals(stdin: io.StringIO, stderr: io.StringIO, output: str,
                                                          expected: bool, home: Path) -> None:
    assert ctx(home, stdin=stdin, stderr=stderr, output=output).interactive is expected


def test_interactive_defaults_to_the_process_streams(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert ctx(home).interactive is True
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    assert ctx(home).interactive is False


@pytest.mark.parametrize("changes, expected", [
    ({}, True),
    ({"output": "json"}, False),
    ({"quiet": True}, False),
    ({"no_progress": True}, False),
    ({"stderr": io.StringIO()}, False),  # not a terminal
])
def test_show_progress(changes: dict, expected: bool, home: Path) -> None:
    options = {"stderr": Terminal(), **changes}
    assert ctx(home, **options).show_progress is expected


# --- note, warn, ask ----------------------------------------------------------------------------


def test_note_goes_to_stderr_unless_quiet(home: Path) -> None:
    err = io.StringIO()
    ctx(home, stderr=err).note("declared x in pkgmgr.toml")
    ctx(home, stderr=err, quiet=True).note("dropped")
    assert err.getvalue() == "declared x in pkgmgr.toml\n"


def test_warn_is_never_silenced(home: Path) -> None:
    err = io.StringIO()
    ctx(home, stderr=err).warn("one")
    ctx(home, stderr=err, quiet=True, output="json").warn("two")
    assert err.getvalue() == "warning: one\nwarning: two\n"


def test_messages_default_to_the_process_stderr(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    context = ctx(home)
    context.warn("w")
    context.note("n")
    assert err.getvalue() == "warning: w\nn\n" and context.err is err


@pytest.mark.parametrize("answer, expected", [
    ("y\n", True), ("yes\n", True), ("Y\n", True), ("  YES  \n", True),
    ("n\n", False), ("\n", False), ("", False), ("no\n", False),
])
def test_ask_accepts_only_y_or_yes(answer: str, expected: bool, home: Path) -> None:
    err = io.StringIO()
    assert ctx(home, stdin=io.StringIO(answer), stderr=err).ask("Install x?") is expected
    assert err.getvalue() == "Install x? [y/N] "


@pytest.mark.parametrize("answer", ["yep\n", "y es\n", "maybe\n"])
def test_ask_asks_again_on_an_answer_that_is_neither(answer: str, home: Path) -> None:
    err = io.StringIO()
    assert ctx(home, stdin=io.StringIO(answer + "y\n"), stderr=err).ask("Install x?") is True
    assert err.getvalue().count("Install x? [y/N] ") == 2 and "please answer y or n" in err.getvalue()
    assert ctx(home, stdin=io.StringIO(answer), stderr=io.StringIO()).ask("Install x?") is False  # then EOF


def test_ask_reads_one_line_per_question(home: Path) -> None:
    context = ctx(home, stdin=io.StringIO("y\nn\n"), stderr=io.StringIO())
    assert [context.ask("first?"), context.ask("second?"), context.ask("third?")] == [True, False, False]


# --- configuration and home --------------------------------------------------------------------


def test_config_is_read_from_the_home_once(home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text('[host]\nversion = "1.2.3"\n')
    context = ctx(home)
    first = context.config
    assert first.host_version == "1.2.3"
    (home / "config.toml").write_text('[host]\nversion = "9.9.9"\n')
    assert context.config is first  # one invocation, one configuration


def test_invalid_config_is_an_error_when_it_is_needed(home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text("[host\n")
    context = ctx(home)  # creating the context reads nothing
    with pytest.raises(PkgmgrError) as caught:
        context.config  # noqa: B018 - reading the property raises
    assert caught.value.code == "invalid_config"


def test_default_home_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PKGMGR_HOME", "~/pm")
    assert default_home() == tmp_path / "user-home" / "pm"
    monkeypatch.setenv("PKGMGR_HOME", str(tmp_path / "abs"))
    assert default_home() == tmp_path / "abs"


@pytest.mark.skipif(sys.platform != "linux", reason="platformdirs' Linux layout")
def test_default_home_is_the_platforms_user_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PKGMGR_HOME")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_home() == tmp_path / "user-home" / ".local" / "share" / "pkgmgr"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_home() == tmp_path / "xdg" / "pkgmgr"
    monkeypatch.setenv("PKGMGR_HOME", "")  # empty means unset
    assert default_home() == tmp_path / "xdg" / "pkgmgr"


# --- the workspace ------------------------------------------------------------------------------


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    path = tmp_path / "user-home"
    path.mkdir()
    return path


def test_workspace_option_is_resolved(tmp_path: Path, home: Path) -> None:
    real = tmp_path / "real-ws"
    real.mkdir()
    (tmp_path / "link-ws").symlink_to(real)
    assert workspace_dir(ctx(home, workspace_arg=tmp_path / "link-ws")) == real  # one spelling of it


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_workspace_option_must_be_a_directory(kind: str, tmp_path: Path, home: Path) -> None:
    target = tmp_path / "typo"
    if kind == "file":
        target.write_text("x")
    with pytest.raises(PkgmgrError) as caught:
        workspace_dir(ctx(home, workspace_arg=target))
    assert caught.value.code == "not_found" and str(target) in caught.value.message
    assert target.exists() is (kind == "file")  # a typo never becomes a directory


def test_workspace_is_discovered_from_the_current_directory(user_home: Path, home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    project = user_home / "src" / "project"
    deep = project / "a" / "b"
    deep.mkdir(parents=True)
    (project / "pkgmgr.toml").write_text("")
    (project / "a" / ".pkgmgr").mkdir()  # the store of earlier versions marks no workspace
    monkeypatch.chdir(deep)
    assert workspace_dir(ctx(home)) == project


def test_discovery_stops_at_the_users_home(tmp_path: Path, user_home: Path, home: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkgmgr.toml").write_text("")  # above $HOME: not this user's workspace
    work = user_home / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert workspace_dir(ctx(home)) == work
    (user_home / "pkgmgr.toml").write_text("")  # $HOME itself may be one
    assert workspace_dir(ctx(home)) == user_home


def test_no_workspace_found_means_the_current_directory(user_home: Path, home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(user_home)
    assert workspace_dir(ctx(home)) == user_home


# --- scopes -------------------------------------------------------------------------------------


def test_target_and_visible_scopes(user_home: Path, home: Path) -> None:
    ws = user_home / "ws"
    ws.mkdir()
    global_ctx = ctx(home, workspace_arg=ws)
    scope = target_scope(global_ctx)
    assert (scope.kind, scope.root) == ("global", home)
    assert [(s.kind, s.root) for s in visible_scopes(global_ctx)] == [("global", home)]
    named = target_scope(global_ctx, "workspace")  # a command may name the scope itself
    assert (named.kind, named.root, named.workspace) == ("workspace", store_root(ws, home), ws)
    ws_ctx = ctx(home, workspace_arg=ws, scope="workspace")
    assert [(s.kind, s.root) for s in visible_scopes(ws_ctx)] == [("workspace", store_root(ws, home)),
                                                                 ("global", home)]
    assert list(ws.iterdir()) == [] and not home.exists()  # choosing a scope creates nothing


def test_a_store_left_in_the_work_tree_is_ignored_with_a_warning(user_home: Path, home: Path) -> None:
    ws = user_home / "ws"
    (ws / ".pkgmgr" / "extensions").mkdir(parents=True)  # e.g. committed to the repository
    warnings = io.StringIO()
    scope = target_scope(ctx(home, workspace_arg=ws, scope="workspace", stderr=warnings))
    assert scope.root == store_root(ws, home)
    assert warnings.getvalue().count("\n") == 1 and str(ws / ".pkgmgr") in warnings.getvalue()
    assert "pkgmgr doctor" in warnings.getvalue()


def test_scope_selection_through_the_command_line(user_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = user_home / "project"
    (ws / "sub").mkdir(parents=True)
    install(FIXTURES / "review-pack", extra=("--scope", "workspace", "--workspace", str(ws)))
    install(FIXTURES / "prompt-enhancer")
    (ws / "pkgmgr.toml").write_text("")
    monkeypatch.chdir(ws / "sub")  # found from a subdirectory, through its pkgmgr.toml
    listed = ok("--scope", "workspace", "ext", "list")["extensions"]
    assert [(e["name"], e["scope"]) for e in listed] == [("prompt-enhancer", "global"), ("review-pack", "workspace")]
    assert [(e["name"], e["scope"]) for e in ok("ext", "list")["extensions"]] == \
        [("prompt-enhancer", "global"), ("review-pack", "workspace")]  # a read sees every visible scope
    fresh = user_home / "fresh"
    fresh.mkdir()
    assert [e["name"] for e in ok("--scope", "workspace", "ext", "list", "--workspace", fresh)["extensions"]] == \
        ["prompt-enhancer"]
    assert not store_root(fresh).exists()  # a read never creates the store


def test_the_left_over_store_warning_is_given_once_per_command(user_home: Path, home: Path) -> None:
    ws = user_home / "ws"
    (ws / ".pkgmgr").mkdir(parents=True)
    warnings = io.StringIO()
    context = ctx(home, workspace_arg=ws, scope="workspace", stderr=warnings)
    target_scope(context)
    visible_scopes(context)  # a command that looks up the scope twice
    assert warnings.getvalue().count("warning: ") == 1
