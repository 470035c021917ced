"""The registry cache's file format (pkgmgr.registry.cache): one file per cached registry file,
a header line and the body. Anything that is not such a file — torn, a body whose sha256 is not
its header's, a file an older pkgmgr wrote (a bare body beside a `.meta.json`) — reads as not
cached, and the next read fetches it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.registry.cache import RECORD_MAGIC, CachedFile, FileCache, decode_record, encode_record

BODY = b'name = "demo-ext"\n\n[[versions]]\nversion = "0.1.0"\n'


def cached(tmp_path: Path, **fields: object) -> tuple[FileCache, Path]:
    cache = FileCache(tmp_path / "cache")
    item = CachedFile("http://127.0.0.1:1/extensions/de/demo-ext.toml", BODY, etag='"e1"',
                      last_modified="Tue, 01 Dec 2026 00:00:00 GMT", **fields)  # type: ignore[arg-type]
    cache.store("extensions/de/demo-ext.toml", item)
    return cache, tmp_path / "cache" / "extensions" / "de" / "demo-ext.toml"


def test_one_file_holds_the_validators_the_parse_and_the_body(tmp_path: Path) -> None:
    cache, path = cached(tmp_path, parsed=("entry/1/demo-ext", {"name": "demo-ext"}))
    assert [p.relative_to(tmp_path) for p in (tmp_path / "cache").rglob("*") if p.is_file()] == [
        path.relative_to(tmp_path)]
    assert path.read_bytes().startswith(RECORD_MAGIC) and path.read_bytes().endswith(BODY)
    loaded = cache.load("extensions/de/demo-ext.toml")
    assert loaded is not None
    assert (loaded.body, loaded.etag, loaded.last_modified) == (BODY, '"e1"', "Tue, 01 Dec 2026 00:00:00 GMT")
    assert loaded.parsed == ("entry/1/demo-ext", {"name": "demo-ext"})
    assert decode_record(path.read_bytes()) is not None  # a cache file, as every reader reads it


@pytest.mark.parametrize("damage", ["torn-body", "other-body", "no-magic", "no-newline", "header-not-json",
                                    "header-not-object", "older-pkgmgr", "empty"])
def test_a_damaged_or_foreign_file_is_not_cached(tmp_path: Path, damage: str) -> None:
    cache, path = cached(tmp_path)
    data = path.read_bytes()
    header, _, body = data.partition(b"\n")
    written = {
        "torn-body": data[:-5],
        "other-body": header + b"\n" + body.replace(b"0.1.0", b"9.9.9"),
        "no-magic": data[len(RECORD_MAGIC):],
        "no-newline": header,
        "header-not-json": RECORD_MAGIC + b"{nope\n" + body,
        "header-not-object": RECORD_MAGIC + b"[1]\n" + body,
        "older-pkgmgr": BODY,  # with its validators in a sidecar, which is no longer read
        "empty": b"",
    }[damage]
    path.write_bytes(written)
    if damage == "older-pkgmgr":
        path.with_name(path.name + ".meta.json").write_text(json.dumps({"url": "u", "etag": '"e1"'}))
    assert cache.load("extensions/de/demo-ext.toml") is None


def test_refresh_drops_the_validators_and_keeps_the_body(tmp_path: Path) -> None:
    cache, path = cached(tmp_path)
    cache.drop_validators()
    loaded = cache.load("extensions/de/demo-ext.toml")
    assert loaded is not None and loaded.body == BODY and loaded.stale
    assert (loaded.etag, loaded.last_modified) == (None, None)


@given(header=st.dictionaries(st.text(), st.one_of(st.text(), st.integers(), st.none(), st.booleans()), max_size=5),
       body=st.binary(max_size=200))
def test_any_header_and_body_come_back_as_written(header: dict, body: bytes) -> None:
    assert decode_record(encode_record(header, body)) == (header, body)


def test_prune_removes_the_stale_files_of_one_folder_only(tmp_path: Path) -> None:
    cache = FileCache(tmp_path / "cache")
    for rel in ("index/changes/0.json", "index/changes/1.json", "index/changes/2.json", "registry.toml"):
        cache.store(rel, CachedFile("https://example.test/" + rel, b"{}", None, None))
    outside = tmp_path / "outside.json"
    outside.write_text("mine")
    (tmp_path / "cache" / "index" / "changes" / "00.json").symlink_to(outside)  # a link put there: left alone
    (tmp_path / "cache" / "index" / "changes" / "01.json").mkdir()  # a folder: left alone

    dropped = cache.prune("index/changes", lambda name: name < "2")
    assert dropped == ["index/changes/0.json", "index/changes/1.json"]
    left = sorted(p.name for p in (tmp_path / "cache" / "index" / "changes").iterdir())
    assert left == ["00.json", "01.json", "2.json"] and outside.read_text() == "mine"
    assert cache.load("registry.toml") is not None
    assert cache.prune("no/such/folder", lambda name: True) == []


def test_prune_that_cannot_remove_a_file_leaves_it_and_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = FileCache(tmp_path / "cache")
    for rel in ("index/changes/0.json", "index/changes/1.json"):
        cache.store(rel, CachedFile("https://example.test/" + rel, b"{}", None, None))
    forget = FileCache.forget

    def refusing(self: FileCache, rel: str) -> None:
        if rel.endswith("/0.json"):
            raise PermissionError(13, "Permission denied", rel)
        forget(self, rel)

    monkeypatch.setattr(FileCache, "forget", refusing)
    assert cache.prune("index/changes", lambda name: True) == ["index/changes/1.json"]
    assert sorted(p.name for p in (tmp_path / "cache" / "index" / "changes").iterdir()) == ["0.json"]
