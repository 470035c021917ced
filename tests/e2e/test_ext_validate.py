"""End-to-end: `ext validate` (and install) of broken manifests, escaping symlinks and hostile
archives — every problem named by file and key, in human and JSON modes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.archive.corpus import ATTACKS, Attack
from tests.cli.helpers import FIXTURES, UNVERIFIED, copy_fixture, fail, human, install, ok, tree
from tests.support.builders import minimal_manifest, tar_gz, write_extension

BROKEN = """\
name = "Bad_Name"
version = "1.0"
min_compozy_version = "0.5.0"
bogus = 1

[resources]
skills = ["missing-dir"]

[subprocess]
command = "node"

[subprocess.env]
API_TOKEN = "x"
"""
BROKEN_KEYS = [  # bogus = 1 is an unknown top-level key: Compozy ignores it, pkgmgr warns
    ("extension.toml", "extension.name"),
    ("extension.toml", "extension.version"),
    ("extension.toml", "resources.skills[0]"),
    ("extension.toml", "subprocess.env.API_TOKEN"),
]


def problems_of(document: dict) -> list[tuple[str, str]]:
    return [(p["file"], p["key"]) for p in document["error"]["details"]["problems"]]


def test_broken_manifest_reports_every_problem_in_json(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "bad", BROKEN)
    document = fail("invalid_manifest", "ext", "validate", root)
    assert document["error"]["exit_code"] == 3
    assert problems_of(document) == BROKEN_KEYS
    for problem in document["error"]["details"]["problems"]:
        assert problem["code"] == "invalid_manifest" and problem["message"]


def test_broken_manifest_reports_every_problem_on_stderr(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "bad", BROKEN)
    result = human("ext", "validate", root, code=3)
    assert result.stdout == ""
    assert result.stderr.startswith("error[invalid_manifest]: ")
    for file, key in BROKEN_KEYS:
        assert f"{file}: {key}: " in result.stderr
    assert "Traceback" not in result.stderr


def test_json_manifest_is_named_in_problems(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "bad", {**minimal_manifest(), "version": "01.0.0", "extra": True},
                           json_manifest=True)
    assert problems_of(fail("invalid_manifest", "ext", "validate", root)) == [
        ("extension.json", "extension.version")]


def test_invalid_toml_is_reported_with_its_file(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "bad", "name = \n")
    [(file, _)] = problems_of(fail("invalid_manifest", "ext", "validate", root))
    assert file == "extension.toml"


def test_broken_bundle_names_the_bundle_file(tmp_path: Path) -> None:
    root = copy_fixture("release-crew", tmp_path)
    path = root / "bundles" / "release.toml"
    path.write_text(path.read_text().replace('event = "git.tag.created"', 'event = "webhook"')
                    .replace('name = "release"\n', 'name = ""\n'))
    document = run_json_failure(root)
    assert document["error"]["exit_code"] == 3
    assert all(file == "bundles/release.toml" for file, _ in problems_of(document))
    assert any(key.startswith("bundle.profiles[0].triggers[0]") for _, key in problems_of(document))


def run_json_failure(root: Path) -> dict:
    from tests.support.cli import run_cli

    result = run_cli(["ext", "validate", root, "--json"])
    assert result.code == 3, result
    return result.json


def test_broken_manifest_inside_an_archive(tmp_path: Path) -> None:
    archive = tar_gz(tmp_path / "bad.tar.gz", {"bad/extension.toml": BROKEN})
    assert problems_of(fail("invalid_manifest", "ext", "validate", archive)) == BROKEN_KEYS


def test_install_of_a_broken_manifest_changes_nothing(tmp_path: Path, home: Path) -> None:
    root = write_extension(tmp_path / "bad", BROKEN)
    document = fail("invalid_manifest", "ext", "install", root, *UNVERIFIED)
    assert problems_of(document) == BROKEN_KEYS
    assert document["installed"] == [] and document["failed"][0]["ref"] == str(root)
    assert tree(home / "extensions") == [] and tree(home / ".staging") == []


def test_validate_of_a_missing_path_is_not_found(tmp_path: Path) -> None:
    fail("not_found", "ext", "validate", tmp_path / "nothing")


# --- symlinks in a source directory (SPEC 3) -------------------------------------------------------


def test_symlink_escaping_the_root_is_refused(tmp_path: Path, home: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside\n")
    root = write_extension(tmp_path / "ext", files={"docs/readme.md": "hi\n"})
    os.symlink(tmp_path / "secret.txt", root / "docs" / "leak.txt")
    fail("path_escapes_root", "ext", "install", root, *UNVERIFIED)
    fail("path_escapes_root", "ext", "pack", root, "--output", tmp_path / "x.tar.gz")
    assert not (tmp_path / "x.tar.gz").exists()
    assert tree(home / "extensions") == []


def test_dangling_symlink_is_refused(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext")
    os.symlink(tmp_path / "nowhere", root / "dangling")
    fail("path_escapes_root", "ext", "install", root, *UNVERIFIED)


def test_symlink_inside_the_root_is_followed(tmp_path: Path, home: Path) -> None:
    root = write_extension(tmp_path / "ext", files={"docs/readme.md": "hi\n"})
    os.symlink("docs/readme.md", root / "README.md")
    install(root)
    copied = home / "extensions" / "demo-ext" / "0.1.0" / "README.md"
    assert copied.read_text() == "hi\n" and not copied.is_symlink()


def test_resource_path_escaping_through_a_symlink_is_path_escapes_root(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    root = write_extension(tmp_path / "ext", minimal_manifest(resources={"skills": ["skills"]}))
    os.symlink(tmp_path / "elsewhere", root / "skills")
    document = fail("path_escapes_root", "ext", "validate", root)
    assert ("extension.toml", "resources.skills[0]") in problems_of(document)


# --- archives -----------------------------------------------------------------------------------


def test_archive_named_differently_from_its_manifest_installs(tmp_path: Path, home: Path) -> None:
    archive = tmp_path / "totally-unrelated-name-9.9.9.tar.gz"
    ok("ext", "pack", FIXTURES / "review-pack", "--output", archive)
    [entry] = install(archive)["installed"]
    assert (entry["name"], entry["version"]) == ("review-pack", "0.1.0")
    assert (home / "extensions" / "review-pack" / "0.1.0").is_dir()


HOSTILE = [a for a in ATTACKS if a.limits == type(a.limits)() and a.code == "unsafe_archive"][::4]


@pytest.mark.parametrize("attack", HOSTILE, ids=[a.id for a in HOSTILE])
def test_hostile_archive_is_refused_and_writes_nothing(attack: Attack, tmp_path: Path, home: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    archives = tmp_path / "archives"
    archives.mkdir()
    archive = attack.build(archives / attack.id, tmp_path)
    before = tree(tmp_path)
    fail("unsafe_archive", "ext", "validate", archive)
    assert tree(tmp_path) == before
    assert list(temp.iterdir()) == []
    fail("unsafe_archive", "ext", "install", archive, *UNVERIFIED)
    assert tree(home / "extensions") == [] and tree(home / ".staging") == []
    assert list(temp.iterdir()) == []
    assert not any(p.name.startswith("pwned") for p in tmp_path.rglob("*"))


def test_directory_with_manifest_and_skill_md_at_one_level(tmp_path: Path) -> None:
    archive = tar_gz(tmp_path / "x.tar.gz", {"pkg/extension.toml": "name = 'x'", "pkg/SKILL.md": "# s\n"})
    fail("invalid_archive", "ext", "validate", archive)
