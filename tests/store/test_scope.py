"""Scope roots, the writer lock and workspace discovery."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from filelock import FileLock

from pkgmgr.errors import PkgmgrError
from pkgmgr.store.scope import Scope, discover_workspace, global_scope
from tests.cli.helpers import FIXTURES, UNVERIFIED, fail, install, ok, tree

# --- roots ---------------------------------------------------------------------------------------


def test_layout_of_a_scope(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    assert (scope.kind, scope.root, scope.workspace_path) == ("global", tmp_path / "home", "")
    assert scope.db_path == tmp_path / "home" / "state.db"
    assert scope.staging_dir == tmp_path / "home" / ".staging"
    assert scope.extensions_dir == tmp_path / "home" / "extensions"
    assert scope.lock_path == tmp_path / "home" / "state.lock"
    assert scope.anchor == scope.root  # the global root is the directory the user chose
    ws = Scope("workspace", tmp_path / "home" / "workspaces" / "x", tmp_path / "proj", scope)
    assert (ws.workspace_path, ws.anchor) == (str(tmp_path / "proj"), tmp_path / "home")


def test_a_reader_creates_nothing(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    assert scope.reader() is None and not scope.exists()
    assert not (tmp_path / "home").exists()


def test_a_writer_creates_the_root(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    with scope.writer(1):
        pass
    assert scope.exists() and scope.reader() is not None
    scope.close()


def test_on_create_runs_once_before_the_root_exists(tmp_path: Path) -> None:
    seen: list[bool] = []
    ws = Scope("workspace", tmp_path / "home" / "workspaces" / "x", tmp_path / "proj", global_scope(tmp_path / "home"),
               on_create=lambda scope: seen.append(scope.root.exists()))
    with ws.writer(1):
        pass
    with ws.writer(1):
        pass
    assert seen == [False] and ws.exists()
    ws.close()


# --- links and other users' directories on the way to a write (SPEC 10, 13) -------------------------


def snapshot(path: Path) -> list[tuple[str, bool]]:
    return sorted((str(p.relative_to(path)), p.is_symlink()) for p in path.rglob("*"))


@pytest.mark.parametrize("planted", ["extensions", ".staging", "state.lock", "state.db"])
def test_a_link_planted_in_the_store_is_refused_and_nothing_is_written_through_it(tmp_path: Path,
                                                                               planted: str) -> None:
    scope = global_scope(tmp_path / "home")
    with scope.writer(1):
        pass
    scope.close()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "keep").mkdir(parents=True)  # what a cleanup through the link would delete
    victim = tmp_path / "home" / planted
    if victim.is_dir():
        victim.rmdir()
    victim.unlink(missing_ok=True)
    victim.symlink_to(elsewhere / "created" if planted.startswith("state") else elsewhere)  # O_CREAT would follow
    before, outside = snapshot(tmp_path / "home"), snapshot(elsewhere)
    with pytest.raises(PkgmgrError) as caught, scope.writer(1):
        pytest.fail("the writer got the store")
    assert caught.value.code == "path_escapes_root" and str(victim) in caught.value.message
    assert caught.value.exit_code == 3
    assert snapshot(tmp_path / "home") == before and snapshot(elsewhere) == outside
    assert scope.layout_problem() is not None  # doctor --check says so, and repairs nothing


def test_a_link_as_the_workspace_store_or_its_parent_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "elsewhere").mkdir()
    home.mkdir()
    (home / "workspaces").symlink_to(tmp_path / "elsewhere")
    ws = Scope("workspace", home / "workspaces" / "x", tmp_path / "proj", global_scope(home))
    with pytest.raises(PkgmgrError) as caught:
        ws.ensure_root()
    assert caught.value.code == "path_escapes_root" and "workspaces" in caught.value.message
    assert list((tmp_path / "elsewhere").iterdir()) == []  # the store was not created through the link


def test_a_linked_home_is_the_users_choice(tmp_path: Path) -> None:
    (tmp_path / "real-home").mkdir()
    (tmp_path / "home").symlink_to(tmp_path / "real-home")
    scope = global_scope(tmp_path / "home")
    with scope.writer(1):
        pass
    scope.close()
    assert (tmp_path / "real-home" / "state.db").is_file()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown a directory")
@pytest.mark.parametrize("foreign", ["", "extensions", ".staging"])
def test_a_store_directory_of_another_user_is_refused(tmp_path: Path, foreign: str) -> None:
    scope = global_scope(tmp_path / "home")
    with scope.writer(1):
        pass
    scope.close()
    target = tmp_path / "home" / foreign
    target.mkdir(exist_ok=True)
    os.chown(target, 12345, 12345)
    before = snapshot(tmp_path / "home")
    with pytest.raises(PkgmgrError) as caught, scope.writer(1):
        pytest.fail("the writer got the store")
    assert caught.value.code == "path_escapes_root" and "uid 12345" in caught.value.message
    assert snapshot(tmp_path / "home") == before


# --- the writer lock --------------------------------------------------------------------------------


def test_a_second_writer_waits_then_fails_with_locked(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    scope.ensure_root()
    holder = FileLock(str(scope.lock_path))
    holder.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(PkgmgrError) as caught:
            with scope.writer(0.2):
                pytest.fail("the lock was not exclusive")
        assert time.monotonic() - started >= 0.2  # it waited for the timeout
        assert caught.value.code == "locked" and caught.value.exit_code == 6
        assert str(scope.root) in caught.value.message
    finally:
        holder.release()
    with scope.writer(0.2):  # released: the next writer gets it
        pass
    scope.close()


@pytest.fixture
def lock_holder(home: Path):
    """A child process that holds `<home>/state.lock` until its stdin closes."""
    home.mkdir(parents=True, exist_ok=True)
    code = ("import sys; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
            "print('held', flush=True); sys.stdin.read(); lock.release()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(home / "state.lock")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc
    if proc.poll() is None:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=30)


def test_the_cli_fails_with_locked_while_another_process_writes(lock_holder: subprocess.Popen, home: Path) -> None:
    document = fail("locked", "--lock-timeout", "0.1", "ext", "install", FIXTURES / "review-pack", *UNVERIFIED)
    assert document["error"]["exit_code"] == 6
    assert document["installed"] == []
    assert [(f["ref"], f["error"]["code"]) for f in document["failed"]] == [(str(FIXTURES / "review-pack"), "locked")]
    assert ok("ext", "list")["extensions"] == []  # readers never block
    assert ok("doctor", "--check")["ok"] is True
    lock_holder.stdin.close()  # type: ignore[union-attr]
    lock_holder.wait(timeout=30)
    install(FIXTURES / "review-pack", extra=("--lock-timeout", "5"))
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["review-pack"]


def test_other_writers_fail_with_locked_too(home: Path) -> None:
    install(FIXTURES / "review-pack")
    holder = FileLock(str(home / "state.lock"))
    with holder:
        for args in (["ext", "remove", "review-pack"], ["ext", "disable", "review-pack"], ["doctor"]):
            fail("locked", *args, "--lock-timeout", "0.05")
        assert ok("ext", "status", "review-pack")["enabled"] is True
    assert tree(home / "extensions") == ["review-pack", "review-pack/0.1.0"] + [
        f"review-pack/0.1.0/{p}" for p in tree(home / "extensions" / "review-pack" / "0.1.0")]


# --- workspace discovery (SPEC 11) ----------------------------------------------------------------


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    path = tmp_path / "user-home"
    path.mkdir(exist_ok=True)
    return path


def test_nearest_ancestor_with_pkgmgr_toml(user_home: Path) -> None:
    project = user_home / "work" / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    (project / "pkgmgr.toml").write_text("")
    assert discover_workspace(deep, home=user_home) == project
    assert discover_workspace(project, home=user_home) == project


@pytest.mark.parametrize("kind", ["directory", "file", "link"])
def test_a_left_over_pkgmgr_directory_is_no_marker(user_home: Path, tmp_path: Path, kind: str) -> None:
    outer = user_home / "outer"
    inner = outer / "inner"
    deep = inner / "a"
    deep.mkdir(parents=True)
    (outer / "pkgmgr.toml").write_text("")
    (tmp_path / "elsewhere").mkdir()
    {"directory": lambda p: p.mkdir(), "file": lambda p: p.write_text("x"),
     "link": lambda p: p.symlink_to(tmp_path / "elsewhere")}[kind](inner / ".pkgmgr")
    assert discover_workspace(deep, home=user_home) == outer  # only pkgmgr.toml marks a workspace


def test_without_a_marker_the_start_is_the_workspace(user_home: Path) -> None:
    deep = user_home / "a" / "b"
    deep.mkdir(parents=True)
    assert discover_workspace(deep, home=user_home) == deep


def test_the_walk_stops_at_home(tmp_path: Path, user_home: Path) -> None:
    (tmp_path / "pkgmgr.toml").write_text("")  # above $HOME: never considered
    deep = user_home / "x" / "y"
    deep.mkdir(parents=True)
    assert discover_workspace(deep, home=user_home) == deep
    (user_home / "pkgmgr.toml").write_text("")  # $HOME itself is still considered
    assert discover_workspace(deep, home=user_home) == user_home


def test_the_walk_defaults_to_the_home_environment(tmp_path: Path, user_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(user_home))
    (tmp_path / "pkgmgr.toml").write_text("")
    deep = user_home / "x"
    deep.mkdir()
    assert discover_workspace(deep) == deep


def test_outside_home_the_walk_goes_up_to_a_marker(tmp_path: Path, user_home: Path) -> None:
    project = tmp_path / "srv" / "project"
    deep = project / "a"
    deep.mkdir(parents=True)
    (project / "pkgmgr.toml").write_text("")
    assert discover_workspace(deep, home=user_home) == project


def test_a_missing_start_is_returned_as_it_is(tmp_path: Path, user_home: Path) -> None:
    assert discover_workspace(tmp_path / "gone", home=user_home) == tmp_path / "gone"


def test_relative_start_is_made_absolute(user_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (user_home / "p").mkdir()
    (user_home / "p" / "pkgmgr.toml").write_text("")
    monkeypatch.chdir(user_home / "p")
    assert discover_workspace(Path("."), home=user_home) == user_home / "p"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown a directory")
def test_the_walk_stops_at_a_directory_of_another_user(user_home: Path) -> None:
    shared = user_home / "shared"
    mine = shared / "mine"
    mine.mkdir(parents=True)
    (shared / "pkgmgr.toml").write_text("")
    os.chown(shared, 12345, 12345)
    assert discover_workspace(mine, home=user_home) == mine


def fake_stat(monkeypatch: pytest.MonkeyPatch, applies: Callable[[Path], bool], field: int, value: int) -> None:
    """Make Path.stat report `value` in tuple position `field` for the paths `applies` selects."""
    real_stat = Path.stat

    def stat(self: Path, *args: Any, **kwargs: Any) -> os.stat_result:
        result = real_stat(self, *args, **kwargs)
        if not applies(self):
            return result
        fields = list(result)
        fields[field] = value
        return os.stat_result(fields)

    monkeypatch.setattr(Path, "stat", stat)


def test_the_walk_stops_at_a_directory_of_another_user_simulated(user_home: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    shared = user_home / "shared"
    mine = shared / "mine"
    mine.mkdir(parents=True)
    (shared / "pkgmgr.toml").write_text("")
    fake_stat(monkeypatch, lambda path: path == shared, 4, os.getuid() + 1)  # st_uid: someone else's
    assert discover_workspace(mine, home=user_home) == mine


def test_the_walk_stops_at_a_filesystem_boundary(user_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mount = user_home / "mnt"
    inside = mount / "inside"
    inside.mkdir(parents=True)
    (user_home / "pkgmgr.toml").write_text("")
    device = user_home.stat().st_dev + 1
    fake_stat(monkeypatch, lambda path: path == mount or mount in path.parents, 2, device)  # st_dev
    assert discover_workspace(inside, home=user_home) == inside


def test_each_under_writer_runs_every_item_and_keeps_the_first_failure(tmp_path: Path) -> None:
    scope = global_scope(tmp_path / "home")
    seen: list[str] = []

    def action(name: str) -> str:
        seen.append(name)
        if name.startswith("bad"):
            raise PkgmgrError(f"{name} failed", code="not_found")
        return name.upper()

    done, error = scope.each_under_writer(["a", "bad1", "b", "bad2"], action)
    assert (done, seen) == (["A", "B"], ["a", "bad1", "b", "bad2"])
    assert error is not None and error.message == "bad1 failed"
    assert scope.each_under_writer([], action) == ([], None)


def _writebacks() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name == "pkgmgr-writeback"]


def test_staging_is_flushed_in_the_background_while_the_writer_holds_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first staging directory of a writer starts `syncfs` of the store's filesystem from a
    thread of its own (issue 30: the flush before the renames then waits less); releasing the lock
    stops it, a failure included."""
    from pkgmgr import fsutil

    flushed: list[Path] = []
    monkeypatch.setattr(fsutil.EarlyWriteback, "INTERVAL", 0.001)
    monkeypatch.setattr(fsutil, "syncfs", lambda path: flushed.append(path) or True)
    scope = global_scope(tmp_path / "home")
    with scope.writer():
        assert _writebacks() == []
        first = scope.new_staging()
        second = scope.new_staging()
        assert _writebacks() == ["pkgmgr-writeback"] and first != second
    assert _writebacks() == []
    with pytest.raises(RuntimeError), scope.writer():
        scope.new_staging()
        raise RuntimeError("a bug while staging")
    assert _writebacks() == []
    assert set(flushed) <= {scope.staging_dir}
    scope.close()


def test_no_background_flush_with_the_durability_steps_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr import fsutil

    monkeypatch.setattr(fsutil, "DURABLE", False)
    scope = global_scope(tmp_path / "home")
    with scope.writer():
        scope.new_staging()
        assert _writebacks() == []
    scope.close()
