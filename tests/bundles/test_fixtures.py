"""The checked-in bundle extensions of fixtures/ load cleanly and say what their READMEs say."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pkgmgr.bundles import load_bundles
from pkgmgr.jsonutil import canonical_json, go_json, sha256_hex

from .helpers import REPO

FIXTURES = REPO / "fixtures"
READ_ONLY_GRANTS = {"logs.read", "memory.read", "model.read", "observe.read", "session.read", "skills.read", "tool.read"}
SEED_DIGEST = "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4"


def manifest(name: str) -> dict:
    return tomllib.loads((FIXTURES / name / "extension.toml").read_text(encoding="utf-8"))


def bundles_of(name: str):
    return load_bundles(FIXTURES / name, manifest(name)["resources"]["bundles"],
                        reserved_agent_names=("coordinator", "dreaming-curator"), generation="v0.2")  # v2 layouts


def network_digest(block: dict) -> str:
    """SPEC 9.2, written out independently of pkgmgr.manifest."""
    scopes = sorted({scope.strip() for scope in block.get("channel_scopes", []) if scope.strip()})
    return sha256_hex(go_json({"required": True, "mode": block["mode"].strip().lower(), "channel_scopes": scopes}))


@pytest.mark.parametrize("name", ["marketing-linear", "release-crew"])
def test_fixture_manifest_shape(name):
    document = manifest(name)
    core = document.get("extension", document)
    assert core["name"] == name and core["version"] == "0.1.0" and core["min_compozy_version"] == "0.5.0"
    assert core["description"]
    assert document["resources"]["bundles"] == ["bundles"]
    assert document["network_participation"]["required"] is True
    assert document["network_participation"]["mode"] == "live"
    assert (FIXTURES / name / "README.md").is_file()


def test_marketing_network_digest_is_the_seed_digest():
    block = manifest("marketing-linear")["network_participation"]
    assert block["channel_scopes"] == ["builders", "release"]
    assert network_digest(block) == SEED_DIGEST


def test_marketing_network_digest_through_the_manifest_codec():
    codec = pytest.importorskip("pkgmgr.manifest")
    if not hasattr(codec, "read_manifest"):
        pytest.skip("pkgmgr.manifest.read_manifest not available yet")
    parsed = codec.read_manifest(FIXTURES / "marketing-linear")
    assert parsed.network_digest == SEED_DIGEST
    assert [b.name for b in load_bundles(FIXTURES / "marketing-linear", parsed.bundles,
                                         reserved_agent_names=("coordinator",), generation="v0.2")] == ["marketing-linear"]


def test_marketing_linear_bundle():
    [bundle] = bundles_of("marketing-linear")
    assert (bundle.name, bundle.file) == ("marketing-linear", "bundles/marketing.toml")
    default, lean = bundle.profiles
    assert (default.name, lean.name) == ("default", "lean")

    assert default.channels.primary == "marketing"
    assert [c.name for c in default.channels.items] == ["marketing", "launches"]
    assert default.agent_names() == ("campaign-planner", "content-writer")
    planner, writer = default.agents
    assert planner.soul and planner.heartbeat and planner.mcp == {
        "linear": {"command": "linear-mcp", "args": ["serve", "--read-only"], "env": {"LINEAR_WORKSPACE": "marketing"}}}
    assert set(planner.capabilities) == {"capabilities.toml"}
    assert writer.soul and writer.heartbeat is None and writer.mcp is None and writer.capabilities is None

    [layout] = default.layouts
    assert (layout.id, layout.path) == ("two-up", "layouts/two-up.json")
    schedules = {job.name: job.schedule for job in default.jobs}
    assert schedules == {"daily-campaign-sync": {"mode": "every", "interval": "24h"},
                         "weekday-content-brief": {"mode": "cron", "expr": "0 9 * * 1-5"}}
    [trigger] = default.triggers
    assert trigger.agent in default.agent_names()
    assert all(job.agent in default.agent_names() for job in default.jobs)

    assert lean.agent_names() == ("campaign-planner",)
    assert lean.layouts == lean.jobs == lean.triggers == ()
    assert lean.agents[0] == planner


def test_release_crew_trigger_references_its_agent():
    [bundle] = bundles_of("release-crew")
    [profile] = bundle.profiles
    assert profile.agent_names() == ("release-captain",)
    assert profile.channels.primary == "release"
    [trigger] = profile.triggers
    assert trigger.agent == "release-captain" and trigger.event == "git.tag.created"
    assert network_digest(manifest("release-crew")["network_participation"]) != SEED_DIGEST


def test_fixture_layout_is_the_shared_vector():
    layout = json.loads((FIXTURES / "marketing-linear" / "layouts" / "two-up.json").read_text(encoding="utf-8"))
    shared = json.loads((Path(__file__).parent / "layouts" / "valid" / "shared-vector.json").read_text(encoding="utf-8"))
    assert layout == shared  # a version-2 document: v0.2's (the generation the seeds describe)


@pytest.mark.parametrize("name", ["marketing-linear", "release-crew"])
def test_fixture_capability_catalogs_are_compozys(name):
    # internal/config LoadAgentCapabilities: a list of capabilities, each with an id, summary and outcome
    for bundle in bundles_of(name):
        for profile in bundle.profiles:
            for agent in profile.agents:
                for document in (agent.capabilities or {}).values():
                    assert set(document) == {"capabilities"}
                    assert all(entry["id"] and entry["summary"] and entry["outcome"] for entry in document["capabilities"])


@pytest.mark.parametrize("name", ["marketing-linear", "release-crew"])
def test_fixture_records_are_canonical_json(name):
    for bundle in bundles_of(name):
        for profile in bundle.profiles:
            resources = [*profile.agents, *profile.layouts, *profile.jobs, *profile.triggers, *profile.channels.items]
            for resource in resources:
                text = canonical_json(resource.record())
                assert json.loads(text) == resource.record()
