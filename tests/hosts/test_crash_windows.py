"""The crash windows issue 27 and issue 29's rollback left (SPEC 4, 11, 13), each killed with SIGKILL
at its crash points in a real `pkgmgr` child:

- terva's `ext enable/disable` rewrites the manifest in place; one killed before its commit is
  undone with the manifest put back byte for byte (saved in the intent's transaction directory
  before the rewrite), not rewritten in Go's layout;
- the tree an update replaces is kept for `ext rollback` (a folder host's in `.pkgmgr-previous/`,
  the scope store's where it was); a kill between the switch and that move, or while a rollback
  has the kept tree set aside in `.staging/` (recorded with the switch's intent), never loses it:
  after `doctor`, `ext rollback` still switches to the other install.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hosts.helpers import UNVERIFIED, Homes, ok, terva_extension, tree
from tests.reliability.helpers import record
from tests.support.builders import minimal_manifest, write_extension
from tests.support.cli import run_subprocess

# extension.json as an author writes it: not Go's layout (keys unsorted, four spaces, no final newline)
AUTHORS_MANIFEST = b'{\n    "version": "0.1.0",  "name": "hello",\n    "exec": "./run.sh",\n    "language": "sh"\n}'
DISABLE_POINTS = ("host.enable.after_pending", "host.enable.after_host_files")


def _authors_terva(tmp: Path) -> Path:
    source = terva_extension(tmp / "src" / "hello")
    (source / "extension.json").write_bytes(AUTHORS_MANIFEST)
    return source


@pytest.mark.parametrize("label", DISABLE_POINTS)
def test_an_undone_terva_disable_puts_the_manifest_back_byte_for_byte(tmp_path: Path, homes: Homes,
                                                                      label: str) -> None:
    ok("ext", "install", _authors_terva(tmp_path), *UNVERIFIED)
    manifest = homes.terva / "extensions" / "hello" / "extension.json"
    assert manifest.read_bytes() == AUTHORS_MANIFEST
    before = tree(homes.terva / "extensions")

    killed = run_subprocess(["ext", "disable", "hello"], env={"PKGMGR_TEST_CRASH_AT": label})
    assert killed.code == -9, killed
    if label == "host.enable.after_host_files":  # the host's file was rewritten, pkgmgr's row not yet
        assert json.loads(manifest.read_bytes())["enabled"] is False
    assert ok("doctor")["ok"] is True

    assert manifest.read_bytes() == AUTHORS_MANIFEST  # byte for byte, not in Go's layout
    assert tree(homes.terva / "extensions") == before
    staging = homes.terva / ".pkgmgr-staging"
    assert not staging.exists() or not any(staging.iterdir())  # the saved copy went with the intent
    assert [e["enabled"] for e in ok("ext", "list")["extensions"]] == [True]
    assert ok("doctor", "--check")["ok"] is True
    assert ok("ext", "verify", "--all")["verified"][0]["ok"] is True
    ok("ext", "disable", "hello")  # and the command then completes
    assert json.loads(manifest.read_bytes())["enabled"] is False
    record("host_crash", case="terva-disable (manifest bytes)", label=label, mid="old" if label.endswith("pending")
           else "new", settled="old")


def _compozy(tmp: Path, version: str) -> Path:
    return write_extension(tmp / "src" / "demo-ext", minimal_manifest(name="demo-ext", version=version),
                           files={"note.txt": version})


def _terva(tmp: Path, version: str) -> Path:
    return terva_extension(tmp / "src" / "hello", version=version)


HOSTS = {"compozy": ("demo-ext", _compozy), "terva": ("hello", _terva)}
# (host, command, crash point): an update keeps the install it replaces, a rollback swaps the two
KEPT_POINTS = [
    ("terva", "update", "host.install.after_commit"),  # the new tree in and committed, the old one in tx
    ("terva", "update", "host.install.after_kept"),
    ("terva", "rollback", "host.install.after_pending"),
    ("terva", "rollback", "host.install.after_rename"),
    ("terva", "rollback", "host.install.after_commit"),
    ("compozy", "rollback", "install.after_set_aside"),  # the kept tree set aside in .staging/
    ("compozy", "rollback", "install.after_rename"),  # and the new tree renamed where it was
    ("compozy", "rollback", "install.before_commit"),
    ("compozy", "rollback", "install.after_commit"),
]


def _status(name: str) -> tuple[str, str | None]:
    status = ok("ext", "status", name)
    return status["tree_sha256"], (status["previous"] or {}).get("tree_sha256")


@pytest.mark.parametrize("host, command, label", KEPT_POINTS, ids=[f"{h}-{c}@{p}" for h, c, p in KEPT_POINTS])
def test_a_kill_never_loses_the_kept_install(tmp_path: Path, homes: Homes, host: str, command: str,
                                             label: str) -> None:
    name, make = HOSTS[host]
    ok("ext", "install", make(tmp_path, "1.0.0"), *UNVERIFIED)
    first, _ = _status(name)
    if command == "update":
        make(tmp_path, "1.1.0")
        args = ["ext", "install", str(tmp_path / "src" / name), *UNVERIFIED]
    else:
        ok("ext", "install", make(tmp_path, "1.1.0"), *UNVERIFIED)
        args = ["ext", "rollback", name]
    second, kept = _status(name)  # for an update: still the first
    assert kept == (first if command == "rollback" else None)

    killed = run_subprocess(args, env={"PKGMGR_TEST_CRASH_AT": label})
    assert killed.code == -9, killed
    assert ok("doctor")["ok"] is True
    assert ok("doctor", "--check")["ok"] is True
    assert ok("ext", "verify", "--all")["verified"][0]["ok"] is True

    now, kept = _status(name)
    if command == "update":  # not applied, or applied keeping the old one
        assert (now, kept) == (first, None) or (kept == first and now != first), (now, kept)
    else:  # not rolled back, or rolled back keeping the other
        assert (now, kept) in {(second, first), (first, second)}, (now, kept)
    record("host_crash", case=f"{host}-{command} (kept tree, then rollback)", label=label, mid="-",
           settled="old" if now == second else "new")
    if kept is None:  # the update was undone: nothing is kept yet
        return
    ok("ext", "rollback", name)  # the kept install is there to switch to
    assert _status(name) == (kept, now)
    assert ok("ext", "verify", "--all")["verified"][0]["ok"] is True
    assert ok("doctor", "--check")["ok"] is True
