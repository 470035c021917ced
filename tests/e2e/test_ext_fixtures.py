"""End-to-end: every checked-in fixture validates, packs reproducibly and installs in both
scopes from its directory, its packed .tar.gz and a .zip."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURE_NAMES, FIXTURES, copy_fixture, fail, install, ok
from tests.support.builders import write_extension, zip_dir
from tests.support.stores import store_root


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pack(source: Path, output: Path) -> dict:
    packed = ok("ext", "pack", source, "--output", output)
    assert packed["path"] == str(output) and output.is_file()
    assert packed["sha256"] == sha256(output) and packed["size"] == output.stat().st_size
    return packed


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_validates(name: str) -> None:
    valid = ok("ext", "validate", FIXTURES / name)
    assert valid["valid"] is True and valid["name"] == name and valid["version"] == "0.1.0"
    assert valid["kind"] == ("subprocess" if name == "prompt-enhancer" else "resource")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
@pytest.mark.parametrize("form", ["directory", "tar.gz", "zip"])
@pytest.mark.parametrize("scope", ["global", "workspace"])
def test_fixture_installs(name: str, form: str, scope: str, tmp_path: Path, home: Path) -> None:
    if form == "directory":
        ref = FIXTURES / name
    elif form == "tar.gz":
        ref = tmp_path / f"{name}.tar.gz"
        pack(FIXTURES / name, ref)
        assert ok("ext", "validate", ref)["name"] == name
    else:
        ref = zip_dir(tmp_path / f"{name}.zip", FIXTURES / name)
        assert ok("ext", "validate", ref)["name"] == name
    workspace = tmp_path / "ws"
    workspace.mkdir()
    where = ("--scope", "workspace", "--workspace", workspace) if scope == "workspace" else ()
    done = install(ref, extra=where)
    [entry] = done["installed"]
    assert entry["name"] == name and entry["version"] == "0.1.0" and entry["scope"] == scope
    assert entry["source"] == ("path" if form == "directory" else "archive")
    assert entry["verified"] is False
    assert entry["sha256"] == (None if form == "directory" else sha256(Path(ref)))
    root = store_root(workspace) if scope == "workspace" else home
    assert (root / "extensions" / name / "0.1.0" / "extension.toml").is_file()
    if scope == "global":
        assert not store_root(workspace).exists()
    [listed] = ok("ext", "list", *where)["extensions"]
    assert (listed["name"], listed["scope"], listed["path"]) == (name, scope, str(root / "extensions" / name / "0.1.0"))
    assert ok("ext", "verify", name, *where)["verified"][0]["ok"] is True


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_directory_and_archives_install_the_same_tree(name: str, tmp_path: Path) -> None:
    install(FIXTURES / name)
    from_dir = ok("ext", "status", name)["tree_sha256"]
    ok("ext", "remove", name)
    install(pack(FIXTURES / name, tmp_path / "a.tar.gz")["path"])
    from_tar = ok("ext", "status", name)["tree_sha256"]
    ok("ext", "remove", name)
    install(zip_dir(tmp_path / "a.zip", FIXTURES / name))
    assert from_dir == from_tar == ok("ext", "status", name)["tree_sha256"]


# --- pack reproducibility (SPEC 3) ---------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_pack_twice_gives_identical_bytes(name: str, tmp_path: Path) -> None:
    first = pack(FIXTURES / name, tmp_path / "one.tar.gz")
    second = pack(FIXTURES / name, tmp_path / "two.tar.gz")
    assert first["sha256"] == second["sha256"]
    copy = copy_fixture(name, tmp_path / "copy")
    for path in [copy, *copy.rglob("*")]:
        os.utime(path, (1_000_000_000, 1_000_000_000), follow_symlinks=False)
    third = pack(copy, tmp_path / "three.tar.gz")
    assert third["sha256"] == first["sha256"]


def test_pack_default_output_is_name_version_in_the_current_directory(tmp_path: Path) -> None:
    from tests.support.cli import run_cli

    result = run_cli(["ext", "pack", FIXTURES / "review-pack", "-o", "json"], cwd=tmp_path)
    assert result.code == 0, result
    assert result.json["path"] == str(tmp_path / "review-pack-0.1.0.tar.gz")


def test_pack_refuses_an_invalid_extension(tmp_path: Path) -> None:
    bad = write_extension(tmp_path / "bad", {"name": "bad-ext", "version": "1.0", "min_compozy_version": "0.5.0"})
    output = tmp_path / "bad.tar.gz"
    doc = fail("invalid_manifest", "ext", "pack", bad, "--output", output)
    assert doc["error"]["exit_code"] == 3
    problems = doc["error"]["details"]["problems"]
    assert [(p["file"], p["key"]) for p in problems] == [("extension.toml", "extension.version")]
    assert not output.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "bad"]


def test_pack_of_a_missing_directory_is_not_found(tmp_path: Path) -> None:
    fail("not_found", "ext", "pack", tmp_path / "nothing")
    archive = shutil.make_archive(str(tmp_path / "x"), "gztar", FIXTURES / "review-pack")
    fail("not_found", "ext", "pack", archive)
