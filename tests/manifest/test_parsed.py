from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.manifest import Command, Manifest, Subprocess, parse_manifest
from tests.manifest.helpers import full_manifest, minimal


def parse(data: dict) -> Manifest:
    return parse_manifest(data, file="extension.toml", root=None)


@pytest.mark.parametrize(
    ("extra", "kind"),
    [
        ({}, "resource"),
        ({"subprocess": {"command": "node"}}, "subprocess"),
        ({"subprocess": {"env": {"A": "b"}}}, "resource"),
        ({"capabilities": {"provides": ["prompt.provider"]}}, "subprocess"),
        ({"actions": {"requires": ["sessions/list"]}}, "subprocess"),
        ({"security": {"capabilities": ["session.read"]}}, "resource"),
    ],
)
def test_kind(extra: dict, kind: str) -> None:
    manifest = parse(minimal(**extra))
    assert manifest.kind == kind
    assert manifest.needs_subprocess is (kind == "subprocess")


def test_subprocess_needed_without_a_command_is_a_warning() -> None:
    manifest = parse(minimal(capabilities={"provides": ["prompt.provider"]}))
    assert any("declares no command" in warning for warning in manifest.warnings)


def test_full_manifest_values() -> None:
    manifest = parse(full_manifest())
    assert (manifest.name, manifest.version, manifest.min_compozy_version) == ("full-ext", "1.2.3-rc.1", "0.5.0")
    assert manifest.requires_env == ("FULL_MODE", "OTHER_VAR")
    assert manifest.network == {"required": True, "mode": "live", "channel_scopes": ["a", "b"]}
    assert len(manifest.network_digest) == 64
    assert manifest.skills == ("skills",) and manifest.loops == ("loops/daily.toml",)
    first, second = manifest.hooks
    assert (first.name, first.mode, first.required, first.priority, first.timeout) == ("ready", "async", False, 0, None)
    assert first.executor == Command("/usr/bin/env", ("bash", "{{config_dir}}/hooks/run.sh"), (("LEVEL", "info"),))
    assert (second.required, second.priority, second.timeout, second.matcher, second.executor_kind) == (
        True, 5, 1.5, (("input_class", "user"),), "subprocess")
    assert second.executor.secret_env == (("API_TOKEN", "env:FULL_TOKEN"),)
    assert [name for name, _ in manifest.mcp_servers] == ["git", "local"]
    assert manifest.publish_families == ("window_layouts", "hooks") and manifest.publish_max_scope == "workspace"
    assert manifest.capabilities == ("prompt.provider", "bridge.adapter")
    assert manifest.actions == ("sessions/list", "agents/soul/get")
    assert manifest.grants == ("session.read", "memory.*")
    assert manifest.subprocess == Subprocess("node", ("dist/index.js", "serve"), (("LOG_LEVEL", "debug"),),
                                             (("SLACK_TOKEN", "env:SLACK_BOT_TOKEN"),), 30.0, 90.0)
    assert manifest.bridge.platform == "slack" and manifest.bridge.secret_slots == ("bot_token",)
    assert manifest.document == full_manifest()
    assert manifest.kind == "subprocess"
    hash(manifest)  # frozen values stay usable as keys


def test_defaults() -> None:
    manifest = parse(minimal(resources={"hooks": [{"name": "h", "event": "session.post_create", "command": "x"}],
                                        "publish": {"families": ["hooks"]}}))
    hook = manifest.hooks[0]
    assert (hook.mode, hook.required, hook.priority, hook.timeout, hook.matcher, hook.executor_kind) == (
        "async", False, 0, None, (), None)  # Compozy's defaultHookMode
    assert manifest.publish_max_scope == "global"
    assert parse(minimal()).publish_max_scope is None
    assert parse(minimal()).description == "" and parse(minimal()).network is None
    assert parse(minimal()).network_digest == ""


def test_commands_lists_every_command_with_its_key() -> None:
    manifest = parse(full_manifest())
    keys = [key for key, _ in manifest.commands()]
    assert keys == ["resources.hooks[0]", "resources.hooks[1]", "resources.mcp_servers.git",
                    "resources.mcp_servers.local", "subprocess"]
    assert manifest.commands()[1][1].command == "./hooks/run.sh"
    assert parse(minimal()).commands() == []


def test_resolved_command_never_shows_environment_values() -> None:
    command = Command("{{config_dir}}/bin/run", ("--root", "{{env:REPO_ROOT}}"), (("HOME_DIR", "{{env:HOME}}"),),
                      (("API_TOKEN", "env:REAL_TOKEN"), ("OTHER", "env:MISSING")))
    environ = {"REPO_ROOT": "/private/repo", "HOME": "/home/me", "REAL_TOKEN": "hunter2"}
    shown = command.resolved(Path("/opt/ext"), environ)
    assert shown == {
        "command": "/opt/ext/bin/run",
        "args": ["--root", "<REPO_ROOT:set>"],
        "env": {"HOME_DIR": "<HOME:set>"},
        "secret_env": {"API_TOKEN": "<REAL_TOKEN:set>", "OTHER": "<MISSING:unset>"},
    }
    for value in environ.values():
        assert value not in repr(shown)
    assert command.to_json()["secret_env"] == {"API_TOKEN": "env:REAL_TOKEN", "OTHER": "env:MISSING"}
