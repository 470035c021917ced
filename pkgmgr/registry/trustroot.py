"""Where a signed registry's trusted TUF metadata is kept, and what it says, without importing
`tuf` (SPEC 5.4a): `registry list`, `ext info` and `ext status` show it at every start-up.

Per registry source: `<home>/tuf/<sha256(source)[:24]>/`, ngclient's `metadata_dir` — the
current trusted `root.json` (with `root_history/`), `timestamp.json`, `snapshot.json`,
`targets.json`. `registry remove` deletes it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

METADATA_DIR = "metadata"  # beside registry.toml in a signed index


def tuf_dir(home: Path, source: str) -> Path:
    return home / "tuf" / hashlib.sha256(source.encode("utf-8")).hexdigest()[:24]


def forget(home: Path, source: str) -> None:
    """Delete what the client trusts for `source` (`registry remove`, a failed `registry add`)."""
    from pkgmgr.fsutil import remove_tree

    folder = tuf_dir(home, source)
    remove_tree(folder)
    folder.with_name(folder.name + ".lock").unlink(missing_ok=True)


@dataclass(frozen=True)
class TrustedState:
    root_sha256: str | None  # of the current trusted root.json
    root_version: int | None
    expires: str | None  # the trusted timestamp's expiry (the soonest to lapse)


def trusted_state(home: Path, source: str) -> TrustedState:
    """What the client trusts now for `source` (fields None when it has not read it yet)."""
    folder = tuf_dir(home, source)
    root_bytes = _read(folder / "root.json")
    root = _signed(root_bytes)
    timestamp = _signed(_read(folder / "timestamp.json"))
    version = root.get("version") if isinstance(root.get("version"), int) else None
    expires = timestamp.get("expires") if isinstance(timestamp.get("expires"), str) else None
    return TrustedState(hashlib.sha256(root_bytes).hexdigest() if root_bytes else None, version, expires)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _signed(data: bytes | None) -> dict:
    if not data:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    signed = value.get("signed") if isinstance(value, dict) else None
    return signed if isinstance(signed, dict) else {}
