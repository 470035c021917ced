"""Registry files fetched over HTTP, cached with their validators (ETag / Last-Modified).

Layout: `<home>/cache/registries/<sha256(source)[:24]>/<relative path>` with a sidecar
`<path>.meta.json` holding the URL, validators and the body's sha256; a body that does not
match its sidecar (a torn write) counts as not cached. Readers store a body only after it
passed every check that decides whether it is used (`sources.CachingReader.keep`). Writes are atomic (temporary file and
`os.replace`) but not fsynced: a cache loses nothing it cannot fetch again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pkgmgr.fsutil import atomic_write_bytes, remove_tree

COMMIT_FILE = "commit.json"  # a GitHub registry's last resolved commit, with its ETag


@dataclass(frozen=True)
class CachedFile:
    url: str
    body: bytes
    etag: str | None = None
    last_modified: str | None = None
    stale: bool = False  # `registry refresh` dropped its validators: fetch it again before use


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
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            body = body_path.read_bytes()
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("sha256") != hashlib.sha256(body).hexdigest():
            return None
        url = meta.get("url")
        if not isinstance(url, str):
            return None
        return CachedFile(url, body, _str_or_none(meta.get("etag")), _str_or_none(meta.get("last_modified")),
                          stale=meta.get("stale") is True)

    def store(self, rel: str, item: CachedFile) -> None:
        body_path, meta_path = self._paths(rel)
        body_path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"url": item.url, "etag": item.etag, "last_modified": item.last_modified,
                "sha256": hashlib.sha256(item.body).hexdigest()}
        # no fsync (`durable=False`): a file torn by a power cut fails its sidecar's sha256 and
        # counts as not cached, so durability would buy nothing but ~4 fsyncs per file
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


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
