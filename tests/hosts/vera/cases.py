"""Vera's conformance corpus: inputs built from Vera's own tests (test/extensions/manifest.test.ts)
and loader code (src/extensions/manifest.ts, contributions.ts), each with Vera's verdict and the
function that decides it (nashaad/vera; see docs/hosts.md).
"""

import json

MANIFEST_TS = "src/extensions/manifest.ts"
CONTRIB_TS = "src/extensions/contributions.ts"
ENTRY = {"extension.ts": "export default function activate() {}\n"}


def valid(**patch: object) -> dict[str, object]:
    """test/extensions/manifest.test.ts validManifest."""
    manifest: dict[str, object] = {"id": "acme.context-tools", "version": "1.0.0", "sdk": "1",
                                   "entrypoint": "./extension.ts", "capabilities": ["commands.register"]}
    manifest.update(patch)
    return manifest


def files(manifest: object, extra: dict[str, object] | None = None) -> dict[str, object]:
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    return {"vera.extension.json": text, **ENTRY, **(extra or {})}


def refused(case_id: str, manifest: object, message: str, decided_by: str, source: str,
            code: str = "invalid_manifest", extra: dict[str, object] | None = None) -> dict[str, object]:
    return {"id": case_id, "files": files(manifest, extra), "verdict": "refuse", "code": code, "message": message,
            "decided_by": decided_by, "from": source}


PARSE = f"{MANIFEST_TS} parseExtensionManifest"
EXPLICIT = "manifest.test.ts manifest identity, SDK, entrypoint, and capabilities are explicit"

CASES = [
    {"id": "valid", "files": files(valid(capabilities=["commands.register", "models.complete"])),
     "verdict": "load", "name": "acme.context-tools", "version": "1.0.0",
     "capabilities": ["commands.register", "models.complete"],
     "decided_by": PARSE, "from": "manifest.test.ts an extension manifest declares one runtime entrypoint"},
    refused("empty-object", {}, "id", PARSE, EXPLICIT),
    refused("id-with-spaces", valid(id="Context Tools"), "id", PARSE, EXPLICIT),
    refused("version-empty", valid(version=""), "version", PARSE, EXPLICIT),
    refused("sdk-2", valid(sdk="2"), "sdk", PARSE, EXPLICIT),
    refused("sdk-number", valid(sdk=1), "sdk", PARSE, "manifest.ts (sdk must be the string \"1\")"),
    refused("entrypoint-absolute", valid(entrypoint="/tmp/extension.ts"), "entrypoint", PARSE, EXPLICIT),
    refused("capabilities-string", valid(capabilities="commands.register"), "capabilities", PARSE, EXPLICIT),
    refused("capability-empty", valid(capabilities=["commands.register", ""]), "capabilities", PARSE, EXPLICIT),
    refused("capability-duplicate", valid(capabilities=["commands.register", "commands.register"]),
            "unique", PARSE, EXPLICIT),
    refused("capability-duplicate-after-trim", valid(capabilities=["a.b", " a.b "]), "unique",
            f"{MANIFEST_TS} parseCapabilities (trimmed, then unique)", "manifest.ts parseCapabilities"),
    refused("capability-not-string", valid(capabilities=[1]), "capabilities",
            f"{MANIFEST_TS} parseCapabilities", "manifest.ts parseCapabilities"),
    refused("entrypoint-leaves", valid(entrypoint="../outside.ts"), "leaves its directory",
            f"{MANIFEST_TS} realEntrypoint", "manifest.test.ts an entrypoint cannot leave through a relative path",
            code="path_escapes_root"),
    refused("entrypoint-missing", valid(entrypoint="./missing.ts"), "unavailable",
            f"{MANIFEST_TS} realFileWithin", "manifest.ts realFileWithin"),
    refused("entrypoint-directory", valid(entrypoint="./lib"), "must be a file",
            f"{MANIFEST_TS} realFileWithin (isFile)", "manifest.ts realFileWithin", code="path_escapes_root",
            extra={"lib/index.ts": "export {}\n"}),
    {"id": "entrypoint-two-dots-inside", "files": files(valid(entrypoint="./..hidden/extension.ts"),
                                                         {"..hidden/extension.ts": "export {}\n"}),
     "verdict": "load", "name": "acme.context-tools",
     "decided_by": f"{MANIFEST_TS} isWithin", "from": "manifest.test.ts a name beginning with two dots is contained"},
    {"id": "version-trimmed", "files": files(valid(version=" 2.0.0 ")), "verdict": "load",
     "name": "acme.context-tools", "version": "2.0.0", "decided_by": PARSE, "from": "manifest.ts (version.trim())"},
    {"id": "id-without-dots", "files": files(valid(id="acme")), "verdict": "load", "name": "acme",
     "decided_by": f"{MANIFEST_TS} isExtensionId", "from": "manifest.ts isExtensionId"},
    refused("id-upper-case", valid(id="Acme.tools"), "id", f"{MANIFEST_TS} isExtensionId", "manifest.ts isExtensionId"),
    refused("id-trailing-newline", valid(id="acme\n"), "id", f"{MANIFEST_TS} isExtensionId (anchored regex)",
            "manifest.ts isExtensionId"),
    refused("not-json", "{", "Invalid JSON", f"{MANIFEST_TS} readJson", "manifest.ts readJson"),
    refused("top-level-array", "[]", "object", PARSE, "manifest.ts isPlainObject"),
    # --- contributions.ts parseExtensionContributions -------------------------------------------------
    refused("contributes-null", valid(contributes=None), "contributes must be an object",
            f"{CONTRIB_TS} parseExtensionContributions", "contributions.ts"),
    refused("contributes-unknown-kind", valid(contributes={"panels": []}), "unknown contribution kind",
            f"{CONTRIB_TS} parseExtensionContributions", "contributions.ts"),
    refused("watches-not-array", valid(contributes={"watches": {}}), "must be an array",
            f"{CONTRIB_TS} parseWatchContributions", "contributions.ts"),
    refused("watch-without-family", valid(contributes={"watches": [{"id": "inbox"}]}), "source_family",
            f"{CONTRIB_TS} parseWatchContribution", "contributions.ts"),
    refused("watch-duplicate-id", valid(contributes={"watches": [{"id": "a", "source_family": "mail"},
                                                                 {"id": "a", "source_family": "mail"}]}),
            "duplicate watch id", f"{CONTRIB_TS} parseWatchContributions", "contributions.ts"),
    refused("watch-config-infinite", '{"id":"acme.x","version":"1","sdk":"1","entrypoint":"./extension.ts",'
                                     '"capabilities":[],"contributes":{"watches":[{"id":"w","source_family":"mail",'
                                     '"config":{"limit":1e400}}]}}',
            "inert JSON", f"{CONTRIB_TS} asJsonValue (Number.isFinite)", "contributions.ts asJsonValue"),
    refused("watch-config-proto", '{"id":"acme.x","version":"1","sdk":"1","entrypoint":"./extension.ts",'
                                  '"capabilities":[],"contributes":{"watches":[{"id":"w","source_family":"mail",'
                                  '"config":{"__proto__":{}}}]}}',
            "inert JSON", f"{CONTRIB_TS} asJsonObject (__proto__)", "contributions.ts asJsonObject"),
    refused("watch-bad-flood", valid(contributes={"watches": [{"id": "w", "source_family": "mail", "flood": "drop"}]}),
            "flood", f"{CONTRIB_TS} parseWatchContribution", "contributions.ts"),
    {"id": "watch-valid", "files": files(valid(contributes={"watches": [{"id": "inbox", "source_family": "imap-mail",
                                                                          "config": {"folder": "INBOX"}, "flood": None}]})),
     "verdict": "load", "name": "acme.context-tools", "decided_by": f"{CONTRIB_TS} parseWatchContribution (flood ?? shed)",
     "from": "contributions.ts"},
    refused("sidecar-empty-command", valid(contributes={"sidecars": [{"id": "s", "command": []}]}),
            "command", f"{CONTRIB_TS} parseSidecarContribution", "contributions.ts"),
    refused("sidecar-env-number", valid(contributes={"sidecars": [{"id": "s", "command": ["x"], "env": {"A": 1}}]}),
            "env", f"{CONTRIB_TS} asStringRecord", "contributions.ts"),
    {"id": "sidecar-valid", "files": files(valid(contributes={"sidecars": [{"id": "daemon", "command": ["node", "d.js"],
                                                                            "env": {"MODE": "x"}, "restart": False}]})),
     "verdict": "load", "name": "acme.context-tools", "decided_by": f"{CONTRIB_TS} parseSidecarContribution",
     "from": "contributions.ts"},
]
