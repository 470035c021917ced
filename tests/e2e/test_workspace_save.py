"""End-to-end: `ext install --save` / `ext remove --save` edit pkgmgr.toml keeping the user's
comments and layout, and keep its approval; a hand edit needs `pkgmgr trust` again."""

from __future__ import annotations

import tomllib

from tests.workspace.conftest import team  # noqa: F401 - shared fixture
from tests.workspace.helpers import BUNDLED, LOCAL, Team, activations, fail, installed, ok, write_local_tool

COMMENTED = """\
# Extensions of the acme project.   (keep this header)
#
# Reviewed in pull requests; run `pkgmgr sync` after pulling.

[registries]
team   =   "@URL@"    # aligned on purpose

[extensions]
# tools we build here
local-tool = { path = "tools/local-tool" }   # trailing comment

# ---- activations ----
[[activations]]
extension = "local-tool"   # there is no bundle in it: never synced in these tests
profile   = "default"
"""


def lines_kept(before: str, after: str) -> None:
    """Every line of `before` is in `after`, byte for byte and in the same order."""
    rest = after.splitlines(keepends=True)
    position = 0
    for line in before.splitlines(keepends=True):
        assert line in rest[position:], (line, after)
        position = rest.index(line, position) + 1


def test_save_keeps_comments_layout_and_approval(team: Team) -> None:
    team.write_manifest(COMMENTED.replace('[[activations]]\nextension = "local-tool"   # there is no bundle in it: '
                                          'never synced in these tests\nprofile   = "default"\n', ""))
    ws = team.ws
    original = (ws / "pkgmgr.toml").read_text()
    ok("trust", "--workspace", ws)
    ok("sync", "--workspace", ws)

    saved = ok("ext", "install", BUNDLED, "--save", cwd=ws)  # the workspace's registry answers for it
    assert [(i["name"], i["version"], i["scope"]) for i in saved["installed"]] == [(BUNDLED, "0.2.0", "workspace")]
    text = (ws / "pkgmgr.toml").read_text()
    lines_kept(original, text)
    assert tomllib.loads(text)["extensions"][BUNDLED] == ">=0.2.0"
    # pkgmgr wrote that edit and the lock with it: the approval holds, sync --locked passes at once
    assert 'name = "team-crew"' in (ws / "pkgmgr.lock").read_text()
    ok("sync", "--locked", "--workspace", ws)
    assert ok("sync", "--workspace", ws)["lock"]["written"] is False

    removed = ok("ext", "remove", BUNDLED, "--save", cwd=ws)
    assert [r["name"] for r in removed["removed"]] == [BUNDLED]
    after_remove = (ws / "pkgmgr.toml").read_text()
    assert after_remove == original  # what --save added, --save took away; nothing else moved
    assert BUNDLED not in (ws / "pkgmgr.lock").read_text()
    synced = ok("sync", "--locked", "--workspace", ws)
    assert synced["lock"]["written"] is False
    assert installed(ws) == {LOCAL: "0.1.0"}

    # a hand edit asks again
    (ws / "pkgmgr.toml").write_text(after_remove + "\n# a note\n")
    fail("trust_required", "sync", "--workspace", ws)


def test_save_a_version_and_a_path(team: Team) -> None:
    ws = team.ws
    team.write_manifest('[registries]\nteam = "@URL@"\n')
    ok("trust", "--workspace", ws)
    ok("ext", "install", f"{BUNDLED}@<0.2", "--save", cwd=ws)
    ok("ext", "install", "./tools/local-tool", "--save", "--allow-unverified", "--yes", cwd=ws)
    declared = tomllib.loads((ws / "pkgmgr.toml").read_text())["extensions"]
    assert declared == {BUNDLED: "<0.2", LOCAL: {"path": "tools/local-tool"}}
    assert installed(ws) == {BUNDLED: "0.1.0", LOCAL: "0.1.0"}
    done = ok("sync", "--locked", "--workspace", ws)
    assert {e["action"] for e in done["plan"]["extensions"]} == {"unchanged"}  # --save installed them
    assert done["plan"]["lock_update"] is False  # and locked them


def test_save_creates_pkgmgr_toml(team: Team) -> None:
    ws = team.ws
    ok("ext", "install", "review-pack", "--save", cwd=ws)  # from the shipped default registry
    assert tomllib.loads((ws / "pkgmgr.toml").read_text()) == {"extensions": {"review-pack": ">=0.2.0"}}
    assert installed(ws) == {"review-pack": "0.2.0"}
    assert 'source = "registry+default"' in (ws / "pkgmgr.lock").read_text()
    lock = ok("sync", "--locked", "--workspace", ws)
    assert lock["plan"]["extensions"][0]["action"] == "unchanged" and lock["lock"]["written"] is False
    assert ok("sync", "--locked", "--workspace", ws)["plan"]["empty"] is True


def test_save_never_approves_a_lock_it_did_not_write(team: Team) -> None:
    """pkgmgr.toml missing but a pkgmgr.lock from the repository: creating pkgmgr.toml must not
    approve that lock along with it."""
    ws = team.ws
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "pkgmgr.lock").write_text("version = 1\n")
    ok("ext", "install", "review-pack", "--save", cwd=ws)
    fail("trust_required", "sync", "--workspace", ws)


def test_remove_save_drops_declared_activations(team: Team) -> None:
    ws = team.ws
    team.write_manifest(COMMENTED.replace('extension = "local-tool"   # there is no bundle in it: never synced in '
                                          'these tests\nprofile   = "default"',
                                          f'extension = "{BUNDLED}"   # the crew\nprofile   = "default"')
                        + '\n[[activations]]\nextension = "local-tool"  # kept?\n')
    text = (ws / "pkgmgr.toml").read_text().replace("[extensions]\n", f'[extensions]\n{BUNDLED} = "<0.2"\n')
    text = text.replace('\n[[activations]]\nextension = "local-tool"  # kept?\n', "")
    (ws / "pkgmgr.toml").write_text(text)
    ok("trust", "--workspace", ws)
    ok("sync", "--workspace", ws)
    assert [a[0] for a in activations(ws)] == [BUNDLED]
    fail("extension_has_active_bundles", "ext", "remove", BUNDLED, "--save", cwd=ws)
    assert (ws / "pkgmgr.toml").read_text() == text  # a failed remove declares nothing
    ok("ext", "remove", BUNDLED, "--save", "--deactivate", cwd=ws)
    after = (ws / "pkgmgr.toml").read_text()
    assert BUNDLED not in after and "[[activations]]" not in after
    assert "# ---- activations ----" in after and "# trailing comment" in after
    synced = ok("sync", "--locked", "--workspace", ws)
    assert synced["plan"]["lock_update"] is False and synced["plan"]["remove"] == []
    assert ok("sync", "--workspace", ws)["plan"]["empty"] is True


def test_save_refuses_before_installing(team: Team, tmp_path) -> None:
    ws = team.ws
    (ws / "pkgmgr.toml").write_text("[extensions]\nbroken = 3\n")
    assert fail("invalid_config", "ext", "install", "review-pack", "--save", cwd=ws)["error"]["exit_code"] == 3
    fail("invalid_config", "ext", "remove", "review-pack", "--save", cwd=ws)
    assert installed(ws) == {}
    (ws / "pkgmgr.toml").write_text("[extensions]\n")
    outside = tmp_path / "outside-tool"
    write_local_tool(outside)
    fail("usage", "ext", "install", outside, "--save", "--allow-unverified", "--yes", cwd=ws)
    assert installed(ws) == {} and (ws / "pkgmgr.toml").read_text() == "[extensions]\n"
