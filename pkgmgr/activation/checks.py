"""Scope rules checked at activate, confirm and update (SPEC 8, 9.3): agent conflicts, agent
references of jobs and triggers, and the layouts' scope binding.

Only agents conflict. The agents visible from a scope are those projected by its activations
and those declared statically (`resources.agents`) by its enabled extensions; a workspace also
sees the global scope's, except the static agents of a global extension that the workspace
shadows with its own install of the same name.
"""

from __future__ import annotations

import errno
import sqlite3
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from pkgmgr.bundles.names import agent_key, mixed_script_problem
from pkgmgr.errors import Code, PkgmgrError, Problem

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pkgmgr.bundles.bundle import Bundle, JobSpec, Profile, TriggerSpec


def static_agent_names(directory: Path, manifest: dict[str, Any]) -> list[str]:
    """Names of the always-on agents an extension declares in `resources.agents`: each path is
    an agent folder (holding AGENT.md) or a folder of agent folders. The name is AGENT.md's
    `name`, else the folder's name."""
    resources = manifest.get("resources")
    paths = resources.get("agents") if isinstance(resources, dict) else None
    if not isinstance(paths, list) or not paths:
        return []
    return list(_static_names(str(directory), tuple(str(rel) for rel in paths)))


@lru_cache(maxsize=256)
def _static_names(directory: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    """Cached per installed directory: a version directory never changes once committed (a
    forced reinstall of the same version gets a new directory name)."""
    from pkgmgr.bundles import parse_agent_md
    from pkgmgr.bundles.agent import MAX_AGENT_MD_BYTES
    from pkgmgr.fsutil import read_regular

    base_dir = Path(directory)
    names: list[str] = []
    for rel in paths:
        base = base_dir / rel
        if (base / "AGENT.md").is_file():
            folders = [base]
        else:
            folders = sorted(p for p in base.glob("*/") if (p / "AGENT.md").is_file())
        for folder in folders:
            name = folder.name
            try:
                raw = read_regular(folder / "AGENT.md", limit=MAX_AGENT_MD_BYTES, follow_symlinks=True)
                if len(raw) > MAX_AGENT_MD_BYTES:
                    raise OSError(errno.EFBIG, "too large")  # the bundle check says so; here the folder's name
                front, _, _ = parse_agent_md(raw.decode("utf-8"), file="AGENT.md")
                if isinstance(front, dict) and isinstance(front.get("name"), str) and front["name"].strip():
                    name = front["name"].strip()
            except (OSError, UnicodeDecodeError):
                pass
            names.append(name)
    return tuple(names)


@dataclass
class VisibleAgents:
    """Agent name key (`agent_key`: case-insensitive, look-alikes folded) -> [(owning activation
    id or None for a static agent, who owns it)]."""

    owners: dict[str, list[tuple[str | None, str]]] = field(default_factory=dict)

    def add(self, name: str, activation: str | None, description: str) -> None:
        self.owners.setdefault(agent_key(name), []).append((activation, description))

    def owner(self, name: str, *, exclude: str | None = None) -> str | None:
        """Who else holds `name` (or a look-alike of it), ignoring activation `exclude`; None if nobody."""
        for activation, description in self.owners.get(agent_key(name), ()):
            if activation is None or activation != exclude:
                return description
        return None

    def has(self, name: str, *, exclude: str | None = None) -> bool:
        return self.owner(name, exclude=exclude) is not None

    def replace(self, activation: str, names: Iterable[str] = (),
                description: Callable[[str], str] | None = None) -> None:
        """Forget what `activation` projected and record `names` instead (after a re-projection);
        `description(name)` says who owns each."""
        for key in list(self.owners):
            kept = [entry for entry in self.owners[key] if entry[0] != activation]
            if kept:
                self.owners[key] = kept
            else:
                del self.owners[key]
        for name in names:
            self.add(name, activation, description(name) if description else f"agent {name!r} of {activation}")


def activation_agent_owner(name: str, activation: str, extension: str, scope_kind: str) -> str:
    return f"agent {name!r} of activation {activation} ({extension}, {scope_kind} scope)"


def collect_visible(conn: sqlite3.Connection, scope_kind: str, root: Path, into: VisibleAgents, *,
                    skip_static_of: frozenset[str] = frozenset()) -> VisibleAgents:
    """Add the agents visible in one scope to `into`: agents projected by its activations (one
    indexed query) and static agents of its enabled extensions other than `skip_static_of`."""
    from pkgmgr.store.checks import STORE_HOST
    from pkgmgr.store.db import rows
    from pkgmgr.store.installed import json_column

    projected = rows(conn, "resources",
                     "SELECT r.id, r.name, r.activation_id, a.extension FROM resources r JOIN activations a "
                     "ON a.id = r.activation_id WHERE r.kind = 'agent' ORDER BY a.id, r.name")
    for row in projected:
        act = row["activation_id"]
        into.add(row["name"], act, activation_agent_owner(row["name"], act, row["extension"], scope_kind))
    for row in rows(conn, "extensions", "SELECT name, path, manifest FROM extensions WHERE host = ? AND enabled = 1 "
                                     "ORDER BY name", (STORE_HOST,)):
        if row["name"] in skip_static_of:
            continue
        for name in static_agent_names(root / row["path"], json_column(row, "manifest", dict)):
            into.add(name, None, f"static agent {name!r} of extension {row['name']} ({scope_kind} scope)")
    return into


def scope_findings(*, profile: Profile, visible: VisibleAgents, activation: str | None, scope_kind: str,
                   workspace_path: str, bundle: Bundle | None = None) -> list[Problem]:
    """Every scope rule broken by activating `profile` of `bundle` (as `activation`) with
    `visible` agents around it; the agents `activation` itself projects do not count against it."""
    from pkgmgr.bundles import layout_scope_problems

    findings: list[Problem] = []
    bundle_file, profile_key = "", "profile"
    if bundle is not None:
        bundle_file = bundle.file
        profile_key = next((f"profiles[{i}]" for i, p in enumerate(bundle.profiles) if p is profile), profile_key)
    packaged = {agent_key(name) for name in profile.agent_names()}
    for agent in profile.agents:
        owner = visible.owner(agent.name, exclude=activation)
        if owner is None and getattr(agent, "reserved", False):
            owner = "name reserved by the host (config host.reserved_agent_names)"
        mixed = mixed_script_problem(agent.name)
        if owner is None and mixed is not None:
            findings.append(Problem.scope_rule(Code.AGENT_CONFLICT, "agent", agent.name, mixed, f"{agent.path}/AGENT.md", "name"))
            continue
        if owner is not None:
            findings.append(Problem.scope_rule(Code.AGENT_CONFLICT, "agent", agent.name,
                                    f"bundled agent {agent.name!r} conflicts with the visible {owner}",
                                    f"{agent.path}/AGENT.md", "name"))
    referring: tuple[tuple[str, Sequence[JobSpec | TriggerSpec]], ...] = (("job", profile.jobs),
                                                                          ("trigger", profile.triggers))
    for kind, items in referring:
        for index, item in enumerate(items):
            if agent_key(item.agent) not in packaged and not visible.has(item.agent, exclude=activation):
                import difflib

                close = difflib.get_close_matches(item.agent, list(profile.agent_names()), n=1, cutoff=0.7)
                findings.append(Problem.scope_rule(Code.AGENT_REFERENCE_NOT_FOUND, kind, item.name,
                                        f"{kind} {item.name!r} references agent {item.agent!r}, which the profile "
                                        "does not package and the scope does not have"
                                        + (f"; did you mean {close[0]!r}?" if close else ""), bundle_file,
                                        f"{profile_key}.{kind}s[{index}].agent"))
    for layout in profile.layouts:
        for problem in layout_scope_problems(layout, scope_kind, workspace_path):
            findings.append(Problem.scope_rule(Code.INVALID_LAYOUT, "window_layout", layout.id,
                                               f"layout {layout.id!r}: {problem}", problem.file, problem.key))
    return findings


ORDER: dict[str, int] = {Code.AGENT_CONFLICT: 0, Code.AGENT_REFERENCE_NOT_FOUND: 1, Code.INVALID_LAYOUT: 2}


def raise_findings(findings: Iterable[Problem], what: str) -> None:
    """Raise one error for every finding: the code (and exit status) of the most severe, a
    conflict before a missing reference before a layout bound elsewhere; `details.problems`
    lists each."""
    findings = sorted(findings, key=lambda f: ORDER.get(f.code, 9))
    if not findings:
        return
    raise PkgmgrError(
        f"{what}:\n" + "\n".join(f.message for f in findings),
        code=findings[0].code,
        details={"problems": [f.to_json() for f in findings]},
    )
