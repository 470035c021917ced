"""Gemini CLI's conformance corpus: `gemini-extension.json` with every field mutated, the document
itself mutated (bytes, encodings, duplicate keys, nesting, sizes, Unicode), and inputs rebuilt
from the shapes of Gemini CLI's own examples (`packages/cli/src/commands/extensions/examples/`)
and of its extensions reference (`docs/extensions/reference.md`), with our own values.

A case: `id`, `files` (relative path -> text, or {"base64"|"text", "mode"}), `from` (what it
mutates or rebuilds) and, where pkgmgr refuses what Gemini CLI takes, `pkgmgr_rule` (why) and
`message` (a fragment of pkgmgr's message). Gemini CLI's verdicts are not written here: they are
recorded from the real CLI into `verdicts.json` (`python -m tests.hosts.gemini.record`).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from tests.hosts import conformance
from tests.hosts.conformance import DROP, raw, stricter

MANIFEST = "gemini-extension.json"
MIB = 1024 * 1024


def doc(**fields: Any) -> str:
    """A manifest with a valid name and version unless a field overrides them (`DROP` removes one)."""
    return conformance.document({"name": "corpus-ext", "version": "1.0.0"}, fields)


case = partial(conformance.case, MANIFEST)

LOAD = "extension-manager.ts loadExtensionConfig"
NAME = "extension-manager.ts validateName"
VALIDATE = "commands/extensions/validate.ts validateExtension"
INSTALL = "extension-manager.ts installOrUpdateExtension"
BUILD = "extension-manager.ts _buildExtension"
CONSENT = "extensions/consent.ts extensionConsentString"
EXAMPLES = "packages/cli/src/commands/extensions/examples"
HOOKS = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "node ${extensionPath}/hook.js"}]}]}}

NAMES_ACCEPTED = ["a", "A", "0", "a-b", "-", "--", "-a", "a-", "excludeTools", "x" * 64, "x" * 255]
NAMES_REFUSED = ["a b", "a_b", "a.b", "a/b", "..", ".", "é", "ａ", "a\n", "\na", "a\u0000", " a", "a ", "",
                 "a\tb", "${/}", "${unknown}"]

CASES: list[dict[str, Any]] = [
    # --- the minimal manifest and the hosts' own examples (shapes rebuilt, our values) ---------------
    case("minimal", doc(), LOAD),
    case("example-custom-commands", doc(name="custom-commands"), f"{EXAMPLES}/custom-commands",
         {"commands/fs/grep-code.toml": 'description = "grep"\nprompt = "Search for {{args}}"\n'}),
    case("example-exclude-tools", doc(name="excludeTools", excludeTools=["run_shell_command(rm -rf)"]),
         f"{EXAMPLES}/exclude-tools"),
    case("example-hooks", doc(name="hooks-example"), f"{EXAMPLES}/hooks",
         {"hooks/hooks.json": json.dumps(HOOKS), "hook.js": "console.log('start')\n"}),
    case("example-mcp-server", doc(name="mcp-server-example", mcpServers={
        "nodeServer": {"command": "node", "args": ["${extensionPath}${/}server.js"], "cwd": "${extensionPath}"}}),
         f"{EXAMPLES}/mcp-server", {"server.js": "// an MCP server\n"}),
    case("example-policies", doc(name="policy-example", description="policies"), f"{EXAMPLES}/policies",
         {"policies/policies.toml": '[[rule]]\ntoolName = "run_shell_command"\ndecision = "ask_user"\npriority = 10\n'}),
    case("example-skills", doc(name="skills-example"), f"{EXAMPLES}/skills",
         {"skills/greeter/SKILL.md": "---\nname: greeter\ndescription: Greets.\n---\nSay hello.\n"}),
    case("example-themes", doc(name="themes-example", themes=[{"name": "green", "type": "custom",
                                                               "background": {"primary": "#1a362a"},
                                                               "text": {"primary": "#a6e3a1"}}]),
         f"{EXAMPLES}/themes-example"),
    case("docs-reference-manifest", doc(name="my-extension", description="an extension",
                                        mcpServers={"my-server": {"command": "node",
                                                                  "args": ["${extensionPath}/server.js"],
                                                                  "cwd": "${extensionPath}"}},
                                        contextFileName="GEMINI.md", excludeTools=["run_shell_command"],
                                        migratedTo="https://github.com/o/r", plan={"directory": ".gemini/plans"}),
         "docs/extensions/reference.md (gemini-extension.json)", {"GEMINI.md": "# context\n"}),
    # --- name ------------------------------------------------------------------------------------
    *[case(f"name-accepted-{i}", doc(name=n), NAME) for i, n in enumerate(NAMES_ACCEPTED)],
    *[case(f"name-refused-{i}", doc(name=n), NAME) for i, n in enumerate(NAMES_REFUSED)],
    case("name-missing", doc(name=DROP), LOAD),
    case("name-null", doc(name=None), LOAD),
    case("name-zero", doc(name=0), LOAD),
    case("name-false", doc(name=False), LOAD),
    case("name-number", doc(name=123), f"{NAME} (a number passes validate), {INSTALL} (path.join fails)",
         message="must be a string"),
    case("name-true", doc(name=True), f"{NAME}, {INSTALL}", message="must be a string"),
    case("name-array", doc(name=["ab"]), f"{NAME} (String(['ab']) is 'ab'), {INSTALL}", message="must be a string"),
    case("name-empty-array", doc(name=[]), NAME),
    case("name-object", doc(name={}), NAME),
    case("name-hydrated-extension-path", doc(name="${extensionPath}"), f"{LOAD} (recursivelyHydrateStrings first)"),
    case("name-hydrated-separator", doc(name="a${pathSeparator}b"), f"{LOAD} (recursivelyHydrateStrings first)"),
    case("name-too-long-for-a-folder", doc(name="x" * 256), f"{INSTALL} (mkdir of the name)", message="255"),
    case("name-unicode-escape-ascii", '{"name":"\\u0061bc","version":"1.0.0"}', NAME),
    # --- version ---------------------------------------------------------------------------------
    case("version-missing", doc(version=DROP), LOAD),
    case("version-empty", doc(version=""), LOAD),
    case("version-null", doc(version=None), LOAD),
    case("version-zero", doc(version=0), LOAD),
    case("version-number", doc(version=1), f"{LOAD} (truthy)",
         **stricter("pkgmgr's rule: the version must be a string", "must be a string")),
    case("version-true", doc(version=True), f"{LOAD} (truthy)",
         **stricter("pkgmgr's rule: the version must be a string", "must be a string")),
    case("version-array", doc(version=["1.0.0"]), f"{LOAD} (truthy)",
         **stricter("pkgmgr's rule: the version must be a string", "must be a string")),
    case("version-object", doc(version={"v": 1}), f"{LOAD} (truthy)",
         **stricter("pkgmgr's rule: the version must be a string", "must be a string")),
    case("version-not-semver", doc(version="1.0"), f"{VALIDATE} (a warning)"),
    case("version-v-prefix", doc(version="v1.0.0"), f"{VALIDATE} (semver.valid)"),
    case("version-prerelease", doc(version="1.0.0-beta.1+build"), VALIDATE),
    case("version-spaces", doc(version=" 1.0.0 "), VALIDATE),
    case("version-words", doc(version="latest"), f"{VALIDATE} (a warning)"),
    case("version-control", doc(version="1.0.0\n"), f"{VALIDATE} (a warning)",
         **stricter("pkgmgr's rule: a version holds no control characters (it names a cache folder and shows "
                    "in tables)", "control characters")),
    # --- contextFileName -------------------------------------------------------------------------
    case("context-default-present", doc(), BUILD, {"GEMINI.md": "# ctx\n"}),
    case("context-named-present", doc(contextFileName="CTX.md"), VALIDATE, {"CTX.md": "# ctx\n"}),
    case("context-named-missing", doc(contextFileName="CTX.md"), VALIDATE),
    case("context-array-present", doc(contextFileName=["A.md", "docs/B.md"]), VALIDATE,
         {"A.md": "a\n", "docs/B.md": "b\n"}),
    case("context-array-one-missing", doc(contextFileName=["A.md", "B.md"]), VALIDATE, {"A.md": "a\n"}),
    case("context-array-empty", doc(contextFileName=[]), VALIDATE),
    case("context-empty-string", doc(contextFileName=""), f"{VALIDATE} (falsy: the default)"),
    case("context-dotdot-in-name", doc(contextFileName="a..b.md"), f"{VALIDATE} validateContextFilePath ('..' anywhere)",
         {"a..b.md": "x\n"}),
    case("context-dotdot-encoded", doc(contextFileName="%2e%2e/x.md"), f"{VALIDATE} validateContextFilePath "
         "(decodeURIComponent)", {"%2e%2e/x.md": "x\n"}),
    case("context-blank", doc(contextFileName="  "), f"{VALIDATE} validateContextFilePath (trim)"),
    case("context-nul", doc(contextFileName="a\u0000.md"), f"{VALIDATE} validateContextFilePath"),
    case("context-windows-absolute", doc(contextFileName="C:\\x.md"), f"{VALIDATE} validateContextFilePath "
         "(path.win32.isAbsolute)", {"C:\\x.md": "x\n"}),
    case("context-dot-slash", doc(contextFileName="./CTX.md"), f"{VALIDATE} validateContextFilePath",
         {"CTX.md": "x\n"}),
    case("context-outside", doc(contextFileName="../outside.md"), f"{BUILD} (isSubpath)",
         {"../outside.md": "outside\n"}),
    case("context-absolute", doc(contextFileName="/etc/hostname"), f"{VALIDATE} validateContextFilePath",
         message="absolute path"),
    case("context-number", doc(contextFileName=5), VALIDATE),
    case("context-array-of-number", doc(contextFileName=[5]), VALIDATE),
    case("context-object", doc(contextFileName={"a": "A.md"}), VALIDATE),
    case("context-directory", doc(contextFileName="docs"), f"{VALIDATE} (existsSync)", {"docs/x.md": "x\n"},
         **stricter("pkgmgr's rule: a context file is a file", "not a file")),
    # --- mcpServers ------------------------------------------------------------------------------
    case("mcp-command", doc(mcpServers={"s": {"command": "node", "args": ["x.js"]}}), CONSENT),
    case("mcp-http", doc(mcpServers={"s": {"httpUrl": "https://example.invalid/mcp"}}), CONSENT),
    case("mcp-trust-dropped", doc(mcpServers={"s": {"command": "node", "trust": True}}), f"{BUILD} filterMcpConfig"),
    case("mcp-empty", doc(mcpServers={}), CONSENT),
    case("mcp-null", doc(mcpServers=None), CONSENT),
    case("mcp-server-null", doc(mcpServers={"s": None}), f"{CONSENT} (mcpServer.command)"),
    case("mcp-server-string", doc(mcpServers={"s": "node"}), CONSENT,
         **stricter("pkgmgr's rule: an MCP server is an object", "must be an object")),
    case("mcp-args-string", doc(mcpServers={"s": {"command": "node", "args": "x.js"}}), f"{CONSENT} (args.join)"),
    case("mcp-args-numbers", doc(mcpServers={"s": {"command": "node", "args": [1, 2]}}), CONSENT,
         **stricter("pkgmgr's rule: MCP server args are strings", "must be a string")),
    case("mcp-string", doc(mcpServers="node"), CONSENT,
         **stricter("pkgmgr's rule: mcpServers is an object of servers", "must be an object")),
    case("mcp-array", doc(mcpServers=[{"command": "node"}]), CONSENT,
         **stricter("pkgmgr's rule: mcpServers is an object of servers", "must be an object")),
    case("mcp-number", doc(mcpServers=5), CONSENT,
         **stricter("pkgmgr's rule: mcpServers is an object of servers", "must be an object")),
    case("mcp-command-number", doc(mcpServers={"s": {"command": 5}}), CONSENT,
         **stricter("pkgmgr's rule: an MCP server's command is a string", "must be a string")),
    case("mcp-hydrated", doc(mcpServers={"s": {"command": "${extensionPath}${/}run", "env": {"K": "${workspacePath}"}}}),
         f"{LOAD} recursivelyHydrateStrings"),
    # --- excludeTools ----------------------------------------------------------------------------
    case("exclude-tools", doc(excludeTools=["run_shell_command"]), CONSENT),
    case("exclude-tools-string", doc(excludeTools="run_shell_command"), CONSENT,
         **stricter("pkgmgr's rule: excludeTools is a list of strings", "must be a list")),
    case("exclude-tools-number-item", doc(excludeTools=[5]), CONSENT,
         **stricter("pkgmgr's rule: excludeTools is a list of strings", "must be a string")),
    case("exclude-tools-null", doc(excludeTools=None), CONSENT),
    # --- settings, themes, plan, migratedTo, unknown fields ----------------------------------------
    case("settings", doc(settings=[{"name": "Key", "description": "API key", "envVar": "CORPUS_KEY"}]),
         "extensions/extensionSettings.ts"),
    case("settings-sensitive", doc(settings=[{"name": "Key", "description": "d", "envVar": "K", "sensitive": True}]),
         "extensions/extensionSettings.ts"),
    case("settings-string", doc(settings="x"), "extensions/extensionSettings.ts",
         **stricter("pkgmgr's rule: settings is a list of objects", "must be a list")),
    case("settings-item-null", doc(settings=[None]), f"{INSTALL} getMissingSettings (fails after creating the "
         "folder, which stays)", message="must be an object"),
    case("settings-missing-env-var", doc(settings=[{"name": "Key", "description": "d"}]),
         "extensions/extensionSettings.ts",
         **stricter("pkgmgr's rule: a setting names its envVar", "envVar")),
    case("themes-string", doc(themes="x"), "ui/themes/theme-manager.ts registerExtensionThemes",
         **stricter("pkgmgr's rule: themes is a list of objects", "must be a list")),
    case("themes-empty", doc(themes=[]), "ui/themes/theme-manager.ts"),
    case("plan-string", doc(plan="x"), "extension.ts ExtensionConfig.plan",
         **stricter("pkgmgr's rule: plan is an object", "must be an object")),
    case("migrated-to", doc(migratedTo="https://github.com/o/r"), "extension.ts ExtensionConfig.migratedTo"),
    case("migrated-to-number", doc(migratedTo=5), "extension.ts ExtensionConfig.migratedTo",
         **stricter("pkgmgr's rule: migratedTo is a string", "must be a string")),
    case("description", doc(description="does things"), "docs/extensions/reference.md (description)"),
    case("description-number", doc(description=5), "docs/extensions/reference.md (description)",
         **stricter("pkgmgr's rule: description is a string", "must be a string")),
    case("unknown-field", doc(somethingElse={"a": 1}), f"{LOAD} (unknown keys are kept and ignored)"),
    case("proto-key", '{"name":"corpus-ext","version":"1.0.0","__proto__":{"x":1}}',
         "extensions/variables.ts UNMARSHALL_KEY_IGNORE_LIST"),
    # --- directories the loader reads ----------------------------------------------------------------
    case("hooks-invalid-json", doc(), f"{BUILD} loadExtensionHooks (a warning)", {"hooks/hooks.json": "{nope"}),
    case("hooks-not-object", doc(), f"{BUILD} loadExtensionHooks (a warning)", {"hooks/hooks.json": '{"hooks":[]}'}),
    case("skills-bad-front-matter", doc(), f"{INSTALL} loadSkillsFromDir",
         {"skills/s/SKILL.md": "no front matter\n"}),
    case("agents-bad-file", doc(), f"{BUILD} loadAgentsFromDirectory (errors logged)", {"agents/a.md": "---\n: :\n"}),
    case("commands-invalid-toml", doc(), "commands are read by the session, not by install",
         {"commands/c.toml": "not = = toml\n"}),
    case("policies-invalid-toml", doc(), f"{BUILD} loadExtensionPolicies (errors logged)",
         {"policies/p.toml": "[[rule\n"}),
    case("install-metadata-shipped", doc(), f"{INSTALL} (the source's own record is overwritten)",
         {".gemini-extension-install.json": '{"source":"elsewhere","type":"link"}'}),
    case("executable-file-kept", doc(), "extension-manager.ts copyExtension",
         {"run.sh": {"text": "#!/bin/sh\n", "mode": 0o755}}),
    # --- the document itself ---------------------------------------------------------------------
    case("doc-empty", "", LOAD),
    case("doc-whitespace", " \n\t", LOAD),
    case("doc-null", "null", LOAD),
    case("doc-array", "[]", LOAD),
    case("doc-string", '"corpus-ext"', LOAD),
    case("doc-number", "1", LOAD),
    case("doc-true", "true", LOAD),
    case("doc-object-empty", "{}", LOAD),
    case("doc-trailing-comma", '{"name":"corpus-ext","version":"1.0.0",}', LOAD),
    case("doc-comment", '// c\n{"name":"corpus-ext","version":"1.0.0"}', LOAD),
    case("doc-trailing-data", '{"name":"corpus-ext","version":"1.0.0"} {}', LOAD),
    case("doc-single-quotes", "{'name':'corpus-ext','version':'1.0.0'}", LOAD),
    case("doc-nan", '{"name":"corpus-ext","version":"1.0.0","x":NaN}', LOAD),
    case("doc-huge-number", '{"name":"corpus-ext","version":"1.0.0","x":1e400}', f"{LOAD} (JSON.parse: Infinity)",
         **stricter("pkgmgr's rule: numbers are finite", "out of range")),
    case("doc-crlf", '{\r\n"name":"corpus-ext",\r\n"version":"1.0.0"\r\n}\r\n', LOAD),
    case("doc-bom", raw(b"\xef\xbb\xbf" + doc().encode()), f"{LOAD} (readFile utf-8 keeps U+FEFF)"),
    case("doc-utf16-le-bom", raw(b"\xff\xfe" + doc().encode("utf-16-le")), LOAD),
    case("doc-utf16-be", raw(doc().encode("utf-16-be")), LOAD),
    case("doc-latin1-description", raw(b'{"name":"corpus-ext","version":"1.0.0","description":"caf\xe9"}'),
         f"{LOAD} (invalid UTF-8 becomes U+FFFD)",
         **stricter("pkgmgr's rule: documents are UTF-8", "UTF-8")),
    case("doc-latin1-name", raw(b'{"name":"corpus-ext\xe9","version":"1.0.0"}'), NAME),
    case("doc-lone-surrogate-description", '{"name":"corpus-ext","version":"1.0.0","description":"\\ud800"}',
         f"{LOAD} (JSON.parse keeps a lone surrogate)",
         **stricter("pkgmgr's rule: text is valid Unicode", "lone surrogate")),
    case("doc-nul-in-description", '{"name":"corpus-ext","version":"1.0.0","description":"a\\u0000b"}', LOAD),
    case("doc-duplicate-name-last-valid", '{"name":"a b","name":"corpus-ext","version":"1.0.0"}',
         f"{LOAD} (JSON.parse: the last duplicate wins)",
         **stricter("pkgmgr's rule: no duplicate keys (hosts disagree on which one wins)", "duplicate key")),
    case("doc-duplicate-name-last-invalid", '{"name":"corpus-ext","name":"a b","version":"1.0.0"}', LOAD,
         message="duplicate key"),
    case("doc-duplicate-nested", doc(mcpServers={}).replace('"mcpServers": {}',
                                                            '"mcpServers": {"s": {"command": "a", "command": "b"}}'),
         LOAD, **stricter("pkgmgr's rule: no duplicate keys", "duplicate key")),
    case("doc-nested-60", '{"name":"corpus-ext","version":"1.0.0","x":' + "[" * 60 + "]" * 60 + "}", LOAD),
    case("doc-nested-100", '{"name":"corpus-ext","version":"1.0.0","x":' + "[" * 100 + "]" * 100 + "}", LOAD,
         **stricter("pkgmgr's rule: JSON nested at most 64 levels", "nested deeper")),
    case("doc-nested-100000", '{"name":"corpus-ext","version":"1.0.0","x":' + "[" * 100000 + "]" * 100000 + "}",
         f"{LOAD} (JSON.parse's own limit)"),
    case("doc-large-900k", doc(description="d" * (900 * 1024)), LOAD),
    case("doc-large-2m", doc(description="d" * (2 * MIB)), LOAD,
         **stricter("pkgmgr's rule: a manifest is at most 1 MiB", "larger than 1 MiB")),
    case("doc-many-values", doc(x=[0] * 250_000), LOAD,
         **stricter("pkgmgr's rule: at most 200000 values in a document", "more than")),
    case("doc-unicode-description", doc(description="日本語 ✓ 𝄞"), LOAD),
    case("doc-escaped-slash-name", '{"name":"corpus\\/ext","version":"1.0.0"}', NAME),
    case("doc-key-case", '{"Name":"corpus-ext","Version":"1.0.0"}', f"{LOAD} (keys are case-sensitive)"),
    case("manifest-missing", {"text": ""}, LOAD) | {"files": {"README.md": "no manifest\n"}},
    case("manifest-is-directory", {"text": ""}, LOAD) | {"files": {f"{MANIFEST}/x": "dir\n"}},
]

