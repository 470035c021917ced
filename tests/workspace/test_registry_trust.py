"""A registry a workspace declares is the repository's claim, not the user's trust (SPEC 7, 10;
issue 13 item 1). Each attack changes one thing in a registry directory committed inside the
repository, runs the command a user would, asserts the error code (or what was installed), and
asserts that nothing moved: no file of the workspace, no installed extension, no approval."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.registry.helpers import RegistryDir, archive_bytes, state_snapshot
from tests.workspace.helpers import cli, fail, ok

DEFAULT_ARCHIVE = Path(__file__).resolve().parents[2] / "registry_index" / "archives" / "marketing-linear-0.1.0.tar.gz"
TOOL = "team-tool"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "user-home" / "src" / "project"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def inside(ws: Path) -> RegistryDir:
    """The registry the repository carries: `team = "./registry"`, listing team-tool 0.1.0."""
    registry = RegistryDir(ws / "registry", "team")
    registry.publish(TOOL, "0.1.0")
    return registry


def files(root: Path) -> dict[str, bytes]:
    """The work tree's files (the store, which SQLite touches on every read, is checked through
    `workspace_installed`)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] != ".pkgmgr"}


def approvals(home: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return sorted(conn.execute("SELECT workspace, digest FROM trust_approvals").fetchall())
    finally:
        conn.close()


def workspace_installed(ws: Path) -> list[tuple[str, str]]:
    listed = ok("ext", "list", "--scope", "workspace", "--workspace", ws)["extensions"]
    return sorted((e["name"], e["version"]) for e in listed if e["scope"] == "workspace")


def test_a_global_install_inside_the_repository_never_consults_its_registries(ws: Path, inside: RegistryDir,
                                                                               home: Path) -> None:
    """The repository's registry lists marketing-linear too (official, with every grant): the
    user's plain `ext install marketing-linear`, run inside the repository, is a global command
    and gets the shipped default's archive."""
    evil = archive_bytes("marketing-linear", "9.0.0", grants=("*",))
    inside.publish("marketing-linear", "9.0.0", data=evil, tier="official", permissions=("*",))
    (ws / "pkgmgr.toml").write_text('[registries]\nteam = "./registry"\n')
    ok("trust", "--workspace", ws)
    before = files(ws)

    installed = ok("ext", "install", "marketing-linear", cwd=ws)["installed"]

    default_sha = hashlib.sha256(DEFAULT_ARCHIVE.read_bytes()).hexdigest()
    assert [(i["name"], i["version"], i["scope"], i["sha256"]) for i in installed] == [
        ("marketing-linear", "0.1.0", "global", default_sha)]
    status = ok("ext", "status", "marketing-linear", cwd=ws)
    assert status["provenance"]["registry"] == "default" and status["grants"] == []
    assert files(ws) == before
    assert workspace_installed(ws) == []
    # the same name asked for in the workspace scope does come from the workspace's registry
    # (which counts as community there: its grants are refused)
    fail("grant_not_allowed", "ext", "install", "marketing-linear", "--scope", "workspace", cwd=ws)
    assert workspace_installed(ws) == []


def test_an_official_entry_of_a_workspace_registry_gets_no_grants(ws: Path, inside: RegistryDir,
                                                                  home: Path) -> None:
    """`sync --upgrade` to a version the repository's registry marks `official` with grants
    ["*"]: refused (grant_not_allowed), even after the user approved the change."""
    (ws / "pkgmgr.toml").write_text(f'[registries]\nteam = "./registry"\n\n[extensions]\n{TOOL} = "*"\n')
    ok("trust", "--workspace", ws)
    ok("sync", "--workspace", ws)
    assert workspace_installed(ws) == [(TOOL, "0.1.0")]
    inside.publish(TOOL, "0.2.0", tier="official", permissions=("*",))
    ok("trust", "--workspace", ws)  # the user approves the registry's new content, tier claim and all
    before, state = files(ws), state_snapshot(home)["extensions"]

    error = fail("grant_not_allowed", "sync", "--upgrade", "--workspace", ws)["error"]

    assert error["details"]["grants"] == ["*"]
    assert workspace_installed(ws) == [(TOOL, "0.1.0")]
    assert files(ws) == before and state_snapshot(home)["extensions"] == state  # the lock too
    # the same entry from a registry of the user's own configuration is official: it installs
    ok("registry", "add", "mine", inside.root)
    installed = ok("ext", "install", f"{TOOL}@0.2.0")["installed"]
    assert [(i["name"], i["version"], i["scope"]) for i in installed] == [(TOOL, "0.2.0", "global")]
    assert ok("ext", "status", TOOL)["grants"] == ["*"]


def test_an_edit_of_only_the_registry_directory_needs_trust_again(ws: Path, inside: RegistryDir,
                                                                   home: Path) -> None:
    (ws / "pkgmgr.toml").write_text(f'[registries]\nteam = "./registry"\n\n[extensions]\n{TOOL} = "*"\n')
    ok("trust", "--workspace", ws)
    ok("sync", "--workspace", ws)
    approved = approvals(home)
    inside.publish(TOOL, "0.2.0")  # a later commit touches only registry/
    before, state = files(ws), state_snapshot(home)

    error = fail("trust_required", "sync", "--upgrade", "--workspace", ws)["error"]

    assert "registry directories" in error["message"]
    assert workspace_installed(ws) == [(TOOL, "0.1.0")]
    assert files(ws) == before and state_snapshot(home) == state and approvals(home) == approved
    shown = ok("trust", "--show", "--workspace", ws)
    assert not shown["approved"] and shown["registries"][0]["tree_sha256"] is not None
    assert "registry team: a directory inside the workspace, covered whole" in \
        cli("trust", "--show", "--workspace", ws).stdout
    # once approved, the upgrade goes ahead, and the lock sync writes keeps the approval
    ok("trust", "--workspace", ws)
    ok("sync", "--upgrade", "--workspace", ws)
    assert workspace_installed(ws) == [(TOOL, "0.2.0")]
    assert ok("trust", "--show", "--workspace", ws)["approved"]


@pytest.mark.parametrize("edit", [
    lambda root: (root / "extensions" / "te" / "team-tool.toml").write_text("", encoding="utf-8"),
    lambda root: (root / "archives" / "team-tool-0.1.0.tar.gz").write_bytes(b"another archive"),
    lambda root: (root / "notes.txt").write_text("a new file counts too\n"),
    lambda root: (root / "archives" / "team-tool-0.1.0.tar.gz").chmod(0o755),
    lambda root: (root / "extensions" / "al").symlink_to("te"),
], ids=["entry", "archive", "new-file", "mode", "link"])
def test_every_kind_of_change_in_the_registry_directory_counts(ws: Path, inside: RegistryDir, home: Path,
                                                               edit) -> None:
    (ws / "pkgmgr.toml").write_text('[registries]\nteam = "./registry"\n')
    ok("trust", "--workspace", ws)
    edit(inside.root)
    assert not ok("trust", "--show", "--workspace", ws)["approved"]


def test_what_the_digest_leaves_out_of_a_registry_that_is_the_repository(ws: Path, home: Path) -> None:
    """`team = "."`: the registry is the repository root; the lock that sync writes, VCS
    directories and pkgmgr's own store do not change it, everything else does."""
    registry = RegistryDir(ws, "team")
    registry.publish(TOOL, "0.1.0")
    (ws / "pkgmgr.toml").write_text(f'[registries]\nteam = "."\n\n[extensions]\n{TOOL} = "*"\n')
    ok("trust", "--workspace", ws)
    ok("sync", "--workspace", ws)  # writes pkgmgr.lock (and, in this version, the .pkgmgr store)
    assert (ws / "pkgmgr.lock").is_file()
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert ok("trust", "--show", "--workspace", ws)["approved"]
    assert cli("sync", "--locked", "--workspace", ws).code == 0
    (ws / "README.md").write_text("a change in the repository is a change of its registry\n")
    assert not ok("trust", "--show", "--workspace", ws)["approved"]


def test_a_registry_outside_the_repository_is_covered_by_where_it_is(ws: Path, tmp_path: Path,
                                                                     home: Path) -> None:
    """Its files are not the repository's, but a committed link that moves it elsewhere is."""
    first = RegistryDir(tmp_path / "srv" / "first", "team")
    second = RegistryDir(tmp_path / "srv" / "second", "team")
    (ws / "registry").symlink_to(first.root)
    (ws / "pkgmgr.toml").write_text('[registries]\nteam = "./registry"\n')
    ok("trust", "--workspace", ws)
    first.publish(TOOL, "0.1.0")  # outside the repository: not part of the digest
    shown = ok("trust", "--show", "--workspace", ws)
    assert shown["approved"] and shown["registries"][0]["tree_sha256"] is None
    (ws / "registry").unlink()
    (ws / "registry").symlink_to(second.root)
    assert not ok("trust", "--show", "--workspace", ws)["approved"]


def test_an_official_entry_of_a_workspace_registry_publishes_only_to_the_workspace(ws: Path, inside: RegistryDir,
                                                                                    home: Path) -> None:
    """`resources.publish.max_scope` is narrowed to `workspace` for every tier but a trusted
    `official` (SPEC 7): the repository's `official` claim does not count."""
    manifest = ('name = "publisher"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n'
                '[resources.publish]\nfamilies = ["hooks"]\nmax_scope = "global"\n')
    inside.publish("publisher", "0.1.0", tier="official",
                   data=archive_bytes("publisher", "0.1.0", manifest=manifest))
    (ws / "pkgmgr.toml").write_text('[registries]\nteam = "./registry"\n\n[extensions]\npublisher = "*"\n')
    ok("trust", "--workspace", ws)
    ok("sync", "--workspace", ws)
    assert ok("ext", "status", "publisher", "--scope", "workspace", "--workspace", ws)["max_scope"] == "workspace"
    ok("registry", "add", "mine", inside.root)  # the user's own registry: its official counts
    ok("ext", "install", "publisher")
    assert ok("ext", "status", "publisher")["max_scope"] == "global"
