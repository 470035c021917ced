"""Gemini CLI end to end: installs land in `$GEMINI_CLI_HOME/.gemini/extensions/<name>/` with the
records Gemini itself writes for a local install (`.gemini-extension-install.json`, the user-scope
rule in `extension-enablement.json`), byte for byte; Gemini's signed integrity store is never
written; `.env` (its settings values) is not tampering; two folders of one name are refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.hosts.gemini import glob_to_regex, is_enabled, toggled
from tests.hosts.helpers import UNVERIFIED, Homes, fail, gemini_extension, human, ok, tree


def _install(tmp_path: Path, name: str = "hello", version: str = "1.0.0", **fields: object) -> Path:
    source = gemini_extension(tmp_path / "src" / name, name, version, **fields)  # one source: updates take it
    ok("ext", "install", source, *UNVERIFIED)
    return source


def _stringify(value: object) -> bytes:
    """JSON.stringify(value, null, 2): what Gemini CLI writes (no final newline)."""
    return json.dumps(value, indent=2).encode()


def test_install_writes_geminis_own_records(tmp_path: Path, homes: Homes) -> None:
    source = _install(tmp_path)
    target = homes.gemini_extensions / "hello"
    assert tree(target) == tree(source) | {".gemini-extension-install.json": _stringify(
        {"source": str(target), "type": "local"})}
    assert os.stat(target / ".gemini-extension-install.json").st_mode & 0o777 == 0o644
    assert (homes.gemini_extensions / "extension-enablement.json").read_bytes() == \
        _stringify({"hello": {"overrides": [f"{homes.gemini}/*"]}})
    assert not (homes.gemini / ".gemini" / "extension_integrity.json").exists()  # Gemini's, signed: never written
    assert sorted(p.name for p in homes.gemini_extensions.iterdir()) == ["extension-enablement.json", "hello"]
    [entry] = ok("ext", "list")["extensions"]
    assert (entry["host"], entry["path"], entry["enabled"]) == ("gemini", str(target), True)


def test_disable_and_enable_write_the_user_scope_rule_and_keep_every_other_byte(tmp_path: Path,
                                                                               homes: Homes) -> None:
    homes.gemini_extensions.mkdir(parents=True)
    enablement = homes.gemini_extensions / "extension-enablement.json"
    # another extension's entry, formatted by hand, and a workspace rule Gemini wrote for hello before
    before = ('{\n    "other":   {"overrides": ["!/w/*"]},\n    "hello": {"overrides": ["/proj/*"], "x": 1}\n}\n')
    enablement.write_text(before)
    _install(tmp_path)
    after_install = enablement.read_text()
    assert after_install.startswith('{\n    "other":   {"overrides": ["!/w/*"]},\n')
    assert json.loads(after_install)["hello"] == {"overrides": ["/proj/*", f"{homes.gemini}/*"], "x": 1}
    assert ok("ext", "disable", "hello")["disabled"][0]["enabled"] is False
    assert json.loads(enablement.read_text())["hello"]["overrides"] == ["/proj/*", f"!{homes.gemini}/*"]
    ok("ext", "enable", "hello")
    assert json.loads(enablement.read_text())["hello"]["overrides"] == ["/proj/*", f"{homes.gemini}/*"]
    ok("ext", "remove", "hello")
    assert enablement.read_text() == '{\n    "other":   {"overrides": ["!/w/*"]}\n}\n'
    assert not (homes.gemini_extensions / "hello").exists()


def test_geminis_own_disable_is_what_ext_list_shows(tmp_path: Path, homes: Homes) -> None:
    _install(tmp_path)
    enablement = homes.gemini_extensions / "extension-enablement.json"
    enablement.write_bytes(_stringify({"hello": {"overrides": [f"!{homes.gemini}/*"]}}))  # gemini extensions disable
    assert ok("ext", "list")["extensions"][0]["enabled"] is False
    ok("ext", "enable", "hello")
    assert enablement.read_bytes() == _stringify({"hello": {"overrides": [f"{homes.gemini}/*"]}})


def test_a_disabled_install_is_written_disabled(tmp_path: Path, homes: Homes) -> None:
    _install(tmp_path)
    ok("ext", "disable", "hello")
    _install(tmp_path, version="1.1.0")
    assert json.loads((homes.gemini_extensions / "extension-enablement.json").read_text()) == \
        {"hello": {"overrides": [f"!{homes.gemini}/*"]}}
    assert ok("ext", "list")["extensions"][0]["enabled"] is False


def test_settings_values_are_kept_on_update_and_are_not_tampering(tmp_path: Path, homes: Homes) -> None:
    _install(tmp_path, settings=[{"name": "Key", "description": "the key", "envVar": "HELLO_KEY"}])
    target = homes.gemini_extensions / "hello"
    (target / ".env").write_text("HELLO_KEY=abc\n")  # gemini extensions config hello
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True
    _install(tmp_path, version="1.1.0", settings=[{"name": "Key", "description": "the key", "envVar": "HELLO_KEY"}])
    assert (target / ".env").read_text() == "HELLO_KEY=abc\n"
    assert json.loads((target / "gemini-extension.json").read_text())["version"] == "1.1.0"
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True


@pytest.mark.parametrize("change", ["record-elsewhere", "record-link", "file-added", "manifest"])
def test_verify_sees_what_changes_what_gemini_loads(tmp_path: Path, homes: Homes, change: str) -> None:
    _install(tmp_path)
    target = homes.gemini_extensions / "hello"
    record = target / ".gemini-extension-install.json"
    if change == "record-elsewhere":
        record.write_bytes(_stringify({"source": str(tmp_path / "elsewhere"), "type": "local"}))
    elif change == "record-link":
        record.write_bytes(_stringify({"source": str(tmp_path / "elsewhere"), "type": "link"}))
    elif change == "file-added":
        (target / "hooks").mkdir()
        (target / "hooks" / "hooks.json").write_text("{}")
    else:
        (target / "gemini-extension.json").write_text('{"name":"hello","version":"9.9.9"}')
    result = fail("tree_modified", "ext", "verify", "hello")
    [verdict] = result["verified"]
    assert verdict["ok"] is False


def test_gemini_has_no_project_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")
    result = fail("usage", "--scope", "workspace", "ext", "install", gemini_extension(tmp_path / "src" / "x"),
                  *UNVERIFIED, cwd=project)
    assert "gemini has no project scope" in result["error"]["message"]


def test_another_folder_carrying_the_name_is_refused_even_with_force(tmp_path: Path, homes: Homes) -> None:
    other = gemini_extension(homes.gemini_extensions / "hello-old")  # Gemini would load nothing at all
    before = tree(homes.gemini)
    source = gemini_extension(tmp_path / "src" / "hello")
    for force in ((), ("--force",)):
        result = fail("source_conflict", "ext", "install", source, *UNVERIFIED, *force)
        assert str(other) in result["error"]["message"]
    assert tree(homes.gemini) == before


def test_a_hand_installed_folder_of_the_name_is_a_conflict_and_can_be_adopted(tmp_path: Path,
                                                                            homes: Homes) -> None:
    target = gemini_extension(homes.gemini_extensions / "hello")  # as `gemini extensions install` left it
    (target / ".gemini-extension-install.json").write_bytes(_stringify({"source": "/src/hello", "type": "local"}))
    (homes.gemini_extensions / "extension-enablement.json").write_bytes(
        _stringify({"hello": {"overrides": [f"!{homes.gemini}/*"]}}))
    before = tree(homes.gemini)
    fail("source_conflict", "ext", "install", gemini_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    [adopted] = ok("adopt", "--host", "gemini", "hello")["adopted"]
    assert (adopted["name"], adopted["enabled"]) == ("hello", False)  # Gemini's rule says so
    assert tree(homes.gemini) == before  # nothing moved, nothing rewritten
    assert ok("ext", "verify", "hello")["verified"][0]["ok"] is True
    (target / ".gemini-extension-install.json").write_bytes(_stringify({"source": "/else", "type": "local"}))
    fail("tree_modified", "ext", "verify", "hello")


def test_a_linked_extension_is_not_adopted(tmp_path: Path, homes: Homes) -> None:
    """`gemini extensions link` writes only the record: Gemini loads the tree from its source."""
    source = gemini_extension(tmp_path / "src" / "hello")
    linked = homes.gemini_extensions / "hello"
    linked.mkdir(parents=True)
    (linked / ".gemini-extension-install.json").write_bytes(_stringify({"source": str(source), "type": "link"}))
    assert {h["name"]: h for h in ok("hosts")["hosts"]}["gemini"]["unmanaged"] == 1
    for names in (["hello"], []):
        result = fail("usage", "adopt", "--host", "gemini", *names)
        assert "link" in result["error"]["message"] and str(source) in result["error"]["message"]
    assert ok("ext", "list")["extensions"] == []


def test_a_tree_carrying_geminis_install_record_is_refused(tmp_path: Path, homes: Homes) -> None:
    source = gemini_extension(tmp_path / "src" / "hello")
    (source / ".gemini-extension-install.json").write_bytes(_stringify({"source": "/x", "type": "link"}))
    fail("invalid_archive", "ext", "install", source, *UNVERIFIED)
    assert not homes.gemini_extensions.exists()


@pytest.mark.parametrize("content", [b"{not json", b'{"hello": {"overrides": "x"}}', b"[]",
                                     b'\xef\xbb\xbf{"a": {"overrides": []}}', b'{"a": {"overrides": []}, "a": {}}'])
def test_an_enablement_file_gemini_cannot_read_is_never_written_over(tmp_path: Path, homes: Homes,
                                                                     content: bytes) -> None:
    homes.gemini_extensions.mkdir(parents=True)
    (homes.gemini_extensions / "extension-enablement.json").write_bytes(content)
    result = fail("invalid_config", "ext", "install", gemini_extension(tmp_path / "src" / "hello"), *UNVERIFIED)
    assert "extension-enablement.json" in result["error"]["message"]
    assert (homes.gemini_extensions / "extension-enablement.json").read_bytes() == content
    assert not (homes.gemini_extensions / "hello").exists()
    assert ok("ext", "list")["extensions"] == []


def test_a_name_geminis_validate_passes_but_its_install_cannot_take_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "src" / "n"
    source.mkdir(parents=True)
    (source / "gemini-extension.json").write_text('{"name": 123, "version": "1.0.0"}')
    result = fail("invalid_manifest", "ext", "install", source, *UNVERIFIED)
    assert "folder name" in json.dumps(result)


def test_scaffold_validates_and_installs(tmp_path: Path, homes: Homes) -> None:
    ok("ext", "new", "greeter", "--host", "gemini", cwd=tmp_path)
    validated = ok("ext", "validate", tmp_path / "greeter")
    assert validated["valid"] is True and validated["host"] == "gemini" and validated["warnings"] == []
    ok("ext", "install", tmp_path / "greeter", *UNVERIFIED)
    assert (homes.gemini_extensions / "greeter" / "commands" / "greeter.toml").is_file()


# --- Gemini's enablement rules, ported from extensionEnablement.ts ------------------------------------------


def test_the_rules_follow_geminis_enable_and_disable() -> None:
    """The sequence of the design's snapshots: install, disable, enable --scope workspace, enable,
    disable --scope workspace (HOME=/h, cwd /h/w)."""
    rules = toggled([], "/h", enabled=True)
    assert rules == ["/h/*"]
    rules = toggled(rules, "/h", enabled=False)
    assert rules == ["!/h/*"]
    rules = toggled(rules, "/h/w", enabled=True)
    assert rules == ["!/h/*", "/h/w/*"]
    rules = toggled(rules, "/h", enabled=True)  # the workspace rule is a child of the new one: dropped
    assert rules == ["/h/*"]
    rules = toggled(rules, "/h/w", enabled=False)
    assert rules == ["/h/*", "!/h/w/*"]
    assert is_enabled(rules, "/h") and not is_enabled(rules, "/h/w") and not is_enabled(rules, "/h/w/deeper")
    assert is_enabled(["!/h/*"], "/elsewhere")  # a user-scope disable does not reach outside the home
    assert is_enabled([], "/any")


def test_glob_to_regex_escapes_as_javascript_does() -> None:
    assert glob_to_regex("/a.b/*").fullmatch("/a.b/c/d/")
    assert not glob_to_regex("/a.b/*").fullmatch("/axb/c/")
    assert glob_to_regex("/a(b)/*").fullmatch("/a(b)/")
    assert glob_to_regex("/h/*").fullmatch("/h")  # `/*` is an optional group
    assert not glob_to_regex("/h/").fullmatch("/h/x/")


# --- the workspace scope of `gemini extensions enable|disable` -----------------------------------------


def test_workspace_disable_is_geminis_workspace_rule_for_that_folder(tmp_path: Path, homes: Homes) -> None:
    """`pkgmgr --scope workspace ext disable NAME` of a Gemini extension (which has no project
    folder of installs) is `gemini extensions disable NAME --scope workspace` run in the workspace:
    `!<folder>/*` appended; the install stays enabled for the user scope, and `--scope workspace
    ext enable` turns it on there again (Gemini's rule: the disabling rule replaced)."""
    _install(tmp_path)
    work = tmp_path / "project"
    work.mkdir()
    enablement = homes.gemini_extensions / "extension-enablement.json"
    [entry] = ok("--scope", "workspace", "ext", "disable", "hello", cwd=work)["disabled"]
    assert entry["enabled"] is False
    assert enablement.read_bytes() == _stringify({"hello": {"overrides": [f"{homes.gemini}/*", f"!{work}/*"]}})
    rules = json.loads(enablement.read_text())["hello"]["overrides"]
    assert is_enabled(rules, str(work / "src")) is False and is_enabled(rules, str(homes.gemini / "w")) is True
    assert ok("ext", "list")["extensions"][0]["enabled"] is True  # the user scope: unchanged
    said = human("--scope", "workspace", "ext", "disable", "hello", cwd=work).stdout
    assert f"disabled for {work} and the folders below it only" in said
    ok("--scope", "workspace", "--workspace", work, "ext", "enable", "hello")
    assert json.loads(enablement.read_text())["hello"]["overrides"] == [f"{homes.gemini}/*", f"{work}/*"]
    assert ok("doctor", "--check")["ok"] is True


def test_workspace_enable_of_a_host_without_folder_rules_is_not_found_in_the_workspace(
        tmp_path: Path, homes: Homes) -> None:
    from tests.hosts.helpers import terva_extension

    ok("ext", "install", terva_extension(tmp_path / "src" / "tool", "tool"), *UNVERIFIED)
    work = tmp_path / "project"
    work.mkdir()
    (work / "pkgmgr.toml").write_text("[extensions]\n")
    before = tree(homes.terva)
    fail("not_found", "--scope", "workspace", "ext", "disable", "tool", cwd=work)
    assert tree(homes.terva) == before


# --- Gemini's own trust: security.allowedExtensions -------------------------------------------------------


def test_an_install_allowed_extensions_forbids_is_refused_naming_the_setting(
        tmp_path: Path, homes: Homes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI loads an extension only when a pattern of `security.allowedExtensions` matches
    the real path of its install record's source (for pkgmgr's install: the installed folder):
    pkgmgr refuses what it would not load (`incompatible_host`, naming the setting and its file),
    before anything moves; a settings file with comments is read as Gemini reads it."""
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "etc" / "settings.json"))
    settings = homes.gemini / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{\n  // only the team\'s\n  "security": {"allowedExtensions": ["^/opt/team/"]}\n}\n')
    source = gemini_extension(tmp_path / "src" / "hello")
    error = fail("incompatible_host", "ext", "install", source, *UNVERIFIED)["error"]
    assert "allowedExtensions" in error["message"] and str(settings) in error["message"]
    assert str(homes.gemini_extensions / "hello") in error["message"]
    assert not (homes.gemini_extensions / "hello").exists() and ok("ext", "list")["extensions"] == []
    settings.write_text(json.dumps({"security": {"allowedExtensions": [f"^{homes.gemini}/"]}}))
    ok("ext", "install", source, *UNVERIFIED)
    # system settings win over the user's (settings.ts mergeSettings)
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "settings.json").write_text(json.dumps({"security": {"allowedExtensions": ["^/nowhere/"]}}))
    fail("incompatible_host", "ext", "install", gemini_extension(tmp_path / "src" / "other", "other"), *UNVERIFIED)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                     max_leaves=20)


@given(_JSON, st.text(alphabet=st.characters(blacklist_characters="*\n"), max_size=20))
@settings(max_examples=200, deadline=None)
def test_comments_strip_to_the_same_json(value: object, comment: str) -> None:
    """strip-json-comments as Gemini's settings loader runs it: a document with comments between
    its tokens reads as the document without them; a string holding `//` or `/*` is left whole."""
    from pkgmgr.hosts.gemini import _strip_json_comments

    text = json.dumps(value, indent=1)
    commented = "\n".join(f"{line} // {comment}" if i % 2 else f"/* {comment} */{line}"
                          for i, line in enumerate(text.split("\n")))
    assert json.loads(_strip_json_comments(commented)) == value
    assert json.loads(_strip_json_comments(json.dumps({"a": "//x/*y*/", "b": value}))) == {"a": "//x/*y*/", "b": value}


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_comment_stripping_never_fails_and_keeps_lines(text: str) -> None:
    from pkgmgr.hosts.gemini import _strip_json_comments

    stripped = _strip_json_comments(text)
    assert len(stripped) == len(text) and stripped.count("\n") == text.count("\n")


@pytest.mark.parametrize("raw", [b"", b"{", b"\xff\xfe", b'{"security": {"allowedExtensions": "x"}}', b"[" * 100_000,
                                 b'{"security": {"allowedExtensions": ["(", "^/"]}} // ok', b"/* unterminated"])
def test_a_settings_file_gemini_could_not_use_sets_nothing_or_what_it_says(tmp_path: Path, raw: bytes) -> None:
    """Adversarial settings files: pkgmgr reads them bounded and never fails on them; only a list
    of allowedExtensions counts (a pattern Python cannot compile is left to Gemini)."""
    from pkgmgr.hosts.gemini import allowed_extensions, check_allowed

    environ = {"GEMINI_CLI_HOME": str(tmp_path), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "none.json")}
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_bytes(raw)
    found = allowed_extensions(environ)
    assert found is None or found[0] == ["(", "^/"]
    check_allowed("hello", tmp_path / "x", environ)  # nothing refused: no list, or `(` left to Gemini
