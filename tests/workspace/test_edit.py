"""`--save` edits of pkgmgr.toml (tomlkit): comments and layout kept, approvals kept."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.workspace import trust
from pkgmgr.workspace.declaration import read_workspace_manifest
from pkgmgr.workspace.edit import declaration_for, edit_manifest, save_installed, save_removed

TEXT = """\
# header comment
[extensions]   # the table
review-pack = { version = "==0.1.0", registry = "acme" }  # keep the registry
other-ext = "*"

[[activations]]  # first
extension = "other-ext"

# between
[[activations]]  # second
extension = "review-pack"
bundle = "b"
"""


def result(ref: str, name: str, kind: str, source: str = "", version: str = "0.2.0") -> SimpleNamespace:
    installed = SimpleNamespace(name=name, version=version, source_kind=kind, source=source)
    return SimpleNamespace(ref=ref, outcome=SimpleNamespace(installed=installed))


def approved(ws: Path, home: Path) -> bool:
    manifest = read_workspace_manifest(ws)
    state = trust.compute(manifest.raw, None, ws, [])
    return state.digest in trust.approved_digests(home, ws)


def test_declarations(tmp_path: Path) -> None:
    assert declaration_for("review-pack", result("", "review-pack", "registry").outcome.installed, tmp_path) == \
        ">=0.2.0"
    assert declaration_for("review-pack@<0.3", result("", "review-pack", "registry").outcome.installed,
                           tmp_path) == "<0.3"
    local = result("", "local-tool", "path", str(tmp_path / "tools" / "local-tool")).outcome.installed
    assert dict(declaration_for(str(tmp_path / "tools" / "local-tool"), local, tmp_path)) == {
        "path": "tools/local-tool"}
    outside = result("", "x-ext", "path", "/elsewhere/x").outcome.installed
    with pytest.raises(PkgmgrError) as caught:
        declaration_for("/elsewhere/x", outside, tmp_path)
    assert caught.value.code == "usage"
    gh = result("", "gh-tool", "github", "acme/gh-tool").outcome.installed
    assert dict(declaration_for("github:acme/gh-tool@v1.0.0", gh, tmp_path)) == {"github": "acme/gh-tool@v1.0.0"}
    assert declaration_for("https://x.example/a.tar.gz", SimpleNamespace(source_kind="url"), tmp_path) is None


def test_save_keeps_layout_and_the_registry(tmp_path: Path, home: Path) -> None:
    (tmp_path / "pkgmgr.toml").write_text(TEXT)
    manifest = read_workspace_manifest(tmp_path)
    trust.approve(home, tmp_path, trust.compute(manifest.raw, None, tmp_path, []).digest, by="me")
    warnings: list[str] = []
    saved = save_installed(tmp_path, home, [result("review-pack@==0.2.0", "review-pack", "registry"),
                                            result("https://x/a.tar.gz", "url-ext", "url")], warnings.append)
    assert saved == ["review-pack"] and "url-ext" in warnings[0]
    text = (tmp_path / "pkgmgr.toml").read_text()
    assert text == TEXT.replace('version = "==0.1.0"', 'version = "==0.2.0"')
    assert approved(tmp_path, home)


def test_remove_drops_declaration_and_activations_in_place(tmp_path: Path, home: Path) -> None:
    (tmp_path / "pkgmgr.toml").write_text(TEXT)
    assert save_removed(tmp_path, home, ["review-pack", "not-declared"]) == ["review-pack"]
    text = (tmp_path / "pkgmgr.toml").read_text()
    assert "review-pack" not in text
    for line in ("# header comment", "[extensions]   # the table", "[[activations]]  # first", "# between"):
        assert line in text
    assert save_removed(tmp_path, home, ["other-ext"]) == ["other-ext"]
    assert "[[activations]]" not in (tmp_path / "pkgmgr.toml").read_text()
    assert not approved(tmp_path, home)  # it was not approved before: the edits do not approve it


def test_an_edit_that_would_be_invalid_is_not_written(tmp_path: Path, home: Path) -> None:
    (tmp_path / "pkgmgr.toml").write_text(TEXT)

    def change(doc) -> None:  # noqa: ANN001
        doc["extensions"]["Bad Name"] = "*"

    with pytest.raises(ValidationFailed):
        edit_manifest(tmp_path, home, change)
    assert (tmp_path / "pkgmgr.toml").read_text() == TEXT


def test_removing_from_a_workspace_without_pkgmgr_toml(tmp_path: Path, home: Path) -> None:
    assert save_removed(tmp_path, home, ["x-ext"]) == []
    assert not (tmp_path / "pkgmgr.toml").exists()


def test_a_pkgmgr_toml_starting_with_a_byte_order_mark_is_edited(tmp_path: Path, home: Path) -> None:
    (tmp_path / "pkgmgr.toml").write_bytes(b"\xef\xbb\xbf" + TEXT.encode())  # tomlkit alone: exit 70
    assert save_removed(tmp_path, home, ["review-pack"]) == ["review-pack"]
    text = (tmp_path / "pkgmgr.toml").read_text()
    assert "review-pack" not in text and text.startswith("# header comment")
