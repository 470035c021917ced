"""What a new user meets in the first hour (issue 18), run the way the user ran it: through the
real entry point, in-process, against local registries and the shipped `default` one."""

from __future__ import annotations

import io
import tomllib
from pathlib import Path

import pytest

from tests.cli.helpers import fail, human, ok
from tests.registry.helpers import RegistryDir

# --- registry add of a source that cannot be read ----------------------------------------------


def test_registry_add_of_a_missing_directory_is_refused_and_records_nothing(home: Path, tmp_path: Path) -> None:
    document = fail("not_found", "registry", "add", "x", tmp_path / "nonexistent")
    assert "nothing was recorded" in document["error"]["message"]
    assert not (home / "config.toml").exists()
    result = human("registry", "add", "x", tmp_path / "nonexistent", code=5)
    assert "--no-check" in result.stderr
    assert "marketing-linear" in [r["name"] for r in ok("ext", "search")["results"]]  # the default still answers


def test_registry_add_of_a_directory_that_is_no_registry_is_refused(home: Path, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    fail("invalid_index", "registry", "add", "x", tmp_path / "plain")
    assert not (home / "config.toml").exists()


def test_no_check_records_a_broken_registry_and_the_errors_say_how_to_get_out(home: Path, tmp_path: Path) -> None:
    ok("registry", "add", "x", tmp_path / "nonexistent", "--no-check")
    assert "x" in tomllib.loads((home / "config.toml").read_text())["registries"]
    # search is a listing: the other registries still answer, the broken one is named
    result = human("ext", "search")
    assert "marketing-linear" in result.stdout
    assert "registry x" in result.stderr and "'pkgmgr registry remove x'" in result.stderr
    assert [f["name"] for f in ok("ext", "search")["failed"]] == ["x"]
    # resolution stops at an unreadable registry (SPEC 5.3); the error says how to get past it
    result = human("ext", "install", "review-pack", code=5)
    assert "error[not_found]: registry x" in result.stderr
    assert "'pkgmgr registry remove x'" in result.stderr and "--registry NAME" in result.stderr
    installed = ok("ext", "install", "review-pack", "--registry", "default")["installed"]
    assert [(i["name"], i["version"]) for i in installed] == [("review-pack", "0.2.0")]
    ok("registry", "remove", "x")
    assert ok("ext", "install", "marketing-linear")["installed"][0]["name"] == "marketing-linear"


# --- NAME@0.2 and "0.1" are exact PEP 440 versions ---------------------------------------------


def test_a_short_version_names_that_version(home: Path) -> None:
    [installed] = ok("ext", "install", "review-pack@0.1")["installed"]
    assert installed["version"] == "0.1.0"
    [installed] = ok("ext", "install", "review-pack@0.2")["installed"]
    assert (installed["version"], installed["previous_version"]) == ("0.2.0", "0.1.0")
    document = fail("version_not_found", "ext", "install", "review-pack@0.3")
    assert document["error"]["details"]["requested"] == "0.3"


def test_a_short_version_in_pkgmgr_toml_is_exact(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pkgmgr.toml").write_text('[extensions]\nreview-pack = "0.1"\n')
    ok("trust", cwd=workspace)
    ok("sync", cwd=workspace)
    lock = tomllib.loads((workspace / "pkgmgr.lock").read_text())
    assert [(e["name"], e["version"]) for e in lock["extension"]] == [("review-pack", "0.1.0")]
    ok("sync", "--locked", cwd=workspace)


# --- --registry, and a shadowed name's version_not_found ------------------------------------------


def test_a_shadowed_names_missing_version_names_the_registry_that_has_it(home: Path, tmp_path: Path) -> None:
    shadow = RegistryDir(tmp_path / "shadow", "shadow")
    shadow.publish("review-pack", "0.1.0")
    ok("registry", "add", "shadow", shadow.root, "--priority", "20")
    document = fail("version_not_found", "ext", "install", "review-pack@0.2.0")
    error = document["error"]
    assert error["details"]["available_in"] == {"registry": "default", "version": "0.2.0"}
    assert "registry default has review-pack 0.2.0" in error["message"]
    result = human("ext", "install", "review-pack@0.2.0", code=5)
    assert "hint: pkgmgr ext install review-pack@0.2.0 --registry default" in result.stderr
    [installed] = ok("ext", "install", "review-pack@0.2.0", "--registry", "default")["installed"]
    assert installed["version"] == "0.2.0"
    fail("not_found", "ext", "install", "review-pack", "--registry", "nope")
    fail("not_found", "ext", "update", "--all", "--registry", "nope")


# --- a batch installs all or nothing -------------------------------------------------------------


def test_a_batch_with_a_bad_ref_installs_nothing(home: Path) -> None:
    document = fail("not_found", "ext", "install", "review-pack", "revew-pack")
    assert [f["ref"] for f in document["failed"]] == ["revew-pack"]
    assert [(s["ref"], s["name"], s["version"]) for s in document["skipped"]] == [
        ("review-pack", "review-pack", "0.2.0")]
    assert document["installed"] == []
    assert ok("ext", "list")["extensions"] == []
    result = human("ext", "install", "review-pack", "revew-pack", code=5)
    assert "review-pack not installed: revew-pack failed" in result.stdout
    assert "installing" not in result.stdout + result.stderr


def test_keep_going_installs_what_succeeds(home: Path) -> None:
    document = fail("not_found", "ext", "install", "revew-pack", "review-pack", "--keep-going")
    assert [i["name"] for i in document["installed"]] == ["review-pack"]
    assert [f["ref"] for f in document["failed"]] == ["revew-pack"]
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["review-pack"]


def test_a_source_conflict_found_after_fetching_holds_the_whole_batch(home: Path, tmp_path: Path) -> None:
    from tests.cli.helpers import UNVERIFIED, copy_fixture

    ok("ext", "install", copy_fixture("review-pack", tmp_path), *UNVERIFIED)  # a path install
    document = fail("source_conflict", "ext", "install", "marketing-linear", "review-pack@0.2.0")
    assert [s["name"] for s in document["skipped"]] == ["marketing-linear"]
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["review-pack"]


# --- --save keeps pkgmgr.lock in step --------------------------------------------------------------


def test_save_then_sync_locked_passes(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = human("ext", "install", "review-pack@0.1", "--save", cwd=workspace)
    assert "updated" in result.stderr and "pkgmgr.lock" in result.stderr
    lock = tomllib.loads((workspace / "pkgmgr.lock").read_text())
    assert [(e["name"], e["version"]) for e in lock["extension"]] == [("review-pack", "0.1.0")]
    ok("sync", "--locked", cwd=workspace)
    ok("ext", "install", "marketing-linear", "--save", cwd=workspace)
    ok("sync", "--locked", cwd=workspace)
    ok("ext", "remove", "review-pack", "--save", cwd=workspace)
    lock = tomllib.loads((workspace / "pkgmgr.lock").read_text())
    assert [e["name"] for e in lock["extension"]] == ["marketing-linear"]
    assert ok("sync", "--locked", cwd=workspace)["plan"]["empty"] is True


def test_save_in_a_workspace_not_synced_yet_leaves_the_lock_to_sync(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pkgmgr.toml").write_text('[extensions]\nmarketing-linear = "*"\n')
    ok("trust", cwd=workspace)
    result = human("ext", "install", "review-pack", "--save", cwd=workspace)
    assert "pkgmgr.lock was not updated" in result.stderr and "'pkgmgr sync'" in result.stderr
    assert not (workspace / "pkgmgr.lock").exists()
    ok("sync", cwd=workspace)
    ok("sync", "--locked", cwd=workspace)


# --- tables never fold identifiers -----------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_narrow_terminal_never_folds_an_id(monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.cli.output import Printer

    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("NO_COLOR", "1")
    stream = Terminal()
    ids = ["act_712b93dfeb2df097", "res_0123456789abcdef0123"]
    Printer(stream).table(["ID", "EXTENSION", "DESCRIPTION"],
                          [(i, "marketing-linear", "a long description " * 5) for i in ids])
    lines = stream.getvalue().splitlines()
    assert [line.split()[:2] for line in lines[1:]] == [[i, "marketing-linear"] for i in ids]
    assert all(line == line.rstrip() for line in lines)
    assert all("…" in line for line in lines[1:])  # only the description gives way


# --- did you mean, and aliases ---------------------------------------------------------------------


@pytest.mark.parametrize("argv, expected", [
    (["instal"], "did you mean 'pkgmgr install'"),
    (["ext", "instal", "x"], "did you mean 'pkgmgr ext install'"),
    (["ext", "upgrad"], "did you mean 'pkgmgr ext upgrade'"),
    (["registry", "ad", "x", "y"], "did you mean 'pkgmgr registry add'"),
])
def test_an_unknown_command_gets_the_closest(argv: list[str], expected: str, home: Path) -> None:
    result = human(*argv, code=2)
    assert expected in result.stderr


def test_an_unknown_option_gets_the_closest_and_its_commands_help(home: Path) -> None:
    result = human("ext", "install", "review-pack", "--alow-unverified", code=2)
    assert "--alow-unverified: did you mean --allow-unverified" in result.stderr
    assert "hint: run 'pkgmgr ext install --help' for its options" in result.stderr
    document = fail("usage", "ext", "list", "--jsn")
    assert "did you mean --json" in document["error"]["message"]


def test_an_unknown_extension_gets_the_closest_name(home: Path) -> None:
    document = fail("not_found", "ext", "install", "revew-pack")
    assert document["error"]["details"]["suggestions"] == ["review-pack"]
    assert "did you mean review-pack?" in human("ext", "install", "revew-pack", code=5).stderr
    ok("ext", "install", "review-pack")
    assert "did you mean review-pack?" in human("ext", "status", "revew-pack", code=5).stderr
    assert "write 'github:acme/tools'" in human("ext", "install", "acme/tools", code=5).stderr


def test_aliases(home: Path, tmp_path: Path) -> None:
    assert [i["name"] for i in ok("install", "review-pack")["installed"]] == ["review-pack"]
    assert [e["name"] for e in ok("list")["extensions"]] == ["review-pack"]
    assert [e["name"] for e in ok("ext", "ls")["extensions"]] == ["review-pack"]
    assert ok("ext", "upgrade", "--all", "--check")["unchanged"][0]["name"] == "review-pack"
    assert ok("update", "--all")["unchanged"][0]["name"] == "review-pack"
    assert [r["name"] for r in ok("ext", "rm", "review-pack")["removed"]] == ["review-pack"]
    ok("install", "review-pack")
    assert [r["name"] for r in ok("uninstall", "review-pack")["removed"]] == ["review-pack"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ok("ext", "add", "review-pack", cwd=workspace)  # install --save
    assert "review-pack" in tomllib.loads((workspace / "pkgmgr.toml").read_text())["extensions"]
    assert ok("ext", "list", "--scope", "workspace", cwd=workspace)["extensions"][0]["scope"] == "workspace"


# --- doctor --check names the fix of a tampered tree -----------------------------------------------


def test_doctor_check_of_a_tampered_tree_names_the_reinstall(home: Path) -> None:
    ok("ext", "install", "review-pack")
    tree = Path(ok("ext", "status", "review-pack")["path"])
    victim = next(p for p in sorted(tree.rglob("*")) if p.is_file())
    victim.write_text(victim.read_text() + "tampered\n")
    result = human("doctor", "--check", code=4)
    assert "hint: review-pack: reinstall it with 'pkgmgr ext install review-pack@0.2.0 --force'" in result.stderr
    assert "run 'pkgmgr doctor' to repair" not in result.stderr  # doctor cannot repair it
    ok("ext", "install", "review-pack@0.2.0", "--force")
    ok("doctor", "--check")


# --- ext pack --output DIR ---------------------------------------------------------------------------


def test_pack_into_an_existing_directory(home: Path, tmp_path: Path) -> None:
    from tests.cli.helpers import FIXTURES

    (tmp_path / "dist").mkdir()
    packed = ok("ext", "pack", FIXTURES / "review-pack", "--output", tmp_path / "dist")
    assert packed["path"] == str(tmp_path / "dist" / "review-pack-0.1.0.tar.gz")
    packed = ok("ext", "pack", FIXTURES / "review-pack", "--output", f"{tmp_path / 'new'}/")
    assert packed["path"] == str(tmp_path / "new" / "review-pack-0.1.0.tar.gz")
    ok("ext", "validate", packed["path"])


# --- messages: not an extension first, no internal paths -------------------------------------------


def test_a_file_that_is_no_archive_is_said_so_before_any_consent(home: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# hello\n")
    document = fail("invalid_archive", "ext", "install", readme)
    assert "not an extension archive" in document["error"]["message"]
    assert "--allow-unverified" not in human("ext", "install", readme, code=3).stderr


def test_a_directory_without_a_manifest_is_named_as_the_user_wrote_it(home: Path, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    result = human("ext", "install", tmp_path / "notes", "--allow-unverified", "--yes", code=3)
    assert f"{tmp_path / 'notes'}: not an extension directory" in result.stderr
    assert ".staging" not in result.stderr and "tx-" not in result.stderr


def test_an_http_url_is_not_told_about_an_insecure_flag_install_lacks(home: Path) -> None:
    result = human("ext", "install", "http://example.com/x.tar.gz", code=2)
    assert "--insecure" not in result.stderr and "https://" in result.stderr


# --- small things of day one ---------------------------------------------------------------------


def test_a_writer_waiting_for_the_lock_says_so_once(home: Path) -> None:
    import os

    from pkgmgr.store.lock import ExclusiveLock

    home.mkdir(parents=True)
    with ExclusiveLock(home / "state.lock", 0):
        result = human("ext", "install", "review-pack", "--lock-timeout", "0.2", code=6)
    assert result.stderr.count("waiting for another pkgmgr") == 1
    assert f"(pid {os.getpid()})" in result.stderr and "error[locked]" in result.stderr
    assert "waiting" not in human("ext", "install", "review-pack").stderr


def test_update_check_exit_code_and_list_outdated(home: Path) -> None:
    ok("ext", "install", "review-pack@0.1")
    result = human("ext", "update", "--all", "--check", "--exit-code", code=10)
    assert "update available" in result.stdout and result.stderr == ""
    assert human("ext", "update", "--all", "--check").code == 0
    fail("usage", "ext", "update", "--all", "--exit-code")
    outdated = ok("ext", "list", "--outdated")
    assert [(i["name"], i["latest"]) for i in outdated["available"]] == [("review-pack", "0.2.0")]
    ok("ext", "update", "--all")
    assert human("ext", "update", "--all", "--check", "--exit-code").code == 0
    assert human("ext", "list", "--outdated").stdout == "every installed extension is up to date\n"


def test_dash_v_prints_the_version() -> None:
    from pkgmgr import __version__

    assert human("-V").stdout == f"pkgmgr {__version__}\n"


def test_installing_lines_are_progress_on_stderr(home: Path) -> None:
    result = human("ext", "install", "review-pack")
    assert result.stdout == "installed review-pack 0.2.0 (global scope, registry, verified)\n"
    assert result.stderr.startswith("installing review-pack 0.2.0 ")


def test_quiet_trust_prints_one_line(home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pkgmgr.toml").write_text('[extensions]\nreview-pack = "*"\n')
    loud = human("trust", cwd=workspace).stdout
    (workspace / "pkgmgr.toml").write_text('[extensions]\nreview-pack = "0.1"\n')
    quiet = human("trust", "-q", cwd=workspace).stdout
    assert len(loud.splitlines()) > 1 and len(quiet.splitlines()) == 1
    assert quiet.startswith(f"approved {workspace.resolve()} at digest ")


def test_enable_help_describes_enabling() -> None:
    text = human("ext", "enable", "--help").stdout
    assert "Enable installed extensions" in text and "Disabling is refused" not in text


def test_registry_maintenance_takes_the_index_either_way(home: Path, tmp_path: Path) -> None:
    from tests.cli.helpers import FIXTURES

    index = tmp_path / "index"
    ok("registry", "init", index, "--name", "acme")
    archive = ok("ext", "pack", FIXTURES / "review-pack", "--output", tmp_path)["path"]
    assert ok("registry", "publish", archive, index)["serial"] == 1  # DIR positionally
    assert ok("registry", "publish", archive, "--index", index)["changed"] is False
    fail("usage", "registry", "publish", archive)
    fail("usage", "registry", "publish", archive, index, "--index", tmp_path)
    assert ok("registry", "yank", "--index", index, "review-pack", "0.1.0")["serial"] == 2
    assert ok("registry", "unyank", index, "review-pack", "0.1.0")["serial"] == 3
    ok("registry", "build", "--index", index)
    ok("registry", "build", index)
    ok("registry", "validate", "--index", index)
    ok("registry", "validate", index)


# --- completion and the cache --------------------------------------------------------------------------


def _complete(script: str, words: list[str], home: Path) -> list[str]:
    import os
    import shlex
    import subprocess
    import sys

    line = " ".join(shlex.quote(w) for w in words)
    program = f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _pkgmgr; printf "%s\\n" "${{COMPREPLY[@]}}"'
    env = {**os.environ, "PKGMGR_HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completion_completes_commands_options_and_installed_names(home: Path) -> None:
    ok("ext", "install", "review-pack")
    script = human("completion", "bash").stdout
    assert _complete(script, ["pkgmgr", "ex"], home) == ["ext"]
    assert _complete(script, ["pkgmgr", "ext", "ins"], home) == ["install"]
    assert _complete(script, ["pkgmgr", "ext", "install", "--allow-u"], home) == ["--allow-unverified"]
    assert _complete(script, ["pkgmgr", "--home", str(home), "ext", "status", "rev"], home) == ["review-pack"]
    assert _complete(script, ["pkgmgr", "uninstall", "rev"], home) == ["review-pack"]
    for shell in ("zsh", "fish"):
        assert "pkgmgr completion names" in human("completion", shell).stdout
    assert human("completion", "names").stdout == "review-pack\n"


def test_cache_list_and_clean(home: Path, tmp_path: Path) -> None:
    import os

    regdir = RegistryDir(tmp_path / "index", "acme")
    regdir.publish("demo-ext", "0.1.0")
    ok("registry", "add", "acme", regdir.root)
    ok("ext", "install", "review-pack@0.1.0")
    ok("ext", "install", "review-pack@0.2.0")
    listed = ok("cache", "list")
    assert len(listed["downloads"]) == 2
    old = Path(listed["downloads"][0]["path"])
    os.utime(old, (0, 0))  # unused since 1970
    cleaned = ok("cache", "clean", "--older-than", "30")["removed"]
    assert cleaned["downloads"] == 1 and not old.exists()
    assert len(ok("cache", "list")["downloads"]) == 1
    ok("cache", "clean")
    assert ok("cache", "list") == {"downloads": [], "registries": []}
    assert human("cache", "list").stdout.startswith("the cache is empty")
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["review-pack"]  # installs untouched
    ok("ext", "install", "review-pack@0.1.0")  # and the cache fills again


def test_status_shows_hooks_skills_and_mcp_servers(home: Path) -> None:
    ok("ext", "install", "review-pack")
    status = ok("ext", "status", "review-pack")
    assert [h["event"] for h in status["hooks"]] == ["session.post_create", "prompt.post_assemble"]
    assert [m["name"] for m in status["mcp_servers"]] == ["git"] and status["skills"]
    text = human("ext", "status", "review-pack").stdout
    assert "HOOK" in text and "session.post_create" in text and "MCP SERVER" in text
    assert "uvx mcp-server-git" in text and "skills:" in text


# --- reads show every visible scope ------------------------------------------------------------------


def test_reads_inside_a_workspace_show_it_beside_global(home: Path, tmp_path: Path) -> None:
    ok("ext", "install", "review-pack")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    digest = "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4"  # its network requirement's
    (workspace / "pkgmgr.toml").write_text(
        '[extensions]\nmarketing-linear = "*"\n[[activations]]\nextension = "marketing-linear"\n'
        f'profile = "default"\nconfirm_network_requirement = "{digest}"\n')
    ok("trust", cwd=workspace)
    ok("sync", cwd=workspace)
    listed = ok("ext", "list", cwd=workspace)["extensions"]
    assert [(e["name"], e["scope"]) for e in listed] == [("marketing-linear", "workspace"), ("review-pack", "global")]
    text = human("ext", "list", cwd=workspace).stdout
    assert "SCOPE" in text and "workspace" in text
    assert [a["scope"] for a in ok("bundle", "list", cwd=workspace)["activations"]] == ["workspace"]
    assert {r["scope"] for r in ok("resources", "list", cwd=workspace)["resources"]} == {"workspace"}
    assert ok("ext", "status", "marketing-linear", cwd=workspace)["scope"] == "workspace"
    # --scope narrows; outside the workspace only global is visible
    assert [e["name"] for e in ok("--scope", "global", "ext", "list", cwd=workspace)["extensions"]] == [
        "review-pack"]
    assert [e["name"] for e in ok("ext", "list", cwd=tmp_path)["extensions"]] == ["review-pack"]
    assert [e["name"] for e in ok("--workspace", workspace, "ext", "list", cwd=tmp_path)["extensions"]] == [
        "marketing-linear", "review-pack"]


def test_a_workspace_option_that_does_not_exist_is_an_error_for_reads(home: Path, tmp_path: Path) -> None:
    for argv in (["ext", "list"], ["bundle", "list"], ["resources", "list"]):
        fail("not_found", "--workspace", tmp_path / "nonexistent", *argv)
    assert not home.exists()


# --- authoring: ext new ------------------------------------------------------------------------------


@pytest.mark.parametrize("template, kind, bundles", [("resource", "resource", 0), ("subprocess", "subprocess", 0),
                                                     ("bundle", "resource", 1)])
def test_a_new_extension_validates_packs_and_installs_as_it_is(template: str, kind: str, bundles: int,
                                                               home: Path, tmp_path: Path) -> None:
    name = f"my-{template}"
    created = ok("ext", "new", name, "--template", template, cwd=tmp_path)
    root = Path(created["path"])
    assert root == tmp_path / name and "extension.toml" in created["files"]
    valid = ok("ext", "validate", root)
    assert (valid["name"], valid["kind"], len(valid["bundles"])) == (name, kind, bundles)
    packed = ok("ext", "pack", root, "--output", tmp_path / "dist")
    [installed] = ok("ext", "install", packed["path"], "--allow-unverified", "--yes")["installed"]
    assert (installed["name"], installed["version"]) == (name, "0.1.0")
    if bundles:
        activated = ok("bundle", "activate", name)["activation"]
        assert activated["status"] == "active"


def test_ext_new_refuses_a_bad_name_and_a_directory_in_use(home: Path, tmp_path: Path) -> None:
    fail("usage", "ext", "new", "My_Ext", cwd=tmp_path)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine\n")
    fail("usage", "ext", "new", "taken", cwd=tmp_path)
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["keep.txt"]
    assert ok("ext", "new", "other", "--path", tmp_path / "elsewhere")["path"] == str(tmp_path / "elsewhere")


def test_a_misspelt_agent_and_a_wrong_shape_say_what_was_meant(home: Path, tmp_path: Path) -> None:
    root = Path(ok("ext", "new", "my-crew", "--template", "bundle", cwd=tmp_path)["path"])
    bundle = root / "bundles" / "my-crew.toml"
    original = bundle.read_text()
    bundle.write_text(original.replace('[profiles.jobs.schedule]\nmode = "every"\ninterval = "24h"\n',
                                       'schedule = "daily"\n'))
    message = fail("invalid_bundle", "ext", "validate", root)["error"]["message"]
    assert "jobs[0].schedule: must be of type object (a table with the keys mode, expr, interval, time, catch_up_policy, misfire_grace_seconds)" in message
    bundle.write_text(original.replace('agent = "assistant"', 'agent = "asistant"'))
    ok("ext", "install", root, "--allow-unverified", "--yes")
    message = fail("agent_reference_not_found", "bundle", "activate", "my-crew")["error"]["message"]
    assert "did you mean 'assistant'?" in message


def test_a_mistyped_activation_id_and_registry_name_get_the_closest(home: Path, tmp_path: Path) -> None:
    root = Path(ok("ext", "new", "my-crew", "--template", "bundle", cwd=tmp_path)["path"])
    ok("ext", "install", root, "--allow-unverified", "--yes")
    act = ok("bundle", "activate", "my-crew")["activation"]["id"]
    typo = act[:-1] + ("0" if act[-1] != "0" else "1")
    document = fail("not_found", "bundle", "show", typo)
    assert document["error"]["details"]["suggestions"] == [act]
    assert "did you mean default?" in human("ext", "search", "--registry", "defualt", code=5).stderr


def test_errors_are_red_on_a_colour_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from pkgmgr.cli.output import print_error
    from pkgmgr.errors import PkgmgrError

    error = PkgmgrError("x is not installed", code="not_found")
    monkeypatch.delenv("NO_COLOR", raising=False)
    terminal, pipe = Terminal(), io.StringIO()
    print_error(error, terminal)
    print_error(error, pipe)
    assert terminal.getvalue() == "\x1b[31merror[not_found]\x1b[0m: x is not installed\n"
    assert pipe.getvalue() == "error[not_found]: x is not installed\n"
    monkeypatch.setenv("NO_COLOR", "1")
    plain = Terminal()
    print_error(error, plain)
    assert plain.getvalue() == pipe.getvalue()
