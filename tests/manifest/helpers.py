"""Shared helpers of the manifest tests: a complete valid manifest and problem extraction."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.errors import Problem, ValidationFailed
from pkgmgr.manifest import parse_manifest
from tests.support.builders import minimal_manifest

FULL_FILES = {
    "skills/review/SKILL.md": "---\nname: review\n---\n",
    "agents/planner/AGENT.md": "# planner\n",
    "bundles/team.toml": 'name = "team"\n',
    "loops/daily.toml": "",
    "hooks/run.sh": "#!/bin/sh\n",
    "bin/server": "#!/bin/sh\n",
}


def full_manifest() -> dict[str, Any]:
    """A manifest that uses every section, valid against FULL_FILES."""
    return {
        "extension": {
            "name": "full-ext",
            "version": "v1.2.3-rc.1",
            "min_compozy_version": "0.5.0",
            "description": "uses every section",
            "requires_env": ["FULL_MODE", "OTHER_VAR"],
        },
        "network_participation": {"required": True, "mode": " Live ", "channel_scopes": ["b", " a", "b", ""]},
        "resources": {
            "skills": ["skills"],
            "agents": ["agents/planner"],
            "bundles": ["bundles"],
            "loops": ["loops/daily.toml"],
            "hooks": [
                {"name": "ready", "event": "session.post_create", "mode": "async", "command": "/usr/bin/env",
                 "args": ["bash", "{{config_dir}}/hooks/run.sh"], "env": {"LEVEL": "info"}},
                {"name": "patch", "event": "prompt.post_assemble", "mode": "sync", "required": True,
                 "priority": 5, "timeout": "1.5s", "matcher": {"input_class": "user"},
                 "executor": {"kind": "subprocess", "command": "./hooks/run.sh", "args": ["hook"],
                              "secret_env": {"API_TOKEN": "env:FULL_TOKEN"}}},
            ],
            "mcp_servers": {
                "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"REPO_ROOT": "{{env:REPO_ROOT}}"}},
                "local": {"command": "bin/server"},
            },
            "tools": {"search": {"handler": "search", "backend": {"kind": "extension_host"},
                                 "anything": {"goes": [1, 2, {"deep": True}]}}},
            "publish": {"families": ["window_layouts", "hooks"], "max_scope": "workspace"},
        },
        "capabilities": {"provides": ["prompt.provider", "bridge.adapter"]},
        "actions": {"requires": ["sessions/list", "agents/soul/get"]},
        "security": {"capabilities": ["session.read", "memory.*"]},
        "subprocess": {"command": "node", "args": ["dist/index.js", "serve"], "env": {"LOG_LEVEL": "debug"},
                       "secret_env": {"SLACK_TOKEN": "env:SLACK_BOT_TOKEN"},
                       "health_check_interval": "30s", "shutdown_timeout": "1m30s"},
        "bridge": {"platform": "slack", "display_name": "Slack", "secret_slots": [{"name": "bot_token"}]},
    }


def minimal(**extra: Any) -> dict[str, Any]:
    return copy.deepcopy(minimal_manifest(**extra))


def problems(data: Any, *, root: Path | None = None, file: str = "extension.toml") -> list[Problem]:
    """The problems parse_manifest reports (fails the test when it accepts the document)."""
    with pytest.raises(ValidationFailed) as caught:
        parse_manifest(data, file=file, root=root)
    return list(caught.value.problems)


def by_key(found: list[Problem]) -> dict[str, list[Problem]]:
    grouped: dict[str, list[Problem]] = {}
    for problem in found:
        grouped.setdefault(problem.key, []).append(problem)
    return grouped
