"""pkgmgr.lifecycle: one lifecycle for every host's installs, driven directly — names found across
hosts, each change routed to the host of its record, the same result shape for every host — and
the authoring commands (`ext new`, `ext validate`, `ext pack --output DIR`) for every host."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from pkgmgr import hosts, lifecycle
from pkgmgr.config import Config
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.store.scope import Scope, global_scope
from tests.hosts.conftest import _host_homes, homes  # noqa: F401 - the host homes under tmp_path
from tests.hosts.helpers import UNVERIFIED, Homes, eva_script, ok, terva_extension, vera_extension
from tests.support.builders import write_extension


@pytest.fixture
def scope(home: Path) -> Scope:
    scope = global_scope(home)
    yield scope  # type: ignore[misc]
    scope.close()


def _install_three(tmp_path: Path) -> None:
    ok("ext", "install", write_extension(tmp_path / "src" / "demo-ext"), *UNVERIFIED)
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    ok("ext", "install", eva_script(tmp_path / "src", "notes"), *UNVERIFIED)


def test_find_names_every_host_and_leaves_the_choice_to_host(tmp_path: Path, scope: Scope) -> None:
    _install_three(tmp_path)
    ok("ext", "install", terva_extension(tmp_path / "src2" / "demo-ext", name="demo-ext"), *UNVERIFIED)
    found = lifecycle.find([scope], ["hello", "notes", "ghost"])
    hello, notes, ghost = found["hello"], found["notes"], found["ghost"]
    assert not isinstance(hello, PkgmgrError) and (hello.host, hello.in_store) == ("terva", False)
    assert not isinstance(notes, PkgmgrError) and (notes.host, notes.layout) == ("eva", "script")
    assert isinstance(ghost, PkgmgrError) and ghost.code == Code.NOT_FOUND
    with pytest.raises(PkgmgrError) as caught:
        lifecycle.find([scope], ["demo-ext"])
    assert caught.value.code == Code.USAGE and caught.value.details["hosts"] == ["compozy", "terva"]
    chosen = lifecycle.find([scope], ["demo-ext"], "compozy")["demo-ext"]
    assert not isinstance(chosen, PkgmgrError) and chosen.in_store


def test_one_change_routes_each_record_to_its_host(tmp_path: Path, scope: Scope, homes: Homes) -> None:
    _install_three(tmp_path)
    done = lifecycle.set_enabled(scope, ["demo-ext", "hello", "ghost", "notes"], False)
    assert [(i.name, i.host, i.enabled) for i in done.changed] == [
        ("demo-ext", "compozy", False), ("hello", "terva", False), ("notes", "eva", False)]
    assert done.error is not None and done.error.code == Code.NOT_FOUND and "ghost" in done.error.message
    assert b'"enabled": false' in (homes.terva / "extensions" / "hello" / "extension.json").read_bytes()
    assert not (homes.eva / "extensions" / "notes.exs").exists()  # waits outside Eva's folder
    entries = [i.entry() for i in done.changed]
    assert entries[0] == {"name": "demo-ext", "version": "0.1.0", "scope": "global"}
    assert entries[1]["host"] == "terva" and entries[1]["path"] == str(homes.terva / "extensions" / "hello")
    removed = lifecycle.remove(scope, ["notes", "hello", "demo-ext"])
    assert [i.name for i in removed.changed] == ["notes", "hello", "demo-ext"] and removed.error is None
    assert lifecycle.listed([scope]) == []


def test_verify_checks_each_tree_as_its_host_checksums_it(tmp_path: Path, scope: Scope, homes: Homes) -> None:
    _install_three(tmp_path)
    lifecycle.set_enabled(scope, ["hello"], False)  # terva's own rewrite of `enabled`: not a change
    results, error = lifecycle.verify(lifecycle.listed([scope]))
    assert error is None and [(r["name"], r.get("host"), r["ok"]) for r in results] == [
        ("demo-ext", None, True), ("notes", "eva", True), ("hello", "terva", True)]
    (homes.terva / "extensions" / "hello" / "run.sh").write_text("#!/bin/sh\nexit 1\n")
    results, error = lifecycle.verify(lifecycle.listed([scope], "terva"))
    assert error is not None and error.code == Code.TREE_MODIFIED and "hello 0.1.0 (terva): 1 modified" in error.message


def test_recovery_settles_every_host_and_reports_nothing_when_nothing_was_left(scope: Scope) -> None:
    assert lifecycle.interrupted(scope) == [] and lifecycle.recover(scope, 5) == []


@pytest.mark.parametrize("host", list(hosts.HOSTS))
def test_a_new_extension_of_every_host_validates_and_packs_into_a_directory(host: str, tmp_path: Path,
                                                                           home: Path) -> None:
    """`ext new --host H` for every host, its default template: validated by its host, packed with
    `--output DIR/` (the archive named after it), installed from that archive."""
    created = lifecycle.new("my-ext", host=host, template=None, target=tmp_path / "my-ext")
    assert created.template == hosts.get(host).templates[0] and created.host == host
    config = Config()
    validation = lifecycle.validate(created.path, None, config=config, shown="my-ext")
    assert validation.data["name"] == "my-ext"
    packed = lifecycle.pack(created.path, None, release="0.1.0", output=str(tmp_path / "dist") + "/", config=config,
                            shown="my-ext")
    assert packed.path == tmp_path / "dist" / "my-ext-0.1.0.tar.gz" and packed.host == host
    with tarfile.open(packed.path) as tar:
        assert all(name.startswith("my-ext-0.1.0") for name in tar.getnames())
    [installed] = ok("ext", "install", packed.path, *UNVERIFIED)["installed"]
    # Eva's format carries no version: an archive installed without a registry records none (SPEC 13)
    assert (installed["name"], installed["version"]) == ("my-ext", None if host == "eva" else "0.1.0")


def test_new_refuses_a_template_its_host_does_not_offer(tmp_path: Path) -> None:
    with pytest.raises(PkgmgrError) as caught:
        lifecycle.new("my-ext", host="vera", template="bundle", target=tmp_path / "x")
    assert caught.value.code == Code.USAGE and "extension" in caught.value.message
    assert not (tmp_path / "x").exists()


def test_validate_names_the_host_of_what_it_was_given(tmp_path: Path) -> None:
    config = Config()
    assert lifecycle.validate(vera_extension(tmp_path / "ctx"), None, config=config, shown="ctx").data["host"] == "vera"
    compozy = lifecycle.validate(write_extension(tmp_path / "demo"), None, config=config, shown="demo")
    assert "host" not in compozy.data and compozy.lines[0].startswith("demo: demo-ext 0.1.0 is valid")
    with pytest.raises(PkgmgrError) as caught:
        lifecycle.validate(eva_script(tmp_path, "notes"), "terva", config=config, shown="notes.exs")
    assert caught.value.code == Code.INVALID_ARCHIVE
