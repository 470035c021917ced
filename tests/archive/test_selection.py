"""File selection of a source directory and install-from-directory copies."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pkgmgr.archive import copy_source_tree, select_files
from pkgmgr.archive.selection import NoFollowOpener, copy_selected
from pkgmgr.errors import PkgmgrError


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def _rels(root: Path) -> list[str]:
    return [f.rel for f in select_files(root)]


def test_sorted_relative_posix_paths(tmp_path: Path) -> None:
    _tree(tmp_path, {"b.txt": "", "a/z.txt": "", "a.txt": "", "a/b/c.txt": ""})
    assert _rels(tmp_path) == ["a.txt", "a/b/c.txt", "a/z.txt", "b.txt"]


def test_vcs_metadata_is_skipped_at_any_depth(tmp_path: Path) -> None:
    _tree(tmp_path, {"extension.toml": "", ".git/config": "", ".hg/x": "", ".svn/x": "", ".bzr/x": "",
                     "_darcs/x": "", "CVS/Root": "", "sub/.git": "gitdir: ../.git/modules/sub", "sub/f": "",
                     ".gitignore": "", ".github/workflows/ci.yml": ""})
    assert _rels(tmp_path) == [".github/workflows/ci.yml", ".gitignore", "extension.toml", "sub/f"]


def test_pkgmgrignore_uses_gitignore_syntax(tmp_path: Path) -> None:
    _tree(tmp_path, {
        ".pkgmgrignore": "# comment\n*.log\n!keep.log\nbuild/\n/top-only.txt\ndocs/**/*.tmp\n",
        "extension.toml": "", "a.log": "", "keep.log": "", "sub/b.log": "", "build/out.bin": "",
        "sub/build/x": "", "top-only.txt": "", "sub/top-only.txt": "", "docs/a/b/c.tmp": "", "docs/a/b/c.md": "",
        "buildfile": "",
    })
    assert _rels(tmp_path) == [".pkgmgrignore", "buildfile", "docs/a/b/c.md", "extension.toml", "keep.log",
                               "sub/top-only.txt"]


def test_ignore_file_can_ignore_itself(tmp_path: Path) -> None:
    _tree(tmp_path, {".pkgmgrignore": ".pkgmgrignore\n", "a": ""})
    assert _rels(tmp_path) == ["a"]


def test_symlinks_inside_the_root_are_followed(tmp_path: Path) -> None:
    _tree(tmp_path, {"real/a.txt": "A", "real/run.sh": "#!/bin/sh"})
    os.chmod(tmp_path / "real/run.sh", 0o700)
    (tmp_path / "file-link").symlink_to("real/a.txt")
    (tmp_path / "dir-link").symlink_to("real")
    (tmp_path / "chain").symlink_to("file-link")
    files = {f.rel: f for f in select_files(tmp_path)}
    assert sorted(files) == ["chain", "dir-link/a.txt", "dir-link/run.sh", "file-link", "real/a.txt", "real/run.sh"]
    assert files["chain"].path == (tmp_path / "real/a.txt").resolve()
    assert files["dir-link/run.sh"].mode == 0o755 and files["file-link"].mode == 0o644


@pytest.mark.parametrize("target, why", [
    ("../outside.txt", "points outside"),
    ("/etc/hostname", "points outside"),
    ("missing.txt", "dangles"),
    ("..", "points outside"),
])
def test_escaping_or_dangling_links(tmp_path: Path, target: str, why: str) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    root = _tree(tmp_path / "root", {"extension.toml": ""})
    (root / "link").symlink_to(target)
    with pytest.raises(PkgmgrError) as caught:
        select_files(root)
    assert caught.value.code == "path_escapes_root"
    assert caught.value.exit_code == 3
    assert why in caught.value.message and "'link'" in caught.value.message


def test_link_escaping_through_a_linked_directory(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret").write_text("s")
    root = _tree(tmp_path / "root", {"sub/x": ""})
    (root / "sub/hop").symlink_to("../../outside/secret")
    with pytest.raises(PkgmgrError) as caught:
        select_files(root)
    assert caught.value.code == "path_escapes_root"


@pytest.mark.parametrize("make", [
    lambda root: (root / "loop").symlink_to("."),
    lambda root: (root / "sub/up").symlink_to(".."),
    lambda root: ((root / "x").symlink_to("y"), (root / "y").symlink_to("x")),
    lambda root: (root / "self").symlink_to("self"),
], ids=["to-itself-dir", "to-parent", "two-link-cycle", "self-link"])
def test_link_loops_are_refused_not_followed_forever(tmp_path: Path, make) -> None:
    root = _tree(tmp_path / "root", {"sub/f": ""})
    make(root)
    with pytest.raises(PkgmgrError) as caught:
        select_files(root)
    assert caught.value.code == "path_escapes_root"


def test_ignored_broken_link_is_fine(tmp_path: Path) -> None:
    _tree(tmp_path, {".pkgmgrignore": "node_modules/\nbroken\n", "a": ""})
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules/bad").symlink_to("/nonexistent")
    (tmp_path / "broken").symlink_to("nowhere")
    assert _rels(tmp_path) == [".pkgmgrignore", "a"]


def test_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    _tree(tmp_path, {"a": ""})
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(PkgmgrError) as caught:
        select_files(tmp_path)
    assert caught.value.code == "invalid_archive"
    assert "FIFO" in caught.value.message


def test_link_to_a_fifo_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "link").symlink_to("pipe")
    with pytest.raises(PkgmgrError) as caught:
        select_files(tmp_path)
    assert caught.value.code == "invalid_archive"


def test_ignored_fifo_is_fine(tmp_path: Path) -> None:
    _tree(tmp_path, {".pkgmgrignore": "*.sock\n"})
    os.mkfifo(tmp_path / "agent.sock")
    assert _rels(tmp_path) == [".pkgmgrignore"]


@pytest.mark.parametrize("name", ["bad\\name", "tab\there", "README", "latin1-\udce9"])
def test_names_an_archive_could_not_carry(tmp_path: Path, name: str) -> None:
    (tmp_path / "readme").write_text("")
    (tmp_path / name).write_text("")  # "README" collides with "readme" case-insensitively
    with pytest.raises(PkgmgrError) as caught:
        select_files(tmp_path)
    assert caught.value.code == "invalid_archive"


def test_missing_root(tmp_path: Path) -> None:
    with pytest.raises(PkgmgrError) as caught:
        select_files(tmp_path / "nope")
    assert caught.value.code == "not_found"


def test_copy_source_tree(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", {"extension.toml": "m", "bin/run": "#!", ".git/HEAD": "x", "docs/a.md": "a",
                                   ".pkgmgrignore": "*.tmp\n", "junk.tmp": ""})
    os.chmod(src / "bin/run", 0o4775)
    os.chmod(src / "docs/a.md", 0o600)
    (src / "alias.md").symlink_to("docs/a.md")
    dest = tmp_path / "dest"  # created when missing
    assert copy_source_tree(src, dest) == dest
    assert stat.S_IMODE(dest.stat().st_mode) == 0o755
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    assert got == [".pkgmgrignore", "alias.md", "bin", "bin/run", "docs", "docs/a.md", "extension.toml"]
    assert not (dest / "alias.md").is_symlink() and (dest / "alias.md").read_text() == "a"
    assert stat.S_IMODE((dest / "bin/run").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "docs/a.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((dest / "docs").stat().st_mode) == 0o755


def test_copy_source_tree_failure_leaves_dest_empty(tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", {"a": "", "b/c": ""})
    (src / "z-escape").symlink_to("/etc/hostname")
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(PkgmgrError):
        copy_source_tree(src, dest)
    assert list(dest.iterdir()) == []


# --- the copy race: a directory swapped for a link between listing and opening (issue 13) ---------


def _swap_for_link(path: Path, target: Path) -> None:
    """What a concurrent renameat2(RENAME_EXCHANGE) leaves at `path`: a link to `target`."""
    path.rename(path.with_name(path.name + ".real"))
    path.symlink_to(target, target_is_directory=target.is_dir())


@pytest.mark.parametrize("swapped", ["hooks", "hooks/deep", "hooks/deep/run.sh"])
def test_a_component_swapped_for_a_link_after_listing_is_refused(swapped: str, tmp_path: Path) -> None:
    src = _tree(tmp_path / "src", {"extension.toml": "m", "hooks/deep/run.sh": "benign", "hooks/a.sh": "benign"})
    outside = _tree(tmp_path / "outside", {"deep/run.sh": "SECRET", "a.sh": "SECRET", "run.sh": "SECRET"})
    files = select_files(src)
    assert [f.rel for f in files] == ["extension.toml", "hooks/a.sh", "hooks/deep/run.sh"]
    target = {"hooks": outside, "hooks/deep": outside, "hooks/deep/run.sh": outside / "run.sh"}[swapped]
    _swap_for_link(src / swapped, target)
    dest = tmp_path / "dest"
    with pytest.raises(PkgmgrError) as caught:
        copy_selected(files, dest)
    assert caught.value.code == "path_escapes_root"
    assert list(dest.iterdir()) == []  # nothing copied, from outside or not
    assert sorted(p.name for p in outside.rglob("*")) == ["a.sh", "deep", "run.sh", "run.sh"]  # untouched


def test_the_opener_never_follows_a_link_on_the_way(tmp_path: Path) -> None:
    _tree(tmp_path, {"real/inner/f.txt": "inside", "outside/inner/f.txt": "SECRET"})
    base = os.path.realpath(tmp_path)
    with NoFollowOpener() as opener:
        fd = opener.open_file(f"{base}/real/inner/f.txt", display="f.txt")
        assert os.read(fd, 100) == b"inside"
        os.close(fd)
        _swap_for_link(tmp_path / "real", tmp_path / "outside")
        # the directories it holds are those it resolved: still the real one, never the link's target
        fd = opener.open_file(f"{base}/real/inner/f.txt", display="f.txt")
        assert os.read(fd, 100) == b"inside"
        os.close(fd)
    with NoFollowOpener() as opener, pytest.raises(PkgmgrError) as caught:
        opener.directory(f"{base}/real/inner", display="real/inner")  # walked afresh: the link is refused
    assert caught.value.code == "path_escapes_root"
    with NoFollowOpener() as opener, pytest.raises(PkgmgrError) as caught:
        opener.open_file(f"{base}/real.real/inner/gone.txt", display="gone.txt")
    assert caught.value.code == "not_found"
