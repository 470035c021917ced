"""Claude Code's conformance corpus: `.claude-plugin/plugin.json` with every field mutated, the
document itself mutated (bytes, encodings, duplicate keys, nesting, sizes, Unicode), the
component files a plugin carries, and inputs rebuilt from the shapes of Claude Code's plugin
reference pages (the manifest reference, the components page) with our own values.

Claude Code is closed source: its verdicts are recorded from the real CLI into `verdicts.json`
(`python -m tests.hosts.claude.record`): `claude plugin validate --json` and `--strict`, and the
plugin installed from a directory marketplace and listed (`claude plugin list --json`).

A case: `id`, `files` (relative path -> text, or {"base64"|"text", "mode"}), `from` (what it
mutates or rebuilds) and, where pkgmgr refuses what Claude Code takes, `pkgmgr_rule` (why) and
`message` (a fragment of pkgmgr's message).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from tests.hosts import conformance
from tests.hosts.conformance import DROP, raw, stricter

MANIFEST = ".claude-plugin/plugin.json"
MIB = 1024 * 1024


def doc(**fields: Any) -> str:
    """A manifest with a valid name, version, description and author unless a field overrides
    them (`DROP` removes one)."""
    return conformance.document({"name": "corpus-plugin", "version": "1.0.0", "description": "a corpus plugin",
                                 "author": {"name": "pkgmgr tests"}}, fields)


case = partial(conformance.case, MANIFEST)

REF = "plugins/manifest-reference (fields)"
PATHS = "plugins/manifest-reference (path rules)"
HOOKS_REF = "hooks reference (events)"
COMPONENTS = "plugins/components"
COMMAND = {"commands/hello.md": "---\ndescription: says hello\n---\nSay hello.\n"}
AGENT = {"agents/reviewer.md": "---\nname: reviewer\ndescription: reviews code\n---\nReview.\n"}
SKILL = {"skills/review/SKILL.md": "---\nname: review\ndescription: reviews\n---\nReview.\n"}
HOOK = {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/fmt.sh"}
HOOKS_FILE = {"hooks/hooks.json": json.dumps({"hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [HOOK]}]}})}
MCP_FILE = {".mcp.json": json.dumps({"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/server", "args": []}}})}

NAMES_ACCEPTED = ["a", "my-plugin", "a1", "1abc", "a--b", "x" * 64]
NAMES_REFUSED = ["a b", " a"]
NAMES_PROBED = ["A", "My-Plugin", "a_b", "a.b", "a/b", "..", ".", "-a", "a-", "é", "x" * 65, "x" * 300, "a\n",
                "claude", "anthropic", "builtin", "a@b", "claude-helper", "my-claude", "cl-aude", "claudette",
                "CLAUDE-x", "anthropic_", "a-anthropic", "the-claude-tool", "claude1", "anthropicx", "a:b", "日本"]
_FOLDER = "pkgmgr's rule: the name is the plugin's folder in pkgmgr's marketplace"
NAME_RULES = {"a/b": stricter(_FOLDER, "plain folder name"), "..": stricter(_FOLDER, "plain folder name"),
              ".": stricter(_FOLDER, "plain folder name"), "x" * 300: stricter(_FOLDER, "255 bytes"),
              "a@b": stricter("pkgmgr's rule: '@' separates a plugin from its marketplace in an id", "'@'")}
HOOK_EVENTS = ["PreToolUse", "PostToolUse", "Notification", "UserPromptSubmit", "Stop", "SubagentStop",
               "PreCompact", "SessionStart", "SessionEnd"]

CASES: list[dict[str, Any]] = [
    # --- the minimal manifest and the reference pages' shapes (our values) -------------------------
    case("minimal", doc(), REF),
    case("name-only", json.dumps({"name": "corpus-plugin"}), f"{REF} (only name is required)"),
    case("reference-complete", doc(homepage="https://example.invalid/doc", repository="https://example.invalid/repo",
                                   license="MIT", keywords=["corpus", "tests"],
                                   author={"name": "pkgmgr tests", "email": "tests@example.invalid",
                                           "url": "https://example.invalid"},
                                   commands=["./extra/deploy.md"], agents="./extra-agents/",
                                   hooks="./config/hooks.json", mcpServers="./mcp-config.json"),
         f"{REF} (a complete manifest)",
         {"extra/deploy.md": "---\ndescription: deploy\n---\nDeploy.\n",
          "extra-agents/a.md": "---\nname: a\ndescription: an agent\n---\nAct.\n",
          "config/hooks.json": HOOKS_FILE["hooks/hooks.json"], "mcp-config.json": MCP_FILE[".mcp.json"],
          "scripts/fmt.sh": {"text": "#!/bin/sh\n", "mode": 0o755}, "server": {"text": "#!/bin/sh\n", "mode": 0o755}}),
    case("standard-layout", doc(), f"{COMPONENTS} (default folders)",
         {**COMMAND, **AGENT, **SKILL, **HOOKS_FILE, **MCP_FILE, "scripts/fmt.sh": {"text": "#!/bin/sh\n", "mode": 0o755},
          "server": {"text": "#!/bin/sh\n", "mode": 0o755}}),
    case("no-manifest", None, f"{REF} (the manifest is optional at load; validate wants one)", COMMAND),
    # --- name ------------------------------------------------------------------------------------
    *[case(f"name-accepted-{i}", doc(name=n), f"{REF} (name)") for i, n in enumerate(NAMES_ACCEPTED)],
    *[case(f"name-refused-{i}", doc(name=n), f"{REF} (name)") for i, n in enumerate(NAMES_REFUSED)],
    *[case(f"name-probe-{i}", doc(name=n), f"{REF} (name)", **NAME_RULES.get(n, {})) for i, n in enumerate(NAMES_PROBED)],
    case("name-missing", doc(name=DROP), f"{REF} (name is required)"),
    case("name-empty", doc(name=""), f"{REF} (name)"),
    case("name-null", doc(name=None), f"{REF} (name)"),
    case("name-number", doc(name=5), f"{REF} (name)"),
    case("name-array", doc(name=["a"]), f"{REF} (name)"),
    # --- version, description, author, metadata ---------------------------------------------------------
    case("version-missing", doc(version=DROP), f"{REF} (version)"),
    case("version-short", doc(version="1.0"), f"{REF} (version)"),
    case("version-v", doc(version="v1.0.0"), f"{REF} (version)"),
    case("version-words", doc(version="latest"), f"{REF} (version)"),
    case("version-prerelease", doc(version="1.0.0-beta.1+b2"), f"{REF} (version)"),
    case("version-empty", doc(version=""), f"{REF} (version)"),
    case("version-number", doc(version=1), f"{REF} (version)"),
    case("version-null", doc(version=None), f"{REF} (version)"),
    case("version-slash", doc(version="1/2"), f"{REF} (version names the cache folder)",
         **stricter("pkgmgr's rule: a version names Claude's cache folder", "cannot name a folder")),
    case("version-dotdot", doc(version=".."), f"{REF} (version names the cache folder)",
         **stricter("pkgmgr's rule: a version names Claude's cache folder", "cannot name a folder")),
    case("description-missing", doc(description=DROP), f"{REF} (description)"),
    case("description-number", doc(description=5), f"{REF} (description)"),
    case("description-empty", doc(description=""), f"{REF} (description)"),
    case("author-missing", doc(author=DROP), f"{REF} (author)"),
    case("author-string", doc(author="pkgmgr tests"), f"{REF} (author is an object)"),
    case("author-empty-object", doc(author={}), f"{REF} (author.name)"),
    case("author-name-empty", doc(author={"name": ""}), f"{REF} (author.name)"),
    case("author-email-only", doc(author={"email": "a@example.invalid"}), f"{REF} (author.name)"),
    case("author-bad-email", doc(author={"name": "A", "email": "not an email"}), f"{REF} (author.email)"),
    case("author-bad-url", doc(author={"name": "A", "url": "not a url"}), f"{REF} (author.url)"),
    case("author-array", doc(author=["A"]), f"{REF} (author)"),
    case("author-null", doc(author=None), f"{REF} (author)"),
    case("author-extra-key", doc(author={"name": "A", "twitter": "@a"}), f"{REF} (author)"),
    case("homepage-not-url", doc(homepage="not a url"), f"{REF} (homepage)"),
    case("homepage-ftp", doc(homepage="ftp://example.invalid"), f"{REF} (homepage)"),
    case("homepage-no-host", doc(homepage="https://"), f"{REF} (homepage)"),
    case("repository-not-url", doc(repository="not a url"), f"{REF} (repository)"),
    case("author-name-space", doc(author={"name": " "}), f"{REF} (author.name)"),
    case("author-name-number", doc(author={"name": 5}), f"{REF} (author.name)"),
    case("author-email-number", doc(author={"name": "A", "email": 5}), f"{REF} (author.email)"),
    case("version-space", doc(version=" "), f"{REF} (version)"),
    case("description-space", doc(description=" "), f"{REF} (description)"),
    case("homepage-number", doc(homepage=5), f"{REF} (homepage)"),
    case("repository-object", doc(repository={"type": "git", "url": "https://example.invalid/r"}), f"{REF} (repository)"),
    case("repository-number", doc(repository=5), f"{REF} (repository)"),
    case("license-not-spdx", doc(license="Some License"), f"{REF} (license)"),
    case("license-number", doc(license=5), f"{REF} (license)"),
    case("keywords-string", doc(keywords="a"), f"{REF} (keywords)"),
    case("keywords-numbers", doc(keywords=[1]), f"{REF} (keywords)"),
    case("unknown-field", doc(somethingElse=1), f"{REF} (unknown keys)"),
    case("schema-key", doc(**{"$schema": "https://example.invalid/schema.json"}), f"{REF} ($schema)"),
    # --- component paths ---------------------------------------------------------------------------
    case("commands-dir", doc(commands="./commands"), PATHS, COMMAND),
    case("commands-file", doc(commands="./commands/hello.md"), PATHS, COMMAND),
    case("commands-array", doc(commands=["./commands/hello.md", "./more/x.md"]), PATHS,
         {**COMMAND, "more/x.md": "---\ndescription: x\n---\nX.\n"}),
    case("commands-no-dot-slash", doc(commands="commands"), f"{PATHS} (./ first)", COMMAND),
    case("commands-missing", doc(commands="./nowhere"), PATHS),
    case("commands-parent", doc(commands="../outside"), f"{PATHS} (containment)", {"../outside/x.md": "x\n"}),
    case("commands-absolute", doc(commands="/tmp"), f"{PATHS} (./ first)"),
    case("commands-dot-slash-parent", doc(commands="./../outside"), f"{PATHS} (containment)",
         {"../outside/x.md": "x\n"}),
    case("commands-empty-array", doc(commands=[]), PATHS),
    case("commands-number", doc(commands=5), PATHS),
    case("commands-object", doc(commands={"hello": {"source": "./commands/hello.md"}}), f"{PATHS} (object form)", COMMAND),
    case("agents-dir", doc(agents="./agents"), PATHS, AGENT),
    case("agents-no-dot-slash", doc(agents="agents"), PATHS, AGENT),
    case("agents-missing", doc(agents="./nowhere"), PATHS),
    case("skills-dir", doc(skills="./skills"), PATHS, SKILL),
    case("skills-no-dot-slash", doc(skills="skills"), PATHS, SKILL),
    case("skills-missing", doc(skills="./nowhere"), PATHS),
    case("output-styles-dir", doc(outputStyles="./styles"), PATHS, {"styles/terse.md": "---\nname: terse\n---\nBe terse.\n"}),
    case("output-styles-missing", doc(outputStyles="./nowhere"), PATHS),
    # --- hooks -------------------------------------------------------------------------------------
    *[case(f"hooks-event-{event}", doc(hooks={event: [{"hooks": [HOOK]}]}), HOOKS_REF,
           {"scripts/fmt.sh": {"text": "#!/bin/sh\n", "mode": 0o755}}) for event in HOOK_EVENTS],
    case("hooks-matcher", doc(hooks={"PreToolUse": [{"matcher": "Bash", "hooks": [HOOK]}]}), HOOKS_REF),
    case("hooks-empty", doc(hooks={}), HOOKS_REF),
    case("hooks-event-empty", doc(hooks={"Stop": []}), HOOKS_REF),
    case("hooks-matcher-number", doc(hooks={"Stop": [{"matcher": 5, "hooks": [{"type": "command", "command": "x"}]}]}),
         HOOKS_REF),
    case("hooks-quoted-root", doc(hooks={"Stop": [{"hooks": [{"type": "command",
                                                             "command": '"${CLAUDE_PLUGIN_ROOT}/s.sh"'}]}]}),
         HOOKS_REF),
    case("hooks-unknown-event", doc(hooks={"NotAnEvent": [{"hooks": [HOOK]}]}), HOOKS_REF),
    case("hooks-lowercase-event", doc(hooks={"pretooluse": [{"hooks": [HOOK]}]}), HOOKS_REF),
    case("hooks-event-string", doc(hooks={"PreToolUse": "x"}), HOOKS_REF),
    case("hooks-bad-type", doc(hooks={"PreToolUse": [{"hooks": [{"type": "bogus", "command": "x"}]}]}), HOOKS_REF),
    case("hooks-no-command", doc(hooks={"PreToolUse": [{"hooks": [{"type": "command"}]}]}), HOOKS_REF),
    case("hooks-prompt-type", doc(hooks={"Stop": [{"hooks": [{"type": "prompt", "prompt": "check"}]}]}), HOOKS_REF),
    case("hooks-wrapped", doc(hooks={"hooks": {"PreToolUse": [{"hooks": [HOOK]}]}}), HOOKS_REF),
    case("hooks-file", doc(hooks="./config/hooks.json"), PATHS, {"config/hooks.json": HOOKS_FILE["hooks/hooks.json"]}),
    case("hooks-file-missing", doc(hooks="./config/none.json"), PATHS),
    case("hooks-file-no-dot-slash", doc(hooks="config/hooks.json"), PATHS,
         {"config/hooks.json": HOOKS_FILE["hooks/hooks.json"]}),
    case("hooks-file-invalid-json", doc(hooks="./config/hooks.json"), PATHS, {"config/hooks.json": "{nope"}),
    case("hooks-array-of-files", doc(hooks=["./a.json", "./b.json"]), PATHS,
         {"a.json": HOOKS_FILE["hooks/hooks.json"], "b.json": HOOKS_FILE["hooks/hooks.json"]}),
    case("hooks-number", doc(hooks=5), PATHS),
    case("hooks-default-file-invalid", doc(), f"{COMPONENTS} (hooks/hooks.json)", {"hooks/hooks.json": "{nope"}),
    case("hooks-default-file-unknown-event", doc(), f"{COMPONENTS} (hooks/hooks.json)",
         {"hooks/hooks.json": json.dumps({"hooks": {"NotAnEvent": [{"hooks": [HOOK]}]}})}),
    # --- MCP and LSP servers, user configuration ---------------------------------------------------------
    case("mcp-inline", doc(mcpServers={"db": {"command": "node", "args": ["s.js"]}}), REF),
    case("mcp-inline-http", doc(mcpServers={"api": {"type": "http", "url": "https://example.invalid/mcp"}}), REF),
    case("mcp-file", doc(mcpServers="./mcp-config.json"), PATHS, {"mcp-config.json": MCP_FILE[".mcp.json"]}),
    case("mcp-file-missing", doc(mcpServers="./none.json"), PATHS),
    case("mcp-file-no-dot-slash", doc(mcpServers="mcp-config.json"), PATHS, {"mcp-config.json": MCP_FILE[".mcp.json"]}),
    case("mcp-server-string", doc(mcpServers={"db": "node"}), REF),
    case("mcp-server-no-command", doc(mcpServers={"db": {"args": []}}), REF),
    case("mcp-array", doc(mcpServers=[{"command": "node"}]), REF),
    case("mcp-empty", doc(mcpServers={}), REF),
    case("mcp-command-empty", doc(mcpServers={"db": {"command": ""}}), REF),
    case("mcp-url-without-type", doc(mcpServers={"api": {"url": "https://example.invalid/mcp"}}), REF),
    case("mcp-args-string", doc(mcpServers={"db": {"command": "node", "args": "s.js"}}), REF),
    case("mcp-sse", doc(mcpServers={"api": {"type": "sse", "url": "https://example.invalid/sse"}}), REF),
    case("mcp-number", doc(mcpServers=5), REF),
    case("mcp-default-file-invalid", doc(), f"{COMPONENTS} (.mcp.json)", {".mcp.json": "{nope"}),
    case("lsp-inline", doc(lspServers={"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}}}), REF),
    case("lsp-number", doc(lspServers=5), REF),
    case("user-config", doc(userConfig={"api_key": {"type": "string", "title": "API key", "description": "the key",
                                                    "sensitive": True}}), f"{REF} (userConfig)"),
    case("user-config-bad-type", doc(userConfig={"k": {"type": "bogus", "title": "K", "description": "d"}}),
         f"{REF} (userConfig)"),
    case("user-config-string", doc(userConfig="x"), f"{REF} (userConfig)"),
    case("dependencies", doc(dependencies=["other-plugin"]), f"{REF} (dependencies)"),
    case("dependencies-number", doc(dependencies=5), f"{REF} (dependencies)"),
    case("dependencies-item-number", doc(dependencies=[5]), f"{REF} (dependencies)"),
    case("dependencies-empty", doc(dependencies=[]), f"{REF} (dependencies)"),
    case("skills-list", doc(skills=["./skills"]), PATHS, SKILL),
    case("agents-list", doc(agents=["./agents/reviewer.md"]), PATHS, AGENT),
    case("agents-link-outside", doc(agents=["./agents/a.md"]), f"{PATHS} (a link leaving the plugin)",
         {"../elsewhere/a.md": "---\nname: a\ndescription: d\n---\nx\n",
          "agents/a.md": {"symlink": "../../elsewhere/a.md"}},
         **stricter("pkgmgr's rule: a component resolves inside the plugin once links are followed",
                    "resolves outside")),
    # --- component files -----------------------------------------------------------------------------------
    case("command-no-front-matter", doc(), COMPONENTS, {"commands/x.md": "Just text.\n"}),
    case("command-bad-front-matter", doc(), COMPONENTS, {"commands/x.md": "---\n: : :\n---\nx\n"}),
    case("agent-no-front-matter", doc(), COMPONENTS, {"agents/a.md": "Just text.\n"}),
    case("agent-missing-description", doc(), COMPONENTS, {"agents/a.md": "---\nname: a\n---\nx\n"}),
    case("skill-no-front-matter", doc(), COMPONENTS, {"skills/s/SKILL.md": "Just text.\n"}),
    case("skill-name-mismatch", doc(), COMPONENTS, {"skills/s/SKILL.md": "---\nname: other\ndescription: d\n---\nx\n"}),
    case("manifest-inside-claude-plugin-only", doc(), f"{COMPONENTS} (components at the root)",
         {".claude-plugin/commands/x.md": "---\ndescription: x\n---\nx\n"}),
    case("executable-kept", doc(), COMPONENTS, {"bin/tool": {"text": "#!/bin/sh\n", "mode": 0o755}}),
    # --- the document itself -------------------------------------------------------------------------------
    case("doc-empty", "", REF),
    case("doc-whitespace", " \n", REF),
    case("doc-null", "null", REF),
    case("doc-array", "[]", REF),
    case("doc-string", '"corpus-plugin"', REF),
    case("doc-object-empty", "{}", REF),
    case("doc-trailing-comma", '{"name":"corpus-plugin",}', REF),
    case("doc-comment", '// c\n{"name":"corpus-plugin"}', REF),
    case("doc-trailing-data", '{"name":"corpus-plugin"} {}', REF),
    case("doc-nan", '{"name":"corpus-plugin","x":NaN}', REF),
    case("doc-huge-number", '{"name":"corpus-plugin","x":1e400}', REF,
         **stricter("pkgmgr's rule: numbers are finite", "out of range")),
    case("doc-crlf", '{\r\n"name":"corpus-plugin"\r\n}\r\n', REF),
    case("doc-bom", raw(b"\xef\xbb\xbf" + doc().encode()), REF),
    case("doc-utf16-le-bom", raw(b"\xff\xfe" + doc().encode("utf-16-le")), REF),
    case("doc-latin1-description", raw(doc(description="caf_").replace("caf_", "caf\xe9").encode("latin-1")), REF,
         **stricter("pkgmgr's rule: documents are UTF-8", "UTF-8")),
    case("doc-lone-surrogate-description", doc(description="x").replace('"x"', '"\\ud800"'), REF,
         **stricter("pkgmgr's rule: text is valid Unicode", "lone surrogate")),
    case("doc-nul-in-description", doc(description="a\u0000b"), REF),
    case("doc-duplicate-name-last-valid", '{"name":"a b","name":"corpus-plugin","version":"1.0.0"}', REF,
         **stricter("pkgmgr's rule: no duplicate keys (readers disagree on which one wins)", "duplicate key")),
    case("doc-duplicate-name-last-invalid", '{"name":"corpus-plugin","name":"a b","version":"1.0.0"}', REF),
    case("doc-nested-60", '{"name":"corpus-plugin","x":' + "[" * 60 + "]" * 60 + "}", REF),
    case("doc-nested-100", '{"name":"corpus-plugin","x":' + "[" * 100 + "]" * 100 + "}", REF,
         **stricter("pkgmgr's rule: JSON nested at most 64 levels", "nested deeper")),
    case("doc-nested-100000", '{"name":"corpus-plugin","x":' + "[" * 100000 + "]" * 100000 + "}", REF,
         **stricter("pkgmgr's rule: JSON nested at most 64 levels", "nested deeper")),
    case("doc-large-900k", doc(description="d" * (900 * 1024)), REF),
    case("doc-large-2m", doc(description="d" * (2 * MIB)), REF,
         **stricter("pkgmgr's rule: plugin.json is at most 1 MiB", "larger than 1 MiB")),
    case("doc-many-values", doc(x=[0] * 250_000), REF,
         **stricter("pkgmgr's rule: at most 200000 values in a document", "more than")),
    case("doc-unicode-description", doc(description="日本語 ✓ 𝄞"), REF),
    case("doc-key-case", '{"Name":"corpus-plugin"}', REF),
    case("manifest-is-directory", None, REF, {f"{MANIFEST}/x": "dir\n"}),
    case("manifest-at-root", None, f"{REF} (.claude-plugin/ holds it)", {"plugin.json": doc()}),
]
