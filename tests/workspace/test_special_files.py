"""Files read from a workspace or a directory registry must be regular files (SPEC 10, issue 13
item 12): a FIFO, a device or a link where a file belongs is refused with the file's error code
and never hangs the command. Each attack runs the CLI in a child process with a timeout, so a
regression fails instead of blocking the suite; each asserts that nothing was written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pkgmgr.fsutil import NotRegularFile, open_regular_fd, read_regular
from tests.registry.helpers import RegistryDir, state_snapshot
from tests.support.cli import Result, run_subprocess
from tests.workspace.helpers import js, ok, write_local_tool

TIMEOUT = 60  # far beyond what any of these takes; only a hang reaches it


def run(*args: object, cwd: Path | None = None) -> tuple[Result, dict]:
    result = run_subprocess([*map(str, args), "-o", "json"], cwd=cwd, timeout=TIMEOUT)
    return result, json.loads(result.stdout)


def refused(code: str, *args: object, cwd: Path | None = None) -> dict:
    result, doc = run(*args, cwd=cwd)
    assert "Traceback" not in result.stderr, result
    assert doc.get("error", {}).get("code") == code, result
    assert result.code == doc["error"]["exit_code"], result
    return doc["error"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "user-home" / "src" / "project"
    root.mkdir(parents=True)
    return root


def snapshot(*roots: Path) -> dict[str, str]:
    """Every entry under `roots` (links and FIFOs as their kind, files by content)."""
    seen: dict[str, str] = {}
    for root in roots:
        for base, dirs, files in os.walk(root):
            for name in dirs + files:
                path = Path(base, name)
                if path.is_symlink():
                    seen[str(path)] = "link:" + os.readlink(path)
                elif path.is_fifo():
                    seen[str(path)] = "fifo"
                elif path.is_file():
                    seen[str(path)] = path.read_bytes().hex()
                else:
                    seen[str(path)] = "dir"
    return seen


# --- the helper ---------------------------------------------------------------------------------


def test_open_regular_fd_refuses_a_fifo_a_device_a_directory_and_a_final_link(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "file"
    target.write_bytes(b"content")
    (tmp_path / "link").symlink_to(target)
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/null"), "a character device"), (tmp_path, "a directory"),
                       (tmp_path / "link", "a symbolic link")):
        with pytest.raises(NotRegularFile) as caught:
            open_regular_fd(path)
        assert caught.value.kind == kind
    fd = open_regular_fd(tmp_path / "link", follow_symlinks=True)
    os.close(fd)
    assert read_regular(target, limit=3) == b"cont"  # limit + 1: the caller sees "too large"
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing", limit=10)


# --- workspace files: invalid_config ------------------------------------------------------------


def test_a_fifo_as_pkgmgr_lock_is_refused_by_trust_show_and_sync(ws: Path, home: Path) -> None:
    (ws / "pkgmgr.toml").write_text('[extensions]\nlocal-tool = { path = "tools/local-tool" }\n')
    write_local_tool(ws / "tools" / "local-tool")
    os.mkfifo(ws / "pkgmgr.lock")
    before = snapshot(ws)
    for command in (["trust", "--show"], ["trust"], ["sync"]):
        error = refused("invalid_config", *command, "--workspace", ws)
        assert "pkgmgr.lock" in error["message"] and "FIFO" in error["message"]
    assert snapshot(ws) == before
    assert not home.exists()  # no approval recorded, no store created


def test_a_fifo_as_pkgmgr_toml_is_refused(ws: Path, home: Path) -> None:
    os.mkfifo(ws / "pkgmgr.toml")
    for command in (["trust", "--show"], ["trust"], ["sync"]):
        error = refused("invalid_config", *command, "--workspace", ws)
        assert "FIFO" in error["message"]
    assert not home.exists()


def test_install_save_into_a_fifo_pkgmgr_toml_is_refused_before_installing(ws: Path, home: Path) -> None:
    os.mkfifo(ws / "pkgmgr.toml")
    refused("invalid_config", "ext", "install", "marketing-linear", "--save", "--workspace", ws)
    assert snapshot(ws) == {str(ws / "pkgmgr.toml"): "fifo"}


def test_a_symlinked_pkgmgr_lock_is_refused(ws: Path, tmp_path: Path) -> None:
    (ws / "pkgmgr.toml").write_text("")
    elsewhere = tmp_path / "lock-elsewhere"
    elsewhere.write_text("version = 1\n")
    (ws / "pkgmgr.lock").symlink_to(elsewhere)
    error = refused("invalid_config", "trust", "--show", "--workspace", ws)
    assert "symbolic link" in error["message"]


def test_pkgmgr_toml_may_be_a_link_to_a_file_inside_the_workspace(ws: Path, tmp_path: Path) -> None:
    (ws / "config").mkdir()
    (ws / "config" / "pkgmgr.toml").write_text('[extensions]\nlocal-tool = { path = "tools/local-tool" }\n')
    write_local_tool(ws / "tools" / "local-tool")
    (ws / "pkgmgr.toml").symlink_to("config/pkgmgr.toml")
    shown = ok("trust", "--show", "--workspace", ws)
    assert [e["name"] for e in shown["extensions"]] == ["local-tool"]
    outside = tmp_path / "outside.toml"
    outside.write_text("")
    (ws / "pkgmgr.toml").unlink()
    (ws / "pkgmgr.toml").symlink_to(outside)
    code, doc = js("trust", "--show", "--workspace", ws)
    assert (code, doc["error"]["code"]) == (3, "invalid_config") and "outside the workspace" in doc["error"]["message"]


def test_a_fifo_inside_a_path_extension_does_not_hang_the_digest(ws: Path, home: Path) -> None:
    """A path extension is a source directory (SPEC 3): its special files are never opened and
    the tree cannot be installed (`invalid_archive`)."""
    (ws / "pkgmgr.toml").write_text('[extensions]\nlocal-tool = { path = "tools/local-tool" }\n')
    tool = write_local_tool(ws / "tools" / "local-tool")
    os.mkfifo(tool / "bin" / "pipe")
    result, shown = run("trust", "--show", "--workspace", ws)
    assert result.code == 0, result
    assert shown["extensions"][0]["tree_sha256"] == "invalid:invalid_archive"
    assert run("trust", "--workspace", ws)[0].code == 0
    error = refused("invalid_archive", "sync", "--workspace", ws)
    assert "FIFO" in error["message"]
    assert not (ws / "pkgmgr.lock").exists()


# --- directory registries: invalid_index --------------------------------------------------------


@pytest.fixture
def regdir(tmp_path: Path) -> RegistryDir:
    registry = RegistryDir(tmp_path / "index", "acme")
    registry.publish("alpha-ext", "0.1.0")
    return registry


def test_a_fifo_registry_toml_is_read_without_hanging(regdir: RegistryDir, home: Path) -> None:
    (regdir.root / "registry.toml").unlink()
    os.mkfifo(regdir.root / "registry.toml")
    config = (home / "config.toml").read_bytes() if (home / "config.toml").exists() else None
    error = refused("invalid_index", "registry", "add", "acme", regdir.root)  # its one read says why
    assert "registry.toml" in error["message"] and "FIFO" in error["message"]
    assert ((home / "config.toml").read_bytes() if (home / "config.toml").exists() else None) == config
    assert run("registry", "add", "acme", regdir.root, "--no-check")[0].code == 0  # recorded anyway
    error = refused("invalid_index", "ext", "info", "alpha-ext")
    assert "registry.toml" in error["message"] and "FIFO" in error["message"]


def test_a_fifo_entry_or_index_of_a_configured_registry_is_refused(regdir: RegistryDir, home: Path) -> None:
    assert run("registry", "add", "acme", regdir.root)[0].code == 0
    entry = regdir.root / "extensions" / "al" / "alpha-ext.toml"
    entry.unlink()
    os.mkfifo(entry)
    index = regdir.root / "index.json"
    index.unlink(missing_ok=True)
    os.mkfifo(index)
    config = (home / "config.toml").read_bytes()
    assert "FIFO" in refused("invalid_index", "ext", "info", "alpha-ext")["message"]
    assert "FIFO" in refused("invalid_index", "ext", "install", "alpha-ext")["message"]
    result, document = run("ext", "search", "alpha")  # search skips an unreadable registry, saying why
    [failed] = document["failed"]
    assert result.code == 0 and failed["name"] == "acme" and failed["error"]["code"] == "invalid_index"
    assert "FIFO" in failed["error"]["message"]
    assert (home / "config.toml").read_bytes() == config
    assert not (home / "extensions").exists()  # nothing installed


@pytest.mark.parametrize("rel", ["metadata/timestamp.json", "extensions/re/review-pack.toml", "metadata/1.root.json"])
def test_a_fifo_in_a_signed_directory_registry_is_refused(tmp_path: Path, home: Path, rel: str) -> None:
    """A signed registry read from a directory (SPEC 5.4a) reads its metadata and targets
    itself: a FIFO there is refused unread, as in a plain directory registry."""
    from tests.publish.helpers import packed
    from tests.support.signed import signed_index

    index = signed_index(tmp_path / "signed")
    index.publish(packed(tmp_path, version="0.1.0"))
    if rel.startswith("extensions/"):  # added while sound: the entry is first read by the install
        assert run("registry", "add", "acme", index.path, "--root", index.root_file)[0].code == 0
    root = tmp_path / "1.root.json"  # the root `registry add --root` pins, unless it is the FIFO
    root.write_bytes(index.root_file.read_bytes())
    if rel == "metadata/1.root.json":
        root = index.root_file
    (index.path / rel).unlink()
    os.mkfifo(index.path / rel)

    def moved() -> tuple[dict, dict]:  # the home's files (not SQLite's own, nor directories) and the state's rows
        # (the hashed bin naming the entry is genuine metadata ngclient verified and keeps on the way)
        files = {k: v for k, v in snapshot(home).items()
                 if v != "dir" and not k.endswith(("state.db", "-wal", "-shm", ".lock"))
                 and not ("/tuf/" in k and k.rsplit("/", 1)[1].startswith("bins-"))}
        return files, state_snapshot(home)

    before = moved()
    command = ["ext", "install", "review-pack"] if rel.startswith("extensions/") else \
        ["registry", "add", "acme", index.path, "--root", root]
    error = refused("invalid_index", *command)
    assert rel in error["message"] and "FIFO" in error["message"]
    assert moved() == before
    assert not (home / "extensions").exists()


# --- the repository root as the extension; a linked pkgmgr.toml ---------------------------------


def test_path_dot_syncs_without_pkgmgr_s_own_files(ws: Path, home: Path) -> None:
    """`path = "."`: the lock that sync writes, pkgmgr.toml and VCS directories are outside
    the hashed tree, so the approval holds after the sync and a second sync changes nothing."""
    write_local_tool(ws)
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "pkgmgr.toml").write_text('[extensions]\nlocal-tool = { path = "." }\n')
    ok("trust", "--workspace", ws)
    synced = ok("sync", "--workspace", ws)
    assert [(i["name"], i["action"]) for i in synced["installed"]] == [("local-tool", "installed")]
    status = ok("ext", "status", "local-tool", "--scope", "workspace", "--workspace", ws)
    installed = sorted(str(p.relative_to(status["path"])) for p in Path(status["path"]).rglob("*") if p.is_file())
    assert installed == ["bin/serve", "extension.toml"]
    assert ok("trust", "--show", "--workspace", ws)["approved"]
    lock = (ws / "pkgmgr.lock").read_bytes()
    again = ok("sync", "--locked", "--workspace", ws)
    assert again["installed"] == [] and (ws / "pkgmgr.lock").read_bytes() == lock


def test_save_on_a_linked_pkgmgr_toml_edits_the_target_and_keeps_the_link(ws: Path, home: Path) -> None:
    (ws / "config").mkdir()
    target = ws / "config" / "pkgmgr.toml"
    target.write_text("# the team's declaration\n[extensions]\n")
    (ws / "pkgmgr.toml").symlink_to("config/pkgmgr.toml")
    ok("trust", "--workspace", ws)
    write_local_tool(ws / "tools" / "local-tool")
    ok("ext", "install", ws / "tools" / "local-tool", "--save", "--allow-unverified", "--yes", "--workspace", ws)
    assert (ws / "pkgmgr.toml").is_symlink() and os.readlink(ws / "pkgmgr.toml") == "config/pkgmgr.toml"
    text = target.read_text()
    assert text.startswith("# the team's declaration\n") and 'local-tool = {path = "tools/local-tool"}' in text
    assert ok("trust", "--show", "--workspace", ws)["approved"]  # pkgmgr's own edit keeps the approval
    ok("sync", "--workspace", ws)
    assert (ws / "pkgmgr.toml").is_symlink() and target.read_text() == text


def test_a_fifo_as_a_directory_registry_s_archive_is_refused(regdir: RegistryDir, home: Path) -> None:
    assert run("registry", "add", "acme", regdir.root)[0].code == 0
    archive = regdir.root / "archives" / "alpha-ext-0.1.0.tar.gz"
    archive.unlink()
    os.mkfifo(archive)
    error = refused("invalid_index", "ext", "install", "alpha-ext")
    assert "FIFO" in error["message"]
    assert not (home / "extensions").exists() and not any((home / "cache").rglob("*.tar.gz"))


def test_a_fifo_in_a_committed_store_does_not_hang(ws: Path, home: Path) -> None:
    """A `.pkgmgr/` shipped with the work tree (an old layout) holding a FIFO as its id."""
    (ws / "pkgmgr.toml").write_text("")
    (ws / ".pkgmgr").mkdir()
    os.mkfifo(ws / ".pkgmgr" / "store-id")
    for command in (["trust", "--show"], ["sync"], ["ext", "list", "--scope", "workspace"]):
        result, _ = run(*command, "--workspace", ws)
        assert "Traceback" not in result.stderr and result.code in (0, 4), result
