"""Builders and CLI helpers for the activation tests: extensions with one bundle, built in
tmp_path (rewritten in place so successive versions come from the same path source), and
the state of a scope read straight from its state.db."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

from tests.bundles.helpers import agent_md, bundle, dump_bundle, job, layout_doc, trigger
from tests.support.builders import minimal_manifest, write_extension
from tests.support.cli import Result, run_cli
from tests.support.stores import store_root

NAME = "crew-ext"
SCOPES = ("ops",)


def profile(name: str = "default", *, agents: Sequence[str] = ("planner",), jobs: Sequence[Mapping] | None = None,
            triggers: Sequence[Mapping] | None = None, layouts: Sequence[str] = ("layouts/two-up.json",),
            channels: Sequence[str] = ("ops",), **extra: Any) -> dict[str, Any]:
    """A profile packaging `agents`, a job and a trigger of the first agent, the two-up layout
    and `channels` (the first is primary)."""
    first = agents[0] if agents else "planner"
    data: dict[str, Any] = {
        "name": name,
        "agents": [{"path": f"agents/{a}"} for a in agents],
        "layouts": [{"path": p} for p in layouts],
        "jobs": list(jobs) if jobs is not None else [job("daily", first)],
        "triggers": list(triggers) if triggers is not None else [trigger("on-issue", first)],
    }
    if channels:
        data["channels"] = {"primary": channels[0],
                            "items": [{"name": c, "description": f"the {c} channel"} for c in channels]}
    data.update(extra)
    return data


def make_ext(root: Path, *, name: str = NAME, version: str = "0.1.0", scopes: Sequence[str] | None = SCOPES,
             profiles: Sequence[Mapping[str, Any]] | None = None, agents: Sequence[str] = ("planner",),
             static_agents: Sequence[str] = (), layout_workspace: str = "", bundle_name: str = "crew",
             files: Mapping[str, str | bytes] | None = None, with_bundle: bool = True) -> Path:
    """(Re)write the extension at `root`: agent folders for `agents` (planner with a SOUL.md),
    the two-up layout bound to `layout_workspace`, one bundle file with `profiles` (default:
    one `default` profile), a network requirement over `scopes` (None: no requirement) and
    `static_agents` declared in `resources.agents`."""
    shutil.rmtree(root, ignore_errors=True)
    resources: dict[str, Any] = {}
    if with_bundle:
        resources["bundles"] = ["bundles"]
    if static_agents:
        resources["agents"] = ["static"]
    manifest = minimal_manifest(name, version, resources=resources)
    if scopes is not None:
        manifest["network_participation"] = {"required": True, "mode": "live", "channel_scopes": list(scopes)}
    layout = layout_doc("two-up")
    layout["document"]["workspace_id"] = layout_workspace
    tree: dict[str, str | bytes] = {f"agents/{a}/AGENT.md": agent_md(a) for a in agents}
    if "planner" in agents:
        tree["agents/planner/SOUL.md"] = "# Soul\n\nCalm and brief.\n"
    tree["layouts/two-up.json"] = json.dumps(layout, indent=2)
    if with_bundle:
        tree["bundles/main.toml"] = dump_bundle(bundle(bundle_name, list(profiles) if profiles else [profile()]))
    for agent in static_agents:
        tree[f"static/{agent}/AGENT.md"] = agent_md(agent)
    tree.update(files or {})
    return write_extension(root, manifest, tree)


# --- the CLI ------------------------------------------------------------------------------------


def scope_args(workspace: Path | None) -> list[str]:
    return ["--scope", "workspace", "--workspace", str(workspace)] if workspace is not None else []


def cli(*args: Any, workspace: Path | None = None, env: Mapping[str, str | None] | None = None) -> Result:
    return run_cli([*scope_args(workspace), *map(str, args), "-o", "json"], env=env)


def ok(*args: Any, workspace: Path | None = None) -> dict[str, Any]:
    result = cli(*args, workspace=workspace)
    assert result.code == 0, result
    return result.json


def fail(code: str, exit_code: int, *args: Any, workspace: Path | None = None) -> dict[str, Any]:
    """Run, expect error `code` with `exit_code`; returns the JSON document, plus the stderr
    text (where the hint is) under the test-only key `stderr`."""
    result = cli(*args, workspace=workspace)
    assert result.code == exit_code, result
    document = result.json
    assert document["error"]["code"] == code, result
    assert document["error"]["exit_code"] == exit_code
    assert f"error[{code}]" in result.stderr
    return {**document, "stderr": result.stderr}


def install(path: Path, *extra: str, workspace: Path | None = None) -> Result:
    return cli("ext", "install", path, "--allow-unverified", "--yes", *extra, workspace=workspace)


def installed(path: Path, *extra: str, workspace: Path | None = None) -> dict[str, Any]:
    result = install(path, *extra, workspace=workspace)
    assert result.code == 0, result
    return result.json


def activate(target: str = NAME, *extra: str, workspace: Path | None = None) -> dict[str, Any]:
    """`bundle activate TARGET ...`, expected to succeed; the JSON document."""
    return ok("bundle", "activate", target, *extra, workspace=workspace)


# --- state ----------------------------------------------------------------------------------


def db_path(home: Path, workspace: Path | None = None) -> Path:
    return (store_root(workspace) if workspace is not None else home) / "state.db"


def state(home: Path, workspace: Path | None = None) -> dict[str, list[tuple]]:
    """Every row of extensions, activations and resources, sorted (what "nothing moved" means)."""
    path = db_path(home, workspace)
    if not path.exists():
        return {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {table: sorted(tuple(row) for row in conn.execute(f"SELECT * FROM {table}"))
                for table in ("extensions", "activations", "resources")}
    finally:
        conn.close()


def resources(home: Path, workspace: Path | None = None, activation: str | None = None) -> list[tuple[str, str]]:
    """(kind, name) of the projected resources, sorted."""
    path = db_path(home, workspace)
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        query, params = "SELECT kind, name FROM resources", ()
        if activation is not None:
            query, params = query + " WHERE activation_id = ?", (activation,)
        return sorted(tuple(row) for row in conn.execute(query, params))
    finally:
        conn.close()


def network_digest_of(scopes: Sequence[str]) -> str:
    """SPEC 9.2 written out independently: Go-compatible compact JSON, scopes normalised."""
    import hashlib

    payload = json.dumps({"required": True, "mode": "live", "channel_scopes": sorted({s.strip() for s in scopes
                                                                                      if s.strip()})},
                         separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        payload = payload.replace(char, escaped)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


OPS_DIGEST = network_digest_of(SCOPES)
FULL_RESOURCES = [("agent", "planner"), ("agent.soul", "planner"), ("channel", "ops"), ("job", "daily"),
                  ("trigger", "on-issue"), ("window_layout", "two-up")]
