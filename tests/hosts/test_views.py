"""hosts.views: the values the CLI renders for other hosts' extensions, without the CLI."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from pkgmgr.config import Limits
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.hosts.views import adopt_names, adopted_entry, hosts_overview, judge_path, pack_hosted
from pkgmgr.store.scope import Scope, global_scope
from tests.hosts.helpers import UNVERIFIED, Homes, eva_script, ok, terva_extension
from tests.support.builders import write_extension


def test_judge_path_names_the_host_or_leaves_it_to_compozy(tmp_path: Path) -> None:
    judged = judge_path(terva_extension(tmp_path / "hello"), None, limits=Limits())
    assert judged is not None and (judged.host, judged.name, judged.version) == ("terva", "hello", "0.1.0")
    script = eva_script(tmp_path / "eva", "notes")
    judged = judge_path(script, None, limits=Limits())
    assert judged is not None and (judged.host, judged.layout) == ("eva", "script")
    assert judge_path(write_extension(tmp_path / "demo-ext"), None, limits=Limits()) is None
    assert judge_path(tmp_path / "hello", "compozy", limits=Limits()) is None
    for path, forced, code in ((tmp_path / "nothing", None, Code.NOT_FOUND),
                               (script, "terva", Code.INVALID_ARCHIVE)):
        with pytest.raises(PkgmgrError) as exc:
            judge_path(path, forced, limits=Limits())
        assert exc.value.code == code


def test_pack_hosted_writes_the_archive_under_name_and_version(tmp_path: Path) -> None:
    packed = pack_hosted(terva_extension(tmp_path / "hello"), None, release=None, output=tmp_path / "out.tar.gz",
                         limits=Limits())
    assert packed is not None and packed.path == tmp_path / "out.tar.gz"
    assert packed.to_json() == {"name": "hello", "version": "0.1.0", "host": "terva", "path": str(packed.path),
                                "sha256": packed.sha256, "size": packed.path.stat().st_size}
    with tarfile.open(packed.path) as tar:
        assert "hello-0.1.0/extension.json" in tar.getnames()
    assert pack_hosted(write_extension(tmp_path / "demo-ext"), None, release=None, output=None,
                       limits=Limits()) is None
    script = eva_script(tmp_path / "eva", "notes")
    with pytest.raises(PkgmgrError) as exc:
        pack_hosted(script, None, release=None, output=None, limits=Limits(), label="notes.exs")
    assert exc.value.code == Code.USAGE and exc.value.message.startswith("notes.exs: an Eva extension")
    packed = pack_hosted(script, None, release="1.0.0", output=tmp_path / "notes.tar.gz", limits=Limits())
    assert packed is not None and packed.version == "1.0.0"
    with pytest.raises(PkgmgrError) as exc:
        pack_hosted(script, None, release="one", output=tmp_path / "x.tar.gz", limits=Limits())
    assert exc.value.code == Code.INVALID_MANIFEST


def test_hosts_overview_counts_managed_and_unmanaged(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    eva_script(homes.eva / "extensions", "mine")  # copied by hand
    hosts = {h["name"]: h for h in hosts_overview(global_scope(homes.pkgmgr), None, None)}
    assert list(hosts) == ["compozy", "terva", "eva", "vera", "gemini", "claude"]
    assert hosts["compozy"]["homes"] == {"global": str(homes.pkgmgr), "project": None}
    assert hosts["terva"]["homes"] == {"global": str(homes.terva / "extensions"), "project": None}
    assert [(hosts[h]["managed"], hosts[h]["unmanaged"]) for h in ("terva", "eva")] == [(1, 0), (0, 1)]


def test_adopt_names_records_what_is_there(tmp_path: Path, homes: Homes) -> None:
    terva_extension(homes.terva / "extensions" / "hello")
    scope: Scope = global_scope(homes.pkgmgr)
    [row] = adopt_names(scope, "terva", [], lock_timeout=5)
    entry = adopted_entry(row)
    assert (entry["name"], entry["host"], entry["source"]) == ("hello", "terva", "unknown")
    assert entry["tree_sha256"] == row.tree_sha256
    assert adopt_names(scope, "terva", [], lock_timeout=5) == []  # nothing left unmanaged
    with pytest.raises(PkgmgrError) as exc:
        adopt_names(scope, "nohost", [], lock_timeout=5)
    assert exc.value.code == Code.USAGE


def test_hosted_status_fills_the_compozy_fields_and_names_the_kind(tmp_path: Path, homes: Homes) -> None:
    from pkgmgr.hosts.views import hosted_status
    from pkgmgr.store import records

    ok("ext", "install", terva_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    [row] = records.list_rows(global_scope(homes.pkgmgr), "terva")
    data = hosted_status(row)
    assert (data["name"], data["host"], data["kind"], data["version"]) == ("hello", "terva", "subprocess", "0.1.0")
    assert data["path"] == str(row.directory) and data["missing_env"] == data["bundles"] == []
    assert "trust" not in data  # only an Eva project folder has an approval
