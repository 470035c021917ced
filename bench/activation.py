"""`activation`: activate a profile of 200 agents, 200 jobs and 50 layouts (SPEC 12: < 0.5 s as
a fresh process).

Setup (untimed): generate the extension, install it into a private home. Subject: `pkgmgr
bundle activate bench-crew --confirm-network-requirement D` as a fresh process (start-up,
resolve, validate the bundle files again, check the scope rules, project ~660 resources in one
transaction); each run starts from a deactivated state. Baseline: parsing and validating the
same bundle files with the bundle codec alone (`load_bundles`, in the harness's process), the
floor any activation pays because it validates what it projects; the ratio is informative. The
target is absolute. After the timed runs the activation in-process (no start-up) is measured
too, for reference.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

from bench.registry import BenchError, Case, Env, Target, benchmark
from bench.support import clean_env, pkgmgr_command

NAME = "bench-crew"
AGENTS, JOBS, LAYOUTS, TRIGGERS, CHANNELS = 200, 200, 50, 20, 10
SCOPES = ["bench", "ops"]


def layout(index: int) -> dict[str, Any]:
    """A valid window layout: one desktop, one group split into 2 or 4 tiled windows."""
    count = 2 if index % 2 == 0 else 4
    windows = {f"w{i}": {"id": f"w{i}", "app": "chat", "route": {"pathname": f"/chat/{i}", "search": {"i": i}},
                         "placement": "tiled", "desktop_id": "d1",
                         "floating_rect": {"x": 0, "y": 0, "width": 0.5, "height": 0.5}, "minimized": False}
               for i in range(count)}
    root = {"id": "n0", "kind": "split", "axis": "horizontal" if index % 3 else "vertical",
            "weights": [1 / count] * count,
            "children": [{"id": f"n{i + 1}", "kind": "leaf", "window_id": f"w{i}"} for i in range(count)]}
    return {
        "version": 1, "id": f"layout-{index:02d}", "display_name": f"Layout {index}", "aspect_variant": "any",
        "overflow_policy": "stack", "participant_slots": [f"slot-{i}" for i in range(count)],
        "document": {"version": 2, "workspace_id": "", "windows": windows, "desktops": [{
            "id": "d1", "name": "Main", "order": 0, "purpose": "standard", "floating": [],
            "groups": [{"id": "g1", "frame": {"x": 0, "y": 0, "width": 1, "height": 1}, "root": root}]}]},
    }


def schedule(index: int) -> dict[str, str]:
    if index % 3 == 0:
        return {"mode": "cron", "expr": f"{index % 60} {index % 24} * * 1-5"}
    if index % 3 == 1:
        return {"mode": "every", "interval": f"{index % 23 + 1}h30m"}
    return {"mode": "at", "time": f"2030-01-{index % 28 + 1:02d}T09:00:00Z"}


def generate_extension(root: Path, *, name: str = NAME, version: str = "0.1.0", agents: int = AGENTS,
                       jobs: int = JOBS, layouts: int = LAYOUTS, triggers: int = TRIGGERS,
                       channels: int = CHANNELS) -> Path:
    """Write an extension with one bundle `bench` whose `default` profile packages `agents`
    agents (each with SOUL.md, every fourth with HEARTBEAT.md), `jobs` jobs, `triggers`
    triggers, `layouts` layouts and `channels` channels, and a network requirement."""
    import tomlkit

    root.mkdir(parents=True, exist_ok=True)
    (root / "extension.toml").write_text(tomlkit.dumps({
        "name": name, "version": version, "min_compozy_version": "0.5.0",
        "description": "Benchmark crew: a large bundle profile",
        "network_participation": {"required": True, "mode": "live", "channel_scopes": SCOPES},
        "resources": {"bundles": ["bundles"]},
    }), encoding="utf-8")
    profile: dict[str, Any] = {
        "name": "default", "description": "everything",
        "channels": {"primary": "channel-00",
                     "items": [{"name": f"channel-{i:02d}", "description": f"Channel {i}"} for i in range(channels)]},
        "agents": [], "layouts": [], "jobs": [], "triggers": [],
    }
    for i in range(agents):
        folder = root / "agents" / f"agent-{i:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "AGENT.md").write_text(
            f"---\nname: agent-{i:03d}\nmodel: sonnet\nreasoning_effort: medium\npermissions: approve-reads\n"
            f"tools:\n  - bench__search\n  - bench__read_file\nskills:\n  disabled:\n    - skill-{i % 7}\n"
            f"category_path:\n  - bench\n  - group-{i % 10}\n"
            f"---\n\nYou are agent {i} of the benchmark crew. Work through the queue of group {i % 10}, report "
            "what you did, and ask before changing anything.\n", encoding="utf-8")
        (folder / "SOUL.md").write_text(f"# Soul\n\nAgent {i}: calm, concrete, brief.\n", encoding="utf-8")
        if i % 4 == 0:
            (folder / "HEARTBEAT.md").write_text(f"# Heartbeat\n\nEvery hour: summarise queue {i}.\n",
                                                 encoding="utf-8")
        profile["agents"].append({"path": f"agents/agent-{i:03d}"})
    (root / "layouts").mkdir(exist_ok=True)
    for i in range(layouts):
        (root / "layouts" / f"layout-{i:02d}.json").write_text(json.dumps(layout(i), indent=2), encoding="utf-8")
        profile["layouts"].append({"path": f"layouts/layout-{i:02d}.json"})
    for i in range(jobs):
        profile["jobs"].append({"name": f"job-{i:03d}", "agent": f"agent-{i % agents:03d}",
                                "prompt": f"Run the routine {i}.", "enabled": i % 5 != 0, "schedule": schedule(i),
                                "retry": ({"strategy": "backoff", "max_retries": 3, "base_delay": "30s"}
                                          if i % 2 else {"strategy": "none"}),
                                "fire_limit": {"max": 4, "window": "1h"}})
    for i in range(triggers):
        profile["triggers"].append({"name": f"trigger-{i:02d}", "agent": f"agent-{i % agents:03d}",
                                    "prompt": f"React to event {i}.", "event": f"bench.event.{i}",
                                    "retry": {"strategy": "none"}, "fire_limit": {"max": 10, "window": "1h"},
                                    "filter": {"data.team": "BENCH", "data.n": str(i)}})
    (root / "bundles").mkdir(exist_ok=True)
    (root / "bundles" / "bench.toml").write_text(tomlkit.dumps({"name": "bench", "profiles": [profile]}),
                                                 encoding="utf-8")
    return root


def network_digest() -> str:
    from pkgmgr.manifest import network_digest as digest

    return digest({"required": True, "mode": "live", "channel_scopes": SCOPES})


@benchmark("activation", target=Target("< 0.5 s, fresh process", max_seconds=0.5),
           summary=f"bundle activate: {AGENTS} agents, {JOBS} jobs, {LAYOUTS} layouts (fresh process)")
def activation(env: Env) -> Iterator[Case]:
    from pkgmgr.activation.ids import activation_id
    from pkgmgr.bundles import load_bundles
    from pkgmgr.config import load_config

    source = generate_extension(env.workdir / "src")
    home = env.workdir / "home"
    env.pkgmgr("ext", "install", source, "--allow-unverified", "--yes", "-o", "json")
    act = activation_id(NAME, "bench", "default", "global", "")
    digest = network_digest()
    installed_dir = home / "extensions" / NAME / "0.1.0"
    reserved = load_config(home).reserved_agent_names

    command = [str(c) for c in (*pkgmgr_command(), "--home", home, "bundle", "activate", NAME,
                                "--confirm-network-requirement", digest, "-o", "json")]
    variables = clean_env(env.workdir)

    def activate() -> None:
        proc = subprocess.run(command, env=variables, cwd=env.workdir, capture_output=True, check=True)
        if json.loads(proc.stdout)["activation"]["status"] != "active":
            raise BenchError(f"not activated: {proc.stdout[:500]!r}")

    def deactivate() -> None:
        env.pkgmgr("bundle", "deactivate", act, "-o", "json", expect=(0, 5))  # 5: nothing to deactivate yet

    def validate() -> None:
        load_bundles(installed_dir, ("bundles",), reserved_agent_names=reserved, generation="v0.2")  # version-2 layouts

    def in_process() -> dict[str, Any]:
        times = []
        for _ in range(3):
            deactivate()
            start = time.perf_counter()
            env.pkgmgr("bundle", "activate", NAME, "--confirm-network-requirement", digest, "-o", "json")
            times.append(time.perf_counter() - start)
        return {"the activation in-process (no start-up), median of 3": f"{statistics.median(times):.3f} s"}

    resources = AGENTS * 2 + AGENTS // 4 + JOBS + LAYOUTS + TRIGGERS + CHANNELS
    yield Case(subject=activate, reset=deactivate, baseline=validate,
               baseline_label="parse + validate the same bundle files (pkgmgr.bundles.load_bundles)",
               facts={"profile": f"{AGENTS} agents, {JOBS} jobs, {LAYOUTS} layouts, {TRIGGERS} triggers, "
                                 f"{CHANNELS} channels",
                      "resources projected": resources,
                      "target": "absolute (SPEC 12); the ratio is informative only"},
               after=in_process)
