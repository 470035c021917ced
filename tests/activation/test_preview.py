"""`bundle preview` driven directly: the activation it would create, its inventory, and that a
preview writes nothing (the command's end is tests/e2e/test_bundle_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

from pkgmgr.activation.preview import preview_activation
from pkgmgr.config import load_config
from pkgmgr.store.scope import global_scope

from .helpers import NAME, OPS_DIGEST, activate, installed, make_ext, state


def test_preview_of_a_new_activation_computes_it_and_writes_nothing(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    before = state(home)
    preview = preview_activation(global_scope(home), NAME, config=load_config(home))
    document = preview.document
    assert document["exists"] is False and preview.existing is None
    assert document["activation"]["status"] == "awaiting_confirmation" and preview.needs_confirmation
    assert document["activation"]["network_digest"] == OPS_DIGEST
    assert [a["name"] for a in document["inventory"]["agents"]] == ["planner"]
    assert document["conflicts"] == [] and document["resources"]
    assert state(home) == before


def test_preview_of_an_existing_activation_shows_its_row(tmp_path: Path, home: Path) -> None:
    make_ext(tmp_path / "src")
    installed(tmp_path / "src")
    made = activate(NAME, "--confirm-network-requirement", OPS_DIGEST)
    preview = preview_activation(global_scope(home), NAME, config=load_config(home))
    assert preview.document["exists"] is True and preview.existing is not None
    assert preview.document["activation"]["id"] == made["activation"]["id"]
    assert not preview.needs_confirmation
