"""The trusted TUF metadata pkgmgr keeps (`<home>/tuf/<key>/`, SPEC 5.4a) is pkgmgr's own state,
but another process could replace any file there (issue 25 point 8): a FIFO planted as the cached
`timestamp.json` hung every read of the registry. Each attack changes one file there, runs the
command a user would in a child process under a timeout (a hang fails instead of stalling the
suite), asserts the outcome, and asserts that nothing else moved. And a metadata bomb from the
registry itself is refused before ngclient parses it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tuf.ngclient import Updater

from pkgmgr.registry.trustroot import tuf_dir
from tests.registry.test_signed import Client, client, index, installed, server  # noqa: F401 - fixtures
from tests.support.cli import run_subprocess
from tests.support.signed import SignedIndex


def trusted(client: Client) -> Path:
    return tuf_dir(client.home, client.url)


def child(*args: object) -> tuple[int, dict, str]:
    result = run_subprocess([*map(str, args), "-o", "json"], timeout=60)
    assert "Traceback" not in result.stderr, result
    return result.code, json.loads(result.stdout), result.stderr


def test_the_bounded_updater_replaces_ngclients_only_reads_of_its_directory() -> None:
    """BoundedUpdater overrides two private methods of ngclient's Updater: an upgrade of tuf that
    renames them (or reads the directory elsewhere) must fail here, not read unbounded again."""
    import inspect

    import tuf.ngclient.updater as module

    from pkgmgr.registry.signed import BoundedUpdater

    for name in ("_load_local_metadata", "_load_root"):
        assert name in vars(Updater) and name in vars(BoundedUpdater), name
    source = inspect.getsource(module)
    reads = [line.strip() for line in source.splitlines() if "open(" in line and '"rb"' in line]
    # ngclient's reads: the two overridden here, and targets (`find_cached_target`, not used by pkgmgr)
    assert len(reads) == 3, reads


@pytest.mark.parametrize("name", ["timestamp.json", "snapshot.json", "targets.json"])
def test_a_fifo_as_a_cached_metadata_file_is_replaced_not_read(client: Client, name: str) -> None:
    client.ok("ext", "install", "review-pack")
    folder = trusted(client)
    (folder / name).unlink()
    os.mkfifo(folder / name)
    code, doc, _ = child("ext", "update", "--all")
    assert code == 0, doc
    assert (folder / name).is_file()  # fetched again and written in its place
    code, doc, _ = child("registry", "list")
    assert code == 0 and [r["signed"] for r in doc["registries"] if r["name"] == "acme"] == [True]
    assert installed(client) == [("review-pack", "0.1.0")]


@pytest.mark.parametrize("planted", ["bomb", "fifo", "link", "huge"])
def test_a_cached_snapshot_that_is_not_sound_metadata_is_fetched_again(client: Client, planted: str,
                                                                       tmp_path: Path) -> None:
    client.ok("registry", "refresh")
    path = trusted(client) / "snapshot.json"
    path.unlink()
    if planted == "bomb":
        path.write_bytes(b"[" * 200_000)
    elif planted == "fifo":
        os.mkfifo(path)
    elif planted == "link":
        (tmp_path / "elsewhere.json").write_bytes(b"{}")
        path.symlink_to(tmp_path / "elsewhere.json")
    else:
        with open(path, "wb") as handle:
            handle.truncate(64 * 1024 * 1024)  # sparse: 64 MiB that are never read whole
    code, doc, _ = child("ext", "install", "review-pack")
    assert code == 0, doc
    assert path.is_file() and not path.is_symlink() and path.stat().st_size < 1024 * 1024
    assert (tmp_path / "elsewhere.json").read_bytes() == b"{}" if planted == "link" else True


def test_a_fifo_in_root_history_is_not_read(client: Client) -> None:
    client.ok("registry", "refresh")
    os.mkfifo(trusted(client) / "root_history" / "2.root.json")  # a newer root ngclient would look for first
    code, doc, _ = child("ext", "install", "review-pack")
    assert code == 0, doc


@pytest.mark.parametrize("planted", ["fifo", "bomb", "link"])
def test_an_unreadable_trusted_root_is_a_signature_error_naming_the_fix(client: Client, planted: str,
                                                                         tmp_path: Path) -> None:
    client.ok("registry", "refresh")
    folder = trusted(client)
    before = {p.name for p in folder.iterdir()}
    root = folder / "root.json"
    root.unlink()
    if planted == "fifo":
        os.mkfifo(root)
    elif planted == "bomb":
        root.write_bytes(b"[" * 200_000)
    else:
        (tmp_path / "other-root.json").write_bytes((folder / "root_history" / "1.root.json").read_bytes())
        root.symlink_to(tmp_path / "other-root.json")  # a link ngclient does not make
    code, doc, stderr = child("ext", "install", "review-pack")
    assert code == 4 and doc["error"]["code"] == "registry_signature_invalid", doc
    assert "hint: to re-establish the root pinned when it was added, run: pkgmgr registry add acme " in stderr
    code, doc, _ = child("registry", "list")  # start-up reads the trusted root too: it shows what it can
    assert code == 0, doc
    assert {p.name for p in folder.iterdir()} == before
    assert installed(client) == []


def test_a_metadata_bomb_from_the_registry_is_refused_before_it_is_parsed(client: Client,
                                                                          index: SignedIndex) -> None:
    index.put("timestamp.json", b"[" * 15_000 + b"]" * 1_000)  # under the 16 KiB cap, deeper than any metadata
    doc = client.refused("registry_signature_invalid", "ext", "install", "review-pack")
    assert "nested deeper" in doc["error"]["message"]


def test_every_trusted_metadata_file_is_durable_before_the_command_reports(client: Client, index: SignedIndex,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: a power cut a few seconds after `registry add --root` left all five metadata files
    0 bytes (written without fsync), and every install then failed. Every file ngclient keeps —
    each role, `root_history/` (`_persist_file`), the `root.json` link — reaches its name by a
    rename of a file fsynced before it, and the directory is fsynced after it; a root that is
    trusted already is not written again."""
    client.ok("registry", "remove", "acme")
    folder = trusted(client)
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append(("replace", f"{os.fspath(src)} -> {os.fspath(dst)}"))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    client.ok("registry", "add", "acme", client.url, "--root", index.root_file)
    client.ok("registry", "refresh")
    moves = [(i, what) for i, (kind, what) in enumerate(events) if kind == "replace" and str(folder) in what]
    written = {Path(what.split(" -> ")[1]).relative_to(folder).as_posix() for _, what in moves}
    assert {"root.json", "timestamp.json", "snapshot.json", "targets.json"} <= written, written
    assert any(name.startswith("root_history/") for name in written), written
    for index, what in moves:
        source, target = what.split(" -> ")
        if not target.endswith("root.json") or "root_history" in target:
            assert ("fsync", source) in events[:index], what  # the data on disk before its name
        assert ("fsync", str(Path(target).parent)) in events[index:], what  # the name on disk after
    events.clear()
    client.ok("registry", "refresh")
    rewritten = [what for kind, what in events if kind == "replace" and "root" in what and str(folder) in what]
    assert rewritten == []  # the trusted root, persisted again by every operation, is not rewritten
