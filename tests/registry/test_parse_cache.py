"""The validated parse kept beside a cached registry file (registry/cache.py, readers.CachedParse):
a body the server confirms with a 304 is not parsed again, the kept parse is used only for the
very body it came from, and anything else about it (tampered, torn, mismatched, of another
format or name) is ignored and derived again from the body — never trusted. The SPEC 5.4 checks
run on the value either way."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Callable

import pytest

import pkgmgr.registry.client as client_module
from pkgmgr.config import Config, NetworkSettings, RegistryConfig
from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.cache import _parsed_digest, cache_root, decode_record, encode_record
from pkgmgr.registry.index_format import (
    Entry,
    entry_from_json,
    entry_path,
    entry_to_json,
    meta_from_json,
    meta_to_json,
    parse_entry,
    parse_registry,
)
from pkgmgr.registry.session import Session
from tests.registry.helpers import RegistryDir
from tests.support.servers import StaticFileServer

FAST = NetworkSettings(connect_timeout=2.0, read_timeout=2.0, retries=1)
ENTRY = entry_path("demo-ext")


def session(home: Path, config: RegistryConfig, *, offline: bool = False, allow_expired: bool = False) -> Session:
    return Session(home, Config(network=FAST, registries=(config,)), offline=offline, allow_expired=allow_expired)


def sidecar(home: Path, config: RegistryConfig, rel: str) -> Path:
    """The cache file of `rel` (its header holds the validators and the kept parse)."""
    return cache_root(home, config.source.rstrip("/") + "/") / rel


def read_meta(path: Path) -> dict[str, Any]:
    record = decode_record(path.read_bytes())
    assert record is not None, path
    return record[0]


def write_meta(path: Path, meta: dict[str, Any]) -> None:
    """Rewrite the header of a cache file, keeping its body."""
    record = decode_record(path.read_bytes())
    assert record is not None, path
    path.write_bytes(encode_record(meta, record[1]))


def rewrite_parsed(path: Path, change: Callable[[dict[str, Any]], None], *, fix_digest: bool) -> None:
    """Edit the kept parse of a sidecar (its value as a document), optionally with a digest that
    matches again (what a careful tamperer would write)."""
    meta = read_meta(path)
    record = meta["parsed"]
    value = json.loads(record["value"])
    change(value)
    record["value"] = json.dumps(value, sort_keys=True, separators=(",", ":"))
    if fix_digest:
        record["digest"] = _parsed_digest(record["key"], record["sha256"], record["value"])
    write_meta(path, meta)


class Parses:
    """Counts the parses of entry files and registry.toml that actually ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entries = 0
        self.registries = 0

        def entry(raw: bytes, file: str, **kw: Any) -> Entry:
            self.entries += 1
            return parse_entry(raw, file, **kw)

        def registry(raw: bytes, file: str = "registry.toml") -> Any:
            self.registries += 1
            return parse_registry(raw, file)

        monkeypatch.setattr(client_module, "parse_entry", entry)
        monkeypatch.setattr(client_module, "parse_registry", registry)


@pytest.fixture
def config(regdir: RegistryDir, static_server: StaticFileServer) -> RegistryConfig:
    regdir.publish("demo-ext", "0.1.0")
    regdir.publish("demo-ext", "0.2.0")
    return RegistryConfig("acme", static_server.url + "/")


def lookup(home: Path, config: RegistryConfig, **kw: Any) -> Entry:
    s = session(home, config, **kw)
    _, entry = s.registries.lookup("demo-ext")
    s.registries.get("acme").remember()
    return entry


def test_json_forms_round_trip(regdir: RegistryDir) -> None:
    regdir.expires = "2031-02-03T04:05:06Z"
    regdir.publish("demo-ext", "0.1.0", permissions=("network",), yanked=True)
    entry = parse_entry((regdir.root / ENTRY).read_bytes(), ENTRY, expected_name="demo-ext")
    meta = parse_registry((regdir.root / "registry.toml").read_bytes())
    assert entry_from_json(json.loads(json.dumps(entry_to_json(entry))), expected_name="demo-ext") == entry
    assert meta_from_json(json.loads(json.dumps(meta_to_json(meta)))) == meta
    assert meta.expires is not None and meta_from_json(meta_to_json(meta)).expires == meta.expires


@pytest.mark.parametrize("change", [
    lambda d: d.update(name="other-ext"),
    lambda d: d.update(extra=1),
    lambda d: d["versions"][0].update(size=True),
    lambda d: d["versions"][0].update(size="1"),
    lambda d: d["versions"][0].update(yanked=0),
    lambda d: d["versions"][0].update(published="2026-01-01T00:00:00"),
    lambda d: d["versions"][0].pop("sha256"),
    lambda d: d["versions"][0].update(permissions=[1]),
    lambda d: d.update(tier="platinum"),
    lambda d: d.update(versions={}),
])
def test_entry_from_json_refuses_any_other_shape(regdir: RegistryDir, change: Callable[[dict], None]) -> None:
    regdir.publish("demo-ext", "0.1.0")
    doc = entry_to_json(parse_entry((regdir.root / ENTRY).read_bytes(), ENTRY))
    change(doc)
    with pytest.raises((ValueError, TypeError, KeyError)):
        entry_from_json(doc, expected_name="demo-ext")


def test_a_304_uses_the_kept_parse(home: Path, config: RegistryConfig, static_server: StaticFileServer,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    first = lookup(home, config)
    for rel in ("registry.toml", ENTRY):
        record = read_meta(sidecar(home, config, rel))["parsed"]
        assert record["sha256"] == read_meta(sidecar(home, config, rel))["sha256"]
    parses = Parses(monkeypatch)
    static_server.clear()
    assert lookup(home, config) == first
    assert (parses.entries, parses.registries) == (0, 0)
    assert {r.path for r in static_server.requests} == {"/registry.toml", "/extensions/de/demo-ext.toml"}
    assert all("if-none-match" in r.headers for r in static_server.requests)
    assert lookup(home, config, offline=True) == first and (parses.entries, parses.registries) == (0, 0)


@pytest.mark.parametrize("tamper", ["value", "value-and-digest-but-not-this-body", "key", "torn", "not-json",
                                    "wrong-shape"])
def test_a_tampered_or_mismatched_parse_is_ignored_and_derived_again(
        home: Path, config: RegistryConfig, monkeypatch: pytest.MonkeyPatch, tamper: str) -> None:
    honest = lookup(home, config)
    path = sidecar(home, config, ENTRY)

    def unyank_and_redirect(doc: dict[str, Any]) -> None:
        doc["versions"][-1]["sha256"] = "0" * 64
        doc["versions"][-1]["url"] = "https://evil.example/x.tar.gz"

    if tamper == "value":
        rewrite_parsed(path, unyank_and_redirect, fix_digest=False)
    elif tamper == "value-and-digest-but-not-this-body":
        meta = read_meta(path)
        meta["parsed"]["sha256"] = "1" * 64
        write_meta(path, meta)
        rewrite_parsed(path, unyank_and_redirect, fix_digest=True)
    elif tamper == "key":
        meta = read_meta(path)
        record = meta["parsed"]
        record["key"] = record["key"].replace("demo-ext", "other-ext")
        record["digest"] = _parsed_digest(record["key"], record["sha256"], record["value"])
        write_meta(path, meta)
    elif tamper == "torn":
        meta = read_meta(path)
        meta["parsed"]["value"] = meta["parsed"]["value"][:20]
        write_meta(path, meta)
    elif tamper == "not-json":
        meta = read_meta(path)
        record = meta["parsed"]
        record["value"] = "{not json"
        record["digest"] = _parsed_digest(record["key"], record["sha256"], record["value"])
        write_meta(path, meta)
    else:  # a digest that holds over a value of another shape: entry_from_json refuses it
        rewrite_parsed(path, lambda d: d["versions"][0].update(size="big"), fix_digest=True)
    parses = Parses(monkeypatch)
    again = lookup(home, config)
    assert again == honest and parses.entries == 1
    # derived again from the body and kept (after the checks), so the next 304 needs no parse
    assert json.loads(read_meta(path)["parsed"]["value"]) == entry_to_json(honest)
    lookup(home, config)
    assert parses.entries == 1


def test_a_cache_without_a_parse_gains_one_but_not_offline(home: Path, config: RegistryConfig,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    honest = lookup(home, config)
    path = sidecar(home, config, ENTRY)
    meta = read_meta(path)
    del meta["parsed"]
    write_meta(path, meta)  # a cache written before parses were kept
    parses = Parses(monkeypatch)
    assert lookup(home, config, offline=True) == honest and parses.entries == 1
    assert "parsed" not in read_meta(path)  # offline, the cache is only read
    assert lookup(home, config) == honest and parses.entries == 2
    assert "parsed" in read_meta(path)
    assert lookup(home, config) == honest and parses.entries == 2


def test_a_changed_body_is_parsed_never_answered_from_the_old_parse(
        home: Path, regdir: RegistryDir, config: RegistryConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    lookup(home, config)
    regdir.publish("demo-ext", "0.3.0")
    parses = Parses(monkeypatch)
    entry = lookup(home, config)
    assert [v.version for v in entry.versions] == ["0.1.0", "0.2.0", "0.3.0"] and parses.entries == 1


def test_expiry_is_judged_on_a_kept_parse(home: Path, regdir: RegistryDir, static_server: StaticFileServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    regdir.expires = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    regdir.publish("demo-ext", "0.1.0")
    config = RegistryConfig("acme", static_server.url + "/")
    lookup(home, config)
    parses = Parses(monkeypatch)
    later = datetime.now(UTC) + timedelta(days=2)
    real = client_module.check_meta
    monkeypatch.setattr(client_module, "check_meta", lambda meta, **kw: real(meta, **kw, now=later))
    with pytest.raises(PkgmgrError) as exc:
        lookup(home, config)
    assert exc.value.code == "registry_expired" and parses.registries == 0  # the 304'd parse, still judged


def test_sticky_yanks_hold_on_a_kept_parse(home: Path, regdir: RegistryDir, config: RegistryConfig,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    regdir.change("demo-ext", "0.2.0", yanked=True)
    assert lookup(home, config).find("0.2.0").yanked  # type: ignore[union-attr]
    regdir.change("demo-ext", "0.2.0", yanked=False)  # the registry un-yanks it: a new body
    assert lookup(home, config).find("0.2.0").yanked  # type: ignore[union-attr]
    parses = Parses(monkeypatch)
    again = lookup(home, config)  # a 304: the kept parse says not yanked; the memory says yanked
    assert again.find("0.2.0").yanked and parses.entries == 0  # type: ignore[union-attr]


def test_a_refused_body_leaves_no_parse(home: Path, regdir: RegistryDir, config: RegistryConfig) -> None:
    lookup(home, config)
    before = read_meta(sidecar(home, config, ENTRY))
    regdir.change("demo-ext", "0.1.0", sha256="a" * 64)  # a known version whose sha256 changed
    with pytest.raises(PkgmgrError) as exc:
        lookup(home, config)
    assert exc.value.code == "registry_checksum_changed"
    assert read_meta(sidecar(home, config, ENTRY)) == before
