"""Builders for the publishing tests: extension variants of the fixtures, packed archives,
registry index directories made by `pkgmgr registry init`, and snapshots of an index."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Any, Mapping

from tests.support.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
LOCK_FILE = ".pkgmgr-registry.lock"


def ok(*args: Any, cwd: Path | None = None) -> dict[str, Any]:
    """Run pkgmgr with `-o json`; it must succeed."""
    result = run_cli([*args, "-o", "json"], cwd=cwd)
    assert result.code == 0, result
    return result.json


def fail(code: str, *args: Any, cwd: Path | None = None) -> dict[str, Any]:
    """Run pkgmgr with `-o json`; it must fail with `code`. Returns the JSON document."""
    result = run_cli([*args, "-o", "json"], cwd=cwd)
    assert result.code != 0, result
    doc = result.json
    assert doc["error"]["code"] == code, result
    assert doc["error"]["exit_code"] == result.code
    assert "Traceback" not in result.stderr
    return doc


def variant(dest: Path, fixture: str = "review-pack", *, version: str | None = None, name: str | None = None,
            files: Mapping[str, str] | None = None) -> Path:
    """A copy of `fixtures/<fixture>` at `dest`, its manifest's version and/or name replaced and
    `files` written (relative path -> text)."""
    shutil.copytree(FIXTURES / fixture, dest)
    manifest = dest / "extension.toml"
    text = manifest.read_text("utf-8")
    if version is not None:
        text = re.sub(r'(?m)^version = "[^"]*"', f'version = "{version}"', text, count=1)
    if name is not None:
        text = re.sub(r'(?m)^name = "[^"]*"', f'name = "{name}"', text, count=1)
    manifest.write_text(text, encoding="utf-8")
    for rel, content in (files or {}).items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return dest


def pack(source: Path, output: Path) -> dict[str, Any]:
    """`pkgmgr ext pack SOURCE --output OUTPUT`; returns its JSON (name, version, path, sha256, size)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    return ok("ext", "pack", source, "--output", output)


def packed(tmp_path: Path, fixture: str = "review-pack", *, version: str | None = None, name: str | None = None,
           files: Mapping[str, str] | None = None) -> Path:
    """An archive of a fixture variant under tmp_path/dist (built once per variant)."""
    digest = hashlib.sha256(repr(sorted((files or {}).items())).encode()).hexdigest()[:8]
    label = f"{name or fixture}-{version or 'orig'}-{digest}"
    output = tmp_path / "dist" / f"{label}.tar.gz"
    if not output.exists():
        source = variant(tmp_path / "src" / label, fixture, version=version, name=name, files=files)
        pack(source, output)
    return output


def init_index(root: Path, name: str = "acme") -> Path:
    ok("registry", "init", root, "--name", name, "--format", "1")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of an index directory (the lock file aside), by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != LOCK_FILE and ".git" not in p.relative_to(root).parts}


def entry_text(root: Path, name: str) -> str:
    return (root / "extensions" / name[:2] / f"{name}.toml").read_text("utf-8")


def set_entry_text(root: Path, name: str, text: str) -> None:
    (root / "extensions" / name[:2] / f"{name}.toml").write_text(text, encoding="utf-8")
