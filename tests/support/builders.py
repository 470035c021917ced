"""Build extensions and archives in tmp_path."""

from __future__ import annotations

import io
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any, Mapping

import tomlkit


def minimal_manifest(name: str = "demo-ext", version: str = "0.1.0", **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "version": version, "min_compozy_version": "0.5.0"}
    doc.update(extra)
    return doc


def write_extension(root: Path, manifest: Mapping[str, Any] | str | None = None,
                    files: Mapping[str, str | bytes] | None = None, *, json_manifest: bool = False) -> Path:
    """Create an extension directory: `manifest` as a dict (dumped to TOML/JSON) or raw text."""
    import json

    root.mkdir(parents=True, exist_ok=True)
    manifest = minimal_manifest() if manifest is None else manifest
    name = "extension.json" if json_manifest else "extension.toml"
    if isinstance(manifest, str):
        text = manifest
    elif json_manifest:
        text = json.dumps(manifest, indent=2)
    else:
        text = tomlkit.dumps(dict(manifest))
    (root / name).write_text(text, encoding="utf-8")
    for rel, content in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def tar_gz(path: Path, members: Mapping[str, str | bytes], *, prefix: str = "") -> Path:
    """A .tar.gz of regular files (`members`: archive name -> content)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return path


def tar_dir(path: Path, root: Path, arcname: str | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        tar.add(root, arcname=arcname or root.name)
    return path


def zip_dir(path: Path, root: Path, arcname: str | None = None) -> Path:
    base = arcname or root.name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(root.rglob("*")):
            if file.is_file():
                zf.write(file, f"{base}/{file.relative_to(root).as_posix()}")
    return path


def format1_tree_checksum(root: Path) -> str:
    """The tree checksum as pkgmgr computed it before format 2 (bare hex, no lengths: SPEC 3's
    `file:<rel>\\nmode:<m>\\n` + content + NUL), to build the state and locks older versions wrote."""
    import hashlib
    import os

    fed = hashlib.sha256()
    files = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*") if p.is_file())
    for rel, path in files:
        mode = b"0755" if os.stat(path).st_mode & 0o100 else b"0644"
        fed.update(b"file:%s\nmode:%s\n" % (rel.encode(), mode) + path.read_bytes() + b"\0")
    return fed.hexdigest()
