"""Leftovers of the user-experience round of issue 29, each run the way the user ran it: `ext
enable` of an Eva script whose module another extension claimed while it was away, Vera's records
behind a loop of links, the bound on Vera's `.managed/` listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts import vera
from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    eva_module,
    eva_script,
    fail,
    human,
    ok,
    tree,
    vera_extension,
)
from tests.hosts.test_eva import eva_loads

# --- ext enable and Eva's modules ---------------------------------------------------------------------


def test_enable_refuses_a_module_another_extension_claimed_while_it_was_away(tmp_path: Path, homes: Homes) -> None:
    """loader.ex load_into_acc: Eva loads one extension per module. `my-ext` disabled is moved out
    of the folder, so `my_ext` (the same module) installs; enabling `my-ext` again would have Eva
    refuse one of the two: refused, nothing moved."""
    ok("ext", "install", eva_script(tmp_path / "a", "my-ext"), *UNVERIFIED)
    ok("ext", "disable", "my-ext")
    second = tmp_path / "b" / "my_ext.exs"
    second.parent.mkdir()
    second.write_text(eva_module("my_ext"), encoding="utf-8")
    ok("ext", "install", second, *UNVERIFIED)
    before = tree(homes.eva)
    error = fail("source_conflict", "ext", "enable", "my-ext")["error"]
    assert "already defines Eva.Extension.MyExt" in error["message"]
    assert tree(homes.eva) == before and eva_loads(homes.eva / "extensions") == ["my_ext"]
    assert [e["enabled"] for e in ok("ext", "list")["extensions"]] == [False, True]
    ok("ext", "remove", "my_ext")
    ok("ext", "enable", "my-ext")
    assert eva_loads(homes.eva / "extensions") == ["my-ext"]


# --- Vera's records ----------------------------------------------------------------------------------


def test_records_behind_a_loop_of_links_are_said_to_be_unreachable(tmp_path: Path, homes: Homes,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """VERA_HOME under a loop of links: the records file is no link, the way to it loops."""
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    loop = tmp_path / "loop"
    loop.mkdir()
    (loop / "a").symlink_to("b")
    (loop / "b").symlink_to("a")
    for home in (loop / "a", loop / "a" / "vera"):
        monkeypatch.setenv("VERA_HOME", str(home))
        with pytest.raises(PkgmgrError) as raised:
            vera.read_central()
        assert raised.value.code == "invalid_config"
        assert "cannot be reached: the symbolic links on the way to them loop" in raised.value.message
        assert "symbolic link;" not in raised.value.message and raised.value.hint == \
            "check VERA_HOME and the links that lead to it"
        checked = human("doctor", "--check")
        assert "cannot be reached: the symbolic links on the way to them loop" in checked.stderr, checked
        assert "file is a symbolic link" not in checked.stderr
    monkeypatch.setenv("VERA_HOME", str(homes.vera))
    link = homes.vera / "extensions.json"
    (tmp_path / "elsewhere.json").write_bytes(link.read_bytes())
    link.unlink()
    link.symlink_to(tmp_path / "elsewhere.json")  # a link in its place is still said so
    with pytest.raises(PkgmgrError, match="file is a symbolic link"):
        vera.read_central()


def test_the_markers_listing_is_bounded(tmp_path: Path, homes: Homes, monkeypatch: pytest.MonkeyPatch) -> None:
    """`.managed/` with more entries than pkgmgr's bound is refused (invalid_config) after reading
    at most one past it, never listed whole."""
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    folder = homes.vera / "extensions"
    state = folder / vera.MANAGED
    for index in range(4):
        (state / f"junk-{index}.json.1.x.tmp").write_text("", encoding="utf-8")  # 5 entries with the marker
    monkeypatch.setattr(vera, "MARKERS_MAX_ENTRIES", 5)
    assert list(vera.read_markers(folder)) == ["acme.context-tools"]
    (state / "junk-4.json.1.x.tmp").write_text("", encoding="utf-8")
    read = []
    real = vera.os.scandir

    def counting(path):  # noqa: ANN001, ANN202 - os.scandir's
        for entry in real(path):
            read.append(entry.name)
            yield entry

    class Listing:
        def __init__(self, path: Path) -> None:
            self.entries = counting(path)

        def __enter__(self):  # noqa: ANN204
            return self.entries

        def __exit__(self, *exc: object) -> None:
            self.entries.close()

    with monkeypatch.context() as patched, pytest.raises(PkgmgrError) as raised:
        patched.setattr(vera.os, "scandir", Listing)
        vera.read_markers(folder)
    assert raised.value.code == "invalid_config" and "more than 5 entries" in raised.value.message
    assert len(read) == 6