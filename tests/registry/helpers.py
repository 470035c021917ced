"""Builders for registry tests: extension archives and registry directories in tmp_path."""

from __future__ import annotations

import hashlib
import io
import sqlite3
import tarfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import tomlkit

from pkgmgr.errors import ValidationFailed
from pkgmgr.registry.index_format import build_index, entry_path
from pkgmgr.versions import parse_semver

HEX = "0123456789abcdef"


def archive_bytes(name: str, version: str, *, manifest: str | None = None, files: dict[str, str] | None = None,
                  grants: tuple[str, ...] = (), min_compozy_version: str = "0.5.0") -> bytes:
    """A reproducible .tar.gz of a minimal extension `<name>-<version>/extension.toml`."""
    if manifest is None:
        manifest = f'name = "{name}"\nversion = "{version}"\nmin_compozy_version = "{min_compozy_version}"\n'
        if grants:
            manifest += "[security]\ncapabilities = [" + ", ".join(f'"{g}"' for g in grants) + "]\n"
    members = {"extension.toml": manifest, **(files or {})}
    buffer = io.BytesIO()
    import gzip

    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for rel in sorted(members):
            data = members[rel].encode()
            info = tarfile.TarInfo(f"{name}-{version}/{rel}")
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Published:
    name: str
    version: str
    data: bytes
    sha256: str
    url: str


class RegistryDir:
    """A registry index directory built by hand (what `registry publish` will write)."""

    def __init__(self, root: Path, name: str = "test", *, serial: int = 1, expires: str | None = None) -> None:
        self.root = Path(root)
        self.name = name
        self.serial = serial
        self.expires = expires
        self.entries: dict[str, dict[str, Any]] = {}
        (self.root / "extensions").mkdir(parents=True, exist_ok=True)
        self.write()

    def write(self) -> "RegistryDir":
        table: dict[str, Any] = {"format": 1, "name": self.name, "description": "test registry",
                                 "serial": self.serial}
        if self.expires is not None:
            table["expires"] = datetime.fromisoformat(self.expires.replace("Z", "+00:00"))
        (self.root / "registry.toml").write_text(tomlkit.dumps({"registry": table}), encoding="utf-8")
        for name, entry in self.entries.items():
            path = self.root / entry_path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tomlkit.dumps(entry), encoding="utf-8")
        try:
            (self.root / "index.json").write_bytes(build_index(self.root))
        except ValidationFailed:
            pass  # a test broke an entry on purpose; index.json keeps its last good state
        return self

    def publish(self, name: str, version: str, *, data: bytes | None = None, tier: str = "community",
                url: str | None = None, yanked: bool = False, permissions: tuple[str, ...] = (),
                min_compozy_version: str = "0.5.0", network_digest: str = "", sha256: str | None = None,
                size: int | None = None, description: str = "", bump: bool = True,
                write: bool = True) -> Published:
        data = data if data is not None else archive_bytes(name, version, grants=permissions,
                                                           min_compozy_version=min_compozy_version)
        if url is None:
            url = f"archives/{name}-{version}.tar.gz"
            target = self.root / url
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        digest = sha256 or hashlib.sha256(data).hexdigest()
        entry = self.entries.setdefault(name, {"name": name, "description": description or f"{name} extension",
                                               "tier": tier, "versions": []})
        entry["tier"] = tier
        entry["versions"].append({
            "version": version, "url": url, "sha256": digest, "size": size if size is not None else len(data),
            "min_compozy_version": min_compozy_version, "network_digest": network_digest,
            "permissions": list(permissions), "published": datetime.fromisoformat("2026-01-01T00:00:00+00:00"),
            "yanked": yanked,
        })
        entry["versions"].sort(key=lambda v: parse_semver(v["version"]))
        if bump:
            self.serial += 1
        if write:
            self.write()
        return Published(name, version, data, digest, url)

    def version(self, name: str, version: str) -> dict[str, Any]:
        return next(v for v in self.entries[name]["versions"] if v["version"] == version)

    def change(self, name: str, version: str, *, bump: bool = True, **fields: Any) -> None:
        self.version(name, version).update(fields)
        if bump:
            self.serial += 1
        self.write()

    def remove_version(self, name: str, version: str) -> None:
        entry = self.entries[name]
        entry["versions"] = [v for v in entry["versions"] if v["version"] != version]
        self.serial += 1
        self.write()


def state_snapshot(home: Path) -> dict[str, Any]:
    """What an attack must not move: installed extensions and the registry memory."""
    db = home / "state.db"
    if not db.exists():
        return {}
    conn = sqlite3.connect(db)
    try:
        return {
            "extensions": conn.execute("SELECT name, version, sha256 FROM extensions ORDER BY name").fetchall(),
            "serials": conn.execute("SELECT source, serial FROM registry_serials ORDER BY source").fetchall(),
            "versions": conn.execute(
                "SELECT source, name, version, sha256 FROM registry_versions ORDER BY 1, 2, 3").fetchall(),
        }
    finally:
        conn.close()
