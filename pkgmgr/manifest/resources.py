"""Warnings about what Compozy only finds out when it loads or launches an extension: a skill
whose SKILL.md front matter it cannot read (internal/skills `parseSkillContent`,
`decodeSkillMeta`: front matter required, `name` required) and a command inside the extension
that is not there (Compozy fails when it launches it). Reads the tree; never raises.
"""

from __future__ import annotations

import os
from pathlib import Path

from pkgmgr.errors import Code
from pkgmgr.manifest.parsed import Manifest
from pkgmgr.manifest.paths import CONFIG_DIR, command_is_path

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 1024 * 1024
MAX_SKILLS = 1000


def resource_warnings(root: Path, manifest: Manifest) -> list[str]:
    """One line per skill Compozy would not load and per missing command inside `root`."""
    warnings = [message for rel in _skill_files(root, manifest.skills) if (message := _skill_problem(root, rel))]
    for key, command in manifest.commands():
        text = command.command
        if not command_is_path(text) or "{{env:" in text or (os.path.isabs(text) and CONFIG_DIR not in text):
            continue
        path = Path(text.replace(CONFIG_DIR, str(root))) if CONFIG_DIR in text else root / text
        if not path.exists():
            warnings.append(f"{key}.command: {text!r} is not in the extension; Compozy will fail to launch it "
                            "(build it before packing)")
    return warnings


def _skill_files(root: Path, entries: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for entry in entries:
        base = root / entry
        if base.is_file() and base.name == SKILL_FILE:
            found.append(entry)
        elif base.is_dir():
            for folder, dirs, files in os.walk(base):  # does not follow directory links
                dirs.sort()
                if SKILL_FILE in files:
                    found.append(os.path.relpath(os.path.join(folder, SKILL_FILE), root))
                if len(found) >= MAX_SKILLS:
                    return found
    return found


def _skill_problem(root: Path, rel: str) -> str | None:
    from pkgmgr.documents import DocumentError, decode_text
    from pkgmgr.errors import ProblemSink
    from pkgmgr.frontmatter import load_front_matter
    from pkgmgr.fsutil import read_regular

    try:  # a FIFO is refused, never waited on
        text = decode_text(read_regular(root / rel, limit=MAX_SKILL_BYTES, follow_symlinks=True)[:MAX_SKILL_BYTES])
    except (OSError, DocumentError) as exc:
        return f"{rel}: cannot be read ({exc}); Compozy will not load this skill"
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    if lines[0].rstrip() != "---":
        return f"{rel}: no '---' front matter; Compozy will not load this skill"
    close = next((index for index in range(1, len(lines)) if lines[index].rstrip() == "---"), None)
    if close is None:
        return f"{rel}: the front matter is not closed by a '---' line; Compozy will not load this skill"
    sink = ProblemSink(rel, Code.INVALID_MANIFEST)
    front, _ = load_front_matter(sink, "\n".join(lines[1:close]))
    if front is None:
        reason = sink.problems[0].message if sink.problems else "it is empty"
        return f"{rel}: front matter: {reason}; Compozy will not load this skill"
    name = front.get("name")
    if not isinstance(name, str) or not name.strip():
        return f"{rel}: front matter has no name; Compozy will not load this skill"
    return None
