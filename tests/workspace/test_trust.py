"""Trust: the digest, approvals kept across pkgmgr's own writes, and workspace discovery (which stops at $HOME and at directories the user does not own)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.config import RegistryConfig
from pkgmgr.store.scope import discover_workspace
from pkgmgr.workspace import trust
from tests.workspace.helpers import write_local_tool


def digest(root: Path, manifest: bytes = b"m", lock: bytes | None = b"l") -> str:
    return trust.compute(manifest, lock, root, [("local-tool", "tools/local-tool")]).digest


def test_digest_covers_manifest_lock_and_path_trees(tmp_path: Path) -> None:
    tool = write_local_tool(tmp_path / "tools" / "local-tool")
    base = digest(tmp_path)
    assert digest(tmp_path) == base
    assert len({base, digest(tmp_path, manifest=b"m2"), digest(tmp_path, lock=b"l2"),
                digest(tmp_path, lock=None), digest(tmp_path, lock=b"")}) == 5
    (tool / "bin" / "serve").write_text("changed")
    changed = digest(tmp_path)
    assert changed != base
    (tool / ".git").mkdir()
    (tool / ".git" / "HEAD").write_text("ref")  # what pack and install leave out does not count
    assert digest(tmp_path) == changed
    (tool / "bin" / "serve").chmod(0o755)
    assert digest(tmp_path) != changed
    state = trust.compute(b"m", b"l", tmp_path, [("gone", "tools/gone"), ("local-tool", "tools/local-tool")])
    assert [(name, tree) for name, _, tree in state.paths][0] == ("gone", "missing")
    # the boundaries between the parts are unambiguous
    assert trust.compute(b"ab", b"c", tmp_path, []).digest != trust.compute(b"a", b"bc", tmp_path, []).digest


_parts = st.text(alphabet="ab\n:,0123456789", max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_parts, _parts, _parts), max_size=3), st.lists(st.tuples(_parts, _parts, _parts), max_size=3),
       st.binary(max_size=6), st.one_of(st.none(), st.binary(max_size=6)))
def test_different_parts_never_share_a_digest(paths: list, registries: list, manifest: bytes,
                                              lock: bytes | None) -> None:
    """Every part is length-prefixed: moving a boundary (a path record's separators inside a
    relative path, the manifest's end into the lock, a record of one kind into another) changes
    the digest. Compared against a shifted variant of the same parts."""
    base = trust.compute(manifest, lock, Path("/nonexistent"), [], trees=tuple(paths),
                         registry_dirs=tuple(registries)).digest
    variants = []
    if paths:
        (a, b, c), *rest = paths
        variants.append((manifest, lock, ((a + "\n" + b, c, ""), *rest), registries))
        variants.append((manifest, lock, tuple(rest), ((a, b, c), *registries)))  # a path record as a registry's
    if lock is not None:
        variants.append((manifest + lock, None, paths, registries))
        variants.append((manifest + lock[:1], lock[1:], paths, registries))
    for m, lk, ps, rs in variants:
        if (m, lk, tuple(ps), tuple(rs)) == (manifest, lock, tuple(paths), tuple(registries)):
            continue
        other = trust.compute(m, lk, Path("/nonexistent"), [], trees=tuple(ps), registry_dirs=tuple(rs)).digest
        assert other != base


def test_the_registry_tree_covers_everything_and_opens_no_special_file(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    (registry / "extensions" / "te").mkdir(parents=True)
    (registry / "registry.toml").write_text("[registry]\n")
    config = [RegistryConfig("team", str(registry))]

    def tree() -> str:
        [(name, where, value)] = trust.registry_trees(tmp_path, config)
        assert (name, where) == ("team", "registry")
        return value

    seen = {tree()}
    os.mkfifo(registry / "extensions" / "te" / "pipe")  # never opened: this would hang otherwise
    seen.add(tree())
    (registry / "link").symlink_to("registry.toml")
    seen.add(tree())
    (registry / ".pkgmgrignore").write_text("*\n")  # no ignore file hides anything
    seen.add(tree())
    assert len(seen) == 4
    (registry / ".git").mkdir()
    (registry / ".git" / "HEAD").write_text("ref")
    assert tree() in seen  # VCS metadata is not the registry's
    assert trust.registry_trees(tmp_path, [RegistryConfig("web", "https://example.org/index/"),
                                           RegistryConfig("gone", str(tmp_path / "gone"))]) == (
        ("gone", str(tmp_path / "gone"), "missing"),)


def test_digest_reuses_trees(tmp_path: Path) -> None:
    write_local_tool(tmp_path / "tools" / "local-tool")
    state = trust.compute(b"m", b"l", tmp_path, [("local-tool", "tools/local-tool")])
    assert trust.compute(b"m", b"l", tmp_path, [], trees=state.paths) == state


def approvals(home: Path) -> list[str]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return sorted(row[0] for row in conn.execute("SELECT digest FROM trust_approvals"))
    finally:
        conn.close()


def test_approve_replaces_and_write_keeps(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert trust.approved_digests(home, ws) == set()
    assert not (home / "state.db").exists()  # reading created nothing
    trust.approve(home, ws, "d1", by="me")
    trust.approve(home, ws, "d2", by="me")
    assert trust.approved_digests(home, ws) == {"d2"}
    seen: list[list[str]] = []
    trust.write_keeping_approval(home, ws, ws / "pkgmgr.lock", b"new", trusted=True, digest_after="d3",
                                 after_write=lambda: seen.append(approvals(home)))
    assert seen == [["d2", "d3"]]  # between the write and the cleanup both contents are approved
    assert (ws / "pkgmgr.lock").read_bytes() == b"new" and approvals(home) == ["d3"]
    trust.write_keeping_approval(home, ws, ws / "pkgmgr.lock", b"newer", trusted=False, digest_after="d4")
    assert approvals(home) == ["d3"]  # an unapproved workspace does not become approved
    # the key is the resolved path
    link = tmp_path / "link"
    link.symlink_to(ws)
    assert trust.approved_digests(home, link) == {"d3"}


# --- discovery ------------------------------------------------------------------------------------


def test_discovery_finds_the_nearest_workspace(tmp_path: Path) -> None:
    user_home = tmp_path / "home"
    ws = user_home / "src" / "project"
    deep = ws / "a" / "b"
    deep.mkdir(parents=True)
    (ws / "pkgmgr.toml").write_text("")
    assert discover_workspace(deep, home=user_home) == ws
    (ws / "a" / ".pkgmgr").mkdir()  # the store of earlier versions marks nothing
    assert discover_workspace(deep, home=user_home) == ws
    (ws / "a" / "pkgmgr.toml").write_text("")
    assert discover_workspace(deep, home=user_home) == ws / "a"


def test_discovery_stops_at_home(tmp_path: Path) -> None:
    user_home = tmp_path / "home"
    start = user_home / "project"
    start.mkdir(parents=True)
    (tmp_path / "pkgmgr.toml").write_text("")  # above $HOME: not looked at
    assert discover_workspace(start, home=user_home) == start
    (user_home / "pkgmgr.toml").write_text("")  # $HOME itself is
    assert discover_workspace(start, home=user_home) == user_home


def test_discovery_stops_at_a_directory_the_user_does_not_own(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"  # e.g. /tmp or a directory another user controls
    start = shared / "mine" / "project"
    start.mkdir(parents=True)
    (shared / "pkgmgr.toml").write_text("")  # planted by someone else
    assert discover_workspace(start, home=tmp_path / "home") == shared  # owned by us here
    real_stat = Path.stat

    def stat(self: Path, *args, **kwargs):  # noqa: ANN001, ANN202 - a stand-in for chown
        result = real_stat(self, *args, **kwargs)
        if self == shared:
            fields = list(result)
            fields[4] = os.getuid() + 1  # st_uid
            return os.stat_result(fields)
        return result

    monkeypatch.setattr(Path, "stat", stat)
    assert discover_workspace(start, home=tmp_path / "home") == start
    (shared / "mine" / "pkgmgr.toml").write_text("")  # below the foreign directory: found
    assert discover_workspace(start, home=tmp_path / "home") == shared / "mine"


def test_discovery_ignores_a_pkgmgr_symlink(tmp_path: Path) -> None:
    start = tmp_path / "home" / "project"
    start.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "home" / ".pkgmgr").symlink_to(tmp_path / "elsewhere")
    assert discover_workspace(start, home=tmp_path / "home") == start
