"""Scope rules checked at activate, confirm and update (SPEC 8, 9.3): agent conflicts, agent
references of jobs and triggers, and the layouts' scope binding."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from pkgmgr.errors import PkgmgrError


@dataclass(frozen=True)
class Finding:
    code: str  # agent_conflict | agent_reference_not_found | invalid_layout
    kind: str  # agent | job | trigger | window_layout
    name: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "kind": self.kind, "name": self.name, "message": self.message}


def static_agent_names(directory: Path, manifest: dict[str, Any]) -> list[str]:
    """Names of the always-on agents an extension declares in `resources.agents`: each path is
    an agent folder (holding AGENT.md) or a folder of agent folders."""
    from pkgmgr.bundles import parse_agent_md

    resources = manifest.get("resources") if isinstance(manifest.get("resources"), dict) else {}
    paths = resources.get("agents") if isinstance(resources, dict) else None
    names: list[str] = []
    for rel in paths if isinstance(paths, list) else []:
        base = directory / str(rel)
        folders = [base] if (base / "AGENT.md").is_file() else sorted(p for p in base.glob("*/") if (p / "AGENT.md").is_file())
        for folder in folders:
            name = folder.name
            try:
                front, _, _ = parse_agent_md((folder / "AGENT.md").read_text(encoding="utf-8"), file="AGENT.md")
                if isinstance(front, dict) and isinstance(front.get("name"), str) and front["name"].strip():
                    name = front["name"].strip()
            except (OSError, UnicodeDecodeError):
                pass
            names.append(name)
    return names


def visible_agents(conn: sqlite3.Connection, scope_kind: str, root: Path, *, exclude_activation: str | None,
                   exclude_extension_static: str | None = None) -> dict[str, str]:
    """Agents visible in one scope: projected by activations (other than `exclude_activation`)
    and declared statically by enabled extensions. Maps lower-cased name -> who owns it."""
    owners: dict[str, str] = {}
    rows = conn.execute(
        "SELECT r.name, a.id, a.extension FROM resources r JOIN activations a ON a.id = r.activation_id "
        "WHERE r.kind = 'agent' AND a.id IS NOT ?", (exclude_activation,))
    for row in rows:
        owners.setdefault(row["name"].lower(), f"agent {row['name']!r} of activation {row['id']} ({row['extension']}, "
                                               f"{scope_kind} scope)")
    for row in conn.execute("SELECT name, path, manifest FROM extensions WHERE enabled = 1 ORDER BY name"):
        for name in static_agent_names(root / row["path"], json.loads(row["manifest"])):
            owners.setdefault(name.lower(), f"static agent {name!r} of extension {row['name']} ({scope_kind} scope)")
    return owners


def scope_findings(*, profile: Any, visible: dict[str, str], scope_kind: str, workspace_path: str) -> list[Finding]:
    """Every scope rule broken by activating `profile` with `visible` agents around it."""
    from pkgmgr.bundles import layout_scope_problems

    findings: list[Finding] = []
    packaged = {name.lower() for name in profile.agent_names()}
    for agent in profile.agents:
        owner = visible.get(agent.name.lower())
        if owner is not None:
            findings.append(Finding("agent_conflict", "agent", agent.name,
                                    f"bundled agent {agent.name!r} conflicts with the visible {owner}"))
    for kind, items in (("job", profile.jobs), ("trigger", profile.triggers)):
        for item in items:
            ref = item.agent.lower()
            if ref not in packaged and ref not in visible:
                findings.append(Finding("agent_reference_not_found", kind, item.name,
                                        f"{kind} {item.name!r} references agent {item.agent!r}, which the profile "
                                        "does not package and the scope does not have"))
    for layout in profile.layouts:
        for problem in layout_scope_problems(layout, scope_kind, workspace_path):
            findings.append(Finding("invalid_layout", "window_layout", layout.id, str(problem)))
    return findings


def raise_findings(findings: Iterable[Finding], what: str) -> None:
    findings = list(findings)
    if not findings:
        return
    order = {"agent_conflict": 0, "agent_reference_not_found": 1, "invalid_layout": 2}
    findings.sort(key=lambda f: order.get(f.code, 9))
    raise PkgmgrError(
        f"{what}:\n" + "\n".join(f.message for f in findings),
        code=findings[0].code,
        details={"problems": [f.to_json() for f in findings]},
    )
