"""cli.ext_cmds: the helpers of `ext install` (summary lines, the announcement before a commit,
the prompt, the options), and the human rendering and argument checks of validate, pack, list,
status, verify, enable/disable and remove that the end-to-end tests do not pin down."""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sqlite3
from pathlib import Path

import pytest

from pkgmgr.cli.context import Context
from pkgmgr.cli.ext_cmds import (
    announce_for,
    confirm_for,
    install_options,
    installed_json,
    summary_lines,
)
from pkgmgr.store.installed import Installed
from tests.cli.helpers import FIXTURES, UNVERIFIED, fail, human, install, ok
from tests.support.builders import minimal_manifest, write_extension
from tests.workspace.helpers import crew_files

FULL_SUMMARY = {
    "name": "net-tool", "version": "1.2.0", "kind": "subprocess", "source": "registry", "verified": True,
    "permissions": ["session.read", "tool.read"], "subprocess": "node dist/index.js serve",
    "network_requirement": {"required": True, "mode": "live", "channel_scopes": ["builders", "release"]},
    "network_digest": "ab" * 32, "max_scope": "workspace",
}
BARE_SUMMARY = {"name": "bare-ext", "version": "0.1.0", "kind": "resource", "source": "path", "verified": False,
                "permissions": [], "subprocess": None, "network_requirement": None, "network_digest": "",
                "max_scope": None}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# --- summary_lines, announce_for, confirm_for ------------------------------------------------------


def test_summary_lines_of_everything_an_install_can_carry() -> None:
    assert summary_lines(FULL_SUMMARY) == [
        "net-tool 1.2.0 (subprocess extension, source registry, verified)",
        "  permissions: session.read, tool.read",
        "  subprocess:  node dist/index.js serve",
        f"  network:     required, mode live, builders, release (digest {'ab' * 32})",
        "  publishes:   up to the workspace scope",
    ]


def test_summary_lines_of_a_bare_extension() -> None:
    assert summary_lines(BARE_SUMMARY) == ["bare-ext 0.1.0 (resource extension, source path, unverified)",
                                           "  permissions: none"]


def test_summary_lines_of_a_network_requirement_without_channel_scopes() -> None:
    summary = {**BARE_SUMMARY, "network_requirement": {"required": True, "mode": "live", "channel_scopes": []},
               "network_digest": "cd" * 32}
    assert summary_lines(summary)[-1] == f"  network:     required, mode live, no channel scopes (digest {'cd' * 32})"


@pytest.mark.parametrize("options", [{"output": "json"}, {"quiet": True}])
def test_nothing_is_announced_in_json_or_quiet_mode(options: dict, home: Path) -> None:
    assert announce_for(Context(home=home, **options)) is None


def test_the_announcement_is_the_summary_on_stderr(home: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out):
        announce = announce_for(Context(home=home, stderr=err))
        assert err.getvalue() == ""  # nothing before an extension is about to be committed
        announce(FULL_SUMMARY)
        announce(BARE_SUMMARY)
    assert out.getvalue() == ""  # progress, not a result
    assert err.getvalue().splitlines() == [
        "installing net-tool 1.2.0 (subprocess extension, source registry, verified)",
        *summary_lines(FULL_SUMMARY)[1:],
        "installing bare-ext 0.1.0 (resource extension, source path, unverified)",
        "  permissions: none",
    ]


def test_no_prompt_without_a_terminal(home: Path) -> None:
    assert confirm_for(Context(home=home, stdin=io.StringIO("y\n"), stderr=io.StringIO())) is None
    assert confirm_for(Context(home=home, output="json", stdin=Terminal("y\n"), stderr=Terminal())) is None


@pytest.mark.parametrize("answer, expected", [("y\n", True), ("\n", False)])
def test_the_prompt_shows_the_summary_then_asks(answer: str, expected: bool, home: Path) -> None:
    err = Terminal()
    confirm = confirm_for(Context(home=home, stdin=Terminal(answer), stderr=err))
    assert confirm(FULL_SUMMARY) is expected
    assert err.getvalue() == "\n".join(summary_lines(FULL_SUMMARY)) + \
        "\nInstall net-tool 1.2.0 from this unverified source? [y/N] "


# --- install_options, installed_json ------------------------------------------------------------


def _install_args(**flags: bool) -> argparse.Namespace:
    names = ("force", "allow_grants", "allow_unverified", "pre", "dry_run", "deactivate_missing", "allow_expired")
    return argparse.Namespace(**{name: flags.get(name, False) for name in names})


def test_install_options_take_the_flags_and_the_context(home: Path) -> None:
    options = install_options(Context(home=home, yes=True), _install_args(force=True, pre=True, dry_run=True))
    assert (options.force, options.pre, options.dry_run, options.yes) == (True, True, True, True)
    assert (options.allow_grants, options.allow_unverified, options.pin, options.deactivate_missing,
            options.allow_expired, options.confirm_always) == (False, False, False, False, False, False)
    args = _install_args(allow_grants=True, allow_unverified=True, deactivate_missing=True, allow_expired=True)
    args.pin = True  # only `ext install` has --pin
    options = install_options(Context(home=home), args)
    assert (options.allow_grants, options.allow_unverified, options.pin, options.deactivate_missing,
            options.allow_expired, options.yes) == (True, True, True, True, True, False)


def test_install_options_follow_the_confirm_policy(home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text('[policy]\nconfirm = "always"\n')
    assert install_options(Context(home=home), _install_args()).confirm_always is True


def test_installed_json_has_the_spec_fields_and_extras() -> None:
    item = Installed(name="x-ext", version="1.0.0", path="extensions/x-ext/1.0.0", enabled=True, pinned=False,
                     source_kind="registry", source="acme", registry="acme", source_url=None, sha256="f" * 64,
                     verified=True, allow_unverified=False, tier=None, tree_sha256="", tree_listing={}, manifest={},
                     network_digest="", grants=(), max_scope=None, installed_at="", installed_by="", scope="global")
    assert installed_json(item, action="installed") == {
        "name": "x-ext", "version": "1.0.0", "scope": "global", "source": "registry", "sha256": "f" * 64,
        "verified": True, "action": "installed"}


# --- validate, pack -----------------------------------------------------------------------------


def test_validate_warns_what_only_activation_decides(tmp_path: Path) -> None:
    from tests.activation.helpers import make_ext, profile

    root = make_ext(tmp_path / "src", scopes=None, agents=("coordinator",),
                    profiles=[profile(agents=("coordinator",), jobs=[], triggers=[])])
    document = ok("ext", "validate", root)
    assert any("'coordinator' uses a name the host reserves" in w for w in document["warnings"])
    assert document["generations"] == ["v0.3-beta.3"]  # v0.3 has no bundles; its layout is version 3 (v0.2: 2)


def test_the_configured_generation_judges_validate_and_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_extension(tmp_path / "ext", minimal_manifest("legacy-ext", actions={"requires": ["sessions/list"]},
                                                              subprocess={"command": "node"}))
    assert ok("ext", "validate", root)["generations"] == ["v0.2"]
    (tmp_path / "config.toml").write_text('[host]\ncompozy_generation = "v0.3"\n', encoding="utf-8")
    monkeypatch.setenv("PKGMGR_CONFIG", str(tmp_path / "config.toml"))
    document = fail("invalid_manifest", "ext", "validate", root)
    assert "[actions] was removed; use [permissions]" in document["error"]["message"]
    fail("invalid_manifest", "ext", "install", root, "--allow-unverified", "--yes")


def test_one_configured_generation_judges_pack_publish_and_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # config host.compozy_generation, not only PKGMGR_COMPOZY_GENERATION, reaches every command
    monkeypatch.delenv("PKGMGR_COMPOZY_GENERATION", raising=False)
    root = write_extension(tmp_path / "ws" / "legacy", minimal_manifest("legacy-ext", actions={"requires": ["sessions/list"]},
                                                                        subprocess={"command": "node"}))
    archive = tmp_path / "legacy.tar.gz"
    ok("ext", "pack", root, "--output", archive)
    index = tmp_path / "index"
    ok("registry", "init", index, "--name", "acme")
    ws = tmp_path / "ws"
    (ws / "pkgmgr.toml").write_text('[extensions]\nlegacy-ext = { path = "legacy" }\n', encoding="utf-8")
    ok("trust", "--workspace", ws)
    (tmp_path / "config.toml").write_text('[host]\ncompozy_generation = "v0.3"\n', encoding="utf-8")
    monkeypatch.setenv("PKGMGR_CONFIG", str(tmp_path / "config.toml"))
    for command in (("ext", "pack", root, "--output", tmp_path / "again.tar.gz"),
                    ("registry", "publish", archive, "--index", index),
                    ("sync", "--workspace", ws)):
        document = fail("invalid_manifest", *command)
        assert "[actions] was removed; use [permissions]" in str(document["error"]), command
    assert not list((index / "extensions").rglob("*.toml"))
    (tmp_path / "config.toml").write_text('[host]\ncompozy_generation = "v0.2"\n', encoding="utf-8")
    assert ok("registry", "publish", archive, "--index", index)["published"]["version"] == "0.1.0"


def test_bundles_are_judged_by_each_generation_that_loads_the_manifest(tmp_path: Path) -> None:
    # an agent hook on an event internal/hooks has from cff6dae48 on: v0.2 does not know the event, and
    # v0.3-beta.3 refuses it too, recorded running: an agent's hook matches on the agent's name
    # (toHookMatcher), which no window_manager event takes (tests/hosts/compozy/agent_cases.toml)
    root = tmp_path / "tiles"
    files = {
        "extension.toml": 'name = "tiles"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n'
                          '[resources]\nbundles = ["bundles"]\n',
        "bundles/a.toml": 'name = "team"\n[[profiles]]\nname = "default"\n[[profiles.agents]]\npath = "agents/planner"\n',
        "agents/planner/AGENT.md": "---\nname: planner\nhooks:\n  - name: tiles\n    event: window_manager.window.opened\n"
                                   "    command: ./tiles.sh\n---\nPlan.\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    document = fail("invalid_bundle", "ext", "validate", root, env={"PKGMGR_COMPOZY_GENERATION": "v0.2"})
    assert "is not a hook event of Compozy v0.2" in str(document["error"])
    document = fail("invalid_bundle", "ext", "validate", root, env={"PKGMGR_COMPOZY_GENERATION": "v0.3-beta.3"})
    assert "agent_name cannot match event 'window_manager.window.opened'" in str(document["error"])


def test_validate_checks_the_configured_host_version(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", minimal_manifest("new-ext", min_compozy_version="9.0.0"))
    fail("incompatible_host", "ext", "validate", root, env={"PKGMGR_HOST_VERSION": "1.0.0"})
    assert ok("ext", "validate", root)["valid"]


def test_owner_repo_that_is_not_a_path_suggests_github(tmp_path: Path) -> None:
    # what a Compozy operator types: `compozy extension install OWNER/REPO`
    document = fail("not_found", "ext", "install", "acme/marketing-linear", cwd=tmp_path)
    assert document["error"]["details"]["suggestion"] == "github:acme/marketing-linear"
    result = human("ext", "install", "acme/marketing-linear", code=5, cwd=tmp_path)
    assert "github:acme/marketing-linear" in result.stderr


def test_validate_says_what_it_found(tmp_path: Path) -> None:
    assert human("ext", "validate", FIXTURES / "marketing-linear").stdout == (
        f"{FIXTURES / 'marketing-linear'}: marketing-linear 0.1.0 is valid (resource, 1 bundle(s), 2 profile(s); "
        "loads in Compozy v0.2)\n")  # its layout is a version-2 document: v0.3-beta.3 reads version 3
    document = ok("ext", "validate", FIXTURES / "prompt-enhancer")
    assert document == {"valid": True, "name": "prompt-enhancer", "version": "0.1.0", "kind": "subprocess",
                        "network_digest": "", "bundles": [], "warnings": [], "generations": [
                            "v0.2"]}
    assert ok("ext", "validate", FIXTURES / "marketing-linear")["bundles"] == [
        {"name": "marketing-linear", "profiles": ["default", "lean"]}]


def test_validate_reports_manifest_warnings_on_stderr_and_in_json(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "both", minimal_manifest(name="both-ext"))
    write_extension(root, minimal_manifest(name="both-ext"), json_manifest=True)
    result = human("ext", "validate", root)
    assert "warning: " in result.stderr and "extension.json" in result.stderr
    warnings = ok("ext", "validate", root)["warnings"]
    assert len(warnings) == 1 and "extension.json" in warnings[0]


def test_validate_an_archive(tmp_path: Path) -> None:
    archive = tmp_path / "review.tar.gz"
    ok("ext", "pack", FIXTURES / "review-pack", "--output", archive)
    assert ok("ext", "validate", archive)["name"] == "review-pack"
    assert list(tmp_path.iterdir()) == [archive]  # extracted into a temporary directory, removed after


def test_pack_writes_to_the_current_directory_by_default(tmp_path: Path) -> None:
    result = human("ext", "pack", FIXTURES / "review-pack", cwd=tmp_path)
    target = tmp_path / "review-pack-0.1.0.tar.gz"
    lines = result.stdout.splitlines()
    assert lines[0] == f"packed: {target}"
    assert lines[1].startswith("sha256: ") and len(lines[1].split()[1]) == 64
    assert lines[2] == f"size:   {target.stat().st_size}"


@pytest.mark.parametrize("what", ["missing", "file"])
def test_pack_needs_a_directory(what: str, tmp_path: Path) -> None:
    path = tmp_path / "x"
    if what == "file":
        path.write_text("not a directory")
    fail("not_found", "ext", "pack", path)


def test_pack_refuses_an_invalid_extension(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "bad", minimal_manifest(version="1.0"))
    fail("invalid_manifest", "ext", "pack", root, "--output", tmp_path / "out.tar.gz")
    assert not (tmp_path / "out.tar.gz").exists()


# --- list, status, verify ----------------------------------------------------------------------


def test_list_without_extensions(home: Path) -> None:
    assert human("ext", "list").stdout == "no extensions installed\n"
    assert ok("ext", "list") == {"extensions": []}
    assert not home.exists()  # a read creates nothing


def crew(root: Path, version: str = "0.1.0", prompt: str = "Plan the week.") -> Path:
    """An extension with one bundle (profile default, one agent) and no network requirement."""
    if root.exists():
        shutil.rmtree(root)
    return write_extension(root, files=crew_files("crew-ext", version, prompt=prompt))


def test_status_renders_bundles_activations_and_resolved_commands(tmp_path: Path) -> None:
    install(crew(tmp_path / "crew"), FIXTURES / "prompt-enhancer")
    act = ok("bundle", "activate", "crew-ext")["activation"]["id"]
    lines = human("ext", "status", "crew-ext").stdout.splitlines()
    assert "compozy:        v0.2, v0.3-beta.3" in lines  # the generations that load it (bundles: not v0.3)
    assert ok("ext", "status", "crew-ext")["generations"] == ["v0.2", "v0.3-beta.3"]
    assert lines[lines.index("") + 1].split() == ["BUNDLE", "PROFILES"]
    assert lines[lines.index("") + 2].split() == ["crew-ext", "default"]
    assert f"activation {act} crew-ext:crew-ext/default v1 active" in lines
    resolved = human("ext", "status", "prompt-enhancer", "--resolved").stdout.splitlines()
    header = next(i for i, line in enumerate(resolved) if line.split()[:2] == ["KEY", "COMMAND"])
    assert resolved[header + 1].split()[:2] == ["subprocess", "node"]
    assert not any(line.split()[:1] == ["KEY"] for line in human("ext", "status", "prompt-enhancer").stdout
                   .splitlines())


def test_status_warns_when_the_bundles_cannot_be_read(tmp_path: Path, home: Path) -> None:
    install(crew(tmp_path / "crew"))
    bundle = home / "extensions" / "crew-ext" / "0.1.0" / "bundles" / "crew-ext.toml"
    bundle.write_text("name = \n")
    result = human("ext", "status", "crew-ext")
    assert "warning: crew-ext: bundles cannot be read: " in result.stderr
    assert ok("ext", "status", "crew-ext")["bundles"] == []


def test_verify_all_of_nothing_is_ok(home: Path) -> None:
    assert ok("ext", "verify", "--all") == {"verified": []}
    assert human("ext", "verify", "--all").stdout == ""


def test_verify_an_install_whose_directory_is_gone(home: Path) -> None:
    install(FIXTURES / "review-pack")
    shutil.rmtree(home / "extensions" / "review-pack" / "0.1.0")
    document = fail("tree_modified", "ext", "verify", "--all")
    [entry] = document["verified"]
    assert entry["ok"] is False and entry["missing"] is True and entry["added"] == [] and entry["removed"]
    assert entry["removed"] == sorted(entry["removed"])
    text = human("ext", "verify", "review-pack", code=4).stdout.splitlines()
    assert text == ["review-pack 0.1.0: MISSING (its directory is gone)"]


def test_verify_says_when_the_directory_is_gone(home: Path) -> None:
    install(FIXTURES / "review-pack")
    shutil.rmtree(home / "extensions" / "review-pack" / "0.1.0")
    document = fail("tree_modified", "ext", "verify", "review-pack")
    assert "review-pack 0.1.0: directory missing" in document["error"]["message"]


def test_verify_compares_the_tree_checksum_too(home: Path) -> None:
    """Files as listed, but not the recorded checksum (here: a format-1 value the state migration
    could not vouch for): the tree is not the one recorded."""
    install(FIXTURES / "review-pack")
    conn = sqlite3.connect(home / "state.db")
    conn.execute("UPDATE extensions SET tree_sha256 = 'sha256-1:' || substr(tree_sha256, 10)")  # as migrated
    conn.commit()
    conn.close()
    document = fail("tree_modified", "ext", "verify", "review-pack")
    [entry] = document["verified"]
    assert (entry["ok"], entry["added"], entry["removed"], entry["modified"]) == (False, [], [], [])
    assert entry["recorded_tree_sha256"] == "sha256-1:" + entry["tree_sha256"].removeprefix("sha256-2:")
    assert f"tree checksum {entry['tree_sha256']} where sha256-1:" in document["error"]["message"]
    text = human("ext", "verify", "review-pack", code=4).stdout.splitlines()
    assert text == ["review-pack 0.1.0: MODIFIED",
                    f"  tree checksum {entry['tree_sha256']}, recorded {entry['recorded_tree_sha256']}"]


# --- enable, disable, remove --------------------------------------------------------------------


@pytest.mark.parametrize("command", ["enable", "disable", "remove"])
def test_changing_a_scope_never_written_creates_nothing(command: str, home: Path) -> None:
    document = fail("not_found", "ext", command, "ghost-ext")
    assert "ghost-ext is not installed in the global scope" in document["error"]["message"]
    assert not home.exists()


def test_disable_and_remove_with_deactivate_say_what_they_deactivated(tmp_path: Path) -> None:
    install(crew(tmp_path / "crew"))
    act = ok("bundle", "activate", "crew-ext")["activation"]["id"]
    fail("extension_has_active_bundles", "ext", "disable", "crew-ext")
    assert human("ext", "disable", "crew-ext", "--deactivate").stdout == (
        f"disabled crew-ext 0.1.0 (global scope)\ndeactivated {act}\n")
    assert human("ext", "enable", "crew-ext").stdout == "enabled crew-ext 0.1.0 (global scope)\n"
    act = ok("bundle", "activate", "crew-ext")["activation"]["id"]
    dry = human("ext", "remove", "crew-ext", "--dry-run").stdout
    assert dry == "would remove crew-ext 0.1.0 (global scope) and deactivate 1 activation(s)\n"
    planned = ok("ext", "remove", "crew-ext", "--dry-run")["planned"]
    assert [(p["name"], [a["id"] for a in p["activations"]]) for p in planned] == [("crew-ext", [act])]
    document = ok("ext", "remove", "crew-ext", "--deactivate")
    assert [r["name"] for r in document["removed"]] == ["crew-ext"]
    assert [a["id"] for a in document["deactivated"]] == [act]


def test_remove_dry_run_of_a_name_not_installed(home: Path) -> None:
    install(FIXTURES / "review-pack")
    fail("not_found", "ext", "remove", "review-pack", "ghost-ext", "--dry-run")
    assert human("ext", "remove", "review-pack", "--dry-run").stdout == \
        "would remove review-pack 0.1.0 (global scope)\n"
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["review-pack"]


def test_uninstall_is_remove(home: Path) -> None:
    install(FIXTURES / "review-pack")
    assert ok("ext", "uninstall", "review-pack")["removed"][0]["name"] == "review-pack"


# --- install output -----------------------------------------------------------------------------


def test_install_document_keys(tmp_path: Path) -> None:
    document = install(FIXTURES / "review-pack")
    assert set(document) == {"installed", "unchanged", "skipped", "failed", "activations"}  # no `planned`
    [entry] = document["installed"]
    assert (entry["action"], entry["previous_version"]) == ("installed", None)
    assert entry["summary"]["name"] == "review-pack"
    assert "planned" in ok("ext", "install", FIXTURES / "prompt-enhancer", *UNVERIFIED, "--dry-run")


def test_a_switch_that_reprojects_an_activation_lists_it(tmp_path: Path) -> None:
    source = crew(tmp_path / "crew")
    install(source)
    act = ok("bundle", "activate", "crew-ext")["activation"]["id"]
    result = human("ext", "install", crew(source, "0.2.0", prompt="Plan the month."), *UNVERIFIED)
    lines = result.stdout.splitlines()
    assert "switched crew-ext from 0.1.0 to 0.2.0 (global scope, path, unverified)" in lines
    [line] = [line for line in lines if line.startswith("activation ")]
    assert line.startswith(f"activation {act} crew-ext:crew-ext/default v2 active")
