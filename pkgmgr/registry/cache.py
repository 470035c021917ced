"""Registry files fetched over HTTP, cached with their validators (ETag / Last-Modified).

Layout: `<home>/cache/registries/<sha256(source)[:24]>/<relative path>`, one file per cached
registry file: a header line (`RECORD_MAGIC` and a JSON object: the URL, the validators and the
body's sha256) and then the body as the server sent it. One file, not a body and a sidecar:
caching a file is one write (a temporary file and `os.replace`) and reading it one open — a
20-extension install wrote 42 files here, a second `ext update --check` read 102. A body that
does not match its header's sha256 (a torn write), a file without the header (one an older
pkgmgr wrote) or an unreadable header counts as not cached. Readers store a body only after it
passed every check that decides whether it is used (`sources.CachingReader.keep`). Writes are
not fsynced: a cache loses nothing it cannot fetch again.

The header may also hold the body's validated parse (`parsed`: the reader's key, the body's
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
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pkgmgr.fsutil import atomic_write_bytes, read_regular, remove_tree

COMMIT_FILE = "commit.json"  # a GitHub registry's last resolved commit, with its ETag


@dataclass(frozen=True)
class CachedFile:
    url: str
    body: bytes
    etag: str | None = None
    last_modified: str | None = None
    stale: bool = False  # `registry refresh` dropped its validators: fetch it again before use
    parsed: tuple[str, Any] | None = None  # (reader's key, JSON value): the body's validated parse


RECORD_MAGIC = b"pkgmgr-registry-cache 1 "
# a cache file holds one registry file (at most 16 MiB: index.json) and its kept parse
MAX_FILE_BYTES = 64 * 1024 * 1024


def encode_record(header: dict[str, Any], body: bytes) -> bytes:
    """A cache file: the magic, `header` as one line of JSON (ASCII: a newline inside is
    escaped), then `body`."""
    return RECORD_MAGIC + json.dumps(header, sort_keys=True).encode("ascii") + b"\n" + body


def decode_record(data: bytes) -> tuple[dict[str, Any], bytes] | None:
    """The header and body of a cache file, None when it is not one."""
    if not data.startswith(RECORD_MAGIC):
        return None
    end = data.find(b"\n", len(RECORD_MAGIC))
    if end < 0:
        return None
    try:
        header = json.loads(data[len(RECORD_MAGIC):end])
    except (ValueError, RecursionError):
        return None
    return (header, data[end + 1:]) if isinstance(header, dict) else None  # the body copied once


def is_plain_rel(rel: str) -> bool:
    """A relative path that stays below its root: no empty, `.` or `..` segment, no leading `/`,
    no backslash or NUL (a registry file's name, and so a cache file's)."""
    return (isinstance(rel, str) and bool(rel) and "\\" not in rel and "\0" not in rel
            and all(part not in ("", ".", "..") for part in rel.split("/")))


def cache_root(home: Path, source: str) -> Path:
    return home / "cache" / "registries" / hashlib.sha256(source.encode("utf-8")).hexdigest()[:24]


class FileCache:
    """One registry's cached files under `root`, by their path in the registry (`rel`, which must
    be plain: `is_plain_rel`; anything else is a bug of the caller, ValueError)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, rel: str) -> Path:
        if not is_plain_rel(rel):
            raise ValueError(f"not a registry file's path: {rel!r}")
        return self.root / rel

    def load(self, rel: str) -> CachedFile | None:
        """The cached file `rel`, None when there is none or it is not a sound cache file. Read
        with the bounded primitive: a FIFO, a device, a link or a file over `MAX_FILE_BYTES` put
        there is a file not cached, never a read that hangs."""
        try:
            data = read_regular(self._path(rel), limit=MAX_FILE_BYTES)
        except OSError:
            return None
        record = decode_record(data) if len(data) <= MAX_FILE_BYTES else None
        if record is None:
            return None
        meta, body = record
        if meta.get("sha256") != hashlib.sha256(body).hexdigest():
            return None
        url = meta.get("url")
        if not isinstance(url, str):
            return None
        return CachedFile(url, body, _str_or_none(meta.get("etag")), _str_or_none(meta.get("last_modified")),
                          stale=meta.get("stale") is True, parsed=_parsed_record(meta.get("parsed"), meta["sha256"]))

    def store(self, rel: str, item: CachedFile) -> None:
        path = self._path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        sha256 = hashlib.sha256(item.body).hexdigest()
        meta: dict[str, Any] = {"url": item.url, "etag": item.etag, "last_modified": item.last_modified,
                                "sha256": sha256}
        if item.stale:
            meta["stale"] = True
        if item.parsed is not None:
            key, value = item.parsed
            text = json.dumps(value, sort_keys=True, separators=(",", ":"))
            meta["parsed"] = {"key": key, "sha256": sha256, "value": text, "digest": _parsed_digest(key, sha256, text)}
        # no fsync (`durable=False`): a file torn by a power cut fails its header's sha256 and
        # counts as not cached, so durability would buy nothing but fsyncs
        atomic_write_bytes(path, encode_record(meta, item.body), durable=False)

    def drop_validators(self) -> None:
        """Forget every ETag/Last-Modified of this registry (`registry refresh`): the next read
        of each file is unconditional, so a body the server would keep confirming with 304s is
        fetched again. The bodies stay, for `--offline`. Each file is read once; one that is no
        cache file (the commit record, a file an older pkgmgr left) is left as it is."""
        if not self.root.is_dir():
            return
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            try:
                data = read_regular(path, limit=MAX_FILE_BYTES)
            except OSError:
                continue  # gone meanwhile, or not a file pkgmgr wrote: nothing to forget
            record = decode_record(data) if len(data) <= MAX_FILE_BYTES else None
            if record is None:
                continue
            meta, body = record
            meta.update(etag=None, last_modified=None, stale=True)
            atomic_write_bytes(path, encode_record(meta, body), durable=False)
        commit = self.load_json(COMMIT_FILE)
        if commit is not None and commit.get("etag") is not None:
            self.store_json(COMMIT_FILE, {**commit, "etag": None})

    def forget(self, rel: str) -> None:
        self._path(rel).unlink(missing_ok=True)

    def prune(self, folder: str, stale: Callable[[str], bool]) -> list[str]:
        """Remove the cached files directly in `folder` whose name `stale` says no read will
        need again (the changes chunks a client has caught up past); returns their paths. A
        link or a folder put there is left alone. Best effort: a file that cannot be removed
        stays (a cache file read again is refetched at worst), never failing the caller."""
        try:
            with os.scandir(self._path(folder)) as entries:
                names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False) and stale(e.name))
        except OSError:  # no such folder yet, or not one pkgmgr can list: nothing to prune
            return []
        dropped = []
        for name in names:
            try:
                self.forget(f"{folder}/{name}")
            except OSError:
                continue
            dropped.append(f"{folder}/{name}")
        return dropped

    def load_json(self, rel: str) -> dict | None:
        """A small JSON document kept beside the files (e.g. the last resolved commit)."""
        from pkgmgr.documents import DocumentError, read_json_file

        try:
            value = read_json_file(self._path(rel), max_bytes=1024 * 1024)
        except (OSError, DocumentError):
            return None
        return value if isinstance(value, dict) else None

    def store_json(self, rel: str, value: dict) -> None:
        path = self._path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(value, sort_keys=True).encode("utf-8"), durable=False)

    def clear(self) -> None:
        remove_tree(self.root)


def _parsed_digest(key: str, sha256: str, text: str) -> str:
    return hashlib.sha256(f"{key}\n{sha256}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _parsed_record(record: Any, sha256: str) -> tuple[str, Any] | None:
    """A header's `parsed` (the value kept as JSON text), if it is the parse of the body whose
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
