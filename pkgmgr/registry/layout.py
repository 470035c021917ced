"""Where the files of a registry index live, per format, and the one set of caps that
`registry build`, `registry validate` and the client share (docs/registry-format.md).

- format 1: `extensions/<first two characters>/<name>.toml` and one `index.json`;
- format 2: `extensions/<h0h1>/<h2h3>/<name>.toml` (h = sha256 of the name, hex), summary
  shards `index/summary/<h0h1>.json`, the shard list `index/shards.json` and the changes log
  `index/changes/<k>.json` (serials 64k+1 … 64k+64).

Pure: no file is read here.
"""

from __future__ import annotations

import hashlib

MIB = 1024 * 1024
FORMATS = (1, 2)
LATEST_FORMAT = 2

REGISTRY_FILE = "registry.toml"
INDEX_FILE = "index.json"  # format 1's summary
ENTRIES_DIR = "extensions"
SUMMARY_DIR = "index/summary"
SHARDS_FILE = "index/shards.json"
CHANGES_DIR = "index/changes"

# caps: a file over its cap is refused by every reader, and never written by a writer
REGISTRY_MAX_BYTES = 1 * MIB
ENTRY_MAX_BYTES = 1 * MIB
INDEX_MAX_BYTES = 16 * MIB
SHARDS_MAX_BYTES = 1 * MIB
SUMMARY_MAX_BYTES = 16 * MIB
CHANGES_MAX_BYTES = 4 * MIB

CHUNK_SERIALS = 64  # serials per changes chunk
RESET_ABOVE = 256  # a build that changes more extensions than this logs one `reset`
INCREMENTAL_CHUNKS = 16  # a client further behind than this many chunks resynchronises from the shards


def name_hash(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def shard_of(name: str) -> str:
    """The summary shard (and top entry directory) of `name` in format 2: two hex digits."""
    return name_hash(name)[:2]


def entry_path(name: str, format: int = 1) -> str:
    """Where the entry of `name` lives in a registry of `format`."""
    if format >= 2:
        digest = name_hash(name)
        return f"{ENTRIES_DIR}/{digest[:2]}/{digest[2:4]}/{name}.toml"
    return f"{ENTRIES_DIR}/{name[:2]}/{name}.toml"


def summary_path(shard: str) -> str:
    return f"{SUMMARY_DIR}/{shard}.json"


def chunk_of(serial: int) -> int:
    """The changes chunk that holds the records of `serial` (serials start at 1)."""
    return (serial - 1) // CHUNK_SERIALS


def chunk_path(chunk: int) -> str:
    return f"{CHANGES_DIR}/{chunk}.json"


def chunk_range(chunk: int) -> tuple[int, int]:
    """The first and last serial of a chunk."""
    return chunk * CHUNK_SERIALS + 1, (chunk + 1) * CHUNK_SERIALS


SHARDS = tuple(f"{i:02x}" for i in range(256))
