"""Attacks on the client side of registry format 2 (docs/registry-format.md, "Reading"), after
python-tuf's attack tests: a hostile or broken registry (served from a directory or from
127.0.0.1) and a hostile local search index. Each test changes one thing, asserts the SPEC
error code (or the correct answer), and asserts that nothing moved: the local index keeps the
serial, rows and shard digests it had, or is rebuilt to what the registry says."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import sqlite3
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.registry.layout import CHANGES_MAX_BYTES, SHARDS_FILE, SUMMARY_MAX_BYTES, chunk_path, shard_of, summary_path
from tests.publish.helpers import fail, ok, packed
from tests.support.cli import run_cli
from tests.support.servers import FaultServer, Reply, StaticFileServer

FIRST = ("other-pack", "review-pack")
FUZZ_FEW = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("PKGMGR_HOME", str(path))
    return path


def publish(tmp_path: Path, index: Path, name: str, version: str = "1.0.0") -> None:
    ok("registry", "publish", packed(tmp_path, name=name, version=version), "--index", index)


def names(*args: str) -> list[str]:
    return [r["name"] for r in ok("ext", "search", *args)["results"]]


@pytest.fixture
def index2(tmp_path: Path, home: Path) -> Path:
    """A format-2 registry at serial 2 (two extensions), added as `acme`, searched once: the
    local index holds serial 2."""
    root = tmp_path / "index"
    ok("registry", "init", root, "--name", "acme", "--format", "2")
    for name in FIRST:
        publish(tmp_path, root, name)
    ok("registry", "add", "acme", root)
    assert names("pack", "--registry", "acme") == list(FIRST)
    return root


def db_path(home: Path) -> Path:
    (db,) = list((home / "cache" / "registries").glob("*/search.sqlite"))
    return db


def local_state(home: Path) -> tuple[Any, ...]:
    """The local index as a value: its serial, every row, every shard digest."""
    with sqlite3.connect(f"file:{db_path(home)}?mode=ro", uri=True) as conn:
        return (conn.execute("SELECT serial FROM state").fetchall(),
                conn.execute("SELECT name, shard, hay, record FROM ext ORDER BY name").fetchall(),
                conn.execute("SELECT shard, sha256 FROM shards ORDER BY shard").fetchall())


def set_serial(index: Path, serial: int) -> None:
    registry = index / "registry.toml"
    text = registry.read_text()
    registry.write_text(re.sub(r"(?m)^serial = \d+$", f"serial = {serial}", text))


def edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(change(doc)))


def no_traceback(result: Any) -> None:
    assert result.code != 70 and "Traceback" not in result.stderr, result


# --- the serial --------------------------------------------------------------------------------------


def test_a_serial_that_goes_backwards_is_a_rollback_and_moves_nothing(index2: Path, home: Path) -> None:
    before = local_state(home)
    set_serial(index2, 1)
    fail("registry_rollback", "ext", "search", "pack", "--registry", "acme")
    fail("registry_rollback", "registry", "refresh", "acme")
    assert local_state(home) == before


def test_a_serial_far_in_the_future_resynchronises_from_the_shards(tmp_path: Path, index2: Path, home: Path) -> None:
    """registry.toml claims a serial no log covers: the shards decide, and the index records the
    shard list's serial (what its rows reflect), not the claim."""
    set_serial(index2, 2 ** 62)
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["summary"]["mode"] == "shards" and item["summary"]["files"] == 1  # the list; no shard changed
    assert names("pack", "--registry", "acme") == list(FIRST)
    assert local_state(home)[0] == [(2,)]


def test_a_serial_past_the_largest_integer_is_invalid(index2: Path, home: Path) -> None:
    before = local_state(home)
    set_serial(index2, 2 ** 63)
    no_traceback(run_cli(["ext", "search", "pack", "--registry", "acme", "-o", "json"]))
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    fail("invalid_index", "registry", "refresh", "acme")
    assert local_state(home) == before


# --- the changes log ---------------------------------------------------------------------------------


def chunk0(index: Path) -> Path:
    return index / chunk_path(0)


@pytest.fixture
def ahead(tmp_path: Path, index2: Path, home: Path) -> tuple[Path, tuple[Any, ...]]:
    """The registry one publish ahead of the local index (serial 3: third-pack), and the
    local state before the client caught up."""
    before = local_state(home)
    publish(tmp_path, index2, "third-pack")
    return index2, before


def test_a_chunk_missing_a_serial_resynchronises(ahead: tuple[Path, tuple[Any, ...]], home: Path) -> None:
    index2, _ = ahead
    edit_json(chunk0(index2), lambda doc: {**doc, "changes": [c for c in doc["changes"] if c["serial"] != 3]})
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["summary"]["mode"] == "shards"
    assert names("pack", "--registry", "acme") == [*FIRST, "third-pack"]


def test_duplicate_records_apply_once(ahead: tuple[Path, tuple[Any, ...]], home: Path) -> None:
    index2, _ = ahead
    edit_json(chunk0(index2), lambda doc: {**doc, "changes": doc["changes"] + doc["changes"][-1:]})
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["summary"]["mode"] == "changes" and item["extensions"] == 3
    assert names("pack", "--registry", "acme") == [*FIRST, "third-pack"]


CHUNK_ATTACKS: dict[str, Callable[[Any], Any]] = {
    "out of order": lambda doc: {**doc, "changes": doc["changes"][::-1]},
    "another chunk number": lambda doc: {**doc, "chunk": 1},
    "a serial outside the chunk": lambda doc: {**doc, "changes": [*doc["changes"][:-1],
                                                                    {**doc["changes"][-1], "serial": 65}]},
    "path traversal": lambda doc: {**doc, "changes": [*doc["changes"][:-1],
                                                      {**doc["changes"][-1], "name": "../../etc/passwd",
                                                       "extension": None}]},
    "upper case": lambda doc: {**doc, "changes": [*doc["changes"][:-1],
                                                  {**doc["changes"][-1], "name": "Third-Pack", "extension": None}]},
    "300 characters": lambda doc: {**doc, "changes": [*doc["changes"][:-1],
                                                      {**doc["changes"][-1], "name": "a" * 300, "extension": None}]},
    "a record naming another": lambda doc: {**doc, "changes": [*doc["changes"][:-1],
                                                               {**doc["changes"][-1], "name": "other-pack"}]},
    "a serial that is a string": lambda doc: {**doc, "changes": [*doc["changes"][:-1],
                                                                 {**doc["changes"][-1], "serial": "3"}]},
    "a serial that is true": lambda doc: {**doc, "changes": [{**c, "serial": True} if c["serial"] == 1 else c
                                                             for c in doc["changes"]]},
    "an unknown op": lambda doc: {**doc, "changes": [*doc["changes"][:-1], {**doc["changes"][-1], "op": "delete"}]},
    "a reset naming an extension": lambda doc: {**doc, "changes": [*doc["changes"][:-1],
                                                                   {**doc["changes"][-1], "op": "reset"}]},
    "a record that is a list": lambda doc: {**doc, "changes": [*doc["changes"][:-1], [3, "publish"]]},
    "an extra key": lambda doc: {**doc, "extra": 1},
    "format 3": lambda doc: {**doc, "format": 3},
    "changes an object": lambda doc: {**doc, "changes": {}},
    "a record with a bad summary": lambda doc: {**doc, "changes": [
        *doc["changes"][:-1], {**doc["changes"][-1], "extension": {**doc["changes"][-1]["extension"], "tier": 7}}]},
}


@pytest.mark.parametrize("attack", sorted(CHUNK_ATTACKS))
def test_a_broken_chunk_is_invalid_and_moves_nothing(ahead: tuple[Path, tuple[Any, ...]], home: Path,
                                                     attack: str) -> None:
    index2, before = ahead
    edit_json(chunk0(index2), CHUNK_ATTACKS[attack])
    doc = fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert chunk_path(0) in doc["error"]["message"]
    fail("invalid_index", "registry", "refresh", "acme")
    assert local_state(home) == before
    result = run_cli(["ext", "search", "pack", "-o", "json"])  # every registry: this one is skipped, said whole
    assert result.code == 0 and "(registry acme skipped;" in result.stderr, result


RAW_ATTACKS: dict[str, Callable[[bytes], bytes]] = {
    "nested 100,000 deep": lambda raw: b"[" * 100_000 + b"]" * 100_000,
    "NaN": lambda raw: raw.replace(b'"serial":3', b'"serial":NaN'),
    "Infinity": lambda raw: raw.replace(b'"serial":3', b'"serial":Infinity'),
    "a 5000-digit serial": lambda raw: raw.replace(b'"serial":3', b'"serial":' + b"9" * 5000),
    "a float serial": lambda raw: raw.replace(b'"serial":3', b'"serial":3.0'),
    "HTML": lambda raw: b"<!doctype html><html><body>Sign in to continue</body></html>",
    "empty": lambda raw: b"",
    "not UTF-8": lambda raw: b"\xff\xfe" + raw,
    "truncated": lambda raw: raw[: len(raw) // 2],
    "over its cap": lambda raw: raw.rstrip() + b" " * (CHANGES_MAX_BYTES + 1 - len(raw.rstrip())),
}


@pytest.mark.parametrize("attack", sorted(RAW_ATTACKS))
def test_chunk_bytes_that_are_not_a_chunk_are_invalid(ahead: tuple[Path, tuple[Any, ...]], home: Path,
                                                      attack: str) -> None:
    index2, before = ahead
    path = chunk0(index2)
    path.write_bytes(RAW_ATTACKS[attack](path.read_bytes()))
    no_traceback(run_cli(["ext", "search", "pack", "--registry", "acme"]))
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


def test_duplicate_keys_in_a_chunk_are_invalid(ahead: tuple[Path, tuple[Any, ...]], home: Path) -> None:
    """JSON with a key twice means whatever the reader picks; a registry file is refused instead."""
    index2, before = ahead
    path = chunk0(index2)
    path.write_bytes(path.read_bytes().replace(b'"serial":3', b'"serial":2,"serial":3'))
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


# --- the shard list and the shards ------------------------------------------------------------------


@pytest.fixture
def behind(tmp_path: Path, index2: Path, home: Path) -> tuple[Path, tuple[Any, ...]]:
    """As `ahead`, with the log unable to say (chunk 0 gone): the client must resynchronise."""
    index2, before = index2, local_state(home)
    publish(tmp_path, index2, "third-pack")
    chunk0(index2).unlink()
    return index2, before


SHARDS_ATTACKS: dict[str, Callable[[Any], Any]] = {
    "totals disagree": lambda doc: {**doc, "extensions": doc["extensions"] + 1},
    "a shard over its cap": lambda doc: {**doc, "shards": {k: {**v, "size": SUMMARY_MAX_BYTES + 1}
                                                           for k, v in doc["shards"].items()}},
    "a shard name that is not one": lambda doc: {**doc, "shards": {"../x": next(iter(doc["shards"].values()))}},
    "a negative count": lambda doc: {**doc, "extensions": -1},
    "a sha256 in upper case": lambda doc: {**doc, "shards": {k: {**v, "sha256": v["sha256"].upper()}
                                                             for k, v in doc["shards"].items()}},
    "format 1": lambda doc: {**doc, "format": 1},
    "a list": lambda doc: [doc],
}


@pytest.mark.parametrize("attack", sorted(SHARDS_ATTACKS))
def test_a_broken_shard_list_is_invalid_and_moves_nothing(behind: tuple[Path, tuple[Any, ...]], home: Path,
                                                          attack: str) -> None:
    index2, before = behind
    edit_json(index2 / SHARDS_FILE, SHARDS_ATTACKS[attack])
    doc = fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert SHARDS_FILE in doc["error"]["message"]
    assert local_state(home) == before


def test_a_missing_shard_list_is_invalid_and_moves_nothing(behind: tuple[Path, tuple[Any, ...]], home: Path) -> None:
    index2, before = behind
    (index2 / SHARDS_FILE).unlink()
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


def third_shard(index: Path) -> Path:
    return index / summary_path(shard_of("third-pack"))


def test_a_listed_shard_that_is_absent_is_invalid_and_moves_nothing(behind: tuple[Path, tuple[Any, ...]],
                                                                    home: Path) -> None:
    index2, before = behind
    third_shard(index2).unlink()
    doc = fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert "missing, though index/shards.json lists it" in json.dumps(doc)
    assert local_state(home) == before


def test_a_shard_over_its_cap_is_invalid_and_moves_nothing(behind: tuple[Path, tuple[Any, ...]], home: Path) -> None:
    index2, before = behind
    path = third_shard(index2)
    raw = path.read_bytes().rstrip()
    path.write_bytes(raw + b" " * (SUMMARY_MAX_BYTES + 1 - len(raw)))
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


SHARD_ATTACKS: dict[str, Callable[[Any], Any]] = {
    "a record in the wrong shard": lambda doc: {**doc, "extensions": [{**e, "name": "zz-" + e["name"]}
                                                                      for e in doc["extensions"]]},
    "another shard's name": lambda doc: {**doc, "shard": "zz"},
    "records not a list": lambda doc: {**doc, "extensions": {}},
    "a record with a bad version": lambda doc: {**doc, "extensions": [{**e, "latest": 1} for e in doc["extensions"]]},
}


@pytest.mark.parametrize("attack", sorted(SHARD_ATTACKS))
def test_a_broken_shard_is_invalid_and_moves_nothing(behind: tuple[Path, tuple[Any, ...]], home: Path,
                                                     attack: str) -> None:
    index2, before = behind
    edit_json(third_shard(index2), SHARD_ATTACKS[attack])
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


# --- the local search index --------------------------------------------------------------------------


def test_a_database_from_a_newer_schema_is_rebuilt(index2: Path, home: Path) -> None:
    before = local_state(home)
    with sqlite3.connect(db_path(home)) as conn:
        conn.execute("UPDATE state SET version = version + 1")
        conn.execute("CREATE TABLE ext_v2 (name TEXT)")
    assert names("pack", "--registry", "acme") == list(FIRST)
    assert local_state(home) == before
    with sqlite3.connect(db_path(home)) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'ext_v2'").fetchone() == (0,)


def test_a_newer_schema_without_the_columns_is_rebuilt(index2: Path, home: Path) -> None:
    before = local_state(home)
    db = db_path(home)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE state (id INTEGER PRIMARY KEY, generation INTEGER)")
        conn.execute("CREATE TABLE ext (key TEXT)")
    assert names("pack", "--registry", "acme") == list(FIRST)
    assert local_state(home) == before


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_a_symlink_in_place_of_the_database_is_not_followed(tmp_path: Path, index2: Path, home: Path,
                                                            suffix: str) -> None:
    """A link at the database's path (or its WAL's) would have pkgmgr write its tables into
    whatever database it names: the link is removed and the index rebuilt beside it."""
    before = local_state(home)
    victim = tmp_path / "victim.db"
    with sqlite3.connect(victim) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.close()
    victim_bytes = victim.read_bytes()
    db = db_path(home)
    for name in ("", "-wal", "-shm"):
        Path(f"{db}{name}").unlink(missing_ok=True)
    if suffix:
        with sqlite3.connect(db) as conn:  # a database in rollback mode: a WAL file appears on open
            conn.execute("CREATE TABLE t (x)")
        conn.close()
    Path(f"{db}{suffix}").symlink_to(victim)
    assert names("pack", "--registry", "acme") == list(FIRST)
    assert victim.read_bytes() == victim_bytes
    assert not Path(f"{db}{suffix}").is_symlink()
    assert local_state(home) == before


def test_a_fifo_in_place_of_the_database_is_replaced(index2: Path, home: Path) -> None:
    before = local_state(home)
    db = db_path(home)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.mkfifo(db)
    assert names("pack", "--registry", "acme") == list(FIRST)
    assert local_state(home) == before


def test_a_disk_full_during_a_resynchronisation_is_an_io_error_and_the_next_refresh_recovers(
        tmp_path: Path, index2: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.registry import search_index

    before = local_state(home)
    publish(tmp_path, index2, "third-pack")
    chunk0(index2).unlink()  # a resynchronisation: the shard list, then third-pack's shard

    def full(self: Any, shard: str, sha256: str, extensions: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as patch:
        patch.setattr(search_index.SearchIndex, "load_shard", full)
        doc = fail("io_error", "registry", "refresh", "acme")
        assert "database or disk is full" in json.dumps(doc)
        fail("io_error", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before  # the transaction rolled back whole
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["summary"]["mode"] == "shards" and item["serial"] == 3
    assert names("pack", "--registry", "acme") == [*FIRST, "third-pack"]


def test_a_disk_full_while_applying_changes_moves_nothing(tmp_path: Path, index2: Path, home: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.registry import search_index

    before = local_state(home)
    publish(tmp_path, index2, "third-pack")
    publish(tmp_path, index2, "fourth-pack")
    calls = []

    def full(self: Any, ext: Any, record: Any) -> None:
        calls.append(ext.name)
        if len(calls) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        real(self, ext, record)

    real = search_index.SearchIndex._upsert
    with monkeypatch.context() as patch:
        patch.setattr(search_index.SearchIndex, "_upsert", full)
        fail("io_error", "registry", "refresh", "acme")
    assert calls == ["third-pack", "fourth-pack"]
    assert local_state(home) == before  # third-pack's row went with the transaction
    assert ok("registry", "refresh", "acme")["refreshed"][0]["summary"]["mode"] == "changes"
    assert names("pack", "--registry", "acme") == ["fourth-pack", *FIRST, "third-pack"]


def test_a_shard_that_is_not_the_listed_one_is_not_taken_as_current(tmp_path: Path, index2: Path,
                                                                    home: Path) -> None:
    """A cache in front of the registry serves an older shard than the shard list names (or a
    publish ran between the two reads): its rows are used, but the index does not claim the
    list's serial, so the next search resynchronises instead of answering stale for good."""
    shard = index2 / summary_path(shard_of("review-pack"))
    old = shard.read_bytes()
    publish(tmp_path, index2, "review-pack", "1.1.0")
    new = shard.read_bytes()
    chunk0(index2).unlink()  # a resynchronisation
    shard.write_bytes(old)  # the stale cache
    (pack,) = [r for r in ok("ext", "search", "review-pack")["results"]]
    assert pack["latest"] == "1.0.0"  # what the registry served
    shard.write_bytes(new)  # the cache catches up; the registry's serial did not move
    (pack,) = [r for r in ok("ext", "search", "review-pack")["results"]]
    assert pack["latest"] == "1.1.0"
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["summary"]["mode"] == "current" and local_state(home)[0] == [(3,)]


# --- a registry that changes format between two refreshes ----------------------------------------------


def test_a_registry_switching_format_2_to_1_and_back_answers_from_what_it_serves(tmp_path: Path,
                                                                                 home: Path) -> None:
    """The same source serves a format-2 index, then a format-1 one (further on), then the
    format-2 one again (further still): each search answers from the format served, and the
    local index picks up from its own serial without a stale row."""
    source, two, one = tmp_path / "registry", tmp_path / "two", tmp_path / "one"
    ok("registry", "init", two, "--name", "acme", "--format", "2")
    ok("registry", "init", one, "--name", "acme", "--format", "1")
    for name in FIRST:
        publish(tmp_path, two, name)
        publish(tmp_path, one, name)
    publish(tmp_path, one, "third-pack")  # serial 3
    two.rename(source)
    ok("registry", "add", "acme", source)
    assert names("pack", "--registry", "acme") == list(FIRST)
    before = local_state(home)
    source.rename(two)
    one.rename(source)
    assert names("pack", "--registry", "acme") == [*FIRST, "third-pack"]  # index.json
    assert local_state(home) == before  # format 1 never touches the local index
    source.rename(one)
    two.rename(source)
    fail("registry_rollback", "ext", "search", "pack", "--registry", "acme")  # serial 2 < 3 seen
    assert local_state(home) == before
    publish(tmp_path, source, "fourth-pack")
    publish(tmp_path, source, "review-pack", "1.1.0")  # serial 4
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["serial"] == 4 and item["summary"]["mode"] == "changes"
    assert names("pack", "--registry", "acme") == ["fourth-pack", *FIRST]
    (pack,) = [r for r in ok("ext", "search", "review-pack")["results"]]
    assert pack["latest"] == "1.1.0"


def test_a_format_flipped_by_hand_leaves_a_gap_that_resynchronises(tmp_path: Path, index2: Path, home: Path) -> None:
    """registry.toml says format 1 for a while (its serial raised without a changes record),
    then format 2 again: the serial with no record sends the client to the shards."""
    registry = index2 / "registry.toml"
    text = registry.read_text()
    registry.write_text(text.replace("format = 2", "format = 1"))
    result = run_cli(["ext", "search", "pack", "--registry", "acme", "-o", "json"])
    assert result.code == 0 and result.json["results"] == [] and "has no index.json" in result.stderr, result
    set_serial(index2, 3)
    registry.write_text(registry.read_text().replace("format = 1", "format = 2"))
    publish(tmp_path, index2, "third-pack")  # serial 4: its record, none for 3
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["serial"] == 4 and item["summary"]["mode"] == "shards"
    assert names("pack", "--registry", "acme") == [*FIRST, "third-pack"]


# --- hostile HTTP answers -------------------------------------------------------------------------------


class HostileServer(StaticFileServer):
    """Serves the index directory, but answers the paths in `faults` with a scripted reply."""

    ENDLESS_CAP = 64 * 1024 * 1024

    def __init__(self, root: Path) -> None:
        super().__init__(root, name="hostile")
        self.faults: dict[str, Reply] = {}

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        reply = self.faults.get(h.path)
        if reply is None:
            super().handle(h)
            return
        try:
            FaultServer._send(self, h, reply)  # type: ignore[arg-type]
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True


@pytest.fixture
def served(tmp_path: Path, home: Path) -> Iterator[tuple[Path, HostileServer, tuple[Any, ...]]]:
    """A format-2 registry served from 127.0.0.1 as `web`, searched once at serial 2, then one
    publish ahead (third-pack, serial 3): its directory, its server, the local state before."""
    root = tmp_path / "index"
    ok("registry", "init", root, "--name", "acme", "--format", "2")
    for name in FIRST:
        publish(tmp_path, root, name)
    home.mkdir(parents=True, exist_ok=True)  # a 500 is retried: a millisecond apart, not a second
    (home / "config.toml").write_text("[network]\nbackoff_base = 0.001\n", encoding="utf-8")
    with HostileServer(root) as server:
        ok("registry", "add", "web", server.url)
        assert names("pack", "--registry", "web") == list(FIRST)
        before = local_state(home)
        publish(tmp_path, root, "third-pack")
        yield root, server, before


HTTP_FAULTS: dict[str, tuple[str, Reply, str]] = {
    "an endless chunk": (chunk_path(0), Reply(endless=True), "invalid_index"),
    "a chunk longer than it says": (chunk_path(0), Reply(body=b"{" * 100, declared_length=10), "invalid_index"),
    "a gzip bomb for a chunk": (chunk_path(0), Reply(body=gzip.compress(b" " * (CHANGES_MAX_BYTES * 4)),
                                                     headers={"Content-Encoding": "gzip"}), "invalid_index"),
    "a chunk that is a 500": (chunk_path(0), Reply(500, b"oops"), "http_error"),
    "a chunk that is HTML": (chunk_path(0), Reply(body=b"<html><body>login</body></html>",
                                                  headers={"Content-Type": "text/html"}), "invalid_index"),
    "a 304 for a chunk never asked for": (chunk_path(0), Reply(304), "http_error"),
}


@pytest.mark.parametrize("fault", sorted(HTTP_FAULTS))
def test_a_hostile_http_answer_for_a_chunk_moves_nothing(served: tuple[Path, Any, tuple[Any, ...]], home: Path,
                                                         fault: str) -> None:
    _, server, before = served
    path, reply, code = HTTP_FAULTS[fault]
    server.faults["/" + path] = reply
    no_traceback(run_cli(["ext", "search", "pack", "--registry", "web"]))
    fail(code, "ext", "search", "pack", "--registry", "web")
    assert local_state(home) == before
    del server.faults["/" + path]
    assert names("pack", "--registry", "web") == [*FIRST, "third-pack"]


def test_a_listed_shard_answering_404_over_http_is_invalid(served: tuple[Path, Any, tuple[Any, ...]],
                                                           home: Path) -> None:
    root, server, before = served
    (root / chunk_path(0)).unlink()
    server.faults["/" + summary_path(shard_of("third-pack"))] = Reply(404, b"not found")
    doc = fail("invalid_index", "ext", "search", "pack", "--registry", "web")
    assert "missing, though index/shards.json lists it" in json.dumps(doc)
    assert local_state(home) == before


def test_html_served_with_200_is_invalid_and_moves_nothing(served: tuple[Path, Any, tuple[Any, ...]],
                                                           home: Path) -> None:
    """A captive portal or a misconfigured server answers every path with an HTML page."""
    root, _, before = served
    html = b"<!doctype html><html><body>Sign in to continue</body></html>"
    for rel in (chunk_path(0), SHARDS_FILE):
        (root / rel).write_bytes(html)
        fail("invalid_index", "ext", "search", "pack", "--registry", "web")
        assert local_state(home) == before


@pytest.mark.parametrize("value", ["'three'", "2.5", "x'00'", "-7", "9223372036854775807"])
def test_a_recorded_serial_pkgmgr_did_not_write_is_rebuilt(index2: Path, home: Path, value: str) -> None:
    before = local_state(home)
    with sqlite3.connect(db_path(home)) as conn:
        conn.execute(f"UPDATE state SET serial = {value}")
    result = run_cli(["ext", "search", "pack", "--registry", "acme", "-o", "json"])
    assert result.code == 0 and [r["name"] for r in result.json["results"]] == list(FIRST), result
    assert local_state(home) == before


ROW_DAMAGE = {
    "a name that is a number": {"name": 5},
    "a description that is a list": {"description": ["x"]},
    "versions that are a string": {"versions": "1.0.0"},
    "a version that is a number": {"versions": [{"version": 1, "yanked": False, "min_compozy_version": "0.0.0"}]},
    "another name than the row's": {"name": "zzz-pack"},
    "a tier that is null": {"tier": None},
}


@pytest.mark.parametrize("damage", sorted(ROW_DAMAGE))
@pytest.mark.parametrize("term", ["pack", "pa", ""])
def test_a_row_of_the_wrong_types_rebuilds_the_index(index2: Path, home: Path, damage: str, term: str) -> None:
    before = local_state(home)
    with sqlite3.connect(db_path(home)) as conn:
        (record,) = conn.execute("SELECT record FROM ext WHERE name = 'review-pack'").fetchone()
        conn.execute("UPDATE ext SET record = ? WHERE name = 'review-pack'",
                     (json.dumps({**json.loads(record), **ROW_DAMAGE[damage]}),))
    result = run_cli(["ext", "search", *([term] if term else []), "--registry", "acme", "-o", "json"])
    assert result.code == 0 and [r["name"] for r in result.json["results"]] == list(FIRST), result
    assert "rebuilding it from the registry" in result.stderr
    assert local_state(home) == before


@pytest.mark.parametrize("damage", ["CAST('review-packs' AS BLOB)", "12345678901"])
def test_a_name_pkgmgr_did_not_write_gets_no_did_you_mean_from_it(index2: Path, home: Path, damage: str) -> None:
    with sqlite3.connect(db_path(home)) as conn:
        conn.execute(f"UPDATE ext SET name = {damage} WHERE name = 'review-pack'")
    result = run_cli(["ext", "info", "review-pak", "--registry", "acme", "-o", "json"])
    no_traceback(result)
    assert result.json["error"]["code"] == "not_found"
    assert all(type(s) is str for s in result.json["error"]["details"].get("suggestions", [])), result


@pytest.mark.parametrize("field", ["extensions", "size"])
def test_a_shard_list_entry_that_disagrees_with_its_shard_is_invalid(behind: tuple[Path, tuple[Any, ...]],
                                                                     home: Path, field: str) -> None:
    """The list names the shard's sha256 right, but not its size or count (totals kept consistent)."""
    index2, before = behind
    shard = shard_of("third-pack")

    def lie(doc: Any) -> Any:
        doc["shards"][shard][field] += 1
        doc["extensions"] = sum(s["extensions"] for s in doc["shards"].values())
        return doc

    edit_json(index2 / SHARDS_FILE, lie)
    doc = fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert SHARDS_FILE in json.dumps(doc) and f"shards.{shard}" in json.dumps(doc)
    assert local_state(home) == before


# --- a signed format-2 registry: its summary files are TUF targets ---------------------------------------


@pytest.fixture
def signed2(tmp_path: Path, home: Path) -> tuple[Any, tuple[Any, ...]]:
    from tests.support.signed import signed_index

    idx = signed_index(tmp_path / "signed", format=2)
    for name in FIRST:
        idx.publish(packed(tmp_path, name=name))
    ok("registry", "add", "acme", idx.path, "--root-sha256", idx.root_sha256())
    assert names("pack", "--registry", "acme") == list(FIRST)
    before = local_state(home)
    idx.publish(packed(tmp_path, name="third-pack"))
    return idx, before


@pytest.mark.parametrize("target", ["chunk", "shard"])
def test_an_unsigned_edit_of_a_summary_file_is_refused_and_moves_nothing(signed2: tuple[Any, tuple[Any, ...]],
                                                                         home: Path, target: str) -> None:
    idx, before = signed2
    if target == "shard":
        (idx.path / chunk_path(0)).unlink()  # a resynchronisation reads the shard
        path = idx.path / summary_path(shard_of("third-pack"))
    else:
        path = idx.path / chunk_path(0)
    edit_json(path, lambda doc: doc)  # the same document, other bytes: its hash no longer matches
    fail("registry_signature_invalid", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


def test_a_signed_registry_catches_up_from_its_signed_log(signed2: tuple[Any, tuple[Any, ...]], home: Path) -> None:
    item = ok("registry", "refresh", "acme")["refreshed"][0]
    assert item["summary"]["mode"] == "changes" and item["serial"] == 3
    assert names("pack", "--registry", "acme") == [*FIRST, "third-pack"]


# --- the summary says one thing, the entry file another ----------------------------------------------------


def test_an_entry_listed_in_a_shard_but_absent_is_not_found(tmp_path: Path, index2: Path, home: Path) -> None:
    from pkgmgr.registry.layout import entry_path

    (index2 / entry_path("review-pack", 2)).unlink()
    assert names("review-pack", "--registry", "acme") == ["review-pack"]  # the summary lists it
    doc = fail("not_found", "ext", "info", "review-pack", "--registry", "acme")
    assert "registry acme does not list it" in doc["error"]["message"]


def test_an_entry_that_differs_from_its_summary_is_what_resolves(tmp_path: Path, index2: Path, home: Path) -> None:
    """The summary is a listing; an install resolves from the entry file (SPEC 5.1), never from it."""
    shard = index2 / summary_path(shard_of("review-pack"))
    edit_json(shard, lambda doc: {**doc, "extensions": [
        {**e, "latest": "9.0.0", "versions": [*e["versions"], {**e["versions"][0], "version": "9.0.0"}]}
        if e["name"] == "review-pack" else e for e in doc["extensions"]]})
    edit_json(index2 / SHARDS_FILE, lambda doc: {**doc, "shards": {
        **doc["shards"], shard.stem: {**doc["shards"][shard.stem], "sha256": hashlib.sha256(shard.read_bytes()).hexdigest(),
                                      "size": shard.stat().st_size}}})
    set_serial(index2, 3)  # no record for serial 3: a resynchronisation
    ok("registry", "refresh", "acme")
    (pack,) = [r for r in ok("ext", "search", "review-pack", "--registry", "acme")["results"]]
    assert pack["latest"] == "9.0.0"  # what the summary says
    info = ok("ext", "info", "review-pack", "--registry", "acme")
    assert info["latest"] == "1.0.0" and [v["version"] for v in info["versions"]] == ["1.0.0"]


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_garbage_in_the_databases_wal_or_shared_memory_file_is_survived(index2: Path, home: Path,
                                                                          suffix: str) -> None:
    before = local_state(home)
    Path(f"{db_path(home)}{suffix}").write_bytes(bytes(range(256)) * 128)
    result = run_cli(["ext", "search", "pack", "--registry", "acme", "-o", "json"])
    assert result.code == 0 and [r["name"] for r in result.json["results"]] == list(FIRST), result
    assert local_state(home) == before


SUMMARY_RAW_ATTACKS: dict[str, Callable[[bytes], bytes]] = {
    "nested 100,000 deep": lambda raw: b"[" * 100_000 + b"]" * 100_000,
    "NaN": lambda raw: raw.replace(b'"format":2', b'"format":NaN'),
    "a key twice": lambda raw: raw.replace(b'"format":2', b'"format":2,"format":2'),
    "HTML": lambda raw: b"<!doctype html><html><body>Sign in to continue</body></html>",
    "a number of 5000 digits": lambda raw: raw.replace(b'"format":2', b'"format":' + b"2" * 5000),
}


@pytest.mark.parametrize("attack", sorted(SUMMARY_RAW_ATTACKS))
@pytest.mark.parametrize("target", ["shard list", "shard"])
def test_summary_bytes_that_are_not_json_of_the_format_are_invalid(behind: tuple[Path, tuple[Any, ...]], home: Path,
                                                                   attack: str, target: str) -> None:
    index2, before = behind
    path = index2 / SHARDS_FILE if target == "shard list" else third_shard(index2)
    raw = path.read_bytes()
    assert b'"format":2' in raw
    path.write_bytes(SUMMARY_RAW_ATTACKS[attack](raw))
    no_traceback(run_cli(["ext", "search", "pack", "--registry", "acme"]))
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


def test_a_frozen_registry_whose_expiry_passed_is_refused_and_moves_nothing(tmp_path: Path, index2: Path,
                                                                           home: Path) -> None:
    before = local_state(home)
    publish(tmp_path, index2, "third-pack")
    registry = index2 / "registry.toml"
    registry.write_text(registry.read_text().replace("[registry]\n", "[registry]\nexpires = 2020-01-01T00:00:00Z\n"))
    fail("registry_expired", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before
    assert names("pack", "--registry", "acme", "--allow-expired") == [*FIRST, "third-pack"]


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "link outside", "index a link outside"])
def test_a_chunk_that_is_not_a_regular_file_inside_the_registry_is_invalid(
        tmp_path: Path, ahead: tuple[Path, tuple[Any, ...]], home: Path, kind: str) -> None:
    index2, before = ahead
    path = chunk0(index2)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "0.json").write_bytes(path.read_bytes())
    if kind == "index a link outside":
        (outside / "changes").mkdir()
        (outside / "changes" / "0.json").write_bytes(path.read_bytes())
        (index2 / "index").rename(tmp_path / "index-moved")
        (index2 / "index").symlink_to(outside)
    else:
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero" if kind == "link to /dev/zero" else outside / "0.json")
    no_traceback(run_cli(["ext", "search", "pack", "--registry", "acme"]))
    fail("invalid_index", "ext", "search", "pack", "--registry", "acme")
    assert local_state(home) == before


# --- the log and the shards tell the same story ------------------------------------------------------------


NAMES = ("alpha-pack", "beta-pack", "gamma-tools", "delta", "review-pack", "other-pack")


def _record(name: str, versions: int, yanked: bool) -> dict[str, Any]:
    listed = [{"version": f"1.{i}.0", "yanked": yanked and i == versions - 1, "min_compozy_version": "0.0.0"}
              for i in range(versions)]
    latest = next((v["version"] for v in reversed(listed) if not v["yanked"]), None)
    return {"name": name, "description": f"{name} does things", "tier": "community", "latest": latest,
            "versions": listed}


_operations = st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 3), st.booleans()), min_size=1, max_size=40)


@FUZZ_FEW
@given(operations=_operations, start=st.integers(0, 40))
def test_changes_applied_on_the_shards_of_any_serial_give_the_shards_of_the_last(operations: list[Any],
                                                                                start: int) -> None:
    """Model: each operation sets one extension's summary (0 versions: removed) under the next
    serial. Loading the shards as of serial `start` and applying the log's records after it
    leaves the local index exactly as loading the last shards does — rows and answers."""
    import tempfile

    from pkgmgr.registry.search_index import SearchIndex
    from pkgmgr.registry.summary import Change, parse_chunk, parse_shard, render_chunk, render_shard

    start = min(start, len(operations))
    states: list[dict[str, dict[str, Any]]] = [{}]
    changes = []
    for serial, (name, versions, yanked) in enumerate(operations, 1):
        state = dict(states[-1])
        record = _record(name, versions, yanked) if versions else None
        if record is None:
            state.pop(name, None)
        else:
            state[name] = record
        states.append(state)
        changes.append(Change(serial, "publish", name, None, record))

    def load(index: SearchIndex, state: dict[str, dict[str, Any]], serial: int) -> None:
        with index.loading():
            shards = sorted({shard_of(n) for n in state})
            for shard in shards:
                raw = render_shard(shard, [r for n, r in state.items() if shard_of(n) == shard])
                index.load_shard(shard, hashlib.sha256(raw).hexdigest(), parse_shard(raw, summary_path(shard), shard))
            index.drop_shards(shards)
        index.set_serial(serial)

    with tempfile.TemporaryDirectory() as work:
        caught_up, fresh = SearchIndex(Path(work) / "a.sqlite", "s"), SearchIndex(Path(work) / "b.sqlite", "s")
        load(caught_up, states[start], start)
        log = parse_chunk(render_chunk(0, changes), chunk_path(0), 0)
        caught_up.apply([c for c in log if c.serial > start], len(operations))
        load(fresh, states[-1], len(operations))
        rows = "SELECT name, shard, hay, record FROM ext ORDER BY name"
        assert caught_up.db.execute(rows).fetchall() == fresh.db.execute(rows).fetchall()
        for term in ("", "pack", "al", "does"):
            assert caught_up.search(term) == fresh.search(term)
        caught_up.close()
        fresh.close()


def test_a_cache_folder_that_is_a_file_is_an_io_error(index2: Path, home: Path) -> None:
    folder = db_path(home).parent
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.write_bytes(b"not a folder")
    result = run_cli(["ext", "search", "pack", "--registry", "acme", "-o", "json"])
    no_traceback(result)
    assert result.json["error"]["code"] == "io_error" and str(folder) in result.json["error"]["message"], result
    assert "'pkgmgr cache clean'" in result.stderr
    ok("cache", "clean")  # as the hint says
    assert names("pack", "--registry", "acme") == list(FIRST)


def test_a_disk_full_during_a_first_load_leaves_an_index_the_next_refresh_fills(
        tmp_path: Path, index2: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Into an empty index the load is a bulk one (the full-text triggers dropped, the index
    built at the end, in the same transaction): a failure midway must roll the drop back too."""
    from pkgmgr.registry import search_index

    before = local_state(home)
    db = db_path(home)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    real_load = search_index.SearchIndex.load_shard
    loaded = []

    def load_shard(self: Any, shard: str, sha256: str, extensions: Any) -> None:
        loaded.append(shard)
        if len(loaded) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        real_load(self, shard, sha256, extensions)

    with monkeypatch.context() as patch:
        patch.setattr(search_index.SearchIndex, "load_shard", load_shard)
        fail("io_error", "registry", "refresh", "acme")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM ext").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM state").fetchone() == (0,)
        triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name").fetchall()
    conn.close()
    assert triggers == [("ext_ad",), ("ext_ai",), ("ext_au",)]  # the bulk load's drop rolled back
    assert names("pack", "--registry", "acme") == list(FIRST)
    assert local_state(home) == before
    publish(tmp_path, index2, "third-pack")  # and the triggers keep the full-text index in step
    assert names("third", "--registry", "acme") == ["third-pack"]


def test_registry_validate_refuses_the_key_given_twice_the_client_refuses(ahead: tuple[Path, tuple[Any, ...]]) -> None:
    """One set of rules: what the client refuses, `registry validate` reports."""
    index2, _ = ahead
    path = chunk0(index2)
    path.write_bytes(path.read_bytes().replace(b'"serial":3', b'"serial":3,"serial":3'))
    doc = fail("invalid_index", "registry", "validate", index2)
    assert "duplicate key" in json.dumps(doc) and chunk_path(0) in json.dumps(doc)
