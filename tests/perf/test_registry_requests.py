"""Registry fast paths keep the requests and outcomes of reading one file at a time: entries of
several refs are read concurrently (`Registries.prefetch`) yet each file once, errors land on
their own ref, a broken registry.toml is read once per command, and the requests of an install
do not grow with the registry."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.registry.plan import RemotePlanner
from tests.registry.conftest import regdir, static_server  # noqa: F401 - shared fixtures
from tests.registry.helpers import RegistryDir
from tests.support.cli import run_cli
from tests.support.servers import StaticFileServer


def run(home: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(["--home", str(home), *args, "-o", "json"])
    return result.code, result.json


def paths(server: StaticFileServer) -> Counter[str]:
    return Counter(r.path for r in server.requests)


def outcome(doc: dict[str, Any]) -> Any:
    return ([(i["name"], i["version"]) for i in doc.get("installed", [])],
            sorted((f["ref"], f["error"]["code"]) for f in doc.get("failed", [])),
            (doc.get("error") or {}).get("code"))


def test_many_names_read_each_file_once(tmp_path: Path, regdir: RegistryDir, static_server: StaticFileServer) -> None:
    names = [f"demo-{i}" for i in range(6)]
    for i in range(20):
        regdir.publish(f"other-{i:02d}", "1.0.0", write=False)
    for name in names:
        regdir.publish(name, "1.0.0", write=False)
    regdir.write()
    home = tmp_path / "h"
    assert run(home, "registry", "add", "acme", static_server.url)[0] == 0
    static_server.clear()
    code, doc = run(home, "ext", "install", *names)
    assert code == 0 and sorted(i["name"] for i in doc["installed"]) == names
    expected = Counter(["/registry.toml"] + [f"/extensions/de/{n}.toml" for n in names]
                       + [f"/archives/{n}-1.0.0.tar.gz" for n in names])
    assert paths(static_server) == expected


def test_prefetch_keeps_the_sequential_outcome_and_requests(tmp_path: Path, regdir: RegistryDir,
                                                           static_server: StaticFileServer,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    regdir.publish("good-ext", "1.0.0")
    regdir.publish("broken-ext", "1.0.0")
    regdir.publish("also-good", "2.0.0")
    regdir.change("broken-ext", "1.0.0", bump=False, sha256="XYZ")  # an invalid entry file
    refs = ["good-ext", "missing-ext", "broken-ext", "also-good@2.0.0", "also-good@9.9.9"]
    seen = {}
    for mode in ("prefetch", "sequential"):
        if mode == "sequential":
            monkeypatch.setattr(RemotePlanner, "prefetch", lambda self, refs: None)
        home = tmp_path / mode
        assert run(home, "registry", "add", "acme", static_server.url)[0] == 0
        static_server.clear()
        code, doc = run(home, "ext", "install", *refs, "--keep-going")
        seen[mode] = (code, outcome(doc), paths(static_server))
    assert seen["prefetch"] == seen["sequential"]
    code, (installed, failed, error), requests = seen["prefetch"]
    assert installed == [("good-ext", "1.0.0"), ("also-good", "2.0.0")]
    assert failed == [("also-good@9.9.9", "version_not_found"), ("broken-ext", "invalid_index"),
                      ("missing-ext", "not_found")]
    assert requests["/registry.toml"] == 1 and requests["/extensions/al/also-good.toml"] == 1


def test_a_broken_registry_toml_is_read_once_per_command(tmp_path: Path, regdir: RegistryDir,
                                                         static_server: StaticFileServer) -> None:
    for name in ("one-ext", "two-ext", "three-ext"):
        regdir.publish(name, "1.0.0")
    home = tmp_path / "h"
    assert run(home, "registry", "add", "acme", static_server.url)[0] == 0
    (regdir.root / "registry.toml").write_text("not toml [", encoding="utf-8")
    static_server.clear()
    code, doc = run(home, "ext", "install", "one-ext", "two-ext", "three-ext")
    assert code != 0 and {f["error"]["code"] for f in doc["failed"]} == {"invalid_index"} and len(doc["failed"]) == 3
    assert paths(static_server) == Counter({"/registry.toml": 1})


def test_the_requests_of_an_install_do_not_grow_with_the_registry(tmp_path: Path) -> None:
    shapes = []
    for size in (10, 600):
        reg = RegistryDir(tmp_path / f"r{size}", "acme")
        for i in range(size - 1):
            reg.publish(f"filler-{i:04d}", "1.0.0", write=False, bump=False)
        reg.publish("demo-ext", "0.1.0")
        with StaticFileServer(reg.root) as server:
            home = tmp_path / f"h{size}"
            assert run(home, "registry", "add", "acme", server.url)[0] == 0
            server.clear()
            assert run(home, "ext", "install", "demo-ext")[0] == 0
            shapes.append(paths(server))
    assert shapes[0] == shapes[1] == Counter(["/registry.toml", "/extensions/de/demo-ext.toml",
                                              "/archives/demo-ext-0.1.0.tar.gz"])


def test_a_second_update_check_revalidates_every_file_and_gets_no_body(tmp_path: Path, regdir: RegistryDir,
                                                                     static_server: StaticFileServer) -> None:
    names = [f"upd-{i}" for i in range(5)]
    for name in names:
        regdir.publish(name, "1.0.0", write=False)
    regdir.publish(names[0], "1.1.0")
    home = tmp_path / "h"
    assert run(home, "registry", "add", "acme", static_server.url)[0] == 0
    assert run(home, "ext", "install", *[f"{n}@1.0.0" for n in names])[0] == 0
    first = run(home, "ext", "update", "--all", "--check")[1]
    static_server.clear()
    second = run(home, "ext", "update", "--all", "--check")[1]
    assert second == first
    assert paths(static_server) == Counter(["/registry.toml"] + [f"/extensions/up/{n}.toml" for n in names])
    assert all(r.headers.get("if-none-match") for r in static_server.requests)
