"""`ext verify` of the store's installs, driven directly: the verdict per tree, the
`tree_modified` error and its reinstall hint."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.archive import tree_checksum_and_listing, tree_report
from pkgmgr.store.verify import reinstall_hint, verify_installed


def _tree(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "extension.toml").write_text("name = 'x-ext'\n")
    return root


def _item(directory: Path, checksum: str, listing: dict[str, str]) -> SimpleNamespace:
    return SimpleNamespace(name="x-ext", version="1.0.0", directory=directory, tree_sha256=checksum,
                           tree_listing=listing, source_kind="registry", source="acme")


def test_an_intact_tree_is_ok_and_no_error(tmp_path: Path) -> None:
    root = _tree(tmp_path / "x")
    checksum, listing = tree_checksum_and_listing(root)
    results, error = verify_installed([_item(root, checksum, listing)])  # type: ignore[list-item]
    assert error is None
    assert results == [{"name": "x-ext", "version": "1.0.0", "ok": True, "added": [], "removed": [], "modified": [],
                        "tree_sha256": checksum, "recorded_tree_sha256": checksum}]


def test_each_change_is_listed_and_the_error_names_it(tmp_path: Path) -> None:
    root = _tree(tmp_path / "x")
    checksum, listing = tree_checksum_and_listing(root)
    (root / "bin" / "tool").write_text("changed\n")
    (root / "extra").write_text("x")
    (root / "extension.toml").unlink()
    results, error = verify_installed([_item(root, checksum, listing)])  # type: ignore[list-item]
    assert (results[0]["ok"], results[0]["added"], results[0]["removed"], results[0]["modified"]) == \
        (False, ["extra"], ["extension.toml"], ["bin/tool"])
    assert error is not None and error.code == "tree_modified"
    assert error.message == "installed files differ from what was installed: x-ext 1.0.0: 1 added, 1 removed, 1 modified"
    assert error.hint == "reinstall it with 'pkgmgr ext install x-ext@1.0.0 --force'"


def test_a_missing_tree_lists_every_recorded_file_as_removed(tmp_path: Path) -> None:
    assert tree_report("c", {"b": "1", "a": "2"}, None) == {
        "ok": False, "missing": True, "added": [], "removed": ["a", "b"], "modified": []}
    results, error = verify_installed([_item(tmp_path / "gone", "c", {"a": "2"})])  # type: ignore[list-item]
    assert results[0]["missing"] and error is not None and "x-ext 1.0.0: directory missing" in error.message


@pytest.mark.parametrize("kind, source, expected", [
    ("path", "/src/x-ext", "pkgmgr ext install /src/x-ext --force --allow-unverified"),
    ("archive", "/dl/x.tar.gz", "pkgmgr ext install /dl/x.tar.gz --force --allow-unverified"),
    ("url", "https://example.org/x.tar.gz", "pkgmgr ext install https://example.org/x.tar.gz --force "
                                            "--allow-unverified"),
    ("github", "acme/x", "pkgmgr ext install github:acme/x --force --allow-unverified"),
    ("registry", "acme", "pkgmgr ext install x-ext@1.0.0 --force"),
])
def test_the_reinstall_hint_names_the_recorded_source(kind: str, source: str, expected: str) -> None:
    item = SimpleNamespace(name="x-ext", version="1.0.0", source_kind=kind, source=source)
    assert reinstall_hint(item)  # type: ignore[arg-type] == f"reinstall it with '{expected}'"
