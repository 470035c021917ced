"""Builders for host extensions and the places the hosts read them from."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.cli import Result, run_cli

UNVERIFIED = ("--allow-unverified", "--yes")


@dataclass
class Homes:
    tmp: Path

    @property
    def pkgmgr(self) -> Path:
        return self.tmp / "pkgmgr-home"

    @property
    def terva(self) -> Path:
        return self.tmp / "terva-home"

    @property
    def vera(self) -> Path:
        return self.tmp / "vera-home"

    @property
    def user(self) -> Path:
        return self.tmp / "user-home"

    @property
    def eva(self) -> Path:
        return self.user / ".eva"

    @property
    def gemini(self) -> Path:
        """GEMINI_CLI_HOME: Gemini CLI's extensions are in its `.gemini/extensions/`."""
        return self.tmp / "gemini-home"

    @property
    def gemini_extensions(self) -> Path:
        return self.gemini / ".gemini" / "extensions"

    @property
    def claude(self) -> Path:
        """CLAUDE_CONFIG_DIR."""
        return self.tmp / "claude-config"


def terva_extension(root: Path, name: str = "hello", version: str = "0.1.0", **fields: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    manifest = {"name": name, "version": version, "exec": "./run.sh", "language": "sh",
                "description": "says hello", **fields}
    (root / "extension.json").write_text(json.dumps(manifest), encoding="utf-8")
    run = root / "run.sh"
    run.write_text("#!/bin/sh\nprintf '%s\\n' '{\"type\":\"hello\"}'\n", encoding="utf-8")
    os.chmod(run, 0o755)
    return root


def eva_module(name: str) -> str:
    from pkgmgr.hosts.elixir import namespace

    return (f"defmodule {namespace(name)} do\n  use Eva.Core.Extension\n\n"
            f"  def setup(_ctx), do: {{:ok, %Eva.Core.Extension.Spec{{guidelines: [\"{name}\"]}}}}\nend\n")


def eva_script(folder: Path, name: str = "notes") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.exs"
    path.write_text(eva_module(name), encoding="utf-8")
    return path


def eva_directory(root: Path, name: str = "tasks") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "extension.exs").write_text(eva_module(name), encoding="utf-8")
    (root / "README.md").write_text(f"# {name}\n", encoding="utf-8")
    return root


def gemini_extension(root: Path, name: str = "hello", version: str = "1.0.0", **fields: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    manifest = {"name": name, "version": version, "description": "says hello", "contextFileName": "GEMINI.md",
                **fields}
    (root / "gemini-extension.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (root / "GEMINI.md").write_text(f"# {name}\n", encoding="utf-8")
    return root


def claude_plugin(root: Path, name: str = "hello", version: str | None = "1.0.0", **fields: Any) -> Path:
    """A Claude Code plugin: its manifest and one slash command."""
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"name": name, "description": "says hello", "author": {"name": "pkgmgr tests"},
                                **fields}
    if version is not None:
        manifest["version"] = version
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (root / "commands").mkdir(exist_ok=True)
    (root / "commands" / "hi.md").write_text("---\ndescription: Say hi\n---\n\nSay hi.\n")
    return root


def vera_extension(root: Path, ext_id: str = "acme.context-tools", version: str = "1.0.0",
                   capabilities: tuple[str, ...] = ("commands.register", "models.complete")) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    manifest = {"id": ext_id, "version": version, "sdk": "1", "entrypoint": "./extension.ts",
                "capabilities": list(capabilities)}
    (root / "vera.extension.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    (root / "extension.ts").write_text("export default function activate() {}\n", encoding="utf-8")
    return root


def ok(*args: Any, cwd: Path | None = None) -> dict[str, Any]:
    result = run_cli([*map(str, args), "-o", "json"], cwd=cwd)
    assert result.code == 0, result
    return result.json


def fail(code: str, *args: Any, cwd: Path | None = None) -> dict[str, Any]:
    result = run_cli([*map(str, args), "-o", "json"], cwd=cwd)
    assert result.code != 0, result
    assert result.json["error"]["code"] == code, result
    return result.json


def human(*args: Any, cwd: Path | None = None) -> Result:
    return run_cli([*map(str, args)], cwd=cwd)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` (relative path -> bytes), for before/after comparisons."""
    if root.is_file():
        return {root.name: root.read_bytes()}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def trust_ex_hash(folder: Path) -> str:
    """trust.ex content_hash/1, written out independently: sha256 over `relative <> contents`
    of every non-hidden `**/*.exs`, sorted by path."""
    files = sorted(p for p in folder.rglob("*.exs")
                   if not any(part.startswith(".") for part in p.relative_to(folder).parts))
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def entries(*roots: Path) -> dict[str, Any]:
    """Every entry under `roots` (files by content, links by target, directories and the rest by
    kind): what a refused command must leave as it was."""
    seen: dict[str, Any] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                if path.is_symlink():
                    seen[str(path)] = ("link", os.readlink(path))
                elif path.is_file():
                    seen[str(path)] = path.read_bytes()
                else:
                    seen[str(path)] = "dir" if path.is_dir() else "special"
    return seen
