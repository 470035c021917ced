"""fsutil: atomic writes leave the old file or the new one (never a temp file), private
directories, and removal of read-only and very deep trees."""

from __future__ import annotations

import inspect
import os
import stat
import sys
from pathlib import Path

import pytest

from pkgmgr import fsutil
from pkgmgr.fsutil import atomic_write_bytes, atomic_write_text, fsync_dir, private_dir, remove_tree


def test_atomic_write_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    atomic_write_bytes(target, b"one")
    assert target.read_bytes() == b"one" and stat.S_IMODE(target.stat().st_mode) == 0o644
    atomic_write_text(target, "twö", mode=0o600)
    assert target.read_text(encoding="utf-8") == "twö" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_failed_replace_leaves_the_old_file_and_no_temp_file(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil.os, "replace", refuse)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_a_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        atomic_write_bytes(tmp_path / "x", "not bytes")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_replacing_a_directory_fails_cleanly(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(OSError):
        atomic_write_text(tmp_path / "taken", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and (tmp_path / "taken").is_dir()


def test_an_interrupt_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fsutil.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(tmp_path / "x", "data")
    assert list(tmp_path.iterdir()) == []


def test_private_dir(tmp_path: Path) -> None:
    first = private_dir(tmp_path / "a" / ".staging", "tx-")
    second = private_dir(tmp_path / "a" / ".staging", "tx-")
    assert first != second and first.parent == second.parent == tmp_path / "a" / ".staging"
    assert first.name.startswith("tx-") and stat.S_IMODE(first.stat().st_mode) == 0o700


def test_fsync_dir_tolerates_a_missing_directory(tmp_path: Path) -> None:
    fsync_dir(tmp_path)
    fsync_dir(tmp_path / "missing")


def test_remove_tree_of_missing_file_and_link(tmp_path: Path) -> None:
    remove_tree(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    remove_tree(tmp_path / "file")
    assert not (tmp_path / "file").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "precious").write_text("x")
    os.symlink(kept, tmp_path / "link")
    remove_tree(tmp_path / "link")  # the link goes, never what it points to
    assert not os.path.lexists(tmp_path / "link") and (kept / "precious").exists()


def test_remove_tree_with_links_inside_does_not_follow_them(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    os.symlink(outside, tree / "sub" / "to-outside")
    os.symlink(outside / "precious", tree / "file-link")
    remove_tree(tree)
    assert not tree.exists() and (outside / "precious").read_text() == "x"


def test_remove_tree_handles_read_only_directories(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    inner = tree / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "file").write_text("x")
    (inner / "file").chmod(0o400)
    for directory in (inner, inner.parent, tree):
        directory.chmod(0o500)
    remove_tree(tree)
    assert not tree.exists()


def test_remove_tree_handles_very_deep_trees(tmp_path: Path) -> None:
    depth = 400
    deepest = tmp_path / "t"
    deepest.mkdir()
    for _ in range(depth):
        deepest = deepest / "d"
        deepest.mkdir()
    (deepest / "leaf").write_text("x")
    # a recursive walk would need a frame per level: allow far fewer than the tree is deep
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 50)
    try:
        remove_tree(tmp_path / "t")
    finally:
        sys.setrecursionlimit(limit)
    assert not (tmp_path / "t").exists()


def test_remove_tree_of_a_wide_tree(tmp_path: Path) -> None:
    tree = tmp_path / "wide"
    for i in range(50):
        (tree / f"d{i}").mkdir(parents=True)
        (tree / f"d{i}" / "f").write_text("x")
        (tree / f"f{i}").write_text("x")
    remove_tree(tree)
    assert list(tmp_path.iterdir()) == []


# --- secure_dirs / refuse_links: no link and no other user's directory on the way to a write --------


def test_secure_dirs_creates_the_missing_directories(tmp_path: Path) -> None:
    fsutil.secure_dirs(tmp_path / "base", "a/b/c", create=True)
    assert (tmp_path / "base" / "a" / "b" / "c").is_dir()
    fsutil.secure_dirs(tmp_path / "base", "a/b/c", create=True)  # again: nothing to do
    fsutil.secure_dirs(tmp_path / "base", "a/x/y", create=False)  # a missing one ends the walk
    assert not (tmp_path / "base" / "a" / "x").exists()


@pytest.mark.parametrize("kind", ["link", "dangling", "file"])
def test_secure_dirs_refuses_a_link_or_a_file_on_the_way(tmp_path: Path, kind: str) -> None:
    from pkgmgr.errors import PkgmgrError

    (tmp_path / "base" / "a").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    planted = tmp_path / "base" / "a" / "b"
    if kind == "file":
        planted.write_text("")
    else:
        planted.symlink_to(tmp_path / ("elsewhere" if kind == "link" else "nowhere"))
    with pytest.raises(PkgmgrError) as caught:
        fsutil.secure_dirs(tmp_path / "base", "a/b/c", create=True)
    assert caught.value.code == "path_escapes_root" and str(planted) in caught.value.message
    assert list((tmp_path / "elsewhere").iterdir()) == [] and not (tmp_path / "nowhere").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown a directory")
def test_secure_dirs_refuses_a_directory_of_another_user(tmp_path: Path) -> None:
    from pkgmgr.errors import PkgmgrError

    (tmp_path / "base" / "theirs").mkdir(parents=True)
    os.chown(tmp_path / "base" / "theirs", 12345, 12345)
    with pytest.raises(PkgmgrError) as caught:
        fsutil.secure_dirs(tmp_path / "base", "theirs/mine", create=True)
    assert caught.value.code == "path_escapes_root" and "uid 12345" in caught.value.message
    assert not (tmp_path / "base" / "theirs" / "mine").exists()
    with pytest.raises(PkgmgrError):
        fsutil.refuse_links(tmp_path / "base", ("theirs",))


def test_refuse_links_refuses_a_link_and_accepts_a_missing_file(tmp_path: Path) -> None:
    from pkgmgr.errors import PkgmgrError

    fsutil.refuse_links(tmp_path, ("state.db",))
    (tmp_path / "state.db").symlink_to(tmp_path / "elsewhere.db")
    with pytest.raises(PkgmgrError) as caught:
        fsutil.refuse_links(tmp_path, ("state.db",))
    assert caught.value.code == "path_escapes_root" and not (tmp_path / "elsewhere.db").exists()


def test_secure_dirs_accepts_a_directory_another_process_just_made(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real_mkdir = os.mkdir

    def racing_mkdir(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(name, mode, dir_fd=dir_fd)  # the other writer wins the race
        raise FileExistsError(17, "File exists", name)

    (tmp_path / "base").mkdir()
    monkeypatch.setattr(fsutil.os, "mkdir", racing_mkdir)
    fsutil.secure_dirs(tmp_path / "base", "workspaces/abc", create=True)
    assert (tmp_path / "base" / "workspaces" / "abc").is_dir()


def _tree_with_specials(root: Path) -> Path:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "file.txt").write_text("data")
    (root / "top.txt").write_text("top")
    (root / "link").symlink_to("/nonexistent")
    os.mkfifo(root / "a" / "fifo")
    return root


def test_fsync_tree_syncs_files_and_directories_and_skips_links_and_fifos(tmp_path: Path) -> None:
    tree = _tree_with_specials(tmp_path / "tree")
    before = sorted(str(p.relative_to(tree)) for p in tree.rglob("*"))
    fsutil.fsync_tree(tree)  # a FIFO is opened non-blocking (never hangs), a dangling link skipped
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*")) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs(2) is Linux's")
def test_syncfs_flushes_the_filesystem_of_a_path(tmp_path: Path) -> None:
    assert fsutil.syncfs(tmp_path) is True
    with pytest.raises(FileNotFoundError):
        fsutil.syncfs(tmp_path / "missing")


def test_durable_tree_falls_back_to_an_fsync_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(fsutil, "DURABLE", True)
    monkeypatch.setattr(fsutil, "syncfs", lambda path: False)
    monkeypatch.setattr(fsutil, "fsync_tree", calls.append)
    fsutil.durable_tree(tmp_path)
    assert calls == [tmp_path]


def _dirs(tmp_path: Path, count: int) -> list[Path]:
    made = [tmp_path / f"d{i}" for i in range(count)]
    for path in made:
        path.mkdir()
    return made


def test_a_few_directories_are_fsynced_one_by_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[Path] = []
    monkeypatch.setattr(fsutil, "DURABLE", True)
    monkeypatch.setattr(fsutil, "syncfs", lambda path: pytest.fail("syncfs for two directories"))
    monkeypatch.setattr(fsutil, "fsync_dir", synced.append)
    fsutil.fsync_dirs(*_dirs(tmp_path, 2))
    assert synced == [tmp_path / "d0", tmp_path / "d1"]


def test_many_directories_on_one_filesystem_cost_one_syncfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flushed: list[Path] = []
    monkeypatch.setattr(fsutil, "DURABLE", True)
    monkeypatch.setattr(fsutil, "syncfs", lambda path: flushed.append(path) or True)
    monkeypatch.setattr(fsutil, "fsync_dir", lambda path: pytest.fail(f"fsync of {path} after a syncfs"))
    paths = _dirs(tmp_path, 5)
    fsutil.fsync_dirs(*paths, tmp_path / "gone")  # a directory already removed has nothing to flush
    assert flushed == [paths[0]]


def test_without_syncfs_each_directory_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[Path] = []
    monkeypatch.setattr(fsutil, "DURABLE", True)
    monkeypatch.setattr(fsutil, "syncfs", lambda path: False)
    monkeypatch.setattr(fsutil, "fsync_dir", synced.append)
    paths = _dirs(tmp_path, 4)
    fsutil.fsync_dirs(*paths)
    assert sorted(synced) == paths


@pytest.mark.parametrize("call", ["mkdir", "open"])
def test_a_refused_directory_is_named_by_its_whole_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        call: str) -> None:
    """The user's case (issue 29): `.staging: Permission denied` said nothing of where it is. A
    call relative to a directory descriptor names the component; the error names the path."""
    import errno

    home = tmp_path / "home"
    home.mkdir()
    if call == "open":
        (home / ".staging").mkdir()
    real = getattr(os, call)

    def refusing(name, *args, dir_fd=None, **kwargs):  # noqa: ANN001, ANN202 - os.open's and os.mkdir's signature
        if dir_fd is not None and name == ".staging":
            raise PermissionError(errno.EACCES, "Permission denied", name)
        return real(name, *args, dir_fd=dir_fd, **kwargs)

    monkeypatch.setattr(os, call, refusing)
    with pytest.raises(PermissionError) as info:
        fsutil.secure_dirs(home, ".staging", create=True)
    assert info.value.filename == str(home / ".staging")


@pytest.mark.skipif(os.geteuid() == 0, reason="root is not refused by permissions")
def test_an_unwritable_store_is_named_by_its_whole_path(tmp_path: Path) -> None:
    from tests.support.cli import run_cli

    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    try:
        result = run_cli(["--home", str(home), "ext", "install", "review-pack"])
    finally:
        home.chmod(0o700)
    assert result.code == 9, result
    assert f"{home}" in result.stderr and "error[io_error]: .staging" not in result.stderr
