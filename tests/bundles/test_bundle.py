from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from pkgmgr.bundles import AgentSpec, Bundle, Channel, Channels, JobSpec, LayoutSpec, Profile, TriggerSpec
from pkgmgr.jsonutil import canonical_json

from .helpers import layout_doc


def _agent(name: str = "planner") -> AgentSpec:
    return AgentSpec(
        name=name,
        path=f"agents/{name}",
        front_matter={"name": name, "model": "sonnet", "tools": ["a", "b"]},
        body="You plan.",
        soul=b"# soul",
        heartbeat=None,
        mcp={"linear": {"command": "linear-mcp"}},
        capabilities={"capabilities.toml": {"security": {"capabilities": ["session.read"]}}},
    )


def _profile() -> Profile:
    return Profile(
        name="default",
        description="d",
        channels=Channels("marketing", (Channel("marketing", "team"), Channel("launches"))),
        agents=(_agent("planner"), _agent("Writer")),
        layouts=(LayoutSpec("two-up", "Two up", "layouts/two-up.json", layout_doc()),),
        jobs=(JobSpec(name="daily", agent="planner", prompt="p", schedule={"mode": "every", "interval": "24h"}),),
        triggers=(TriggerSpec("t", "planner", "p", "linear.issue.created", {"team": "MKT"}),),
    )


def test_agent_record_shape():
    record = _agent().record()
    assert record == {
        "name": "planner",
        "model": "sonnet",
        "tools": ["a", "b"],
        "prompt": "You plan.",
        "mcp": {"linear": {"command": "linear-mcp"}},
        "capabilities": {"capabilities.toml": {"security": {"capabilities": ["session.read"]}}},
        "source_path": "agents/planner",
    }


def test_other_record_shapes():
    profile = _profile()
    assert profile.channels.items[1].record() == {"name": "launches", "description": ""}
    assert profile.channels.record() == {"primary": "marketing", "items": [
        {"name": "marketing", "description": "team"}, {"name": "launches", "description": ""}]}
    assert profile.jobs[0].record() == {"name": "daily", "agent": "planner", "prompt": "p", "enabled": True,
                                        "schedule": {"mode": "every", "interval": "24h"}, "retry": None,
                                        "fire_limit": None}
    assert profile.triggers[0].record() == {"name": "t", "agent": "planner", "prompt": "p",
                                            "event": "linear.issue.created", "filter": {"team": "MKT"},
                                            "enabled": True, "retry": None, "fire_limit": None}
    assert profile.layouts[0].record() == layout_doc()


def test_records_are_plain_json_and_deterministic():
    profile = _profile()
    records = [r.record() for r in (*profile.agents, *profile.layouts, *profile.jobs, *profile.triggers,
                                      *profile.channels.items)]
    for record in records:
        assert json.loads(canonical_json(record)) == record
    assert [canonical_json(r.record()) for r in profile.agents] == [canonical_json(r.record()) for r in _profile().agents]


def test_records_are_copies():
    agent = _agent()
    agent.record()["tools"].append("c")
    agent.record()["mcp"]["linear"]["command"] = "evil"
    assert agent.record()["tools"] == ["a", "b"]
    assert agent.mcp == {"linear": {"command": "linear-mcp"}}
    layout = _profile().layouts[0]
    layout.record()["document"]["workspace_id"] = "x"
    assert layout.document["document"]["workspace_id"] == ""


def test_values_are_frozen_and_hash_without_dicts():
    agent = _agent()
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.name = "other"  # type: ignore[misc]
    assert hash(agent) == hash(_agent())
    assert hash(_profile()) == hash(_profile())


def test_job_defaults():
    job = JobSpec(name="j", agent="a", prompt="p", schedule={"mode": "cron", "expr": "0 9 * * *"})
    assert job.enabled is True and job.retry is None and job.fire_limit is None


def test_agent_names_and_profile_lookup():
    profile = _profile()
    assert profile.agent_names() == ("planner", "Writer")
    bundle = Bundle("demo", "", "bundles/demo.toml", (profile,))
    assert bundle.profile("DEFAULT") is profile
    assert bundle.profile("missing") is None
    assert bundle.profile_names() == ("default",)


def test_package_import_is_light():
    code = ("import sys, pkgmgr.bundles; heavy = [m for m in ('jsonschema', 'yaml', 'croniter', 'requests', 'rich') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
