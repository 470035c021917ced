"""Every rule of SPEC 2 that needs no filesystem: one valid and one invalid example each."""

from __future__ import annotations

from typing import Any

import pytest

from pkgmgr.errors import ValidationFailed
from pkgmgr.manifest import Manifest, parse_manifest
from tests.manifest.helpers import by_key, full_manifest, minimal, problems

DROP = object()


def parse(data: Any) -> Manifest:
    return parse_manifest(data, file="extension.toml", root=None)


def hook(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "ready", "event": "session.post_create", "command": "run"}
    base.update(fields)
    return {key: value for key, value in base.items() if value is not DROP}


def with_hook(**fields: Any) -> dict[str, Any]:
    return minimal(resources={"hooks": [hook(**fields)]})


def with_server(name: str = "git", **fields: Any) -> dict[str, Any]:
    return minimal(resources={"mcp_servers": {name: {"command": "uvx", **fields}}})


def with_subprocess(**fields: Any) -> dict[str, Any]:
    return minimal(subprocess={"command": "node", **fields})


def only_problem(data: Any) -> tuple[str, str, str]:
    found = problems(data)
    assert len(found) == 1, found
    return found[0].key, found[0].message, found[0].code


# -- valid documents ------------------------------------------------------------------------

VALID = {
    "minimal at the root": minimal(),
    "core fields in [extension]": {"extension": minimal()},
    "same value in both places": {**minimal(), "extension": minimal()},
    "empty root value, filled [extension] value": {**minimal(description=""), "extension": {"description": "x"}},
    "split between root and [extension]": {"name": "demo-ext", "extension": {"version": "1.0.0",
                                                                             "min_compozy_version": "0.5.0"}},
    "v-prefixed version": minimal(version="v1.0.0"),
    "prerelease and build": minimal(version="1.0.0-rc.1+build.5"),
    "64-character name": minimal(name="a" + "b" * 63),
    "name with digits and dashes": minimal(name="a1-b2-"),
    "requires_env": minimal(requires_env=["A", "_B", "c_1"]),
    "network not required": minimal(network_participation={"required": False}),
    "network live": minimal(network_participation={"required": True, "mode": "LIVE", "channel_scopes": ["x"]}),
    "hook executor at top level": with_hook(args=["a"], env={"LEVEL": "x"}, secret_env={"API_KEY": "env:K"}),
    "hook executor table": with_hook(command=DROP, executor={"kind": "subprocess", "command": "run"}),
    "hook executor table without kind": with_hook(command=DROP, executor={"command": "run"}),
    "hook options": with_hook(mode="sync", required=True, priority=-3, timeout="250ms", matcher={"agent_name": "coder", "session_type": "chat"}),
    "hook integral float priority": with_hook(priority=2.0),
    "mcp server with templates": with_server(args=["{{config_dir}}/x", "{{env:A}}"], env={"ROOT": "{{env:ROOT}}"}),
    "secret-like key that names a place": with_server(env={"TOKEN_FILE": "/run/t", "api_token_url": "https://x"}),
    "tool with unknown keys (warned)": minimal(resources={"tools": {"search": {
        "handler": "search", "backend": {"kind": "extension_host"}, "any": {"thing": [1, None]}}}}),
    "tool with its own id": minimal(resources={"tools": {"Search Docs": {
        "id": "ext__demo_ext__docs", "backend": {"kind": "extension_host", "handler": "search"}, "risk": "read",
        "read_only": True}}}),  # manifestToolRisk: read risk requires read_only
    "publish with default scope": minimal(resources={"publish": {"families": ["hooks", "tools"]}}),
    "every family": minimal(resources={"publish": {"families": [
        "hooks", "tools", "agents", "mcp_servers", "skills", "automation_jobs", "automation_triggers", "bundles",
        "window_layouts"], "max_scope": "global"}}),
    "capabilities": minimal(capabilities={"provides": ["prompt.provider", "model.source", "a_b.c-d.e"]}),
    "bridge adapter with bridge": minimal(capabilities={"provides": ["bridge.adapter"]},
                                          bridge={"platform": "slack", "display_name": "Slack"}),
    "bridge without adapter": minimal(bridge={"platform": "slack"}),
    "actions": minimal(actions={"requires": ["sessions/list", "agents/heartbeat/wake"]}),
    "grants": minimal(security={"capabilities": ["session.read", "*", "resources.*", "*.read"]}),
    "subprocess durations": with_subprocess(health_check_interval="1h30m", shutdown_timeout="1.5s"),
    "subprocess secret_env": with_subprocess(secret_env={"GITHUB_TOKEN": "env:GH_TOKEN"}),
    "full manifest (no root: paths unchecked)": full_manifest(),
    # Compozy's loader accepts these (tests/hosts/compozy holds the cases and their Go functions)
    "padded name and version are trimmed": minimal(name="demo-ext\n", version=" 1.0.0"),
    "unknown root key (a warning)": minimal(homepage="x"),
    "unknown hook, executor, server, security, subprocess and network keys (warnings)": minimal(
        resources={"hooks": [hook(when="always", command=DROP, executor={"command": "x", "cwd": "/"})],
                   "mcp_servers": {"git": {"command": "uvx", "cwd": "/tmp"}}},
        security={"grants": []}, subprocess={"command": "node", "restart": "always"},
        network_participation={"required": False, "scopes": []}),
    "duplicate capability": minimal(capabilities={"provides": ["a.b", "a.b"]}),
    "bridge empty platform without adapter": minimal(bridge={"platform": ""}),
    "zero duration means unset": with_subprocess(shutdown_timeout="0s"),
    "blank list entries are dropped": minimal(requires_env=["A", " ", ""], actions={"requires": ["sessions/list", ""]}),
    "vault secret reference": with_subprocess(secret_env={"TOKEN_X": "vault:extensions/demo/token"}),
    "padded and blank hook modes": minimal(resources={"hooks": [hook(mode=" async "), hook(name="other", mode="")]}),
}


@pytest.mark.parametrize("data", VALID.values(), ids=VALID.keys())
def test_valid(data: dict[str, Any]) -> None:
    assert isinstance(parse(data), Manifest)


# -- one rule broken at a time --------------------------------------------------------------

INVALID = {
    # core fields
    "missing name": ({"version": "1.0.0", "min_compozy_version": "0.5.0"}, "extension.name", "is required"),
    "missing version": ({"name": "demo-ext", "min_compozy_version": "0.5.0"}, "extension.version", "is required"),
    "missing min version": ({"name": "demo-ext", "version": "1.0.0"}, "extension.min_compozy_version",
                            "is required"),
    "conflict": ({**minimal(), "extension": {"version": "2.0.0"}}, "extension.version",
                 'field "version": conflicting root and [extension] values'),
    "conflicting requires_env": ({**minimal(requires_env=["A"]), "extension": {"requires_env": ["B"]}},
                                 "extension.requires_env", 'field "requires_env": conflicting'),
    "upper-case name": (minimal(name="Demo"), "extension.name", '"Demo" is not a valid extension name'),
    "one-character name": (minimal(name="a"), "extension.name", "is not a valid extension name"),
    "65-character name": (minimal(name="a" * 65), "extension.name", "is not a valid extension name"),
    "name starting with a digit": (minimal(name="1demo"), "extension.name", "is not a valid extension name"),
    "reserved name": (minimal(name="marketplace"), "extension.name", '"marketplace" is reserved'),
    "name not a string": (minimal(name=5), "name", "must be of type string"),
    "short version": (minimal(version="1.0"), "extension.version", '"1.0" is not a semantic version (X.Y.Z)'),
    "leading zero": (minimal(version="01.0.0"), "extension.version", "is not a semantic version"),
    "not PEP 440": (minimal(version="1.0.0-foo.bar"), "extension.version", "not a PEP 440 version"),
    "bad min version": (minimal(min_compozy_version="latest"), "extension.min_compozy_version",
                        '"latest" is not a semantic version'),
    "description type": (minimal(description=["x"]), "description", "must be of type string"),
    "requires_env name": (minimal(requires_env=["1BAD"]), "extension.requires_env[0]",
                          '"1BAD" is not an environment variable name'),
    "requires_env duplicate": (minimal(requires_env=["A", "B", "A"]), "extension.requires_env[2]",
                               'duplicate "A"'),
    "unknown [extension] key": (minimal(extension={"license": "MIT"}), "extension.license", "unknown key"),
    # network participation
    "network not required with mode": (minimal(network_participation={"required": False, "mode": "live"}),
                                       "network_participation.required", "required = false with a mode"),
    "network required without live": (minimal(network_participation={"required": True, "mode": "batch"}),
                                      "network_participation.mode", 'needs mode "live"'),
    "network type": (minimal(network_participation={"required": "true"}), "network_participation.required",
                     "must be of type boolean"),
    # hooks
    "hook mode": (with_hook(mode="later"), "resources.hooks[0].mode", 'must be one of "sync", "async"'),
    "hook without event": (with_hook(event=DROP), "resources.hooks[0]", "'event' is required"),
    # Compozy's sanitizedHookDecl: a required hook is sync; a sync hook needs a sync-eligible event
    "required async hook": (with_hook(required=True), "resources.hooks[0].required", "must run in sync mode"),
    "sync hook on an async-only event": (with_hook(mode="sync", event="network.message.persisted"),
                                         "resources.hooks[0].mode", "accepts only async hooks"),
    "misspelt hook event": (with_hook(event="session.post_craete"), "resources.hooks[0].event",
                            'is not a hook event of Compozy v0.2; did you mean "session.post_create"?'),
    "hook without command": (with_hook(command=DROP), "resources.hooks[0].command", "is required"),
    "hook executor without command": (with_hook(command=DROP, executor={"kind": "subprocess"}),
                                      "resources.hooks[0].executor.command", "is required"),
    "hook executor in both places": (with_hook(executor={"command": "run"}), "resources.hooks[0]",
                                     "both at the hook's top level and under executor"),
    "hook timeout": (with_hook(timeout="5"), "resources.hooks[0].timeout", "missing unit"),
    "hook negative timeout": (with_hook(timeout="-5s"), "resources.hooks[0].timeout", "is negative"),
    "hook timeout number": (with_hook(timeout=5), "resources.hooks[0].timeout", "write it with a unit"),
    "hook priority": (with_hook(priority="high"), "resources.hooks[0].priority", "must be of type integer"),
    "hook required": (with_hook(required="yes"), "resources.hooks[0].required", "must be of type boolean"),
    "hook name": (with_hook(name="bad name"), "resources.hooks[0].name", "is not a valid hook name"),
    "hook env secret": (with_hook(env={"GITHUB_TOKEN": "x"}), "resources.hooks[0].env.GITHUB_TOKEN",
                        "move secret-like values to secret_env"),
    "hook unterminated template": (with_hook(args=["{{env:HOME"]), "resources.hooks[0].args[0]",
                                   "unterminated {{env: template"),
    # MCP servers
    "server without command": (minimal(resources={"mcp_servers": {"git": {"args": []}}}),
                               "resources.mcp_servers.git.command", "is required"),
    "server empty command": (with_server(command=""), "resources.mcp_servers.git.command", "is required"),
    "one-segment action": (minimal(actions={"requires": ["health"]}), "actions.requires[0]", "is not a Host API method"),
    "one-segment grant": (minimal(security={"capabilities": ["logs"]}), "security.capabilities[0]", "is not a grant"),
    "vault reference of another namespace": (with_subprocess(secret_env={"TOKEN_X": "vault:mcp/demo/token"}),
                                             "subprocess.secret_env.TOKEN_X", "vault:extensions/<path>"),
    "server name": (with_server(name="my server"), "resources.mcp_servers.my server", "is not a valid MCP server name"),
    "server env key": (with_server(env={"A-B": "x"}), "resources.mcp_servers.git.env.A-B",
                       "is not an environment variable name"),
    "server env value type": (with_server(env={"PORT": 8080}), "resources.mcp_servers.git.env.PORT",
                              "must be of type string"),
    "server env lower-case secret": (with_server(env={"db_password": "x"}), "resources.mcp_servers.git.env.db_password",
                                     "looks like a secret"),
    "server env template name": (with_server(env={"ROOT": "{{env:not-a-name}}"}), "resources.mcp_servers.git.env.ROOT",
                                 "is not an environment variable name"),
    "server secret_env value": (with_server(secret_env={"API_KEY": "sk-live-123"}),
                                "resources.mcp_servers.git.secret_env.API_KEY", "must be an env:NAME reference"),
    "server secret_env key": (with_server(secret_env={"1KEY": "env:K"}), "resources.mcp_servers.git.secret_env.1KEY",
                              "is not an environment variable name"),
    "server args type": (with_server(args="serve"), "resources.mcp_servers.git.args", "must be of type array"),
    # publish, tools, resources lists
    "unknown family": (minimal(resources={"publish": {"families": ["channels"]}}),
                       "resources.publish.families[0]", "must be one of"),
    "bad max_scope": (minimal(resources={"publish": {"families": ["hooks"], "max_scope": "session"}}),
                      "resources.publish.max_scope", 'must be one of "global", "workspace"'),
    "max_scope without families": (minimal(resources={"publish": {"max_scope": "workspace"}}),
                                   "resources.publish.max_scope", "max_scope without families"),
    "max_scope with empty families": (minimal(resources={"publish": {"families": [], "max_scope": "global"}}),
                                      "resources.publish.max_scope", "max_scope without families"),
    "tools handler not a table": (minimal(resources={"tools": {"search": "x"}}), "resources.tools.search",
                                  "must be of type object"),
    # Compozy's validateToolConfigs / resolveManifestToolDescriptor
    "tool without backend": (minimal(resources={"tools": {"search": {"handler": "h"}}}),
                             "resources.tools.search.backend.kind", "is required"),
    "tool in the compozy namespace": (minimal(resources={"tools": {"s": {"id": "compozy__read", "handler": "h",
                                                                            "backend": {"kind": "extension_host"}}}}),
                                      "resources.tools.s.id", "cannot claim the compozy__ namespace"),
    "tool outside its namespace": (minimal(resources={"tools": {"s": {"id": "ext__other__read", "handler": "h",
                                                                         "backend": {"kind": "extension_host"}}}}),
                                   "resources.tools.s.id", "stay under the 'ext__demo_ext__' namespace"),
    "tool risk": (minimal(resources={"tools": {"s": {"handler": "h", "backend": {"kind": "extension_host"},
                                                     "risk": "scary"}}}), "resources.tools.s.risk", "must be one of"),
    "mcp tool without server": (minimal(resources={"tools": {"s": {"backend": {"kind": "mcp", "tool": "t"}}}}),
                                "resources.tools.s.backend.server", "is required"),
    "tool handler with a slash": (minimal(resources={"tools": {"s": {"handler": "a/b",
                                                                     "backend": {"kind": "extension_host"}}}}),
                                  "resources.tools.s.handler", "unsupported characters"),
    "skills not a list": (minimal(resources={"skills": "skills"}), "resources.skills", "must be of type array"),
    # capabilities, actions, grants, bridge
    "one-segment capability": (minimal(capabilities={"provides": ["prompt"]}), "capabilities.provides[0]",
                               '"prompt" is not a capability identifier'),
    "upper-case capability": (minimal(capabilities={"provides": ["Prompt.provider"]}), "capabilities.provides[0]",
                              "is not a capability identifier"),
    "empty capability segment": (minimal(capabilities={"provides": ["prompt..provider"]}),
                                 "capabilities.provides[0]", "is not a capability identifier"),
    "bridge adapter without bridge": (minimal(capabilities={"provides": ["bridge.adapter"]}), "bridge",
                                      "providing bridge.adapter requires [bridge] with platform and display_name"),
    "bridge adapter without display_name": (minimal(capabilities={"provides": ["bridge.adapter"]},
                                                    bridge={"platform": "slack"}),
                                            "bridge.display_name", "is required when capabilities.provides"),
    "action with dots": (minimal(actions={"requires": ["sessions.list"]}), "actions.requires[0]",
                         '"sessions.list" is not a Host API method'),
    "action with empty segment": (minimal(actions={"requires": ["sessions//list"]}), "actions.requires[0]",
                                  "is not a Host API method"),
    "action upper-case": (minimal(actions={"requires": ["Sessions/list"]}), "actions.requires[0]",
                          "is not a Host API method"),
    "grant upper-case": (minimal(security={"capabilities": ["session.READ"]}), "security.capabilities[0]",
                         "is not a grant"),
    "grant partial wildcard": (minimal(security={"capabilities": ["session.re*"]}), "security.capabilities[0]",
                               "is not a grant"),
    "grant with slash": (minimal(security={"capabilities": ["sessions/list"]}), "security.capabilities[0]",
                         "is not a grant"),
    # subprocess
    "subprocess duration": (with_subprocess(health_check_interval="30"), "subprocess.health_check_interval",
                            "missing unit"),
    "subprocess unknown unit": (with_subprocess(shutdown_timeout="10 sec"), "subprocess.shutdown_timeout",
                                "unknown unit"),
    "subprocess env secret": (with_subprocess(env={"SLACK_BOT_TOKEN": "xoxb"}), "subprocess.env.SLACK_BOT_TOKEN",
                              "move secret-like values to secret_env"),
    "subprocess command template": (with_subprocess(command="{{env:NODE"), "subprocess.command",
                                    "unterminated {{env: template"),
}


@pytest.mark.parametrize(("data", "key", "message"), INVALID.values(), ids=INVALID.keys())
def test_invalid(data: dict[str, Any], key: str, message: str) -> None:
    found = problems(data)
    assert all(problem.code == "invalid_manifest" and problem.file == "extension.toml" for problem in found)
    assert any(problem.key == key and message in problem.message for problem in found), found


@pytest.mark.parametrize("generation", ["v0.2", "v0.3-beta.3", "v0.3"])
def test_mcp_backed_tool_loads_from_v03_only(generation: str) -> None:
    """Recorded running (manifest_cases.toml recorded-man-tool-backend-mcp): before v0.3 the mcp
    BackendRef carries no handler and the runtime descriptor refuses it; 96a771efa loads it."""
    data = minimal(resources={"tools": {"s": {"backend": {"kind": "mcp", "server": "docs", "tool": "t"}}}})
    if generation == "v0.3":
        assert isinstance(parse_manifest(data, file="extension.toml", root=None, generation=generation), Manifest)
        return
    with pytest.raises(ValidationFailed) as caught:
        parse_manifest(data, file="extension.toml", root=None, generation=generation)
    assert [(p.key, p.message.split(" (")[0]) for p in caught.value.problems] == [
        ("resources.tools.s.backend.kind", "Compozy before v0.3 refuses a manifest tool with an mcp backend")]


def test_spec_example_message() -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse({"extension": minimal(version="1.0")})
    error = caught.value
    assert error.code == "invalid_manifest" and error.exit_code == 3
    assert str(error) == 'extension.toml: extension.version: "1.0" is not a semantic version (X.Y.Z)'
    assert error.details["problems"] == [{"code": "invalid_manifest", "file": "extension.toml",
                                          "key": "extension.version",
                                          "message": '"1.0" is not a semantic version (X.Y.Z)'}]


def test_conflict_message_names_the_field() -> None:
    key, message, _ = only_problem({**minimal(), "extension": {"name": "other-ext"}})
    assert (key, message) == ("extension.name", 'field "name": conflicting root and [extension] values')


def test_secret_values_are_never_echoed() -> None:
    found = problems(with_server(secret_env={"API_KEY": "sk-live-SECRET"}, env={"DB_PASSWORD": "hunter2"}))
    text = "\n".join(str(problem) for problem in found)
    assert len(found) == 2
    assert "sk-live-SECRET" not in text and "hunter2" not in text


def test_every_problem_of_the_file_is_reported_together() -> None:
    data = {
        "name": "Bad_Name",
        "version": "1.0",
        "min_compozy_version": "0.5.0",
        "requires_env": ["A", "A"],
        "unknown": True,  # accepted: a warning
        "network_participation": {"required": True, "mode": "batch"},
        "resources": {
            "hooks": [hook(executor={"command": "x"}), hook(name="other", mode="never", timeout="1x")],
            "mcp_servers": {"git": {"command": "uvx", "env": {"GH_TOKEN": "x"}}},
            "publish": {"max_scope": "workspace"},
        },
        "capabilities": {"provides": ["bridge.adapter", "single"]},
        "actions": {"requires": ["Bad/Action"]},
        "security": {"capabilities": ["BAD"]},
        "subprocess": {"command": "node", "shutdown_timeout": "forever"},
    }
    keys = set(by_key(problems(data)))
    assert keys >= {
        "extension.name", "extension.version", "extension.requires_env[1]",
        "network_participation.mode", "resources.hooks[0]", "resources.hooks[1].mode", "resources.hooks[1].timeout",
        "resources.mcp_servers.git.env.GH_TOKEN", "resources.publish.max_scope", "capabilities.provides[1]", "bridge",
        "actions.requires[0]", "security.capabilities[0]", "subprocess.shutdown_timeout",
    }


def test_schema_and_code_problems_are_not_reported_twice() -> None:
    found = problems(minimal(network_participation={"required": "yes", "mode": 1, "extra": 1}))
    assert sorted(problem.key for problem in found) == ["network_participation.mode", "network_participation.required"]


@pytest.mark.parametrize("data", [[], "name = 'x'", None, 42, {"resources": []}, {"extension": "x"},
                                  {"resources": {"hooks": {"a": 1}}}, {"resources": {"hooks": [1, None, []]}},
                                  {"resources": {"mcp_servers": {"x": []}}}, {"subprocess": []}, {"bridge": 1},
                                  {"capabilities": {"provides": "bridge.adapter"}}])
def test_wrong_shapes_are_problems_not_crashes(data: Any) -> None:
    assert problems(data)


def test_priority_infinity_is_a_problem_not_a_crash() -> None:
    key, message, _ = only_problem(with_hook(priority=float("inf")))
    assert key == "resources.hooks[0].priority"


def test_deep_document_is_rejected_without_recursion() -> None:
    deep: Any = "leaf"
    for _ in range(5000):
        deep = {"k": deep}
    data = minimal()
    data["resources"] = {"tools": {"t": deep}}
    found = problems(data)
    assert "nested deeper than" in found[0].message


@pytest.mark.parametrize(("data", "message"), [
    ({1: "x"}, "is not a string"),
    (minimal(description="\ud800"), "lone surrogate"),
    (minimal(resources={"tools": {"\udc80": {}}}), "lone surrogate"),
])
def test_values_that_no_file_can_hold(data: Any, message: str) -> None:
    assert message in problems(data)[0].message


def test_problem_file_is_the_one_given() -> None:
    assert problems(minimal(name="X"), file="extension.json")[0].file == "extension.json"
