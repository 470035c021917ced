"""The local search index of a format-2 registry (registry/search_index.py): search answers from
SQLite, and a refresh fetches only what changed since the serial it holds — the changes log,
else the shards whose sha256 it lacks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pkgmgr.registry.layout import CHUNK_SERIALS, INCREMENTAL_CHUNKS, chunk_path, shard_of, summary_path
from tests.publish.helpers import fail, ok, packed
from tests.support.cli import run_cli
from tests.support.servers import StaticFileServer


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("PKGMGR_HOME", str(path))
    return path


@pytest.fixture
def index(tmp_path: Path) -> Path:
    root = tmp_path / "index1"
    ok("registry", "init", root, "--name", "acme", "--format", "1")
    return root


@pytest.fixture
def index2(tmp_path: Path) -> Path:
    root = tmp_path / "index"
    ok("registry", "init", root, "--name", "acme", "--format", "2")
    return root


def publish(tmp_path: Path, index: Path, name: str, version: str = "1.0.0") -> None:
    ok("registry", "publish", packed(tmp_path, name=name, version=version), "--index", index)


def names(*args: str) -> list[str]:
    return [r["name"] for r in ok("ext", "search", *args)["results"]]


def refresh(name: str = "acme") -> dict:
    (item,) = ok("registry", "refresh", name)["refreshed"]
    return item


def test_search_answers_from_the_local_index_and_follows_the_changes(tmp_path: Path, home: Path,
                                                                     index2: Path) -> None:
    for name in ("alpha-pack", "alpha-tools", "other-pack"):  # one description: "Review skills, ..."
        publish(tmp_path, index2, name)
    ok("registry", "add", "acme", index2)
    assert names("alpha", "--registry", "acme") == ["alpha-pack", "alpha-tools"]
    assert names("al", "--registry", "acme") == ["alpha-pack", "alpha-tools"]  # short: a scan
    assert names("mcp helpers", "--registry", "acme") == ["alpha-pack", "alpha-tools", "other-pack"]
    assert names("--registry", "acme") == ["alpha-pack", "alpha-tools", "other-pack"]
    first = refresh()
    assert (first["serial"], first["extensions"], first["summary"]["mode"]) == (3, 3, "current")

    publish(tmp_path, index2, "alpha-more")
    publish(tmp_path, index2, "alpha-pack", "1.1.0")
    ok("registry", "yank", index2, "alpha-pack", "1.1.0")
    caught_up = refresh()
    assert caught_up["serial"] == 6 and caught_up["summary"]["mode"] == "changes"
    assert caught_up["summary"]["files"] == 1  # one chunk: no shard, no shard list
    assert names("alpha", "--registry", "acme") == ["alpha-more", "alpha-pack", "alpha-tools"]
    (pack,) = [r for r in ok("ext", "search", "alpha-pack")["results"]]
    assert pack["latest"] == "1.0.0" and pack["versions"] == ["1.0.0", "1.1.0"] and pack["registry"] == "acme"


def test_a_gap_in_the_log_resynchronises_from_the_changed_shards_only(tmp_path: Path, home: Path,
                                                                       index2: Path) -> None:
    for name in ("review-pack", "other-pack"):
        publish(tmp_path, index2, name)
    assert shard_of("review-pack") != shard_of("other-pack")
    ok("registry", "add", "acme", index2)
    assert refresh()["summary"]["mode"] in ("current", "shards")
    publish(tmp_path, index2, "review-pack", "1.1.0")
    (index2 / chunk_path(0)).unlink()  # the log cannot say what serial 3 was
    item = refresh()
    assert item["summary"]["mode"] == "shards"
    assert item["summary"]["files"] == 2  # the shard list and review-pack's shard, not other-pack's
    (pack,) = [r for r in ok("ext", "search", "review-pack")["results"] if r["name"] == "review-pack"]
    assert pack["latest"] == "1.1.0"


def test_a_build_reset_and_a_long_absence_resynchronise(tmp_path: Path, home: Path, index: Path) -> None:
    publish(tmp_path, index, "review-pack")
    ok("registry", "add", "acme", index)
    assert names("review") == ["review-pack"]  # format 1: index.json
    ok("registry", "build", index, "--format", "2")  # a migration logs a reset
    assert refresh()["summary"]["mode"] == "shards"
    assert names("review") == ["review-pack"]
    registry = index / "registry.toml"  # far behind: more chunks than a client applies one by one
    text = registry.read_text()
    serial = 2 + CHUNK_SERIALS * INCREMENTAL_CHUNKS
    registry.write_text(text.replace("serial = 2", f"serial = {serial}"))
    ok("registry", "build", index)
    item = refresh()
    assert item["summary"]["mode"] == "shards" and item["serial"] == serial


def test_a_damaged_local_index_is_rebuilt(tmp_path: Path, home: Path, index2: Path) -> None:
    publish(tmp_path, index2, "review-pack")
    ok("registry", "add", "acme", index2)
    assert names("review") == ["review-pack"]
    (db,) = list((home / "cache" / "registries").glob("*/search.sqlite"))
    db.write_bytes(b"not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert names("review") == ["review-pack"]


@pytest.mark.parametrize("damage", [
    "UPDATE ext SET record = '{'",  # not JSON
    "UPDATE ext SET record = '[1]'",  # JSON, not a record
    "UPDATE ext SET record = '{\"name\": \"review-pack\"}'",  # a record missing its fields
])
def test_a_row_pkgmgr_did_not_write_rebuilds_the_index(tmp_path: Path, home: Path, index2: Path, damage: str) -> None:
    publish(tmp_path, index2, "review-pack")
    ok("registry", "add", "acme", index2)
    assert names("review") == ["review-pack"]
    (db,) = list((home / "cache" / "registries").glob("*/search.sqlite"))
    with sqlite3.connect(db) as conn:
        conn.execute(damage)
    result = run_cli(["ext", "search", "review", "-o", "json"])
    assert result.code == 0, result
    assert [r["name"] for r in json.loads(result.stdout)["results"]] == ["review-pack"]
    assert "local search index" in result.stderr and "rebuilding it from the registry" in result.stderr
    assert names("review") == ["review-pack"]  # and the rebuilt index answers without a word


def test_glob_characters_are_plain_text(tmp_path: Path, home: Path, index2: Path) -> None:
    publish(tmp_path, index2, "review-pack")
    ok("registry", "add", "acme", index2)
    assert names("*ev*") == [] and names("rev[") == [] and names("iew-p") == ["review-pack"]


def test_a_skipped_registry_says_why_whole(tmp_path: Path, home: Path, index2: Path) -> None:
    publish(tmp_path, index2, "review-pack")
    ok("registry", "add", "acme", index2)
    shard = index2 / summary_path(shard_of("review-pack"))
    shard.write_text(json.dumps({"format": 2, "shard": "zz", "extensions": []}))
    result = run_cli(["ext", "search", "review"])
    assert result.code == 0, result
    assert "registry acme" in result.stderr and "index/summary/" in result.stderr
    assert "is 'zz', but the file is shard" in result.stderr  # the problem itself, not only the first line
    assert "(registry acme skipped;" in result.stderr
    assert fail("invalid_index", "ext", "search", "review", "--registry", "acme")


def test_refresh_over_http_fetches_only_the_changes(tmp_path: Path, home: Path, index2: Path) -> None:
    for name in ("review-pack", "other-pack"):
        publish(tmp_path, index2, name)
    with StaticFileServer(index2) as server:
        ok("registry", "add", "web", server.url)
        assert names("pack", "--registry", "web") == ["other-pack", "review-pack"]
        publish(tmp_path, index2, "third-pack")
        server.clear()
        assert names("pack", "--registry", "web") == ["other-pack", "review-pack", "third-pack"]
        paths = sorted(r.path for r in server.requests)
        assert paths == ["/" + chunk_path(0), "/registry.toml"]  # no shard, no shard list
        server.clear()
        assert names("pack", "--registry", "web") == ["other-pack", "review-pack", "third-pack"]
        assert [r.path for r in server.requests] == ["/registry.toml"]  # its serial: nothing else to fetch


def test_without_fts5_search_scans(tmp_path: Path, home: Path, index2: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.registry import search_index

    monkeypatch.setattr(search_index, "_fts_available", lambda db: False)
    for name in ("review-pack", "other-pack"):
        publish(tmp_path, index2, name)
    ok("registry", "add", "acme", index2)
    assert names("iew-p") == ["review-pack"] and names("pack") == ["other-pack", "review-pack"]
    publish(tmp_path, index2, "third-pack")
    assert names("pack") == ["other-pack", "review-pack", "third-pack"]


def test_a_local_index_that_cannot_be_opened_is_an_io_error(tmp_path: Path, home: Path, index2: Path) -> None:
    publish(tmp_path, index2, "review-pack")
    ok("registry", "add", "acme", index2)
    assert names("review") == ["review-pack"]
    (db,) = list((home / "cache" / "registries").glob("*/search.sqlite"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.mkdir()  # not a file SQLite can open, nor remove
    doc = fail("io_error", "ext", "search", "review", "--registry", "acme")
    assert "search.sqlite" in doc["error"]["message"]


# --- did you mean (SPEC 11), from the local index ----------------------------------------------------


def test_a_misspelt_name_gets_did_you_mean_from_a_format_2_registry(tmp_path: Path, home: Path,
                                                                   index2: Path) -> None:
    """The user's case was `ext remove revew-pack`; a name no registry lists gets the closest names
    a format-2 registry lists (from its local index), on install and on info."""
    for name in ("acme-linter", "acme-lint-rules", "other-pack"):
        publish(tmp_path, index2, name)
    ok("registry", "add", "acme", index2)
    for command in (["ext", "install", "acme-lintr"], ["ext", "info", "acme-lintr"]):
        result = run_cli(command)
        assert result.code == 5, result
        assert "did you mean acme-linter or acme-lint-rules?" in result.stderr, result
        assert run_cli([*command, "-o", "json"]).json["error"]["details"]["suggestions"] == ["acme-linter",
                                                                                            "acme-lint-rules"]
    assert "did you mean" not in run_cli(["ext", "info", "zzzzzzzz"]).stderr


def test_names_near_ranks_the_names_sharing_most_pieces_among_many(tmp_path: Path) -> None:
    """The candidates "did you mean" ranks: one pass over the names, at most NEAR_LIMIT, those
    sharing the most three-letter pieces first; lengths difflib's cutoff rules out left out."""
    from pkgmgr.registry.search_index import NEAR_LIMIT, SearchIndex

    index = SearchIndex(tmp_path / "search.sqlite", "source")
    names = [f"ext-{i:05d}-tools" for i in range(5000)] + ["review-pack", "review-packs", "r", "x" * 40]
    index.db.executemany("INSERT INTO ext (name, shard, hay, record) VALUES (?, '00', ?, '{}')",
                         [(name, name) for name in names])
    near = index.names_near("revew-pack")
    assert near[:2] == ["review-pack", "review-packs"] and len(near) <= NEAR_LIMIT
    assert "r" not in near and "x" * 40 not in near
    assert index.names_near("zzzz") == []
    index.close()


def test_the_cached_changes_chunks_a_client_is_past_are_dropped(tmp_path: Path, home: Path, index2: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Each refresh caches the chunk it read; once the index is past a chunk (the next catch-up
    starts at the chunk of its serial + 1), the cached copy goes: the cache holds at most the chunk
    still growing, however many serials the registry has seen."""
    import pkgmgr.registry.layout as layout

    monkeypatch.setattr(layout, "CHUNK_SERIALS", 2)  # two serials per chunk: chunks fill quickly

    def cached() -> list[str]:
        return sorted(p.name for p in (home / "cache" / "registries").glob("*/index/changes/*.json"))

    publish(tmp_path, index2, "review-pack")
    with StaticFileServer(index2) as server:
        ok("registry", "add", "web", server.url)
        assert names("pack", "--registry", "web") == ["review-pack"]  # serial 1: from the shards
        publish(tmp_path, index2, "other-pack")  # serial 2, chunk 0 full
        publish(tmp_path, index2, "third-pack")  # serial 3, in chunk 1
        summary = refresh("web")["summary"]
        assert (summary["mode"], summary["files"]) == ("changes", 2)  # chunks 0 and 1
        assert cached() == ["1.json"]  # chunk 0 is behind the index (serial 3): only chunk 1 is read again
        publish(tmp_path, index2, "fourth-pack")  # serial 4: chunk 1 full
        assert refresh("web")["serial"] == 4
        assert cached() == []
        assert names("pack", "--registry", "web") == ["fourth-pack", "other-pack", "review-pack", "third-pack"]
