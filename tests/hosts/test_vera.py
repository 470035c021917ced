"""Vera end to end: installs land in `$VERA_HOME/extensions/<id>/` with Vera's own records
(extensions.json, `.managed/<id>.json`, its digest) written as manager.ts writes them, under
its lock; capabilities are shown before installing."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.hosts.helpers import UNVERIFIED, Homes, fail, human, ok, tree, vera_extension

ID = "acme.context-tools"


def manager_ts_digest(directory: Path) -> str:
    """manager.ts digestExtensionDirectory, written out for ASCII names: entries ordered as
    localeCompare orders these (case-insensitively here: the names differ in more than case)."""
    sha = hashlib.sha256()

    def walk(folder: Path, rel: str) -> None:
        for entry in sorted(folder.iterdir(), key=lambda p: p.name.lower()):
            path = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir():
                sha.update(f"dir:{path}\n".encode())
                walk(entry, path)
            else:
                sha.update(f"file:{path}\n".encode() + entry.read_bytes() + b"\n")

    walk(directory, "")
    return "sha256:" + sha.hexdigest()


def test_install_writes_veras_records(tmp_path: Path, homes: Homes) -> None:
    source = vera_extension(tmp_path / "src" / "ctx")
    (source / "lib").mkdir()
    (source / "lib" / "Tools.ts").write_text("export {}\n")
    result = human("ext", "install", source, *UNVERIFIED)
    assert result.code == 0, result
    assert "capabilities: commands.register, models.complete" in result.stderr  # shown before it acts (on stderr)
    target = homes.vera / "extensions" / ID
    assert tree(target) == tree(source)
    text = (homes.vera / "extensions.json").read_text()
    registry = json.loads(text)
    [record] = registry["extensions"]
    assert list(record) == ["id", "version", "source", "digest", "directory", "enabled", "installedAt"]
    assert record["source"] == {"kind": "local", "path": str(source)}
    assert record["digest"] == manager_ts_digest(target)
    assert (record["directory"], record["enabled"], record["version"]) == (f"extensions/{ID}", True, "1.0.0")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["installedAt"])
    assert text == json.dumps({"schema_version": 1, "extensions": [record]}, indent=2) + "\n"  # JSON.stringify(…, 2)
    marker = homes.vera / "extensions" / ".managed" / f"{ID}.json"
    assert marker.read_text() == json.dumps(record, indent=2) + "\n"
    for path in (homes.vera / "extensions.json", marker):
        assert os.stat(path).st_mode & 0o777 == 0o600
    assert not (homes.vera / "extensions.json.lock").exists()
    assert [p.name for p in (homes.vera / "extensions").iterdir()] in ([ID, ".managed"], [".managed", ID])


def test_disable_and_enable_switch_veras_records(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    marker = homes.vera / "extensions" / ".managed" / f"{ID}.json"
    ok("ext", "disable", ID)
    assert json.loads((homes.vera / "extensions.json").read_text())["extensions"][0]["enabled"] is False
    assert json.loads(marker.read_text())["enabled"] is False
    assert (homes.vera / "extensions" / ID).is_dir()  # Vera keeps it, its record says off
    ok("ext", "enable", ID)
    assert json.loads(marker.read_text())["enabled"] is True
    assert ok("ext", "verify", ID)["verified"][0]["ok"] is True


def test_remove_drops_the_records(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    ok("ext", "remove", ID)
    assert not (homes.vera / "extensions" / ID).exists()
    assert json.loads((homes.vera / "extensions.json").read_text()) == {"schema_version": 1, "extensions": []}
    assert list((homes.vera / "extensions" / ".managed").iterdir()) == []


def test_a_live_vera_lock_is_waited_for_then_locked(tmp_path: Path, homes: Homes) -> None:
    homes.vera.mkdir()
    lock = homes.vera / "extensions.json.lock"
    lock.write_text(json.dumps({"pid": os.getpid()}) + "\n")  # this process: alive
    fail("locked", "--lock-timeout", "0", "ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    assert not (homes.vera / "extensions" / ID).exists() and not (homes.vera / "extensions.json").exists()
    assert lock.exists()
    assert ok("ext", "list")["extensions"] == []  # nothing recorded either


def test_a_dead_owners_lock_is_reclaimed(tmp_path: Path, homes: Homes) -> None:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    homes.vera.mkdir()
    (homes.vera / "extensions.json.lock").write_text(json.dumps({"pid": int(child.stdout)}) + "\n")
    ok("--lock-timeout", "0", "ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    assert not (homes.vera / "extensions.json.lock").exists()


def test_an_extension_vera_manages_itself_is_not_overwritten(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED)
    # as if `vera ext install` had put it there: pkgmgr forgets it, Vera's records stay
    from pkgmgr.store import records
    from pkgmgr.store.scope import global_scope

    records.delete(global_scope(homes.pkgmgr), "vera", ID)
    before = tree(homes.vera)
    fail("source_conflict", "ext", "install", vera_extension(tmp_path / "src" / "ctx2"), *UNVERIFIED)
    assert tree(homes.vera) == before
    (homes.vera / "extensions" / ID / "extension.ts").write_text("changed\n")
    fail("tree_modified", "adopt", "--host", "vera", ID)  # not what Vera recorded
    (homes.vera / "extensions" / ID / "extension.ts").write_text("export default function activate() {}\n")
    [adopted] = ok("adopt", "--host", "vera", ID)["adopted"]
    assert adopted["version"] == "1.0.0"


def test_vera_has_no_project_scope(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")  # a workspace (issue 29: --scope workspace needs one)
    fail("usage", "--scope", "workspace", "ext", "install", vera_extension(tmp_path / "src" / "ctx"), *UNVERIFIED,
         cwd=project)


def test_an_update_replaces_the_record(tmp_path: Path, homes: Homes) -> None:
    source = vera_extension(tmp_path / "src" / "ctx")
    ok("ext", "install", source, *UNVERIFIED)
    first = json.loads((homes.vera / "extensions.json").read_text())["extensions"][0]
    vera_extension(source, version="1.1.0")
    [installed] = ok("ext", "install", source, *UNVERIFIED)["installed"]
    assert (installed["action"], installed["previous_version"]) == ("switched", "1.0.0")
    [record] = json.loads((homes.vera / "extensions.json").read_text())["extensions"]
    assert record["version"] == "1.1.0" and record["installedAt"] == first["installedAt"]
    assert record["digest"] == manager_ts_digest(homes.vera / "extensions" / ID) != first["digest"]
