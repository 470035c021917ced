"""End-to-end: `ext install NAME@VERSION` of the installed version over a tree that was deleted or
damaged repairs it from the download cache (SPEC 4), instead of answering "already installed"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.registry.conftest import regdir, static_server  # noqa: F401 - shared fixtures
from tests.registry.helpers import RegistryDir
from tests.support.cli import run_cli
from tests.support.servers import StaticFileServer


def ok(*args: str) -> dict:
    result = run_cli([*args, "-o", "json"])
    assert result.code == 0, result
    return result.json


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_the_same_version_repairs_its_tree_from_the_cache(damage: str, home: Path, regdir: RegistryDir,
                                                          static_server: StaticFileServer) -> None:
    regdir.publish("demo-ext", "0.1.0")
    ok("registry", "add", "acme", static_server.url + "/")
    ok("ext", "install", "demo-ext@0.1.0")
    intact = ok("--offline", "ext", "install", "demo-ext@0.1.0")
    assert intact["installed"] == [], intact  # an intact tree: a no-op
    directory = Path(ok("ext", "status", "demo-ext")["path"])
    if damage == "deleted":
        shutil.rmtree(directory)
    else:
        victim = next(p for p in sorted(directory.rglob("*")) if p.is_file())
        victim.write_bytes(b"")
    static_server.clear()
    repaired = ok("--offline", "ext", "install", "demo-ext@0.1.0")  # offline: from the download cache
    assert [(i["name"], i["version"]) for i in repaired["installed"]] == [("demo-ext", "0.1.0")], repaired
    assert static_server.count() == 0
    assert ok("ext", "verify", "demo-ext")["verified"][0]["ok"] is True
    assert ok("doctor", "--check")["ok"] is True
