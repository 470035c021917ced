"""`Workspace`: one command's view of a workspace — its pkgmgr.toml, its lock, its store and
its trust state, each read once, under a root that does not depend on how it was spelt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.workspace import trust
from pkgmgr.workspace.lockfile import Lock, LockEntry
from pkgmgr.workspace.workspace import Workspace
from tests.support.stores import store_root
from tests.workspace.helpers import write_local_tool

MANIFEST = """\
[registries]
team = "https://team.example/index/"

[extensions]
team-crew = "<0.2"
local-tool = { path = "tools/local-tool" }
other-tool = { path = "tools/other-tool" }
gh-tool = { github = "acme/gh-tool@v1.0.0" }
"""

LOCK = Lock((LockEntry("team-crew", "0.1.0", "registry+https://team.example/index/",
                       "https://team.example/index/archives/team-crew-0.1.0.tar.gz", "a" * 64, "sha256-2:" + "b" * 64, ""),))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "user-home" / "src" / "project"
    write_local_tool(root / "tools" / "local-tool")
    write_local_tool(root / "tools" / "other-tool", version="0.2.0")
    (root / "pkgmgr.toml").write_text(MANIFEST, encoding="utf-8")
    return root


def approve(home: Path, ws: Path) -> str:
    digest = Workspace(ws, home).trust_state().digest
    trust.approve(home, ws, digest, by="test")
    return digest


# --- reading -------------------------------------------------------------------------------------


def test_reads_the_declaration_and_creates_nothing(home: Path, ws: Path) -> None:
    before = sorted(p.relative_to(ws) for p in ws.rglob("*"))
    w = Workspace(ws, home)
    assert w.root == ws and w.home == home
    assert w.manifest.raw == MANIFEST.encode()
    assert [(d.name, d.kind) for d in w.manifest.extensions] == [
        ("team-crew", "registry"), ("local-tool", "path"), ("other-tool", "path"), ("gh-tool", "github")]
    assert (w.lock, w.lock_raw) == (None, None)
    assert sorted(p.relative_to(ws) for p in ws.rglob("*")) == before
    assert not home.exists()


def test_reads_the_lock(home: Path, ws: Path) -> None:
    (ws / "pkgmgr.lock").write_bytes(LOCK.render())
    w = Workspace(ws, home)
    assert w.lock == LOCK and w.lock_raw == LOCK.render()


def test_a_missing_pkgmgr_toml_is_not_found(home: Path, tmp_path: Path) -> None:
    with pytest.raises(PkgmgrError) as exc:
        Workspace(tmp_path, home)
    assert exc.value.code == "not_found" and "pkgmgr.toml" in exc.value.message


def test_an_invalid_lock_is_an_invalid_config(home: Path, ws: Path) -> None:
    (ws / "pkgmgr.lock").write_text("version = 1\nextra = 2\n", encoding="utf-8")
    with pytest.raises(PkgmgrError) as exc:
        Workspace(ws, home)
    assert exc.value.code == "invalid_config" and "pkgmgr.lock" in exc.value.message


def test_the_store_is_the_workspace_s_and_sees_the_global_scope(home: Path, ws: Path) -> None:
    scope = Workspace(ws, home).scope
    assert (scope.kind, scope.root, scope.workspace) == ("workspace", store_root(ws, home), ws)
    assert scope.parent is not None and (scope.parent.kind, scope.parent.root) == ("global", home)


def test_the_root_is_resolved(home: Path, ws: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-project"
    link.symlink_to(ws, target_is_directory=True)
    spellings = [ws / "tools" / "..", link, Path(os.path.relpath(ws))]
    for spelling in spellings:
        w = Workspace(spelling, home)
        assert w.root == ws.resolve() and w.scope.workspace == ws.resolve()


def test_an_approval_holds_whatever_the_spelling(home: Path, ws: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-project"
    link.symlink_to(ws, target_is_directory=True)
    approve(home, link)
    assert Workspace(ws, home).trusted
    assert Workspace(ws / "tools" / "..", home).trusted


def test_path_extensions_in_declaration_order(home: Path, ws: Path) -> None:
    assert Workspace(ws, home).path_extensions() == [("local-tool", "tools/local-tool"),
                                                    ("other-tool", "tools/other-tool")]


# --- the trust digest ------------------------------------------------------------------------------


def test_the_digest_covers_manifest_lock_and_path_trees(home: Path, ws: Path) -> None:
    (ws / "pkgmgr.lock").write_bytes(LOCK.render())
    w = Workspace(ws, home)
    expected = trust.compute(MANIFEST.encode(), LOCK.render(), ws,
                             [("local-tool", "tools/local-tool"), ("other-tool", "tools/other-tool")])
    assert w.trust_state() == expected


def test_the_trust_state_is_computed_once(home: Path, ws: Path) -> None:
    w = Workspace(ws, home)
    state = w.trust_state()
    (ws / "tools" / "local-tool" / "bin" / "serve").write_text("changed\n")
    assert w.trust_state() is state  # read once per command
    assert Workspace(ws, home).trust_state().digest != state.digest  # a new command sees the change


def test_path_tree_is_the_tree_the_digest_covers(home: Path, ws: Path) -> None:
    w = Workspace(ws, home)
    assert w.path_tree("local-tool") == trust.path_tree(ws, "tools/local-tool")
    assert w.path_tree("other-tool") == trust.path_tree(ws, "tools/other-tool")
    assert w.path_tree("local-tool") != w.path_tree("other-tool")
    (ws / "tools" / "other-tool" / "extension.toml").unlink()
    (ws / "tools" / "other-tool" / "bin" / "serve").unlink()
    (ws / "tools" / "other-tool" / "bin").rmdir()
    (ws / "tools" / "other-tool").rmdir()
    assert w.path_tree("other-tool") != "missing"  # already hashed for this command
    assert Workspace(ws, home).path_tree("other-tool") == "missing"


def test_digest_with_lock_is_the_digest_after_writing_that_lock(home: Path, ws: Path) -> None:
    w = Workspace(ws, home)
    current = w.trust_state().digest
    assert w.digest_with_lock(b"") != current  # an empty lock is not an absent lock
    after = w.digest_with_lock(LOCK.render())
    assert after != current
    (ws / "pkgmgr.lock").write_bytes(LOCK.render())
    assert Workspace(ws, home).trust_state().digest == after


def test_digest_with_lock_reuses_the_hashed_trees(home: Path, ws: Path) -> None:
    w = Workspace(ws, home)
    state = w.trust_state()
    (ws / "tools" / "local-tool" / "bin" / "serve").write_text("changed\n")
    assert w.digest_with_lock(LOCK.render()) == trust.compute(MANIFEST.encode(), LOCK.render(), ws, [],
                                                              trees=state.paths).digest


def test_digest_with_the_same_lock_is_unchanged(home: Path, ws: Path) -> None:
    (ws / "pkgmgr.lock").write_bytes(LOCK.render())
    w = Workspace(ws, home)
    assert w.digest_with_lock(LOCK.render()) == w.trust_state().digest


# --- trust -----------------------------------------------------------------------------------------


def test_untrusted_until_approved(home: Path, ws: Path) -> None:
    assert Workspace(ws, home).trusted is False
    approve(home, ws)
    assert Workspace(ws, home).trusted is True


def test_trusted_is_decided_once_per_command(home: Path, ws: Path) -> None:
    w = Workspace(ws, home)
    assert w.trusted is False
    approve(home, ws)
    assert w.trusted is False  # this command's answer stands
    assert Workspace(ws, home).trusted is True


def test_any_change_needs_a_new_approval(home: Path, ws: Path) -> None:
    approve(home, ws)
    (ws / "pkgmgr.toml").write_text(MANIFEST + "\n# a comment counts too\n", encoding="utf-8")
    assert Workspace(ws, home).trusted is False
    (ws / "pkgmgr.toml").write_text(MANIFEST, encoding="utf-8")
    assert Workspace(ws, home).trusted is True
    (ws / "pkgmgr.lock").write_bytes(LOCK.render())
    assert Workspace(ws, home).trusted is False


def test_require_trust_refuses_an_unapproved_workspace(home: Path, ws: Path) -> None:
    w = Workspace(ws, home)
    with pytest.raises(PkgmgrError) as exc:
        w.require_trust()
    error = exc.value
    assert error.code == "trust_required" and error.exit_code == 4
    assert error.details == {"digest": w.trust_state().digest}
    assert str(ws / "pkgmgr.toml") in error.message
    assert error.hint is not None and f"pkgmgr trust --show --workspace {ws}" in error.hint


def test_require_trust_passes_once_approved(home: Path, ws: Path) -> None:
    approve(home, ws)
    Workspace(ws, home).require_trust()


def test_a_store_left_in_the_work_tree_changes_nothing(home: Path, ws: Path) -> None:
    """A `.pkgmgr/` committed to the repository (or left by an earlier version) is not the store."""
    approve(home, ws)
    store = ws / ".pkgmgr"
    (store / "extensions" / "team-crew" / "0.1.0").mkdir(parents=True)
    (store / "state.db").write_bytes(b"committed by someone else")
    w = Workspace(ws, home)
    w.require_trust()
    assert w.scope.root == store_root(ws, home) and w.scope.reader() is None  # nothing installed


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
@pytest.mark.parametrize("foreign", ["root", "pkgmgr.toml"])
def test_a_workspace_another_user_owns_is_refused_naming_the_owner(home: Path, ws: Path, foreign: str) -> None:
    approve(home, ws)  # even an approval made before the ownership changed does not stand
    os.chown(ws if foreign == "root" else ws / "pkgmgr.toml", 12345, 12345)
    with pytest.raises(PkgmgrError) as exc:
        Workspace(ws, home)
    assert exc.value.code == "trust_required" and "uid 12345" in exc.value.message
    assert not (home / "workspaces").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_pkgmgr_toml_linked_to_another_users_file_is_refused(home: Path, ws: Path) -> None:
    target = ws / "theirs.toml"
    (ws / "pkgmgr.toml").rename(target)
    (ws / "pkgmgr.toml").symlink_to(target)
    Workspace(ws, home)  # a link to one's own file is fine
    os.chown(target, 12345, 12345)
    with pytest.raises(PkgmgrError) as exc:
        Workspace(ws, home)
    assert exc.value.code == "trust_required" and str(ws / "pkgmgr.toml") in exc.value.message
