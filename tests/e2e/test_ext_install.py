"""End-to-end install semantics of SPEC 4 and the trust policy of SPEC 7, through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import FIXTURES, UNVERIFIED, fail, human, install, ok, tree
from tests.support.builders import minimal_manifest, write_extension
from tests.support.cli import run_cli
from tests.support.stores import store_root


def make(root: Path, version: str = "0.1.0", *, name: str = "demo-ext", note: str = "one\n", **extra) -> Path:
    """An extension directory (rewritten in place when it exists)."""
    return write_extension(root, minimal_manifest(name=name, version=version, **extra), files={"note.txt": note})


def versions(home: Path, name: str = "demo-ext") -> list[str]:
    return sorted(p.name for p in (home / "extensions" / name).iterdir())


# --- same version, other content, other source, other version --------------------------------------


def test_same_version_and_content_again_is_a_no_op(tmp_path: Path, home: Path) -> None:
    source = make(tmp_path / "src")
    install(source)
    before = ok("ext", "status", "demo-ext")
    again = install(source)
    assert again["installed"] == [] and again["failed"] == []
    [entry] = again["unchanged"]
    assert (entry["name"], entry["version"], entry["action"]) == ("demo-ext", "0.1.0", "unchanged")
    assert ok("ext", "status", "demo-ext")["provenance"] == before["provenance"]  # not even re-timestamped
    assert versions(home) == ["0.1.0"]
    assert human("ext", "install", source, *UNVERIFIED).stdout.startswith("already installed: demo-ext 0.1.0")


def test_same_version_other_content_is_a_source_conflict_unless_forced(tmp_path: Path, home: Path) -> None:
    source = make(tmp_path / "src")
    install(source)
    make(source, note="two\n")
    document = fail("source_conflict", "ext", "install", source, *UNVERIFIED)
    assert document["error"]["exit_code"] == 6
    assert document["failed"][0]["name"] == "demo-ext"
    assert (home / "extensions" / "demo-ext" / "0.1.0" / "note.txt").read_text() == "one\n"
    [entry] = install(source, extra=("--force",))["installed"]
    assert (entry["action"], entry["previous_version"]) == ("reinstalled", "0.1.0")
    status = ok("ext", "status", "demo-ext")
    assert Path(status["path"], "note.txt").read_text() == "two\n"
    assert Path(status["path"]).name == "0.1.0~" + status["tree_sha256"].removeprefix("sha256-2:")[:12]
    assert len(versions(home)) == 1  # the replaced tree is gone
    assert ok("ext", "verify", "demo-ext")["verified"][0]["ok"] is True
    # and forcing it back to the first content again
    make(source, note="one\n")
    install(source, extra=("--force",))
    assert Path(ok("ext", "status", "demo-ext")["path"], "note.txt").read_text() == "one\n"
    assert len(versions(home)) == 1
    assert ok("doctor", "--check")["ok"] is True


def test_another_source_is_a_source_conflict_unless_forced(tmp_path: Path) -> None:
    source = make(tmp_path / "src")
    install(source)
    archive = tmp_path / "demo.tar.gz"
    ok("ext", "pack", source, "--output", archive)
    document = fail("source_conflict", "ext", "install", archive, *UNVERIFIED)
    assert str(source) in document["error"]["message"] and str(archive) in document["error"]["message"]
    assert ok("ext", "status", "demo-ext")["provenance"]["source"] == "path"
    forced = install(archive, extra=("--force",))
    [entry] = forced["installed"]
    assert (entry["source"], entry["action"]) == ("archive", "reinstalled")
    provenance = ok("ext", "status", "demo-ext")["provenance"]
    assert (provenance["source"], provenance["source_url"]) == ("archive", str(archive))
    # from now on the archive is the source: installing it again is a no-op, the directory conflicts
    assert install(archive)["unchanged"][0]["source"] == "archive"
    fail("source_conflict", "ext", "install", source, *UNVERIFIED)
    # another directory with the same content is another source too
    other = make(tmp_path / "elsewhere")
    fail("source_conflict", "ext", "install", other, *UNVERIFIED)


def test_another_version_switches_and_keeps_only_the_one_it_replaced(tmp_path: Path, home: Path) -> None:
    source = make(tmp_path / "src")
    install(source)
    make(source, "0.2.0")
    [entry] = install(source)["installed"]
    assert (entry["version"], entry["action"], entry["previous_version"]) == ("0.2.0", "switched", "0.1.0")
    assert versions(home) == ["0.1.0", "0.2.0"]  # 0.1.0 kept for `ext rollback`
    assert [(e["name"], e["version"]) for e in ok("ext", "list")["extensions"]] == [("demo-ext", "0.2.0")]
    make(source, "0.1.0")  # a downgrade is a switch too: it lands where the kept 0.1.0 was
    assert install(source)["installed"][0]["action"] == "switched"
    assert versions(home) == ["0.1.0", "0.2.0"]
    assert ok("ext", "status", "demo-ext")["previous"]["version"] == "0.2.0"
    result = human("ext", "install", make(source, "0.3.0"), *UNVERIFIED)
    assert result.stderr.startswith("installing demo-ext 0.3.0 (resource extension, source path, unverified)\n")
    assert result.stdout.startswith("switched demo-ext from 0.1.0 to 0.3.0")


def test_switch_keeps_the_enabled_flag(tmp_path: Path) -> None:
    source = make(tmp_path / "src")
    install(source)
    ok("ext", "disable", "demo-ext")
    install(make(source, "0.2.0"))
    assert ok("ext", "status", "demo-ext")["enabled"] is False


def test_bare_name_already_installed_is_left_as_it_is(tmp_path: Path, home: Path) -> None:
    install(FIXTURES / "review-pack")
    document = ok("ext", "install", "review-pack")
    assert document["installed"] == [] and document["failed"] == []
    [skipped] = document["skipped"]
    assert (skipped["name"], skipped["version"]) == ("review-pack", "0.1.0")
    assert "already installed" in skipped["reason"] and "ext update" in skipped["reason"]
    result = human("ext", "install", "review-pack")
    assert "review-pack 0.1.0 is already installed" in result.stdout


def test_missing_path_is_not_found(tmp_path: Path, home: Path) -> None:
    document = fail("not_found", "ext", "install", tmp_path / "nothing", *UNVERIFIED)
    assert document["error"]["exit_code"] == 5
    assert not home.exists()


def test_a_file_that_is_not_an_archive(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    fail("invalid_archive", "ext", "install", path, *UNVERIFIED)


# --- several refs ---------------------------------------------------------------------------------


def test_several_refs_commit_in_order_and_report_the_first_failure(tmp_path: Path, home: Path) -> None:
    broken = write_extension(tmp_path / "broken", minimal_manifest(name="broken-ext", version="1.0"))
    refs = [FIXTURES / "review-pack", broken, tmp_path / "missing", FIXTURES / "prompt-enhancer"]
    document = fail("invalid_manifest", "ext", "install", *refs, *UNVERIFIED)  # all or nothing
    assert [(f["ref"], f["error"]["code"]) for f in document["failed"]] == [
        (str(broken), "invalid_manifest"), (str(tmp_path / "missing"), "not_found")]
    assert [s["name"] for s in document["skipped"]] == ["review-pack", "prompt-enhancer"]
    assert document["installed"] == [] and not (home / "state.db").exists()
    document = fail("invalid_manifest", "ext", "install", *refs, *UNVERIFIED, "--keep-going")
    assert document["error"]["exit_code"] == 3
    assert [e["name"] for e in document["installed"]] == ["review-pack", "prompt-enhancer"]
    assert [(f["ref"], f["error"]["code"]) for f in document["failed"]] == [
        (str(broken), "invalid_manifest"), (str(tmp_path / "missing"), "not_found")]
    assert document["failed"][0]["error"] == document["error"]
    assert [e["name"] for e in ok("ext", "list")["extensions"]] == ["prompt-enhancer", "review-pack"]
    # the order of the arguments decides which failure is the error
    document = fail("not_found", "ext", "install", tmp_path / "missing", broken, *UNVERIFIED)
    assert [f["error"]["code"] for f in document["failed"]] == ["not_found", "invalid_manifest"]


def test_several_refs_human_output_lists_each_outcome(tmp_path: Path) -> None:
    result = run_cli(["ext", "install", FIXTURES / "review-pack", tmp_path / "missing", *UNVERIFIED, "--keep-going"])
    assert result.code == 5
    assert "installed review-pack 0.1.0" in result.stdout
    assert f"failed {tmp_path / 'missing'}: [not_found]" in result.stdout
    assert result.stderr.splitlines()[-1].startswith("error[not_found]")


def test_a_batch_where_everything_fails(tmp_path: Path, home: Path) -> None:
    document = fail("not_found", "ext", "install", tmp_path / "a", tmp_path / "b", *UNVERIFIED)
    assert len(document["failed"]) == 2 and document["installed"] == []
    assert not home.exists()


# --- trust policy (SPEC 7) ---------------------------------------------------------------------------


def test_unverified_source_needs_allow_unverified(home: Path) -> None:
    document = fail("unverified_source", "ext", "install", FIXTURES / "review-pack")
    assert document["error"]["exit_code"] == 4 and "--allow-unverified" in run_cli(
        ["ext", "install", FIXTURES / "review-pack"]).stderr
    assert not home.exists()


def test_allow_unverified_without_yes_and_without_a_terminal(home: Path) -> None:
    document = fail("unverified_source", "ext", "install", FIXTURES / "review-pack", "--allow-unverified")
    assert "--yes" in run_cli(["ext", "install", FIXTURES / "review-pack", "--allow-unverified"]).stderr
    assert document["installed"] == []
    assert not home.exists()


@pytest.mark.parametrize("answer, code", [("y\n", 0), ("yes\n", 0), ("n\n", 4), ("\n", 4)])
def test_a_terminal_is_asked(answer: str, code: int, monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    import pkgmgr.cli.context as context

    monkeypatch.setattr(context, "isatty", lambda stream: True)
    result = run_cli(["ext", "install", FIXTURES / "prompt-enhancer", "--allow-unverified"], stdin=answer)
    assert result.code == code, result
    assert "[y/N]" in result.stderr
    assert "permissions: session.read" in result.stderr and "subprocess:  node dist/index.js serve" in result.stderr
    installed = [e["name"] for e in ok("ext", "list")["extensions"]]
    assert installed == (["prompt-enhancer"] if code == 0 else [])
    if code:
        assert "error[unverified_source]" in result.stderr


def test_policy_forbids_unverified_sources_even_with_the_flags(home: Path) -> None:
    home.mkdir()
    (home / "config.toml").write_text("[policy]\nallow_unverified = false\n")
    document = fail("unverified_source", "ext", "install", FIXTURES / "review-pack", *UNVERIFIED)
    assert "policy.allow_unverified" in document["error"]["message"]
    assert sorted(p.name for p in home.iterdir()) == ["config.toml"]


def test_grants_beyond_the_read_only_set_need_allow_grants(tmp_path: Path, home: Path) -> None:
    source = make(tmp_path / "src", security={"capabilities": ["session.read", "session.write", "memory.*"]})
    document = fail("grant_not_allowed", "ext", "install", source, *UNVERIFIED)
    assert document["error"]["exit_code"] == 4
    assert document["error"]["details"]["grants"] == ["memory.*", "session.write"]
    assert "session.write" in document["error"]["message"] and "memory.*" in document["error"]["message"]
    assert tree(home / "extensions") == []
    install(source, extra=("--allow-grants",))
    assert ok("ext", "status", "demo-ext")["grants"] == ["session.read", "session.write", "memory.*"]


def test_read_only_grants_need_no_flag(tmp_path: Path) -> None:
    grants = ["logs.read", "memory.read", "model.read", "observe.read", "session.read", "skills.read", "tool.read"]
    install(make(tmp_path / "src", security={"capabilities": grants}))
    assert ok("ext", "status", "demo-ext")["grants"] == grants


def test_max_scope_is_narrowed_to_workspace_for_a_direct_source(tmp_path: Path) -> None:
    source = make(tmp_path / "src", resources={"publish": {"families": ["skills"], "max_scope": "global"}})
    install(source)
    assert ok("ext", "status", "demo-ext")["max_scope"] == "workspace"


def test_incompatible_host_is_refused(tmp_path: Path, home: Path) -> None:
    source = make(tmp_path / "src")
    fail("incompatible_host", "ext", "install", source, *UNVERIFIED, env={"PKGMGR_HOST_VERSION": "0.4.9"})
    assert tree(home / "extensions") == []
    install(source, env={"PKGMGR_HOST_VERSION": "0.5.0"})


# --- dry run, pin ----------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["global", "workspace"])
def test_dry_run_writes_nothing_and_shows_the_summary(scope: str, tmp_path: Path, home: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    where = ("--scope", "workspace", "--workspace", workspace) if scope == "workspace" else ()
    document = ok("ext", "install", FIXTURES / "prompt-enhancer", FIXTURES / "marketing-linear", "--dry-run",
                  *UNVERIFIED, *where)
    assert document["installed"] == [] and document["failed"] == []
    enhancer, marketing = document["planned"]
    assert enhancer == {
        "ref": str(FIXTURES / "prompt-enhancer"), "name": "prompt-enhancer", "version": "0.1.0", "source": "path",
        "verified": False, "kind": "subprocess", "permissions": ["session.read"],
        "subprocess": "node dist/index.js serve", "network_requirement": None, "network_digest": "",
        "max_scope": None,
    }
    assert marketing["network_requirement"] == {"required": True, "mode": "live",
                                                "channel_scopes": ["builders", "release"]}
    assert len(marketing["network_digest"]) == 64
    assert not home.exists() and not store_root(workspace).exists()
    text = human("ext", "install", FIXTURES / "prompt-enhancer", FIXTURES / "marketing-linear", "--dry-run",
                 *UNVERIFIED, *where).stdout
    assert f"would install into the {scope} scope:" in text
    assert "permissions: session.read" in text and "subprocess:  node dist/index.js serve" in text
    assert "network:     required, mode live, builders, release" in text
    assert not home.exists() and not store_root(workspace).exists()


def test_dry_run_reports_what_would_fail(tmp_path: Path, home: Path) -> None:
    source = make(tmp_path / "src", security={"capabilities": ["session.write"]})
    fail("grant_not_allowed", "ext", "install", source, "--dry-run", *UNVERIFIED)
    assert not home.exists()


def test_pin_is_recorded_and_cleared_by_an_install_without_pin(tmp_path: Path) -> None:
    source = make(tmp_path / "src")
    install(source, extra=("--pin",))
    assert ok("ext", "list")["extensions"][0]["pinned"] is True
    assert ok("ext", "status", "demo-ext")["provenance"]["pinned"] is True
    assert "0.1.0 (pinned)" in human("ext", "list").stdout
    install(source)
    assert ok("ext", "list")["extensions"][0]["pinned"] is False
    install(source, extra=("--pin",))
    install(make(source, "0.2.0"))  # a switch without --pin clears it too
    assert ok("ext", "list")["extensions"][0]["pinned"] is False
    install(make(source, "0.3.0"), extra=("--pin",))
    assert ok("ext", "list")["extensions"][0]["pinned"] is True


# --- the summary before acting (SPEC 7) ------------------------------------------------------------


def test_the_summary_is_shown_before_anything_is_committed(home: Path) -> None:
    from tests.support.cli import run_subprocess

    # killed just before the commit: the operator has already seen what was about to be installed
    result = run_subprocess(["ext", "install", FIXTURES / "prompt-enhancer", *UNVERIFIED],
                            env={"PKGMGR_HOME": str(home), "PKGMGR_TEST_CRASH_AT": "install.before_commit"})
    assert result.code == -9, result
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "installing prompt-enhancer 0.1.0 (subprocess extension, source path, unverified)",
        "  permissions: session.read",
        "  subprocess:  node dist/index.js serve",
    ]
    assert ok("ext", "list")["extensions"] == []


def test_each_summary_comes_once_and_json_and_quiet_carry_none(home: Path) -> None:
    result = human("ext", "install", FIXTURES / "prompt-enhancer", FIXTURES / "marketing-linear", *UNVERIFIED)
    lines, text = result.stderr.splitlines(), result.stderr
    assert lines.index("installing prompt-enhancer 0.1.0 (subprocess extension, source path, unverified)") \
        < lines.index("installing marketing-linear 0.1.0 (resource extension, source path, unverified)")
    assert "installed prompt-enhancer 0.1.0 (global scope, path, unverified)" in result.stdout.splitlines()
    assert text.count("permissions: session.read") == 1 and text.count("network:     required") == 1
    # the same version and content again: nothing to announce
    again = human("ext", "install", FIXTURES / "prompt-enhancer", *UNVERIFIED)
    assert again.stdout == "already installed: prompt-enhancer 0.1.0 (global scope, path, unverified)\n"
    assert again.stderr == ""
    assert human("ext", "remove", "prompt-enhancer", "-q").stdout == ""
    quiet = human("ext", "install", FIXTURES / "prompt-enhancer", *UNVERIFIED, "-q")
    assert quiet.stdout == quiet.stderr == ""
    ok("ext", "remove", "prompt-enhancer")
    document = install(FIXTURES / "prompt-enhancer")  # -o json: stdout is the one document
    assert document["installed"][0]["summary"]["subprocess"] == "node dist/index.js serve"


def test_a_prompted_summary_is_not_shown_twice(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    import pkgmgr.cli.context as context

    monkeypatch.setattr(context, "isatty", lambda stream: True)
    result = run_cli(["ext", "install", FIXTURES / "prompt-enhancer", "--allow-unverified", "--no-progress"],
                     stdin="y\n")
    assert result.code == 0, result
    assert "permissions: session.read" in result.stderr and "permissions" not in result.stdout
    assert result.stdout == "installed prompt-enhancer 0.1.0 (global scope, path, unverified)\n"
