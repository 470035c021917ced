from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.bundles import parse_agent_md
from pkgmgr.bundles.agent import load_agent
from pkgmgr.bundles.files import PackageTree, TreeError
from pkgmgr.frontmatter import MAX_FRONT_MATTER_BYTES

from .helpers import agent_md, write_tree

FILE = "agents/planner/AGENT.md"
FULL = """---
name: campaign-planner
provider: claude
command: claude
model: sonnet
reasoning_effort: xhigh
tools: [linear__search, "linear__read_*"]
toolsets: [linear__core]
deny_tools: [linear__delete]
permissions: approve-reads
skills: {disabled: [brief]}
category_path: [marketing, planning]
mcp_servers:
  - {name: linear, command: linear-mcp, args: [serve]}
  - {name: docs, transport: http, url: "https://docs.example.invalid/mcp"}
hooks:
  - {name: notify, event: session.post_create, command: echo}
---

# Role

You plan campaigns.
"""


def parse(text: str, reserved=("coordinator",)):
    return parse_agent_md(text, file=FILE, reserved_agent_names=reserved)


def one(problems, key: str, fragment: str = ""):
    matches = [p for p in problems if p.key == key and fragment in p.message]
    assert matches, f"no problem at {key!r} with {fragment!r} in {[str(p) for p in problems]}"
    assert all(p.file == FILE and p.code == "invalid_bundle" for p in problems)
    return matches[0]


def test_full_front_matter():
    front, body, problems = parse(FULL)
    assert problems == []
    assert front["name"] == "campaign-planner" and front["tools"] == ["linear__search", "linear__read_*"]
    assert front["mcp_servers"][0] == {"name": "linear", "command": "linear-mcp", "args": ["serve"]}
    assert body == "# Role\n\nYou plan campaigns."


def test_values_are_trimmed_as_compozy_trims_them():
    _, body, problems = parse("---\nname: ' a '\nreasoning_effort: ' high '\npermissions: ' deny-all'\n---\nb")
    assert problems == [] and body == "b"


def test_minimal_and_line_endings_and_bom():
    front, body, problems = parse("\ufeff---\r\nname: a\r\n---  \r\n\r\nBody\r\n")
    assert problems == [] and front == {"name": "a"} and body == "Body"


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("name: a\n---\nbody", "", "must start with a '---' line"),
        ("", "", "must start with a '---' line"),
        ("---\nname: a\nbody", "", "is not closed"),
        ("---\nname: [a\n---\nbody", "", "not valid YAML"),
        ("---\n---\nbody", "name", "is required (the front matter is empty)"),
        ("---\n- a\n- b\n---\nbody", "", "must be a YAML mapping"),
        ("---\nmodel: x\n---\nbody", "name", "is required"),
        ("---\nname: a\ndescription: x\n---\nbody", "description", "unknown field"),
        ("---\nname: a\n---\n", "body", "is empty"),
        ("---\nname: a\n---\n   \n\n", "body", "is empty"),
        ("---\nname: a\nreasoning_effort: extreme\n---\nb", "reasoning_effort", "must be one of none, minimal"),
        ("---\nname: a\npermissions: yolo\n---\nb", "permissions", "must be one of deny-all"),
        # Compozy's ParseAgentDef / AgentDef.Validate (internal/config) decide these
        ("---\nname: a\ntools: search\n---\nb", "tools", "list of strings"),
        ("---\nname: a\ntools: [search]\n---\nb", "tools", "not a canonical tool id"),
        ("---\nname: a\ntools: [linear__*x]\n---\nb", "tools", "namespace-prefix wildcard"),
        ("---\nname: a\ntools: [Linear__x]\n---\nb", "tools", "segment starts with a-z"),
        ("---\nname: a\ntoolsets: [core]\n---\nb", "toolsets", "toolset id"),
        ("---\nname: a\nskills: [brief]\n---\nb", "skills", "must be a table"),
        ("---\nname: a\nskills: {enabled: [x]}\n---\nb", "skills", "unknown field 'enabled'"),
        ("---\nname: a\nmodel: 3\n---\nb", "model", "must be a string"),
        ("---\nname: a\ncategory_path: a/b\n---\nb", "category_path", "list of strings"),
        ("---\nname: a\ncategory_path: [a, '..']\n---\nb", "category_path", "is not a category segment"),
        ("---\nname: a\ncategory_path: [a, 'b/c']\n---\nb", "category_path", "is not a category segment"),
        ("---\nname: a\nmcp_servers: [linear]\n---\nb", "mcp_servers", "list of server tables"),
        ("---\nname: a\nmcp_servers: {linear: {command: x}}\n---\nb", "mcp_servers", "list of server tables"),
        ("---\nname: a\nmcp_servers: [{command: x}]\n---\nb", "mcp_servers", "[0].name is required"),
        ("---\nname: a\nmcp_servers: [{name: x}]\n---\nb", "mcp_servers", "[0].command is required"),
        ("---\nname: a\nmcp_servers: [{name: x, transport: http}]\n---\nb", "mcp_servers", "url is required"),
        ("---\nname: a\nhooks: {event: x}\n---\nb", "hooks", "must be a list"),
        ("---\nname: 12\n---\nb", "name", "non-empty string"),
        ("---\nname: !!timestamp 2024-01-01\n---\nb", "name", "non-empty string"),
        ("---\nname: a\ncategory_path: 3\n---\nb", "category_path", "list of strings"),
        ("---\nname: a\nhooks: x\n---\nb", "hooks", "must be a list"),
        ("---\nname: a\nhooks: [{name: h, event: tool.pre_call, command: x, metadata: {at: !!timestamp 2024-01-01}}]\n---\nb", "hooks[0].metadata.at",
         "write it as a string"),
        ("---\nname: a/b\n---\nb", "name", "must not contain '/'"),
        ("---\nname: '..'\n---\nb", "name", "is not allowed"),
        ("---\nname: a\nname: b\n---\nb", "", "duplicate key 'name'"),
        ("---\nbase: &b {x: 1}\nname: a\nhooks: *b\n---\nb", "", "anchors and aliases are not allowed"),
        ("---\nname: a\n1: x\n---\nb", "", "key 1 is not a string"),
        ("---\nname: !!python/object:os.system a\n---\nb", "", "not valid YAML"),
    ],
)
def test_front_matter_problems(text, key, fragment):
    _, _, problems = parse(text)
    one(problems, key, fragment)


def test_lone_surrogates_in_text_are_a_problem():
    _, _, problems = parse("---\nname: a\nmodel: x\ud800\n---\nbody")
    assert problems[0].key == "" and "lone surrogate" in problems[0].message


def test_plain_json_issues_outside_free_form_fields():
    _, _, problems = parse("---\nname: a\nhooks: [{name: h, event: tool.pre_call, command: x, metadata: {when: !!timestamp 2024-01-01}}]\n---\nbody")
    assert [(p.key, "write it as a string" in p.message) for p in problems] == [("hooks[0].metadata.when", True)]


@pytest.mark.parametrize(("scalar", "value"), [
    ("yes", "yes"), ("No", "No"), ("on", "on"), ("off", "off"), ("y", "y"),  # YAML 1.1 booleans: strings
    ("1:30", "1:30"), ("1:59:59:59", "1:59:59:59"), ("-1:30.5", "-1:30.5"),  # base 60: strings
    ("2024-01-01", "2024-01-01"), ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),  # no timestamps
    ("1_000", "1_000"), ("0b101", "0b101"), ("=", "="),
    ("true", True), ("FALSE", False), ("~", None), ("null", None), ("", None),
    ("42", 42), ("-7", -7), ("0o17", 15), ("0x1F", 31), ("1.5", 1.5), ("1e3", 1000.0), (".5", 0.5),
])
def test_plain_scalars_are_typed_by_the_yaml_1_2_core_schema(scalar, value):
    front, _, problems = parse(f"---\nname: a\nhooks: [{{name: h, event: tool.pre_call, command: x, metadata: {{v: {scalar}}}}}]\n---\nbody")
    assert problems == [] and front["hooks"][0]["metadata"] == {"v": value}


@pytest.mark.parametrize("text", [
    "name: 1" + "0" * 5000,  # beyond Python's int() digit limit (was exit 70)
    "name: !!int 1" + "0" * 5000,
    "name: !!int 1:59:59",  # base 60 only through an explicit tag: refused, never computed
    "name: !!float 1:59:59.5",
    "name: !!int 1_0",
])
def test_hostile_numbers_are_problems(text):
    _, _, problems = parse(f"---\n{text}\n---\nbody")
    assert problems and problems[0].code == "invalid_bundle" and "YAML" in problems[0].message


def test_base_60_flood_is_a_string_not_quadratic():
    # the red team's shape: PyYAML's YAML 1.1 resolver turned this into one huge base-60 integer
    scalar = "1" + ":59" * 15_000
    front, _, problems = parse(f"---\nname: a\nhooks: [{{name: h, event: tool.pre_call, command: x, metadata: {{v: {scalar}}}}}]\n---\nbody")
    assert problems == [] and front["hooks"][0]["metadata"]["v"] == scalar


def test_front_matter_size_is_capped():
    padding = "# " + "x" * 98 + "\n"
    at_cap = "name: a\n" + padding * ((MAX_FRONT_MATTER_BYTES - 8) // len(padding))
    at_cap += "#" * (MAX_FRONT_MATTER_BYTES - len(at_cap))
    assert len(at_cap) == MAX_FRONT_MATTER_BYTES
    assert parse(f"---\n{at_cap}\n---\nbody")[2] == []
    _, _, problems = parse(f"---\n{at_cap}#\n---\nbody")
    assert [(p.key, p.line) for p in problems] == [("", 1)] and "larger than 64 KiB" in problems[0].message


def test_yaml_error_carries_the_file_line():
    _, _, problems = parse("---\nname: a\ntools: [x\n---\nbody\n")
    assert problems[0].line is not None and problems[0].line >= 3


def test_all_field_problems_reported_together():
    _, _, problems = parse("---\nname: a/b\nmodel: 1\nextra: x\n---\n")
    assert {p.key for p in problems} == {"name", "model", "extra", "body"}


def test_alias_bomb_is_a_problem():
    lines = ["---", "name: a", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)]
    _, _, problems = parse("\n".join(lines + ["hooks: *a11", "---", "body"]))
    assert problems and problems[0].key == ""


@pytest.mark.parametrize("depth", [100, 5000])
def test_deep_yaml_is_a_problem(depth):
    text = "---\nname: a\nhooks: " + "[" * depth + "]" * depth + "\n---\nbody\n"
    _, _, problems = parse(text)
    assert problems and any("nested" in p.message or "YAML" in p.message for p in problems)


# -- agent folders ---------------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "ext", {"agents/planner/AGENT.md": agent_md("planner")})


def load(root: Path, rel: str = "agents/planner", reserved=frozenset({"coordinator"})):
    return load_agent(PackageTree.open(root), rel, reserved_agent_names=reserved)


def test_minimal_folder(root):
    spec, problems = load(root, "agents/./planner/")
    assert problems == []
    assert (spec.name, spec.path, spec.soul, spec.heartbeat, spec.mcp, spec.capabilities) == (
        "planner", "agents/planner", None, None, None, None)


def test_full_folder(root):
    write_tree(root, {
        "agents/planner/SOUL.md": "# Soul\ncalm\n",
        "agents/planner/HEARTBEAT.md": "# Beat\n",
        "agents/planner/mcp.json": json.dumps({"mcp_servers": {"linear": {"command": "x"}}}),
        "agents/planner/capabilities/a.toml": 'id = "a"\nsummary = "A"\noutcome = "Done"\n',
        "agents/planner/capabilities/sub/b.toml": "not read: Compozy reads no subdirectory",
        "agents/planner/capabilities/notes.md": "passed over",
        "agents/planner/capabilities/.hidden.json": "passed over",
    })
    spec, problems = load(root)
    assert problems == []
    assert spec.soul == b"# Soul\ncalm\n" and spec.heartbeat == b"# Beat\n"
    assert spec.mcp == {"linear": {"command": "x"}}
    assert spec.capabilities == {"capabilities/a.toml": {"id": "a", "summary": "A", "outcome": "Done"}}


def test_capabilities_file(root):
    catalog = {"capabilities": [{"id": "triage", "summary": "Triage", "outcome": "Labelled issues",
                                 "requirements": ["linear"], "Examples": ["label the new bug"]}]}
    write_tree(root, {"agents/planner/capabilities.json": json.dumps(catalog)})
    spec, problems = load(root)
    assert problems == [] and spec.capabilities == {"capabilities.json": catalog}


@pytest.mark.parametrize(
    ("files", "file", "key", "fragment"),
    [
        ({"mcp.json": "[]"}, "agents/planner/mcp.json", "", "must be a JSON object"),
        ({"mcp.json": '{"mcpServers": {"a": {"command": "x", "cwd": "/"}}}'}, "agents/planner/mcp.json", "mcpServers.a",
         "unknown field 'cwd'"),
        ({"mcp.json": '{"mcpServers": {"a": {"transport": "http"}}}'}, "agents/planner/mcp.json", "mcpServers.a",
         "url is required"),
        ({"mcp.json": '{"mcp_servers": {"a": {"command": "x"}, " a": {"command": "y"}}}'}, "agents/planner/mcp.json",
         "mcp_servers. a", "duplicate server name"),
        ({"mcp.json": '{"mcpServers": []}'}, "agents/planner/mcp.json", "mcpServers", "must be a map"),
        ({"mcp.json": '{"mcpServers": {"a": 1}}'}, "agents/planner/mcp.json", "mcpServers.a", "must be an object"),
        ({"mcp.json": '{"mcpServers": {" ": {"command": "x"}}}'}, "agents/planner/mcp.json", "mcpServers. ", "name is required"),
        ({"mcp.json": '{"mcpServers": {"a": {}}, "mcpServers": {}}'}, "agents/planner/mcp.json", "", "duplicate key"),
        ({"mcp.json": "{"}, "agents/planner/mcp.json", "", "not valid JSON"),
        ({"capabilities.toml": "", "capabilities.json": "{}"}, "agents/planner", "", "two capability catalog files"),
        ({"capabilities.toml": "", "capabilities/x.toml": ""}, "agents/planner", "", "mixed capability catalog layouts"),
        ({"capabilities.toml": "security = 1"}, "agents/planner/capabilities.toml", "security", "unknown field"),
        ({"capabilities.toml": "[[capabilities]]\nid = 'a'\nsummary = 'A'\n"}, "agents/planner/capabilities.toml",
         "capabilities[0].outcome", "is required"),
        ({"capabilities.json": '{"capabilities": [{"id": "a", "summary": "A", "outcome": "B", "owner": "x"}]}'},
         "agents/planner/capabilities.json", "capabilities[0].owner", "unknown field"),
        ({"capabilities.toml": "[[capabilities]]\nid = 'a'\nsummary = 'A'\noutcome = 'B'\n"
                               "[[capabilities]]\nid = ' a '\nsummary = 'A'\noutcome = 'B'\n"},
         "agents/planner/capabilities.toml", "capabilities[1].id", "duplicate capability id"),
        ({"capabilities.toml": "[[capabilities]]\nid = 'a'\nsummary = 'A'\noutcome = 'B'\nrequirements = ['x', ' x']\n"},
         "agents/planner/capabilities.toml", "capabilities[0].requirements[1]", "duplicate requirement"),
        ({"capabilities/a.toml": "id = 'b'\nsummary = 'A'\noutcome = 'B'\n"}, "agents/planner/capabilities/a.toml", "id",
         "must match the file's name"),
        ({"capabilities/a.toml": "id = 'a'\nsummary = 'A'\noutcome = 'B'\n", "capabilities/b.json": "{}"},
         "agents/planner/capabilities", "", "mixed capability file formats"),
        ({"capabilities.toml": "a = "}, "agents/planner/capabilities.toml", "", "not valid TOML"),
        ({"capabilities.json": "[1]"}, "agents/planner/capabilities.json", "", "must be an object"),
        ({"capabilities": "not a dir"}, "agents/planner/capabilities", "", "must be a directory"),
        ({"SOUL.md": ""}, "agents/planner/SOUL.md", "", "SOUL.md is empty"),
        ({"HEARTBEAT.md": " \n\n"}, "agents/planner/HEARTBEAT.md", "", "HEARTBEAT.md is empty"),
        ({"SOUL.md": b"\xff\xfe"}, "agents/planner/SOUL.md", "", "not valid UTF-8"),
        ({"SOUL.md": "x" * (32 * 1024 + 1)}, "agents/planner/SOUL.md", "", "larger than 32 KiB"),
        ({"SOUL.md": "---\nprovider: hidden\n---\nNope."}, "agents/planner/SOUL.md", "", "starts with front matter"),
        ({"HEARTBEAT.md": "---\n---\nx"}, "agents/planner/HEARTBEAT.md", "", "starts with front matter"),
        ({"AGENT.md": "no front matter"}, "agents/planner/AGENT.md", "", "must start with"),
        ({"AGENT.md": b"---\nname: \xff\n---\nb"}, "agents/planner/AGENT.md", "", "not valid UTF-8"),
        ({"AGENT.md": "x" * (1024 * 1024 + 1)}, "agents/planner/AGENT.md", "", "larger than 1 MiB"),
    ],
)
def test_folder_problems(root, files, file, key, fragment):
    write_tree(root, {f"agents/planner/{rel}": content for rel, content in files.items()})
    spec, problems = load(root)
    assert spec is None
    assert any(p.file == file and p.key == key and fragment in p.message for p in problems), [str(p) for p in problems]


def test_empty_capabilities_dir_is_an_empty_catalog(root):
    (root / "agents/planner/capabilities").mkdir()
    (root / "agents/planner/capabilities/README.md").write_text("no definitions yet")
    spec, problems = load(root)
    assert problems == [] and spec.capabilities == {}


def test_a_symlinked_catalog_is_refused(root):
    (root / "elsewhere.toml").write_text("")
    (root / "agents/planner/capabilities.toml").symlink_to(root / "elsewhere.toml")
    spec, problems = load(root)
    assert spec is None and "not a symlink" in problems[0].message


def test_folder_problems_are_all_reported(root):
    write_tree(root, {"agents/planner/AGENT.md": "---\nname: a/b\n---\n", "agents/planner/SOUL.md": "",
                      "agents/planner/mcp.json": "[]"})
    _, problems = load(root)
    assert {(p.file, p.key) for p in problems} == {
        ("agents/planner/AGENT.md", "name"), ("agents/planner/AGENT.md", "body"),
        ("agents/planner/mcp.json", ""), ("agents/planner/SOUL.md", "")}


@pytest.mark.parametrize(
    ("rel", "code", "fragment"),
    [
        ("agents/missing", "invalid_bundle", "is not a directory"),
        ("agents/planner/AGENT.md", "invalid_bundle", "is not a directory"),
        ("agents", "invalid_bundle", "has no AGENT.md"),
        ("../elsewhere", "path_escapes_root", "outside the extension root"),
    ],
)
def test_unusable_folder_raises_tree_error(root, rel, code, fragment):
    with pytest.raises(TreeError) as info:
        load(root, rel)
    assert info.value.code == code and fragment in info.value.message


def test_symlinked_files_escaping_the_root(root, tmp_path):
    (tmp_path / "secret.md").write_text("# stolen\n")
    os.symlink(tmp_path / "secret.md", root / "agents/planner/SOUL.md")
    spec, problems = load(root)
    assert spec is None
    assert [(p.code, p.file) for p in problems] == [("path_escapes_root", "agents/planner/SOUL.md")]


def test_symlinked_agent_md_escaping_the_root(root, tmp_path):
    (tmp_path / "AGENT.md").write_text(agent_md("thief"))
    (root / "agents/planner/AGENT.md").unlink()
    os.symlink(tmp_path / "AGENT.md", root / "agents/planner/AGENT.md")
    spec, problems = load(root)
    assert spec is None and problems[0].code == "path_escapes_root"


def test_symlinked_folder_inside_the_root_is_fine(root):
    os.symlink(root / "agents/planner", root / "agents/alias")
    spec, problems = load(root, "agents/alias")
    assert problems == [] and spec.path == "agents/alias"


@given(st.text(alphabet="0123456789:._-+eExXoObfalsetrueTRUEnulNUL~ ", min_size=1, max_size=30))
@settings(max_examples=400, deadline=None)
def test_a_plain_scalar_is_typed_only_as_the_core_schema_says(scalar):
    from pkgmgr.frontmatter import _CORE_BOOL, _CORE_FLOAT, _CORE_INT, _CORE_NULL

    front, _, problems = parse(f"---\nname: a\nhooks: [{{name: h, event: tool.pre_call, command: x, metadata: {{v: {scalar}}}}}]\n---\nbody")
    assert all(p.code == "invalid_bundle" for p in problems)
    if problems:
        return
    value, text = front["hooks"][0]["metadata"].get("v"), scalar.strip()
    if isinstance(value, bool):
        assert _CORE_BOOL.match(text)
    elif value is None:
        assert _CORE_NULL.match(text)
    elif isinstance(value, int):
        assert _CORE_INT.match(text)
    elif isinstance(value, float):
        assert _CORE_FLOAT.match(text)
    else:
        assert isinstance(value, str) and not any(p.match(value) for p in (_CORE_INT, _CORE_FLOAT, _CORE_BOOL))


def test_agent_hooks_as_compozys_agent_loader_judges_them():
    hook = "---\nname: planner\nhooks:\n  - {{name: audit, event: tool.pre_call, command: ./a.sh{}}}\n---\nbody"
    assert parse(hook.format(", matcher: null, executor: null"))[2] == []  # null tables are the zero value
    assert parse(hook.format(", mode: sync, required: true, matcher: {agent_name: planner}"))[2] == []
    for extra, fragment in ((", matcher: x", "matcher must be a table"), (", when: now", "unknown field 'when'"),
                            (", matcher: {agent_name: writer}", "this agent's name"),
                            (", mode: sometimes", "sync or async"), (", required: true", "sync mode")):
        assert [fragment in p.message for p in parse(hook.format(extra))[2]] == [True], extra
