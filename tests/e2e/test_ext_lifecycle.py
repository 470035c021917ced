"""End-to-end round trip with the SPEC 11 JSON shapes asserted key by key:
install -> list -> status -> verify (ok, then tampered) -> disable -> enable -> remove."""

from __future__ import annotations

import getpass
import re
from pathlib import Path

from tests.cli.helpers import FIXTURES, fail, human, install, ok, tree
from tests.support.builders import minimal_manifest, write_extension

SHA256 = re.compile(r"^[0-9a-f]{64}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
INSTALLED_KEYS = {"name", "version", "scope", "source", "sha256", "verified"}
LIST_KEYS = {"name", "version", "scope", "enabled", "source", "verified", "path"}
STATUS_KEYS = {"name", "version", "scope", "enabled", "path", "kind", "provenance", "tree_sha256", "network_digest",
               "grants", "missing_env", "bundles", "activations"}
PROVENANCE_KEYS = {"source", "registry", "source_url", "sha256", "verified", "tree_sha256", "installed_at",
                   "installed_by", "allow_unverified"}


def _files(result: dict) -> dict:
    """An `ext verify` result without its two checksums."""
    return {k: v for k, v in result.items() if k not in ("tree_sha256", "recorded_tree_sha256")}


def test_round_trip(tmp_path: Path, home: Path) -> None:
    archive = tmp_path / "prompt-enhancer.tar.gz"
    packed = ok("ext", "pack", FIXTURES / "prompt-enhancer", "--output", archive)
    installed = install(archive, FIXTURES / "marketing-linear", FIXTURES / "review-pack")
    assert set(installed) >= {"installed", "activations", "failed"}
    assert installed["failed"] == [] and installed["activations"] == []
    for entry in installed["installed"]:
        assert set(entry) >= INSTALLED_KEYS
        assert entry["scope"] == "global" and entry["verified"] is False and entry["version"] == "0.1.0"
    assert [(e["name"], e["source"], e["sha256"]) for e in installed["installed"]] == [
        ("prompt-enhancer", "archive", packed["sha256"]),
        ("marketing-linear", "path", None),
        ("review-pack", "path", None),
    ]

    listed = ok("ext", "list")["extensions"]
    assert [e["name"] for e in listed] == ["marketing-linear", "prompt-enhancer", "review-pack"]
    for entry in listed:
        assert set(entry) >= LIST_KEYS
        assert entry["enabled"] is True and entry["scope"] == "global" and entry["verified"] is False
        assert entry["path"] == str(home / "extensions" / entry["name"] / "0.1.0")

    # a subprocess extension from an archive
    status = ok("ext", "status", "prompt-enhancer")
    assert set(status) >= STATUS_KEYS
    assert (status["name"], status["version"], status["scope"], status["enabled"]) == (
        "prompt-enhancer", "0.1.0", "global", True)
    assert status["path"] == str(home / "extensions" / "prompt-enhancer" / "0.1.0")
    assert status["kind"] == "subprocess"
    assert re.fullmatch(r"sha256-2:[0-9a-f]{64}", status["tree_sha256"])
    assert status["network_digest"] == ""
    assert status["grants"] == ["session.read"]
    assert status["requires_env"] == ["PROMPT_ENHANCER_MODE"]
    assert status["missing_env"] == ["PROMPT_ENHANCER_MODE"]
    assert status["bundles"] == [] and status["activations"] == []
    provenance = status["provenance"]
    assert set(provenance) >= PROVENANCE_KEYS
    assert provenance["source"] == "archive" and provenance["registry"] is None
    assert provenance["source_url"] == str(archive) and provenance["sha256"] == packed["sha256"]
    assert provenance["verified"] is False and provenance["allow_unverified"] is True
    assert provenance["tree_sha256"] == status["tree_sha256"]
    assert TIMESTAMP.match(provenance["installed_at"])
    assert provenance["installed_by"] == getpass.getuser()
    with_env = ok("ext", "status", "prompt-enhancer", env={"PROMPT_ENHANCER_MODE": "fast"})
    assert with_env["missing_env"] == [] and with_env["requires_env"] == ["PROMPT_ENHANCER_MODE"]

    # a resource-only extension with bundles and a network requirement
    status = ok("ext", "status", "marketing-linear")
    assert status["kind"] == "resource"
    assert status["provenance"]["source"] == "path" and status["provenance"]["sha256"] is None
    assert status["provenance"]["source_url"] == str(FIXTURES / "marketing-linear")
    assert SHA256.match(status["network_digest"])
    assert status["network_digest"] == ok("ext", "validate", FIXTURES / "marketing-linear")["network_digest"]
    assert status["bundles"] == [{"name": "marketing-linear", "profiles": ["default", "lean"]}]
    assert status["grants"] == [] and status["missing_env"] == []

    verified = ok("ext", "verify", "prompt-enhancer", "review-pack")["verified"]
    assert [_files(r) for r in verified] == [
        {"name": "prompt-enhancer", "version": "0.1.0", "ok": True, "added": [], "removed": [], "modified": []},
        {"name": "review-pack", "version": "0.1.0", "ok": True, "added": [], "removed": [], "modified": []},
    ]
    for r in verified:  # the checksum recomputed, and the one recorded at install
        assert r["tree_sha256"] == r["recorded_tree_sha256"] == ok("ext", "status", r["name"])["tree_sha256"]
    root = home / "extensions" / "review-pack" / "0.1.0"
    (root / "README.md").write_text("tampered\n")
    (root / "skills" / "code-review" / "extra.md").write_text("planted\n")
    (root / "hooks" / "session-ready.sh").unlink()
    document = fail("tree_modified", "ext", "verify", "--all")
    assert document["error"]["exit_code"] == 4
    bad = {"name": "review-pack", "version": "0.1.0", "ok": False, "added": ["skills/code-review/extra.md"],
           "removed": ["hooks/session-ready.sh"], "modified": ["README.md"]}
    assert [_files(r) for r in document["verified"]] == [
        {"name": "marketing-linear", "version": "0.1.0", "ok": True, "added": [], "removed": [], "modified": []},
        {"name": "prompt-enhancer", "version": "0.1.0", "ok": True, "added": [], "removed": [], "modified": []},
        bad,
    ]
    assert document["error"]["details"]["extensions"] == [document["verified"][2]]
    assert document["verified"][2]["tree_sha256"] != document["verified"][2]["recorded_tree_sha256"]
    text = human("ext", "verify", "review-pack", code=4).stdout
    assert "+ skills/code-review/extra.md" in text and "- hooks/session-ready.sh" in text and "~ README.md" in text

    assert ok("ext", "disable", "review-pack")["disabled"] == [
        {"name": "review-pack", "version": "0.1.0", "scope": "global", "enabled": False}]
    assert {e["name"]: e["enabled"] for e in ok("ext", "list")["extensions"]}["review-pack"] is False
    assert ok("ext", "status", "review-pack")["enabled"] is False
    assert ok("ext", "enable", "review-pack")["enabled"] == [
        {"name": "review-pack", "version": "0.1.0", "scope": "global", "enabled": True}]

    assert ok("ext", "remove", "review-pack", "prompt-enhancer")["removed"] == [
        {"name": "review-pack", "version": "0.1.0", "scope": "global"},
        {"name": "prompt-enhancer", "version": "0.1.0", "scope": "global"},
    ]
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["marketing-linear"]
    assert tree(home / "extensions") == ["marketing-linear", "marketing-linear/0.1.0"] + [
        f"marketing-linear/0.1.0/{p}" for p in tree(home / "extensions" / "marketing-linear" / "0.1.0")]
    fail("not_found", "ext", "status", "review-pack")
    fail("not_found", "ext", "remove", "review-pack")
    fail("not_found", "ext", "enable", "review-pack")
    fail("not_found", "ext", "verify", "review-pack")


def test_human_output_reads_well(home: Path) -> None:
    install(FIXTURES / "review-pack", FIXTURES / "prompt-enhancer")
    listing = human("ext", "list").stdout.splitlines()
    assert listing[0].split() == ["NAME", "VERSION", "HOST", "SCOPE", "ENABLED", "SOURCE", "VERIFIED"]
    assert listing[1].split() == ["prompt-enhancer", "0.1.0", "compozy", "global", "yes", "path", "no"]
    status = human("ext", "status", "prompt-enhancer").stdout
    for line in ("kind:", "subprocess", "missing env:", "PROMPT_ENHANCER_MODE", "grants:", "session.read"):
        assert line in status
    assert "\x1b[" not in status  # not a terminal: no escape sequences
    assert human("ext", "disable", "review-pack").stdout == "disabled review-pack 0.1.0 (global scope)\n"
    assert human("ext", "remove", "review-pack").stdout == "removed review-pack 0.1.0 (global scope)\n"
    assert human("ext", "list", "-q").stdout.split()[:7] == ["NAME", "VERSION", "HOST", "SCOPE", "ENABLED",
                                                              "SOURCE", "VERIFIED"]


def test_status_resolved_never_prints_an_environment_value(tmp_path: Path, home: Path) -> None:
    secret = "sk-live-planted-0123456789"
    root = write_extension(tmp_path / "env-ext", minimal_manifest(
        name="env-ext",
        requires_env=["PLANTED_SECRET", "UNSET_ONE"],
        subprocess={"command": "{{config_dir}}/bin/run", "args": ["--key", "{{env:PLANTED_SECRET}}"],
                    "env": {"MODE": "{{env:PLANTED_SECRET}}"}, "secret_env": {"API_TOKEN": "env:PLANTED_SECRET"}},
        resources={"mcp_servers": {"srv": {"command": "srv", "env": {"OTHER": "{{env:UNSET_ONE}}"}}}},
    ), files={"bin/run": "#!/bin/sh\n"})
    install(root)
    env = {"PLANTED_SECRET": secret}
    from tests.support.cli import run_cli

    for mode in (["-o", "json"], []):
        result = run_cli(["ext", "status", "env-ext", "--resolved", *mode], env=env)
        assert result.code == 0, result
        assert secret not in result.stdout and secret not in result.stderr
    document = ok("ext", "status", "env-ext", "--resolved", env=env)
    assert document["missing_env"] == ["UNSET_ONE"]
    commands = {c["key"]: c for c in document["commands"]}
    directory = str(home / "extensions" / "env-ext" / "0.1.0")
    assert commands["subprocess"] == {
        "key": "subprocess", "command": f"{directory}/bin/run", "args": ["--key", "<PLANTED_SECRET:set>"],
        "env": {"MODE": "<PLANTED_SECRET:set>"}, "secret_env": {"API_TOKEN": "<PLANTED_SECRET:set>"}}
    assert commands["resources.mcp_servers.srv"]["env"] == {"OTHER": "<UNSET_ONE:unset>"}
    plain = ok("ext", "status", "env-ext", env=env)
    assert "commands" not in plain and secret not in str(plain)


def test_enable_and_disable_report_each_name(home: Path) -> None:
    install(FIXTURES / "review-pack", FIXTURES / "prompt-enhancer")
    document = fail("not_found", "ext", "disable", "review-pack", "nothing", "prompt-enhancer")
    assert [d["name"] for d in document["disabled"]] == ["review-pack", "prompt-enhancer"]
    assert [e["enabled"] for e in ok("ext", "list")["extensions"]] == [False, False]
    document = fail("not_found", "ext", "remove", "nothing", "review-pack")
    assert document["removed"] == [{"name": "review-pack", "version": "0.1.0", "scope": "global"}]


def test_verify_hint_names_the_recorded_source(home: Path) -> None:
    install(FIXTURES / "review-pack")
    (home / "extensions" / "review-pack" / "0.1.0" / "README.md").write_text("changed\n")
    result = human("ext", "verify", "review-pack", code=4)
    assert f"pkgmgr ext install {FIXTURES / 'review-pack'} --force --allow-unverified" in result.stderr
    install(FIXTURES / "review-pack", extra=("--force",))
    assert ok("ext", "verify", "review-pack")["verified"][0]["ok"] is True
