"""User experience, round 3 (issue 29), run the way the users ran it: through the real entry point,
in-process, against the shipped `default` registry and local ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pkgmgr.cli.app import global_options
from tests.cli.helpers import FIXTURES, fail, human, install, ok

# --- global options before or after the command (SPEC 11) ---------------------------------------


def _global_spellings() -> list[list[str]]:
    """Every global option of SPEC 11, with a value where it takes one."""
    values = {"-o": "human", "--home": None, "--workspace": None, "--scope": "global", "--lock-timeout": "5"}
    spellings = []
    for action in global_options()._actions:
        for option in action.option_strings:
            if option in ("-V", "--version"):
                continue  # prints the version: below
            spellings.append([option] if option not in values else [option, values[option] or "HOME"])
    return spellings


@pytest.mark.parametrize("option", _global_spellings(), ids=lambda o: o[0])
@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_every_global_option_is_accepted_before_and_after_the_command(option: list[str], before: bool,
                                                                      home: Path, tmp_path: Path) -> None:
    option = [str(home) if word == "HOME" else word for word in option]
    if option[0] == "--workspace":
        option = ["--workspace", str(tmp_path)]
    command = ["ext", "list"]
    result = human(*(option + command if before else command + option))
    assert "error" not in result.stderr


def test_yes_before_the_command_answers_the_prompt(home: Path) -> None:
    result = human("-y", "ext", "install", FIXTURES / "review-pack", "--allow-unverified")
    assert "installed review-pack 0.1.0" in result.stdout


@pytest.mark.parametrize("argv", [["-V", "ext", "list"], ["ext", "list", "-V"], ["ext", "install", "x", "--version"]])
def test_the_version_option_is_global_too(argv: list[str]) -> None:
    from pkgmgr import __version__

    assert human(*argv).stdout == f"pkgmgr {__version__}\n"


@pytest.mark.parametrize("argv", [["ext", "list"], ["ext", "install", "review-pack"], ["registry", "list"],
                                  ["cache", "list"], ["sync"]])
def test_a_workspace_that_does_not_exist_is_not_found_whatever_the_command(argv: list[str], home: Path,
                                                                          tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    document = fail("not_found", "--workspace", missing, *argv)
    assert document["error"]["message"] == f"--workspace {missing}: does not exist"
    assert not (home / "state.db").exists()  # nothing was installed in the global scope instead


# --- did you mean, for every command taking an installed name (SPEC 11) -------------------------


@pytest.mark.parametrize("argv", [
    ["ext", "remove", "revew-pack"], ["ext", "rm", "revew-pack"], ["uninstall", "revew-pack"],
    ["ext", "status", "revew-pack"], ["ext", "verify", "revew-pack"], ["ext", "update", "revew-pack"],
    ["ext", "enable", "revew-pack"], ["ext", "disable", "revew-pack"], ["ext", "remove", "--dry-run", "revew-pack"],
    ["bundle", "preview", "marketing-linaer"], ["bundle", "activate", "marketing-linaer:marketing-linear/default"],
])
def test_a_misspelt_installed_name_gets_did_you_mean(argv: list[str], home: Path) -> None:
    install("review-pack", "marketing-linear")
    document = fail("not_found", *argv)
    error = document["error"]
    wanted = "review-pack" if "revew-pack" in argv else "marketing-linear"
    assert error["details"]["suggestions"] == [wanted], error
    assert f"did you mean {wanted}?" in error["message"]
    assert len(ok("ext", "list")["extensions"]) == 2  # nothing was removed


def test_did_you_mean_names_the_name_that_failed_among_several(home: Path) -> None:
    install("review-pack", "marketing-linear")
    document = fail("not_found", "ext", "remove", "marketing-linear", "revew-pack")
    assert document["error"]["details"]["suggestions"] == ["review-pack"]
    assert [r["name"] for r in document["removed"]] == ["marketing-linear"]  # each name on its own (SPEC 4)


def test_the_hint_of_a_name_not_installed_works_as_printed(home: Path) -> None:
    result = human("ext", "status", "marketing-linear", code=5)
    assert ("hint: 'pkgmgr ext list' shows what is installed, 'pkgmgr ext search marketing-linear' what the "
            "registries offer") in result.stderr
    assert "marketing-linear" in human("ext", "search", "marketing-linear").stdout


# --- --scope workspace where there is no workspace (SPEC 10, 11) --------------------------------


def test_a_workspace_install_where_no_pkgmgr_toml_is_refused_and_its_hint_works(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "user-home" / "project"
    folder.mkdir(parents=True)
    result = human("--scope", "workspace", "ext", "install", "review-pack", code=5, cwd=folder)
    assert f"error[not_found]: {folder} is not in a workspace" in result.stderr
    assert not (home / "workspaces").exists()  # no store was created
    hint = result.stderr.split("hint: '", 1)[1].split("'", 1)[0]
    assert hint == "pkgmgr ext install review-pack --save"
    human(*hint.split()[1:], cwd=folder)
    assert (folder / "pkgmgr.toml").is_file()
    # the plain read in the same folder now shows it
    listed = ok("ext", "list", cwd=folder)["extensions"]
    assert [(e["name"], e["scope"]) for e in listed] == [("review-pack", "workspace")]


def test_other_workspace_commands_where_no_pkgmgr_toml_are_refused_too(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "user-home" / "project"
    folder.mkdir(parents=True)
    for argv in (["bundle", "activate", "marketing-linear"], ["ext", "remove", "review-pack"]):
        document = fail("not_found", "--scope", "workspace", *argv, cwd=folder)
        assert "is not in a workspace" in document["error"]["message"]
    assert not (home / "workspaces").exists()


def test_a_named_workspace_without_pkgmgr_toml_is_still_accepted(home: Path, tmp_path: Path) -> None:
    """--workspace DIR names the workspace: the reads given the same option show what is there."""
    install(FIXTURES / "review-pack", extra=("--scope", "workspace", "--workspace", str(tmp_path)))
    listed = ok("--workspace", tmp_path, "ext", "list")["extensions"]
    assert [(e["name"], e["scope"]) for e in listed] == [("review-pack", "workspace")]


# --- bundle show: what the operator must review (issue 29) --------------------------------------


def _marketing(tmp_path: Path, version: str, scopes: list[str]) -> Path:
    """marketing-linear at `version` with these channel scopes, in one working folder."""
    import shutil

    root = tmp_path / "marketing-linear"
    if not root.exists():
        shutil.copytree(FIXTURES / "marketing-linear", root)
    manifest = root / "extension.toml"
    text = (FIXTURES / "marketing-linear" / "extension.toml").read_text(encoding="utf-8")
    text = text.replace('version = "0.1.0"', f'version = "{version}"')
    manifest.write_text(text.replace('["builders", "release"]', repr(scopes).replace("'", '"')), encoding="utf-8")
    return root


def test_activate_prints_the_confirm_command_once(home: Path) -> None:
    install("marketing-linear")
    result = human("bundle", "activate", "marketing-linear", code=8)
    both = result.stdout + result.stderr
    assert both.count("bundle confirm act_712b93dfeb2df097 --expected-version 1") == 1, both
    assert "channel scopes:    builders, release" in result.stdout


def test_show_of_a_new_activation_says_what_to_review(home: Path) -> None:
    install("marketing-linear")
    human("bundle", "activate", "marketing-linear", code=8)
    result = human("bundle", "show", "act_712b93dfeb2df097")
    lines = result.stdout.splitlines()
    assert "network mode:      live" in lines
    assert "channel scopes:    builders, release" in lines
    assert "network digest:    884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4" in lines
    assert "since confirmed:   nothing was confirmed before: all of the requirement above is new" in lines
    assert result.stdout.count("pkgmgr bundle confirm act_712b93dfeb2df097 --expected-version 1") == 1
    document = ok("bundle", "show", "act_712b93dfeb2df097")
    assert document["network_requirement"] == {"required": True, "mode": "live",
                                               "channel_scopes": ["builders", "release"]}
    assert document["confirmation"] == {"state": "never_confirmed"}


def test_show_after_an_update_that_changed_the_requirement(home: Path, tmp_path: Path) -> None:
    install(_marketing(tmp_path, "0.1.0", ["builders", "release"]))
    ok("bundle", "activate", "marketing-linear", "--confirm-network-requirement",
       "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4")
    result = human("ext", "install", _marketing(tmp_path, "0.2.0", ["builders", "deploy", "release"]),
                   "--allow-unverified", "--yes", code=8)
    assert "switched marketing-linear from 0.1.0 to 0.2.0" in result.stdout
    document = ok("bundle", "show", "act_712b93dfeb2df097")
    assert document["activation"]["status"] == "awaiting_confirmation"
    assert document["network_requirement"]["channel_scopes"] == ["builders", "deploy", "release"]
    # what changed since the confirmation: kept when the update withdrew it
    assert document["confirmation"] == {"state": "changed", "changed_at_version": 2, "extension_version": "0.2.0",
                                        "since_confirmed": {"scopes_added": ["deploy"], "scopes_removed": []}}
    shown = human("bundle", "show", "act_712b93dfeb2df097").stdout
    assert "channel scopes:    builders, deploy, release" in shown
    assert ("since confirmed:   changed at version 2 (extension 0.2.0): channel scopes added: deploy; "
            "removed: (none); mode unchanged") in shown
    ok("bundle", "confirm", "act_712b93dfeb2df097", "--expected-version", "2")
    human("ext", "install", _marketing(tmp_path, "0.3.0", ["builders"]), "--allow-unverified", "--yes", code=8)
    third = ok("bundle", "show", "act_712b93dfeb2df097")["confirmation"]  # compared with the last confirmed
    assert third["since_confirmed"] == {"scopes_added": [], "scopes_removed": ["deploy", "release"]}
    assert "pkgmgr bundle confirm act_712b93dfeb2df097 --expected-version 2" in shown


def test_show_of_a_confirmation_carried_over_an_update(home: Path, tmp_path: Path) -> None:
    install(_marketing(tmp_path, "0.1.0", ["builders", "release"]))
    ok("bundle", "activate", "marketing-linear", "--confirm-network-requirement",
       "884e12e90219f5ea6d75d52448adb1378cb4e6c4c5758d74994bd4504ee178d4")
    changed = _marketing(tmp_path, "0.2.0", ["builders", "release"])
    (changed / "bundles").joinpath("unused.txt").write_text("x", encoding="utf-8")  # same projection
    install(changed)
    document = ok("bundle", "show", "act_712b93dfeb2df097")
    assert document["confirmation"]["state"] == "confirmed"


# --- the smaller points (issue 29) -------------------------------------------------------------


def _at_a_terminal(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    """stdout is an 80-column terminal, as in the user's tmux."""
    monkeypatch.setattr("pkgmgr.cli.output.isatty", lambda stream: True)
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setenv("NO_COLOR", "1")


def test_registry_list_fits_80_columns(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import tempfile

    from tests.support.signed import signed_index

    # a path is printed whole on its own line: this one stays short however deep pytest's tmp_path is
    short = Path(tempfile.mkdtemp(prefix="ix"))
    try:
        _registry_list_fits_80_columns(signed_index(short / "index", name="signedacme"), monkeypatch)
    finally:
        shutil.rmtree(short)


def _registry_list_fits_80_columns(index: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ok("registry", "add", "signedacme", index.path, "--root", index.root_file)
    ok("registry", "add", "team", "https://extensions.example.com/some/long/path/index/", "--no-check")
    _at_a_terminal(monkeypatch, 80)
    lines = human("registry", "list").stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, lines
    assert "  https://extensions.example.com/some/long/path/index/" in lines
    assert any(line.startswith(f"signedacme: signed, root {index.root_sha256()[:12]}, expires ") for line in lines)
    _at_a_terminal(monkeypatch, 200)  # wide enough: the table
    assert human("registry", "list").stdout.splitlines()[0].split() == ["NAME", "PRIORITY", "SERIAL", "SOURCE"]


def test_quiet_publish_prints_one_line(home: Path, tmp_path: Path) -> None:
    from tests.publish.helpers import packed

    ok("registry", "init", tmp_path / "index", "--name", "acme")
    result = human("-q", "registry", "publish", packed(tmp_path, version="0.1.0"), "--index", tmp_path / "index")
    assert result.stdout == f"published review-pack 0.1.0 to {tmp_path / 'index'} (serial 1)\n"


def test_trust_required_says_which_file_changed(home: Path, tmp_path: Path) -> None:
    """Approved at a time before the edit (the approval is moved back rather than the test waiting)."""
    import sqlite3

    ws = tmp_path / "user-home" / "project"
    ws.mkdir(parents=True)
    (ws / "pkgmgr.toml").write_text('[extensions]\nreview-pack = "<0.2"\n', encoding="utf-8")
    document = fail("trust_required", "sync", cwd=ws)
    assert document["error"]["message"].endswith("has not been approved yet")
    ok("trust", cwd=ws)
    conn = sqlite3.connect(home / "state.db")
    with conn:
        conn.execute("UPDATE trust_approvals SET approved_at = '2020-01-01T00:00:00Z', approved_by = 'alice'")
    conn.close()
    (ws / "pkgmgr.toml").write_text('[extensions]\nreview-pack = "*"\n', encoding="utf-8")
    document = fail("trust_required", "sync", cwd=ws)
    assert document["error"]["message"].endswith(
        "changed since it was approved (by alice at 2020-01-01T00:00:00Z): pkgmgr.toml changed after it")
    assert document["error"]["details"]["changed"] == ["pkgmgr.toml"]


def test_changed_since_names_only_what_changed_after_the_approval(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from pkgmgr.workspace.trust import changed_since

    (tmp_path / "tools" / "t").mkdir(parents=True)
    (tmp_path / "tools" / "t" / "run.sh").write_text("x", encoding="utf-8")
    (tmp_path / "pkgmgr.toml").write_text("x", encoding="utf-8")
    future = datetime.fromtimestamp(datetime.now(UTC).timestamp() + 3600, UTC).isoformat().replace("+00:00", "Z")
    assert changed_since(tmp_path, future, ["pkgmgr.toml", "pkgmgr.lock", "tools/t"]) == []
    assert changed_since(tmp_path, "2020-01-01T00:00:00Z", ["pkgmgr.toml", "pkgmgr.lock", "tools/t"]) == [
        "pkgmgr.toml", "tools/t", "tools/t/run.sh"]
