"""Manifest discovery: descend through lone directories to the level holding the manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.archive import find_manifest_root
from pkgmgr.errors import PkgmgrError


def _tree(root: Path, *files: str) -> Path:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.write_text("x")
    return root


@pytest.mark.parametrize("files, expected", [
    (["extension.toml", "README.md"], ""),
    (["extension.json"], ""),
    (["a/extension.toml"], "a"),
    (["owner-repo-abc123/inner/extension.toml", "owner-repo-abc123/inner/x/y"], "owner-repo-abc123/inner"),
    (["a/extension.toml", "a/extension.json"], "a"),
])
def test_found(tmp_path: Path, files: list[str], expected: str) -> None:
    _tree(tmp_path, *files)
    assert find_manifest_root(tmp_path) == (tmp_path / expected if expected else tmp_path)


def _refusal(root: Path, *files: str) -> PkgmgrError:
    _tree(root, *files)
    with pytest.raises(PkgmgrError) as caught:
        find_manifest_root(root)
    assert caught.value.code == "invalid_archive"
    return caught.value


@pytest.mark.parametrize("files, fragment", [
    (["README.md", "pkg/extension.toml"], "found: README.md, pkg/"),  # a level with files stops the descent
    (["a/extension.toml", "b/extension.toml"], "found: a/, b/"),  # so do two directories
    (["only/dirs/"], "in 'only/dirs/'; it is empty"),
    (["pkg/extension.toml", "pkg/SKILL.md"], "contains both an extension manifest and SKILL.md"),
])
def test_refused(tmp_path: Path, files: list[str], fragment: str) -> None:
    assert fragment in _refusal(tmp_path, *files).message


def test_refusal_details_list_what_was_found(tmp_path: Path) -> None:
    assert _refusal(tmp_path, "README.md", "pkg/extension.toml").details["found"] == ["README.md", "pkg/"]


def test_skill_below_the_root_is_fine(tmp_path: Path) -> None:
    _tree(tmp_path, "pkg/extension.toml", "pkg/skills/a/SKILL.md")
    assert find_manifest_root(tmp_path) == tmp_path / "pkg"


def test_long_listing_is_shortened(tmp_path: Path) -> None:
    error = _refusal(tmp_path, *[f"f{i:02}" for i in range(30)])
    assert "(10 more)" in error.message
    assert len(error.details["found"]) == 30
