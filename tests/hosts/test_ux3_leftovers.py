"""Leftovers of the user-experience round of issue 29, each run the way the user ran it: `sync
--approve-host-trust` (with install's rule), `ext enable` of an Eva script whose module another
extension claimed while it was away, Vera's records behind a loop of links, the bound on Vera's
`.managed/` listing, and Vera declared in a workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts import vera
from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    eva_directory,
    eva_module,
    eva_script,
    fail,
    human,
    ok,
    terva_extension,
    tree,
    vera_extension,
)
from tests.hosts.test_eva import eva_loads


def _workspace(tmp_path: Path, declaration: str) -> Path:
    ws = tmp_path / "user-home" / "project"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "pkgmgr.toml").write_text(declaration, encoding="utf-8")
    ok("trust", cwd=ws)
    return ws


# --- sync --approve-host-trust ----------------------------------------------------------------------


def test_sync_records_evas_approval_when_asked_as_its_note_says(tmp_path: Path, homes: Homes) -> None:
    """The user's case: sync's note says "pass --approve-host-trust"; sync has it, and run again
    with it (nothing else to do) records Eva's approval of the folder as it is."""
    eva_directory(tmp_path / "user-home" / "project" / "tools" / "tasks", "tasks")
    ws = _workspace(tmp_path, '[extensions]\ntasks = { path = "tools/tasks", host = "eva" }\n')
    first = human("sync", cwd=ws)
    assert first.code == 0, first
    assert "pass --approve-host-trust to record the new hash" in first.stdout
    trust = homes.eva / "trust.json"
    assert not trust.exists()
    again = human("sync", "--approve-host-trust", cwd=ws)
    assert again.code == 0, again
    assert "updated Eva's approval in" in again.stdout
    folder = str(ws / ".eva" / "extensions")
    approved = json.loads(trust.read_text(encoding="utf-8"))["extension_dirs"][folder]
    document = ok("sync", "--approve-host-trust", cwd=ws)  # approved already: nothing to record
    assert document["host_trust"][0]["approved"] is True and document["host_trust"][0]["updated"] is False
    assert json.loads(trust.read_text(encoding="utf-8"))["extension_dirs"][folder] == approved


def test_sync_approves_in_the_same_step_as_it_installs(tmp_path: Path, homes: Homes) -> None:
    eva_directory(tmp_path / "user-home" / "project" / "tools" / "tasks", "tasks")
    ws = _workspace(tmp_path, '[extensions]\ntasks = { path = "tools/tasks", host = "eva" }\n')
    [installed] = ok("sync", "--approve-host-trust", cwd=ws)["installed"]
    assert installed["trust"]["updated"] is True
    assert str(ws / ".eva" / "extensions") in json.loads((homes.eva / "trust.json").read_text())["extension_dirs"]


def test_sync_never_approves_a_script_it_did_not_install_unnamed(tmp_path: Path, homes: Homes) -> None:
    """Install's rule: a folder holding a script pkgmgr did not install is approved only with
    =all, after the user saw the list."""
    eva_directory(tmp_path / "user-home" / "project" / "tools" / "tasks", "tasks")
    ws = _workspace(tmp_path, '[extensions]\ntasks = { path = "tools/tasks", host = "eva" }\n')
    ok("sync", cwd=ws)
    (ws / ".eva" / "extensions" / "backdoor.exs").write_text(eva_module("backdoor"), encoding="utf-8")
    refused = ok("sync", "--approve-host-trust", cwd=ws)["host_trust"][0]
    assert refused["updated"] is False and refused["not_installed_by_pkgmgr"] == ["backdoor.exs"]
    assert not (homes.eva / "trust.json").exists()
    named = ok("sync", "--approve-host-trust=all", cwd=ws)["host_trust"][0]
    assert named["updated"] is True
    assert (homes.eva / "trust.json").is_file()


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


# --- Vera declared in a workspace ------------------------------------------------------------------


def test_sync_refuses_a_declared_vera_extension_before_anything_moves(tmp_path: Path, homes: Homes) -> None:
    """Vera has no project scope: sync says so before it installs, removes or locks anything, and
    its hint names a command that exists (`ext install`, not an option sync lacks)."""
    ws = tmp_path / "user-home" / "project"
    terva_extension(ws / "tools" / "hello")
    vera_extension(ws / "tools" / "ctx")
    ws = _workspace(tmp_path, '[extensions]\nhello = { path = "tools/hello", host = "terva" }\n')
    ok("sync", cwd=ws)
    (ws / "pkgmgr.toml").write_text('[extensions]\n"acme.context-tools" = { path = "tools/ctx", host = "vera" }\n',
                                    encoding="utf-8")
    ok("trust", cwd=ws)
    before = tree(ws)
    error = fail("usage", "sync", cwd=ws)["error"]
    assert "declares acme.context-tools for Vera, which has no project scope" in error["message"]
    hint = human("sync", cwd=ws).stderr.split("hint: ", 1)[1]
    assert "--scope" not in hint and f"run: pkgmgr ext install {ws / 'tools' / 'ctx'} --allow-unverified" in hint
    assert tree(ws) == before  # hello is still installed, the lock unchanged
    assert not homes.vera.exists()


# --- every host's provenance from a signed registry ------------------------------------------------------


def test_status_and_info_of_a_host_extension_from_a_signed_registry_show_its_root(tmp_path: Path,
                                                                                  homes: Homes) -> None:
    """The author's case: a Vera (and a terva) extension published to a signed registry of their
    own shows `signed: yes` and the root, as a Compozy one does; the source names its registry once."""
    from tests.support.signed import signed_index

    index = signed_index(tmp_path / "index")
    for source in (vera_extension(tmp_path / "src" / "ctx", "ctx-tools"), terva_extension(tmp_path / "src" / "hi")):
        index.publish(Path(ok("ext", "pack", source, "--output", f"{tmp_path / 'dist'}/")["path"]))
    ok("registry", "add", "acme", index.path, "--root", index.root_file)
    root = index.root_sha256()
    for name in ("ctx-tools", "hello"):
        ok("ext", "install", name, "--yes")
        assert ok("ext", "status", name)["provenance"]["signed"] is True
        shown = human("ext", "status", name).stdout.splitlines()
        assert "signed:         yes" in shown and f"root sha256:    {root}" in shown
        assert "source:         registry acme" in shown  # not "registry acme (registry acme)"
        info = human("ext", "info", name).stdout.splitlines()
        assert f"root sha256: {root}" in info and any(line.startswith("signed:      yes (expires ") for line in info)


def test_a_dotted_vera_id_is_refused_by_registry_publish_saying_why(tmp_path: Path) -> None:
    """The author's case: a Vera id such as acme.word can be installed but no registry index can
    list it: publish says so (no "internal:" message) and the index is left as it was."""
    from tests.publish.helpers import snapshot

    index = tmp_path / "index"
    ok("registry", "init", index, "--name", "mine")
    archive = ok("ext", "pack", vera_extension(tmp_path / "src" / "word", "acme.word"), "--output",
                 f"{tmp_path / 'dist'}/")["path"]
    before = snapshot(index)
    error = fail("invalid_index", "registry", "publish", archive, "--index", index)["error"]
    assert error["message"].startswith("acme.word: a registry index lists extensions by a name of lower-case")
    assert "internal" not in error["message"] and snapshot(index) == before
    ok("ext", "install", archive, *UNVERIFIED)  # what the message says works
