"""What a profile projects and its activation digest (SPEC 9.2), the digest computed here
independently for a tiny profile."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pkgmgr.activation.projection import project
from pkgmgr.bundles import load_bundles
from tests.bundles.helpers import agent_md, bundle, dump_bundle
from tests.support.builders import minimal_manifest, write_extension

from .helpers import make_ext, profile
from .test_ids import expected

SOUL = "# Soul ☕\n\nQuiet.\n".encode()
DESCRIPTION = "Opérations ☕ <&>"


def canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tiny(root: Path) -> Path:
    document = bundle("Tiny", [{"name": "Default", "agents": [{"path": "agents/scout"}],
                                "channels": {"primary": "ops", "items": [{"name": "ops",
                                                                          "description": DESCRIPTION}]}}])
    return write_extension(root, minimal_manifest("tiny-ext", resources={"bundles": ["bundles"]}), {
        "agents/scout/AGENT.md": agent_md("scout", "You scout.", model="sonnet"),
        "agents/scout/SOUL.md": SOUL,
        "bundles/tiny.toml": dump_bundle(document),
    })


def projection_of(root: Path, *, network: str = "", scope: str = "global", workspace: str = "",
                  scope_root: str = "/home/op/.pkgmgr", profile_name: str = "default", extension: str = "tiny-ext"):
    (loaded,) = load_bundles(root, ["bundles"], reserved_agent_names=())
    return project(extension=extension, bundle=loaded, profile=loaded.profile(profile_name), network_digest=network,
                   scope_kind=scope, scope_root=scope_root, workspace_path=workspace)


def test_activation_digest_of_a_tiny_profile_computed_independently(tmp_path: Path) -> None:
    projection = projection_of(tiny(tmp_path / "tiny"), network="ab" * 32)
    agent_record = {"name": "scout", "model": "sonnet", "prompt": "You scout.", "mcp": None, "capabilities": None,
                    "source_path": "agents/scout"}
    channel_record = {"name": "ops", "description": DESCRIPTION}
    document = {
        "extension": "tiny-ext", "bundle": "tiny", "profile": "default",  # names lower-cased
        "network_digest": "ab" * 32,
        "primary_channel": "ops",
        "resources": [  # sorted by (kind, name)
            {"kind": "agent", "name": "scout", "sha256": sha(canonical(agent_record))},
            {"kind": "agent.soul", "name": "scout", "sha256": sha(SOUL)},  # the file bytes
            {"kind": "channel", "name": "ops", "sha256": sha(canonical(channel_record))},
        ],
    }
    record = canonical(channel_record)
    assert "☕".encode() in record and b"\\u" not in record  # ensure_ascii off, no HTML escaping
    assert projection.activation_digest == sha(canonical(document))
    assert [(r.kind, r.name, r.sha256) for r in projection.resources] == \
        [(r["kind"], r["name"], r["sha256"]) for r in document["resources"]]
    assert projection.primary_channel == "ops" and projection.network_digest == "ab" * 32


def test_source_paths_are_version_independent_and_soul_paths_synthetic(tmp_path: Path) -> None:
    projection = projection_of(tiny(tmp_path / "tiny"))
    act = expected("act", "tiny-ext", "Tiny", "Default", "global", "")  # names as written (Compozy's stableID)
    assert projection.activation_id == act
    paths = {(r.kind, r.name): r.source_path for r in projection.resources}
    assert paths == {
        ("agent", "scout"): "tiny-ext:agents/scout/AGENT.md",
        ("agent.soul", "scout"): f"/home/op/.pkgmgr/bundles/{act}/agents/scout/SOUL.md",
        ("channel", "ops"): "tiny-ext:bundles/tiny.toml",
    }
    assert not (tmp_path / "tiny" / "bundles" / act).exists()  # nothing is written there


def test_the_digest_hashes_only_what_is_projected(tmp_path: Path) -> None:
    """Another version, another scope root or workspace, a README: same digest. A changed
    record, network digest or primary channel: another digest."""
    root = make_ext(tmp_path / "ext", version="0.1.0", scopes=None)
    base = projection_of(root, extension="crew-ext", scope_root="/a")
    make_ext(root, version="0.2.0", scopes=None, files={"README.md": "new docs"})
    assert projection_of(root, extension="crew-ext", scope_root="/b").activation_digest == base.activation_digest
    workspace = projection_of(root, extension="crew-ext", scope="workspace", workspace="/w")
    assert workspace.activation_digest == base.activation_digest  # the id differs, the digest does not
    assert workspace.activation_id != base.activation_id
    assert projection_of(root, extension="crew-ext", network="cd" * 32).activation_digest != base.activation_digest
    make_ext(root, version="0.3.0", scopes=None, profiles=[profile(channels=("ops", "launch"))])
    assert projection_of(root, extension="crew-ext").activation_digest != base.activation_digest
    make_ext(root, version="0.4.0", scopes=None, profiles=[profile(channels=("ops", "launch"))],
             files={"agents/planner/SOUL.md": "# Soul\n\nLoud.\n"})
    changed = projection_of(root, extension="crew-ext")
    assert changed.activation_digest != base.activation_digest
    assert {r.kind for r in changed.resources if r.sha256 != next(
        (b.sha256 for b in base.resources if (b.kind, b.name) == (r.kind, r.name)), None)} == {"agent.soul", "channel"}


def test_every_kind_is_projected_with_its_record(tmp_path: Path) -> None:
    root = make_ext(tmp_path / "ext", scopes=None, files={"agents/planner/HEARTBEAT.md": "# Beat\n"})
    projection = projection_of(root, extension="crew-ext")
    kinds = sorted({r.kind for r in projection.resources})
    assert kinds == ["agent", "agent.heartbeat", "agent.soul", "channel", "job", "trigger", "window_layout"]
    by_kind = {r.kind: r for r in projection.resources}
    assert by_kind["job"].record["agent"] == "planner" and by_kind["job"].record["enabled"] is True
    assert by_kind["window_layout"].record["id"] == "two-up"
    assert by_kind["agent.heartbeat"].sha256 == sha(b"# Beat\n")
    for resource in projection.resources:
        if resource.kind not in ("agent.soul", "agent.heartbeat"):
            assert resource.sha256 == sha(canonical(resource.record))
