"""Signed test registries (SPEC 5.4a): a simulated TUF repository, made by pkgmgr's own
`registry init --sign` and `registry publish`, signed with the TEST-ONLY keys below.

These five Ed25519 keys (the four top-level roles and the hashed bins) are public test data: never use them for a real registry. They let
every test sign deterministically without generating keys; a test that rotates a key gets a
freshly generated one from `registry rotate-key`.

`SignedIndex` is one index directory with its keys; `.metadata(name)` / `.put(name, bytes)`
read and replace one metadata file (the "change one thing" of python-tuf's
RepositorySimulator), `.saved()` keeps a copy of every metadata file to serve later (rollback,
mix-and-match), and `.resign_timestamp(...)` signs a timestamp by hand with any key, version
and expiry (a compromised or expired timestamp).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.cli import run_cli

TEST_ONLY_ED25519_KEYS = {
    "root": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINjpYQiLyOFyqrx8NIqeOZMjWJXrWTGS48XhRlhczJcw\n"
            "-----END PRIVATE KEY-----\n",
    "targets": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIMIxP+tdUay+zHO6CGXIsjfwYcw1Hqu5pJ9Nf64gDzI+\n"
               "-----END PRIVATE KEY-----\n",
    "snapshot": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIBGTjxhl3EWF5Ausw/tb9imdH+wOKVcvyYzJUrp5UtwI\n"
                "-----END PRIVATE KEY-----\n",
    "timestamp": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHQmaBPG6Ncinov3zsoZiH44csNnAAO7QhdK+lsXHNDC\n"
                 "-----END PRIVATE KEY-----\n",
    "bins": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAL9ASW7YNPyD6uw+KsLppVp8a+ghvnoxPSsESkLSTLD\n"
            "-----END PRIVATE KEY-----\n",  # the hashed bins' key (targets delegate to it)
}


def write_test_keys(folder: Path) -> Path:
    """The TEST-ONLY keys as a keys directory (`<role>.key`, mode 0600)."""
    folder.mkdir(parents=True, exist_ok=True)
    for role, pem in TEST_ONLY_ED25519_KEYS.items():
        path = folder / f"{role}.key"
        path.write_text(pem, encoding="utf-8")
        os.chmod(path, 0o600)
    return folder


def _ok(*args: Any) -> dict[str, Any]:
    result = run_cli([*map(str, args), "-o", "json"])
    assert result.code == 0, result
    return result.json


@dataclass
class SignedIndex:
    path: Path
    keys: Path

    @property
    def metadata_dir(self) -> Path:
        return self.path / "metadata"

    @property
    def root_file(self) -> Path:
        return self.metadata_dir / "1.root.json"

    def root_sha256(self) -> str:
        import hashlib

        return hashlib.sha256(self.root_file.read_bytes()).hexdigest()

    def publish(self, archive: Path) -> dict[str, Any]:
        return _ok("registry", "publish", archive, "--index", self.path, "--keys", self.keys)

    def sign(self, *extra: Any) -> dict[str, Any]:
        return _ok("registry", "sign", self.path, "--keys", self.keys, *extra)

    def metadata(self, name: str) -> bytes:
        return (self.metadata_dir / name).read_bytes()

    def put(self, name: str, data: bytes) -> None:
        (self.metadata_dir / name).write_bytes(data)

    def signed_targets(self) -> dict[str, Any]:
        """Every target the metadata signs: targets.json's own and its hashed bins' (PEP 458)."""
        return signed_targets(self.path)

    def saved(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in self.metadata_dir.iterdir()}

    def version(self, name: str) -> int:
        return json.loads(self.metadata(name))["signed"]["version"]

    def resign_timestamp(self, key_pem: str, *, version: int | None = None, expires: datetime | None = None,
                         snapshot: bytes | None = None) -> None:
        """Sign `timestamp.json` by hand with `key_pem` (any key: a compromised one); `version`
        and `expires` default to the current ones, the snapshot it names to the current one
        (`snapshot`: those bytes instead)."""
        import hashlib

        from cryptography.hazmat.primitives.serialization import load_pem_private_key
        from securesystemslib.signer import CryptoSigner
        from tuf.api.metadata import Metadata, MetaFile
        from tuf.api.serialization.json import JSONSerializer

        timestamp = Metadata.from_bytes(self.metadata("timestamp.json"))
        if snapshot is not None:
            timestamp.signed.snapshot_meta = MetaFile(json.loads(snapshot)["signed"]["version"], len(snapshot),
                                                      {"sha256": hashlib.sha256(snapshot).hexdigest()})
        if version is not None:
            timestamp.signed.version = version
        if expires is not None:
            timestamp.signed.expires = expires
        timestamp.sign(CryptoSigner(load_pem_private_key(key_pem.encode(), None)))
        self.put("timestamp.json", timestamp.to_bytes(JSONSerializer(compact=False)))


def signed_targets(index: Path) -> dict[str, Any]:
    metadata = index / "metadata"
    found = dict(json.loads((metadata / "targets.json").read_bytes())["signed"]["targets"])
    for path in sorted(metadata.glob("bins-*.json")):
        found.update(json.loads(path.read_bytes())["signed"]["targets"])
    return found


def signed_index(root: Path, *, name: str = "acme", keys: Path | None = None, format: int = 1) -> SignedIndex:
    """A new signed index of `format` at `root` (`registry init --sign`) with the TEST-ONLY keys
    (format 1 unless asked: these tests read its entries at their format-1 paths)."""
    keys = write_test_keys(keys or root.parent / f"{name}-keys")
    _ok("registry", "init", root, "--name", name, "--sign", "--keys", keys, "--format", str(format))
    return SignedIndex(root, keys)


def past(days: int = 1) -> datetime:
    return (datetime.now(UTC) - timedelta(days=days)).replace(microsecond=0)
