"""Where a signed registry's trusted TUF metadata is kept, and what it says, without importing
`tuf` (SPEC 5.4a): `registry list`, `ext info` and `ext status` show it at every start-up.

Per registry source: `<home>/tuf/<sha256(source)[:24]>/`, ngclient's `metadata_dir` — the
current trusted `root.json` (with `root_history/`), `timestamp.json`, `snapshot.json`,
`targets.json`. `registry remove` deletes it.

Every file there is read through `read_trusted` (pkgmgr's bounded primitive): another process
could have put a FIFO, a device or a link there, or a file of any size, and none of them may hang
or exhaust a read. `root.json` is the one link ngclient itself makes (to
`root_history/<N>.root.json`); no other link is followed.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pkgmgr.config import RegistryConfig

METADATA_DIR = "metadata"  # beside registry.toml in a signed index
# the largest trusted file of each role pkgmgr reads back (ngclient's caps, `signed.CONFIG`)
ROOT_MAX_BYTES = 512 * 1024
TIMESTAMP_MAX_BYTES = 16 * 1024
SNAPSHOT_MAX_BYTES = 2 * 1024 * 1024
TARGETS_MAX_BYTES = 16 * 1024 * 1024
MAX_BYTES = {"root": ROOT_MAX_BYTES, "timestamp": TIMESTAMP_MAX_BYTES, "snapshot": SNAPSHOT_MAX_BYTES}
_ROOT_LINK = re.compile(r"root_history/[0-9]{1,9}\.root\.json")


def read_trusted(folder: str | os.PathLike[str], name: str) -> bytes:
    """A trusted metadata file of `folder` (`timestamp.json`, `root_history/3.root.json`, ...),
    read with the bounded primitive: regular files only (a FIFO is refused without blocking), no
    link followed except `root.json`'s to `root_history/<N>.root.json`, at most the role's cap.
    Raises OSError (`fsutil.NotRegularFile` for what is not a regular file, EFBIG for a file over
    its cap)."""
    from pkgmgr.fsutil import read_regular

    path = os.path.join(folder, name)
    if name == "root.json" and os.path.islink(path):
        target = os.readlink(path)
        if not _ROOT_LINK.fullmatch(target):
            raise OSError(f"{path} links to {target!r}, not to ngclient's root_history")
        path = os.path.join(folder, target)
    role = os.path.basename(name).rsplit(".", 2)[-2]  # "3.root.json" -> root, "targets.json" -> targets
    limit = MAX_BYTES.get(role, TARGETS_MAX_BYTES)
    data = read_regular(path, limit=limit)
    if len(data) > limit:
        import errno

        raise OSError(errno.EFBIG, f"larger than {limit} bytes", path)
    return data


def reestablish_command(registry: RegistryConfig) -> str:
    """The one command that re-establishes the trusted root of the signed registry `registry` as it
    is configured: `registry add` with its name, source and pinned root (`configure._reestablish`,
    which trusts again only the root pinned when it was added, when the registry still serves it).
    Each word quoted for a POSIX shell."""
    import shlex

    insecure = " --insecure" if registry.insecure else ""
    return (f"pkgmgr registry add {shlex.quote(registry.name)} {shlex.quote(registry.source)} --root-sha256 "
            f"{registry.root_sha256}{insecure}")


def reestablish_hint(registry: RegistryConfig) -> str:
    """What `doctor` and a refused install say of a lost or damaged trusted root: the command, at
    the end of the line so that it is copied whole."""
    return f"to re-establish the root pinned when it was added, run: {reestablish_command(registry)}"


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
    root_bytes = _read(folder, "root.json")
    root = _signed(root_bytes)
    timestamp = _signed(_read(folder, "timestamp.json"))
    version = root.get("version") if isinstance(root.get("version"), int) else None
    expires = timestamp.get("expires") if isinstance(timestamp.get("expires"), str) else None
    return TrustedState(hashlib.sha256(root_bytes).hexdigest() if root_bytes else None, version, expires)


def _read(folder: Path, name: str) -> bytes | None:
    try:
        return read_trusted(folder, name)
    except OSError:
        return None


def _signed(data: bytes | None) -> dict:
    if not data:
        return {}
    from pkgmgr.documents import DocumentError, decode_json

    try:
        value = decode_json(data, max_bytes=TARGETS_MAX_BYTES)
    except DocumentError:
        return {}
    signed = value.get("signed") if isinstance(value, dict) else None
    return signed if isinstance(signed, dict) else {}
