"""Format 2's summary (docs/registry-format.md): summary shards, the shard list and the changes
log — their bytes (deterministic), their strict parsers, and the writes a change makes.

- `render_shard` / `parse_shard`: `index/summary/<h0h1>.json`, one record per line;
- `render_shards` / `parse_shards`: `index/shards.json`;
- `render_chunk` / `parse_chunk`: `index/changes/<k>.json`;
- `change_writes`: what publish, yank and unyank write besides the entry — one shard, the shard
  list and one chunk — read and computed from those three files only.

Parsers raise `ValidationFailed(invalid_index)` naming the file, never anything else.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pkgmgr.errors import Code, Problem, ValidationFailed
from pkgmgr.registry.index_format import (
    IndexExtension,
    decode_json,
    is_extension_name,
    parse_records,
    read_capped,
)
from pkgmgr.registry.layout import (
    CHANGES_MAX_BYTES,
    SHARDS,
    SHARDS_FILE,
    SHARDS_MAX_BYTES,
    SUMMARY_MAX_BYTES,
    chunk_of,
    chunk_path,
    chunk_range,
    shard_of,
    summary_path,
)

INVALID = Code.INVALID_INDEX
OPS = ("publish", "yank", "unyank", "build", "reset")
_MAX_SERIAL = 9223372036854775807
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _fail(file: str, key: str, message: str) -> ValidationFailed:
    return ValidationFailed([Problem(INVALID, file, key, message)])


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def record_json(ext: IndexExtension) -> dict[str, Any]:
    """A parsed summary record back to its JSON object (the key order `summary_record` writes)."""
    return {"name": ext.name, "description": ext.description, "tier": ext.tier,
            **({"host": ext.host} if ext.host != "compozy" else {}), "latest": ext.latest,
            "versions": [{"version": v.version, "yanked": v.yanked, "min_compozy_version": v.min_compozy_version}
                         for v in ext.versions]}


# --- summary shards ------------------------------------------------------------------------------


def render_shard(shard: str, records: Sequence[dict[str, Any]]) -> bytes:
    """A summary shard's bytes: records sorted by name, one per line."""
    body = ",\n".join(_line(r) for r in sorted(records, key=lambda r: r["name"]))
    return f'{{"format":2,"shard":"{shard}","extensions":[\n{body}\n]}}\n'.encode()


def parse_shard(raw: bytes, file: str, shard: str) -> tuple[IndexExtension, ...]:
    doc = decode_json(raw, file, cap=SUMMARY_MAX_BYTES, unique_keys=True)
    if type(doc) is not dict or doc.keys() != {"format", "shard", "extensions"}:
        raise _fail(file, "", 'must be an object with exactly "format", "shard" and "extensions"')
    if doc["format"] != 2 or type(doc["format"]) is not int:
        raise _fail(file, "format", "must be 2")
    if doc["shard"] != shard:
        raise _fail(file, "shard", f"is {doc['shard']!r}, but the file is shard {shard!r}")
    if type(doc["extensions"]) is not list:
        raise _fail(file, "extensions", "must be an array")
    records = parse_records(doc["extensions"], file)
    strays = [r.name for r in records if shard_of(r.name) != shard]
    if strays:
        raise _fail(file, "extensions", f"{strays[0]!r} belongs in shard {shard_of(strays[0])}, not {shard}")
    return records


def read_shard(root: Path, shard: str) -> tuple[bytes | None, tuple[IndexExtension, ...]]:
    """The bytes and records of a shard of the index at `root` (None and () when it is absent)."""
    rel = summary_path(shard)
    path = root / rel
    if not path.is_file() and not path.is_symlink():
        return None, ()
    raw = read_capped(path, SUMMARY_MAX_BYTES, rel, root=root)
    return raw, parse_shard(raw, rel, shard)


# --- the shard list ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardInfo:
    sha256: str
    size: int
    extensions: int


@dataclass(frozen=True)
class ShardList:
    serial: int
    extensions: int
    shards: dict[str, ShardInfo]


def shard_info(data: bytes, count: int) -> ShardInfo:
    return ShardInfo(hashlib.sha256(data).hexdigest(), len(data), count)


def render_shards(serial: int, shards: dict[str, ShardInfo]) -> bytes:
    total = sum(s.extensions for s in shards.values())
    lines = ",\n".join(f'"{name}":' + _line({"sha256": info.sha256, "size": info.size, "extensions": info.extensions})
                       for name, info in sorted(shards.items()))
    return (f'{{"format":2,"serial":{serial},"extensions":{total},"shards":{{\n{lines}\n}}}}\n'
            if lines else f'{{"format":2,"serial":{serial},"extensions":0,"shards":{{}}}}\n').encode()


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= _MAX_SERIAL


def parse_shards(raw: bytes, file: str = SHARDS_FILE) -> ShardList:
    doc = decode_json(raw, file, cap=SHARDS_MAX_BYTES, unique_keys=True)
    if type(doc) is not dict or doc.keys() != {"format", "serial", "extensions", "shards"}:
        raise _fail(file, "", 'must be an object with exactly "format", "serial", "extensions" and "shards"')
    if doc["format"] != 2 or type(doc["format"]) is not int:
        raise _fail(file, "format", "must be 2")
    for key in ("serial", "extensions"):
        if not _count(doc[key]):
            raise _fail(file, key, "must be a non-negative integer")
    if type(doc["shards"]) is not dict:
        raise _fail(file, "shards", "must be an object")
    shards = {}
    for name, item in doc["shards"].items():
        key = f"shards.{name}"
        if name not in SHARDS:
            raise _fail(file, key, "is not a shard name (two lower-case hex digits)")
        if type(item) is not dict or item.keys() != {"sha256", "size", "extensions"}:
            raise _fail(file, key, 'must be an object with exactly "sha256", "size" and "extensions"')
        if type(item["sha256"]) is not str or not _SHA256.fullmatch(item["sha256"]):
            raise _fail(file, f"{key}.sha256", "must be 64 lower-case hex digits")
        if not _count(item["size"]) or not _count(item["extensions"]) or item["size"] > SUMMARY_MAX_BYTES:
            raise _fail(file, key, "size and extensions must be non-negative integers (size within the shard cap)")
        shards[name] = ShardInfo(item["sha256"], item["size"], item["extensions"])
    if sum(s.extensions for s in shards.values()) != doc["extensions"]:
        raise _fail(file, "extensions", "is not the sum of the shards' extensions")
    return ShardList(doc["serial"], doc["extensions"], shards)


def read_shards(root: Path) -> ShardList | None:
    path = root / SHARDS_FILE
    if not path.is_file() and not path.is_symlink():
        return None
    return parse_shards(read_capped(path, SHARDS_MAX_BYTES, SHARDS_FILE, root=root))


# --- the changes log -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    serial: int
    op: str
    name: str | None
    extension: IndexExtension | None  # the new summary record; None: removed (or a reset)
    record: dict[str, Any] | None = None  # the same, as its JSON object


def change_json(change: Change) -> dict[str, Any]:
    return {"serial": change.serial, "op": change.op, "name": change.name, "extension": change.record}


def render_chunk(chunk: int, changes: Sequence[Change]) -> bytes:
    body = ",\n".join(_line(change_json(c)) for c in changes)
    inner = f"\n{body}\n" if body else ""
    return f'{{"format":2,"chunk":{chunk},"changes":[{inner}]}}\n'.encode()


def parse_chunk(raw: bytes, file: str, chunk: int) -> list[Change]:
    """A changes chunk: records in serial order, every serial inside the chunk's range."""
    doc = decode_json(raw, file, cap=CHANGES_MAX_BYTES, unique_keys=True)
    if type(doc) is not dict or doc.keys() != {"format", "chunk", "changes"}:
        raise _fail(file, "", 'must be an object with exactly "format", "chunk" and "changes"')
    if doc["format"] != 2 or type(doc["format"]) is not int:
        raise _fail(file, "format", "must be 2")
    if doc["chunk"] != chunk or type(doc["chunk"]) is not int:
        raise _fail(file, "chunk", f"must be {chunk}, the number in the file's name")
    if type(doc["changes"]) is not list:
        raise _fail(file, "changes", "must be an array")
    first, last = chunk_range(chunk)
    previous = first
    changes = []
    for index, item in enumerate(doc["changes"]):
        key = f"changes[{index}]"
        if type(item) is not dict or item.keys() != {"serial", "op", "name", "extension"}:
            raise _fail(file, key, 'must be an object with exactly "serial", "op", "name" and "extension"')
        serial, op, name, ext = item["serial"], item["op"], item["name"], item["extension"]
        if type(serial) is not int or not first <= serial <= last:
            raise _fail(file, f"{key}.serial", f"must be an integer from {first} to {last} (this chunk's serials)")
        if serial < previous:
            raise _fail(file, f"{key}.serial", "is out of order: changes are listed by ascending serial")
        previous = serial
        if op not in OPS or type(op) is not str:
            raise _fail(file, f"{key}.op", f"must be one of {', '.join(OPS)}")
        if op == "reset":
            if name is not None or ext is not None:
                raise _fail(file, key, "a reset names no extension")
            changes.append(Change(serial, op, None, None))
            continue
        if not is_extension_name(name):
            raise _fail(file, f"{key}.name", "must be an extension name")
        parsed = None
        if ext is not None:
            if type(ext) is not dict:
                raise _fail(file, f"{key}.extension", "must be a summary record or null")
            (parsed,) = parse_records([ext], f"{file} {key}")
            if parsed.name != name:
                raise _fail(file, f"{key}.extension.name", f"is {parsed.name!r}, the change names {name!r}")
        changes.append(Change(serial, op, name, parsed, ext))
    return changes


def read_chunk(root: Path, chunk: int) -> list[Change]:
    rel = chunk_path(chunk)
    path = root / rel
    if not path.is_file() and not path.is_symlink():
        return []
    return parse_chunk(read_capped(path, CHANGES_MAX_BYTES, rel, root=root), rel, chunk)


def chunk_bytes(chunk: int, changes: Sequence[Change], serial: int) -> bytes:
    """The chunk with `changes`; when that passes the cap, the records of `serial` give way
    to one `reset` (a client then resynchronises from the shards)."""
    data = render_chunk(chunk, changes)
    if len(data) > CHANGES_MAX_BYTES:
        kept = [c for c in changes if c.serial != serial]
        data = render_chunk(chunk, [*kept, Change(serial, "reset", None, None)])
    return data


# --- the writes of one change -------------------------------------------------------------------


def change_writes(root: Path, serial: int, name: str, record: dict[str, Any], op: str) -> list[tuple[str, bytes]]:
    """(path, bytes) of the summary files after `name`'s summary became `record` at `serial`:
    the chunk of `serial`, its shard and the shard list, in that order (its record added unless the chunk
    already holds exactly that change — re-running an interrupted publish). Reads only those
    three files. Raises `ValidationFailed` for a broken one."""
    shard = shard_of(name)
    _, records = read_shard(root, shard)
    by_name = {r.name: record_json(r) for r in records}
    by_name[name] = record
    shard_data = render_shard(shard, list(by_name.values()))
    listed = read_shards(root)
    table = dict(listed.shards) if listed is not None else {}
    table[shard] = shard_info(shard_data, len(by_name))
    writes = []  # the chunk first: a shard that shows a change implies the log holds it (re-running repairs)
    if serial > 0:
        chunk = chunk_of(serial)
        changes = read_chunk(root, chunk)
        if not any(c.serial == serial and (c.op == "reset" or (c.name == name and c.record == record))
                   for c in changes):
            later = [c for c in changes if c.serial > serial]
            changes = [c for c in changes if c.serial <= serial] + [Change(serial, op, name, None, record)] + later
        writes.append((chunk_path(chunk), chunk_bytes(chunk, changes, serial)))
    writes += [(summary_path(shard), shard_data),
               (SHARDS_FILE, render_shards(max(serial, listed.serial if listed else 0), table))]
    return writes
