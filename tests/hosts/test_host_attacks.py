"""The hosts' folders attacked as an outside red team would (issue 25 point 9, host parts): a tree
planted for `pkgmgr adopt`, Vera's records injected, host homes that cannot name a folder,
hostile names reaching messages, and a project's `.eva/`/`.terva/` committed as links.

python-tuf style: each test changes one thing from a setup that works (the control runs too),
runs the command a user would, asserts the error code, then asserts that nothing moved — the
host's folders byte for byte, nothing recorded by pkgmgr.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    entries,
    eva_directory,
    eva_script,
    fail,
    human,
    ok,
    terva_extension,
    vera_extension,
)
from tests.support.cli import run_cli

ID = "acme.context-tools"


def hosts(homes: Homes, *others: Path) -> dict[str, Any]:
    """The hosts' folders (and `others`): what a refused command must leave as it was."""
    return entries(homes.vera, homes.terva, homes.eva, *others)


def listed() -> list[dict[str, Any]]:
    return ok("ext", "list")["extensions"]


# --- adopt of a planted tree ------------------------------------------------------------------------


def planted(homes: Homes, host: str) -> tuple[Path, str]:
    """A hand-installed extension of `host` in its global folder, as adopt finds it."""
    if host == "vera":
        return vera_extension(homes.vera / "extensions" / ID), ID
    if host == "terva":
        return terva_extension(homes.terva / "extensions" / "hello"), "hello"
    return eva_directory(homes.eva / "extensions" / "tasks"), "tasks"


def fifo(tree: Path) -> None:
    os.mkfifo(tree / "pipe")


def link_out(tree: Path) -> None:
    (tree.parent.parent / "secret.txt").write_text("the user's secret\n")
    os.symlink(tree.parent.parent / "secret.txt", tree / "notes.txt")


def other_users_file(tree: Path) -> None:
    os.chown(next(p for p in sorted(tree.iterdir()) if p.is_file()), 12345, 12345)


def other_users_directory(tree: Path) -> None:
    (tree / "lib").mkdir()
    os.chown(tree / "lib", 12345, 12345)


PLANTS = {"fifo": (fifo, "invalid_archive"), "link-out": (link_out, "path_escapes_root"),
          "other-users-file": (other_users_file, "path_escapes_root"),
          "other-users-directory": (other_users_directory, "path_escapes_root")}


@pytest.mark.parametrize("host", ["vera", "terva", "eva"])
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_adopt_refuses_a_planted_tree(tmp_path: Path, homes: Homes, host: str, plant: str) -> None:
    if plant.startswith("other-users") and os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    tree, name = planted(homes, host)
    ok("adopt", "--host", host, name)  # the control: the tree as planted is adopted
    ok("ext", "remove", "--host", host, name)
    tree, name = planted(homes, host)
    change, code = PLANTS[plant]
    change(tree)
    before = hosts(homes, tmp_path / "secret.txt")
    error = fail(code, "adopt", "--host", host, name)["error"]
    assert "pkgmgr does not adopt" in error["message"], error
    assert hosts(homes, tmp_path / "secret.txt") == before
    assert listed() == []


def test_adopt_refuses_an_extension_that_is_a_link(tmp_path: Path, homes: Homes) -> None:
    """Vera discovers a linked extension directory (terva does not list one: `not_found`)."""
    elsewhere = vera_extension(tmp_path / "elsewhere" / ID)
    folder = homes.vera / "extensions"
    folder.mkdir(parents=True)
    os.symlink(elsewhere, folder / ID)
    before = hosts(homes, elsewhere)
    fail("path_escapes_root", "adopt", "--host", "vera", ID)
    assert hosts(homes, elsewhere) == before
    assert listed() == []


def test_adopt_keeps_a_link_that_stays_inside_the_extension(homes: Homes) -> None:
    """The control of the link rule: a link to a file of the extension itself is no escape."""
    tree, name = planted(homes, "terva")
    os.symlink("run.sh", tree / "start.sh")
    [adopted] = ok("adopt", "--host", "terva", name)["adopted"]
    assert adopted["name"] == "hello"


@pytest.mark.parametrize("name", ["../../etc", "/etc", "hello/../../x", ".", ""])
def test_adopt_of_a_name_that_escapes_finds_nothing(tmp_path: Path, homes: Homes, name: str) -> None:
    planted(homes, "terva")
    before = hosts(homes)
    result = run_cli(["adopt", "--host", "terva", name, "-o", "json"])
    assert result.code in (2, 5), result  # usage or not_found: never a path outside the folder
    assert hosts(homes) == before
    assert listed() == []


# --- Vera's records injected ------------------------------------------------------------------------


def record(ext_id: str = "acme.other", **changes: Any) -> dict[str, Any]:
    value = {"id": ext_id, "version": "1.0.0", "digest": "sha256:" + "0" * 64, "directory": f"extensions/{ext_id}",
             "enabled": True, "installedAt": "2026-01-01T00:00:00.000Z",
             "source": {"kind": "local", "path": "/src/other"}}
    return {**value, **changes}


INJECTED = {
    "directory-outside": [record(directory="../../victim")],
    "directory-absolute": [record(directory="/tmp/victim")],
    "id-that-escapes": [record(ext_id="../../victim")],
    "duplicate-id": [record(), record(version="2.0.0")],
    "source-relative": [record(source={"kind": "local", "path": "../victim"})],
    "not-a-record": ["extensions/acme.other"],
}


@pytest.mark.parametrize("attack", sorted(INJECTED))
def test_an_injected_vera_record_is_refused(tmp_path: Path, homes: Homes, attack: str) -> None:
    source = vera_extension(tmp_path / "src" / "ctx")
    homes.vera.mkdir()
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep.txt").write_text("kept\n")
    records = homes.vera / "extensions.json"
    records.write_text(json.dumps({"schema_version": 1, "extensions": [record()]}))
    ok("ext", "install", source, *UNVERIFIED)  # the control: well-formed records are kept
    ok("ext", "remove", ID)
    document = json.loads(records.read_text())
    document["extensions"] = INJECTED[attack]
    records.write_text(json.dumps(document))
    before = hosts(homes, tmp_path / "victim")
    error = fail("invalid_config", "ext", "install", source, *UNVERIFIED)["error"]
    assert error["details"]["path"] == str(records)
    assert hosts(homes, tmp_path / "victim") == before
    assert listed() == []


@pytest.mark.parametrize("marker", ["directory-outside", "a-directory-named-tmp", "a-link"])
def test_an_injected_vera_marker_is_refused(tmp_path: Path, homes: Homes, marker: str) -> None:
    source = vera_extension(tmp_path / "src" / "ctx")
    markers = homes.vera / "extensions" / ".managed"
    markers.mkdir(parents=True)
    if marker == "directory-outside":
        (markers / "acme.other.json").write_text(json.dumps(record(directory="../../victim")))
    elif marker == "a-directory-named-tmp":  # Vera removes leftover .tmp files; pkgmgr never a directory
        (markers / "acme.other.json.1.x.tmp").mkdir()
        (markers / "acme.other.json.1.x.tmp" / "keep.txt").write_text("kept\n")
    else:
        (tmp_path / "elsewhere.json").write_text(json.dumps(record()))
        os.symlink(tmp_path / "elsewhere.json", markers / "acme.other.json")
    before = hosts(homes)
    fail("invalid_config", "ext", "install", source, *UNVERIFIED)
    assert hosts(homes) == before
    assert listed() == []


def test_vera_records_over_the_bound_are_refused_unread(tmp_path: Path, homes: Homes) -> None:
    from pkgmgr.hosts.vera import RECORDS_MAX_BYTES

    source = vera_extension(tmp_path / "src" / "ctx")
    homes.vera.mkdir()
    with open(homes.vera / "extensions.json", "wb") as handle:  # sparse: nothing written but the size
        handle.truncate(RECORDS_MAX_BYTES + 1)
    before = entries(homes.vera)
    error = fail("invalid_config", "ext", "install", source, *UNVERIFIED)["error"]
    assert "larger than" in error["message"]
    assert entries(homes.vera) == before
    assert listed() == []


def test_a_file_where_vera_keeps_its_markers_is_no_internal_error(tmp_path: Path, homes: Homes) -> None:
    source = vera_extension(tmp_path / "src" / "ctx")
    (homes.vera / "extensions").mkdir(parents=True)
    (homes.vera / "extensions" / ".managed").write_text("not a directory\n")
    before = entries(homes.vera)
    fail("path_escapes_root", "ext", "install", source, *UNVERIFIED)
    assert entries(homes.vera) == before
    assert listed() == []


# --- host homes that cannot name a folder ---------------------------------------------------------------


@pytest.mark.parametrize("variable", ["VERA_HOME", "TERVA_HOME"])
@pytest.mark.parametrize("home", ["too-long", "loop", "file-inside"])
def test_a_host_home_that_cannot_name_a_folder_is_invalid_input(tmp_path: Path, variable: str, home: str) -> None:
    """ELOOP, ENAMETOOLONG and ENOTDIR met on a host's home are exit 3 with the path, never 70."""
    source = vera_extension(tmp_path / "src" / "ctx") if variable == "VERA_HOME" else \
        terva_extension(tmp_path / "src" / "hello")
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    (tmp_path / "a-file").write_text("")
    value = {"too-long": tmp_path / ("x" * 300), "loop": loop / "home", "file-inside": tmp_path / "a-file" / "home"}
    before = hosts(Homes(tmp_path), tmp_path / "a-file")
    result = run_cli(["ext", "install", str(source), *UNVERIFIED, "-o", "json"], env={variable: str(value[home])})
    assert result.code == 3, result
    assert result.json["error"]["code"] in ("invalid_config", "path_escapes_root"), result
    assert hosts(Homes(tmp_path), tmp_path / "a-file") == before
    assert listed() == []


def test_path_errors_map_to_codes() -> None:
    import errno

    from pkgmgr.errors import path_error

    assert path_error(OSError(errno.ENAMETOOLONG, "File name too long", "/x")).code == "invalid_config"
    assert path_error(OSError(errno.ELOOP, "Too many levels of symbolic links", "/x")).code == "path_escapes_root"
    assert path_error(OSError(errno.ENOTDIR, "Not a directory", "/x")).code == "path_escapes_root"
    assert path_error(OSError(errno.EIO, "Input/output error", "/x")) is None
    assert path_error(ValueError("x")) is None


# --- hostile names reaching messages ---------------------------------------------------------------------


HOSTILE = "\x1b[2J\x1b]0;pwned\x07evil\u202egnp\r"


def test_a_hostile_name_in_a_host_folder_reaches_no_terminal_raw(homes: Homes) -> None:
    """A script whose name clears the screen, retitles the terminal, reorders the line (Trojan
    Source) and returns the cursor: `adopt`'s refusal names it escaped."""
    folder = homes.eva / "extensions"
    eva_script(folder, "notes")
    (folder / f"{HOSTILE}.exs").write_text("defmodule Evil do\nend\n")
    result = human("adopt", "--host", "eva")
    assert result.code == 3, result
    for raw in ("\x1b", "\x07", "\u202e", "\r"):
        assert raw not in result.stderr and raw not in result.stdout, result
    assert "\\x1b[2J\\x1b]0;pwned\\x07evil\\u202egnp\\x0d" in result.stderr, result
    assert listed() == []


def test_a_hostile_host_home_is_shown_escaped_in_a_table(tmp_path: Path) -> None:
    """`pkgmgr hosts` draws a table of the hosts' homes: a home named by a variable with ESC
    sequences is shown escaped, and the table's own layout is kept."""
    result = run_cli(["hosts"], env={"VERA_HOME": str(tmp_path / "v\x1b[2J\u202ex")})
    assert result.code == 0, result
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout, result
    assert "v\\x1b[2J\\u202ex" in result.stdout, result


def test_terminal_text_escapes_what_a_terminal_acts_on() -> None:
    from pkgmgr.patterns import terminal_text

    assert terminal_text("plain\ttab\nnext line, é, 名前") == "plain\ttab\nnext line, é, 名前"
    assert terminal_text(HOSTILE) == "\\x1b[2J\\x1b]0;pwned\\x07evil\\u202egnp\\x0d"
    assert terminal_text("\x9b31m\u2066x\u2069\udcff") == "\\x9b31m\\u2066x\\u2069\\udcff"


# --- a project's host folders committed as links --------------------------------------------------------


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "user-home" / "project"
    root.mkdir(parents=True)
    (root / "pkgmgr.toml").write_text("")
    return root


@pytest.mark.parametrize("trusted", [False, True])
@pytest.mark.parametrize("host", ["eva", "terva"])
def test_a_project_host_folder_committed_as_a_link_is_never_written_through(tmp_path: Path, homes: Homes,
                                                                           host: str, trusted: bool) -> None:
    """A repository commits `.eva` (or `.terva/extensions`) as a link to the user's own folder:
    a project install would land in the user's global extensions, loaded in every project."""
    root = workspace(tmp_path)
    if host == "eva":
        source = eva_script(tmp_path / "src", "notes")
        (homes.eva / "extensions").mkdir(parents=True)
        os.symlink(homes.eva, root / ".eva")
        target = homes.eva
    else:
        source = terva_extension(tmp_path / "src" / "hello")
        (homes.terva / "extensions").mkdir(parents=True)
        (root / ".terva").mkdir()
        os.symlink(homes.terva / "extensions", root / ".terva" / "extensions")
        target = homes.terva
    if trusted:
        ok("trust", cwd=root)
    before = entries(target, root)
    fail("path_escapes_root", "--scope", "workspace", "ext", "install", source, *UNVERIFIED, cwd=root)
    assert entries(target, root) == before
    assert ok("--scope", "workspace", "ext", "list", cwd=root)["extensions"] == []
