"""Warnings about what Compozy only finds when it loads or launches an extension (issue 18)."""

from __future__ import annotations

from pathlib import Path

from pkgmgr.manifest import read_manifest
from pkgmgr.manifest.resources import resource_warnings
from tests.support.builders import minimal_manifest, write_extension


def _warnings(root: Path) -> list[str]:
    return resource_warnings(root, read_manifest(root))


def test_skills_compozy_cannot_read_and_missing_commands(tmp_path: Path) -> None:
    manifest = minimal_manifest(
        resources={"skills": ["skills"],
                   "hooks": [{"name": "h", "event": "session.post_create", "command": "{{config_dir}}/hooks/run.sh"}]},
        subprocess={"command": "./bin/server"})
    root = write_extension(tmp_path / "ext", manifest, {
        "skills/good/SKILL.md": "---\nname: good\ndescription: fine\n---\nDo it.\n",
        "skills/broken/SKILL.md": "---\nname: [x\n---\nbody\n",
        "skills/bare/SKILL.md": "Just text.\n",
        "skills/open/SKILL.md": "---\nname: open\n",
        "skills/nameless/SKILL.md": "---\ndescription: d\n---\nbody\n",
    })
    found = _warnings(root)
    assert [line.split(":")[0] for line in found] == [
        "skills/bare/SKILL.md", "skills/broken/SKILL.md", "skills/nameless/SKILL.md", "skills/open/SKILL.md",
        "resources.hooks[0].command", "subprocess.command"]
    assert "not valid YAML" in found[1] and "no name" in found[2] and "not closed" in found[3]
    (root / "bin").mkdir()
    (root / "bin" / "server").write_text("#!/bin/sh\n", encoding="utf-8")
    (root / "hooks").mkdir()
    (root / "hooks" / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    assert not [line for line in _warnings(root) if "command" in line]


def test_bare_and_absolute_commands_are_not_looked_for(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", minimal_manifest(subprocess={"command": "node"},
                                                              resources={"mcp_servers": {"x": {"command": "/usr/bin/x"}}}))
    assert _warnings(root) == []
