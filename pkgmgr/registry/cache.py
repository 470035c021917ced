"""Registry files fetched over HTTP, cached with their validators (ETag / Last-Modified).

Layout: `<home>/cache/registries/<sha256(source)[:24]>/<relative path>` with a sidecar
`<path>.meta.json` holding the URL, validators and the body's sha256; a body that does not
match its sidecar (a torn write) counts as not cached. Readers store a body only after it
passed every check that decides whether it is used (`sources.CachingReader.keep`). Writes are atomic (temporary file and
`os.replace`) but not fsynced: a cache loses nothing it cannot fetch again.

The sidecar may also hold the body's validated parse (`parsed`: the reader's key, the body's
sha256, the parse as plain JSON — never pickle: the cache holds no code — and a sha256 over
the three), so a body the server confirms with a 304 is not parsed again. It is handed out only
when its sha256 is the body's and its digest holds; anything else reads as no parse, and the
reader parses the body. It is written with the body, i.e. only once the body passed every
check, and is trusted exactly as far as the body beside it (whoever can write one can write
the other).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pkgmgr.fsutil import atomic_write_bytes, remove_tree

COMMIT_FILE = "commit.json"  # a GitHub registry's last resolved commit, with its ETag


@dataclass(frozen=True)
class CachedFile:
    url: str
    body: bytes
    etag: str | None = None
    last_modified: str | None = None
    stale: bool = False  # `registry refresh` dropped its validators: fetch it again before use
    parsed: tuple[str, Any] | None = None  # (reader's key, JSON value): the body's validated parse
    meta_only: bool = False  # `store` rewrites only the sidecar (the body on disk is this one)


def cache_root(home: Path, source: str) -> Path:
    return home / "cache" / "registries" / hashlib.sha256(source.encode("utf-8")).hexdigest()[:24]


class FileCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _paths(self, rel: str) -> tuple[Path, Path]:
        body = self.root / rel
        return body, body.with_name(body.name + ".meta.json")

    def load(self, rel: str) -> CachedFile | None:
        body_path, meta_path = self._paths(rel)
        try:
            with open(meta_path, "rb") as file:
                meta = json.loads(file.read())
            with open(body_path, "rb") as file:
                body = file.read()
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(meta, dict) or meta.get("sha256") != hashlib.sha256(body).hexdigest():
            return None
        url = meta.get("url")
        if not isinstance(url, str):
            return None
        return CachedFile(url, body, _str_or_none(meta.get("etag")), _str_or_none(meta.get("last_modified")),
                          stale=meta.get("stale") is True, parsed=_parsed_record(meta.get("parsed"), meta["sha256"]))

    def store(self, rel: str, item: CachedFile) -> None:
        body_path, meta_path = self._paths(rel)
        body_path.parent.mkdir(parents=True, exist_ok=True)
        sha256 = hashlib.sha256(item.body).hexdigest()
        meta: dict[str, Any] = {"url": item.url, "etag": item.etag, "last_modified": item.last_modified,
                                "sha256": sha256}
        if item.stale:
            meta["stale"] = True
        if item.parsed is not None:
            key, value = item.parsed
            text = json.dumps(value, sort_keys=True, separators=(",", ":"))
            meta["parsed"] = {"key": key, "sha256": sha256, "value": text, "digest": _parsed_digest(key, sha256, text)}
        # no fsync (`durable=False`): a file torn by a power cut fails its sidecar's sha256 and
        # counts as not cached, so durability would buy nothing but ~4 fsyncs per file
        if not item.meta_only:
            atomic_write_bytes(body_path, item.body, durable=False)
        atomic_write_bytes(meta_path, json.dumps(meta, sort_keys=True).encode("utf-8"), durable=False)

    def drop_validators(self) -> None:
        """Forget every ETag/Last-Modified of this registry (`registry refresh`): the next read
        of each file is unconditional, so a body the server would keep confirming with 304s is
        fetched again. The bodies stay, for `--offline`."""
        if not self.root.is_dir():
            return
        for meta_path in sorted(self.root.rglob("*.meta.json")):
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                meta = None
            if not isinstance(meta, dict):
                meta_path.unlink(missing_ok=True)
                continue
            meta.update(etag=None, last_modified=None, stale=True)
            atomic_write_bytes(meta_path, json.dumps(meta, sort_keys=True).encode("utf-8"), durable=False)
        commit = self.load_json(COMMIT_FILE)
        if commit is not None and commit.get("etag") is not None:
            self.store_json(COMMIT_FILE, {**commit, "etag": None})

    def forget(self, rel: str) -> None:
        for path in self._paths(rel):
            path.unlink(missing_ok=True)

    def load_json(self, rel: str) -> dict | None:
        """A small JSON document kept beside the files (e.g. the last resolved commit)."""
        try:
            value = json.loads((self.root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def store_json(self, rel: str, value: dict) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(value, sort_keys=True).encode("utf-8"), durable=False)

    def clear(self) -> None:
        remove_tree(self.root)


def _parsed_digest(key: str, sha256: str, text: str) -> str:
    return hashlib.sha256(f"{key}\n{sha256}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _parsed_record(record: Any, sha256: str) -> tuple[str, Any] | None:
    """A sidecar's `parsed` (the value kept as JSON text), if it is the parse of the body whose
    sha256 is `sha256` and its digest holds."""
    if not isinstance(record, dict) or record.get("sha256") != sha256:
        return None
    key, text, digest = record.get("key"), record.get("value"), record.get("digest")
    if not isinstance(key, str) or not isinstance(text, str) or not isinstance(digest, str):
        return None
    if not hmac.compare_digest(_parsed_digest(key, sha256, text).encode("ascii"), digest.encode("utf-8", "replace")):
        return None
    try:
        return key, json.loads(text)
    except (ValueError, RecursionError):
        return None


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
