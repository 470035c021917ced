"""End-to-end: `pkgmgr sync` edge cases — invalid declarations, activations (several bundles,
awaiting confirmation), the shipped `default` registry and GitHub sources in the lock."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.test_workspace_story import RELEASE_DIGEST
from tests.registry.helpers import archive_bytes
from tests.support.builders import write_extension
from tests.support.cli import run_cli
from tests.support.fakegithub import FakeGitHub
from tests.support.stores import store_root
from tests.workspace.helpers import activations, cli, copy_release_crew, crew_files, fail, installed, ok


def declare(ws: Path, text: str) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "pkgmgr.toml").write_text(text)
    ok("trust", "--workspace", ws)


@pytest.mark.parametrize("text, key", [
    ("[extensions]\nfoo-ext = 3\n", "extensions.foo-ext"),
    ('[extensions]\nfoo-ext = "not a spec"\n', "extensions.foo-ext"),
    ('[extensions]\nfoo-ext = { version = "*", path = "x" }\n', "extensions.foo-ext"),
    ('[extensions]\nfoo-ext = { path = "../outside" }\n', "extensions.foo-ext.path"),
    ('[extensions]\nfoo-ext = { github = "no-slash" }\n', "extensions.foo-ext.github"),
    ('[extensions]\nBad_Name = "*"\n', "extensions.Bad_Name"),
    ('[extension]\nfoo-ext = "*"\n', "extension"),
    ('[registries]\ndefault = "./x"\n', "registries.default"),
    ('[[activations]]\nextension = "ghost"\n', "activations[0].extension"),
    ('[extensions]\nfoo-ext = "*"\n[[activations]]\nextension = "foo-ext"\nconfirm_network_requirement = "abc"\n',
     "activations[0].confirm_network_requirement"),
    ("[extensions\n", ""),
])
def test_invalid_pkgmgr_toml(tmp_path: Path, text: str, key: str) -> None:
    ws = tmp_path / "user-home" / "ws"
    ws.mkdir(parents=True)
    (ws / "pkgmgr.toml").write_text(text)
    for command in (["sync"], ["trust"], ["trust", "--show"]):
        error = fail("invalid_config", *command, "--workspace", ws)["error"]
        assert error["exit_code"] == 3
        problem = error["details"]["problems"][0]
        assert problem["file"] == "pkgmgr.toml" and problem["key"] == key, error
    assert "pkgmgr.toml" in cli("sync", "--workspace", ws).stderr


def test_activation_of_an_extension_with_several_bundles(tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "ws"
    write_extension(ws / "tools" / "multi", files=crew_files("multi", "0.1.0", bundles=2))
    (ws / "tools" / "multi" / "extension.toml").write_text(crew_files("multi", "0.1.0")["extension.toml"])
    declare(ws, '[extensions]\nmulti = { path = "tools/multi" }\n\n[[activations]]\nextension = "multi"\n')
    first = fail("usage", "sync", "--workspace", ws)
    assert first["error"]["exit_code"] == 2
    assert "pkgmgr.toml activations[0]" in first["error"]["message"] and "several bundles" in first["error"]["message"]
    assert [i["name"] for i in first["installed"]] == ["multi"]  # what was done is reported beside the error
    assert (ws / "pkgmgr.lock").exists()
    hint = cli("sync", "--workspace", ws).stderr
    assert 'bundle = "..."' in hint
    again = fail("usage", "sync", "--workspace", ws)  # now refused before acting
    assert "plan" not in again
    (ws / "pkgmgr.toml").write_text((ws / "pkgmgr.toml").read_text() + 'bundle = "multi-1"\n')
    ok("trust", "--workspace", ws)
    done = ok("sync", "--workspace", ws)
    assert [(a["bundle"], a["status"]) for a in done["activations"]] == [("multi-1", "active")]


def test_awaiting_activations_exit_8_until_confirmed(tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "ws"
    copy_release_crew(ws / "tools" / "release-crew")
    base = '[extensions]\nrelease-crew = { path = "tools/release-crew" }\n\n[[activations]]\nextension = "release-crew"\n'
    declare(ws, base)
    result = cli("sync", "--workspace", ws, "-o", "json")
    assert result.code == 8, result
    error = result.json["error"]
    assert error["code"] == "confirmation_required"
    [command] = error["details"]["commands"]
    assert "--scope workspace" in command and " bundle confirm act_" in command and "--expected-version 1" in command
    assert command in result.stderr
    assert activations(ws) == [("release-crew", "default", "awaiting_confirmation")]
    assert cli("sync", "--workspace", ws).code == 8  # still awaiting: still reported
    # a wrong declared digest is refused; the right one confirms at the next sync
    (ws / "pkgmgr.toml").write_text(base + f'confirm_network_requirement = "{"0" * 64}"\n')
    ok("trust", "--workspace", ws)
    assert ok("sync", "--dry-run", "--workspace", ws)["plan"]["confirm"] == []
    assert cli("sync", "--workspace", ws).code == 8
    (ws / "pkgmgr.toml").write_text(base + f'confirm_network_requirement = "{RELEASE_DIGEST}"\n')
    ok("trust", "--workspace", ws)
    assert len(ok("sync", "--dry-run", "--workspace", ws)["plan"]["confirm"]) == 1
    done = ok("sync", "--workspace", ws)
    assert [(a["change"], a["status"]) for a in done["activations"]] == [("confirmed", "active")]
    assert ok("sync", "--workspace", ws)["plan"]["empty"] is True


def test_a_new_activation_with_a_wrong_digest_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "ws"
    copy_release_crew(ws / "tools" / "release-crew")
    declare(ws, '[extensions]\nrelease-crew = { path = "tools/release-crew" }\n\n[[activations]]\n'
                f'extension = "release-crew"\nconfirm_network_requirement = "{"0" * 64}"\n')
    assert fail("network_digest_mismatch", "sync", "--workspace", ws)["error"]["exit_code"] == 6
    assert activations(ws) == []


def test_shipped_default_registry_is_locked_as_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "user-home" / "ws"
    declare(ws, '[extensions]\nreview-pack = "<0.2"\n')
    ok("sync", "--workspace", ws)
    [entry] = tomllib.loads((ws / "pkgmgr.lock").read_text())["extension"]
    assert entry["source"] == "registry+default" and entry["version"] == "0.1.0"
    assert entry["url"] == "archives/review-pack-0.1.0.tar.gz"
    assert ok("sync", "--locked", "--workspace", ws)["plan"]["empty"] is True
    monkeypatch.setenv("PKGMGR_HOME", str(tmp_path / "other-home"))
    ok("trust", "--workspace", ws)
    ok("sync", "--frozen", "--workspace", ws)
    assert installed(ws) == {"review-pack": "0.1.0"}


def test_upgrade_of_the_default_registry_and_pre(tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "ws"
    declare(ws, '[extensions]\nreview-pack = "*"\n')
    ok("sync", "--workspace", ws)
    assert installed(ws) == {"review-pack": "0.2.0"}
    (ws / "pkgmgr.toml").write_text('[extensions]\nreview-pack = { version = "==0.1.0", registry = "default" }\n')
    ok("trust", "--workspace", ws)
    done = ok("sync", "--workspace", ws)
    assert [(e["action"], e["version"]) for e in done["plan"]["extensions"]] == [("switch", "0.1.0")]


# --- GitHub sources ---------------------------------------------------------------------------------

TOKEN = "ghp_workspaceTestToken0123456789abcdef"


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub(tmp_path, token=TOKEN) as fake:  # a private repository: only the token sees it
        fake.env(monkeypatch)
        fake.add_repo("acme", "gh-tool", private=True)
        fake.add_release("acme", "gh-tool", "v0.1.0", assets={"gh-tool-0.1.0.tar.gz": archive_bytes("gh-tool", "0.1.0")})
        yield fake


def api_requests(fake: FakeGitHub) -> list[str]:
    return [r.path for r in fake.api.requests]


def test_github_source_locked_kept_upgraded_and_frozen(github: FakeGitHub, tmp_path: Path, home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "user-home" / "ws"
    declare(ws, '[extensions]\ngh-tool = { github = "acme/gh-tool" }\n')
    ok("sync", "--workspace", ws)  # no --allow-unverified: the approval is the consent
    [entry] = tomllib.loads((ws / "pkgmgr.lock").read_text())["extension"]
    assert entry["source"] == "github+acme/gh-tool@v0.1.0" and entry["version"] == "0.1.0"
    assert entry["url"].endswith("/acme/gh-tool/releases/download/v0.1.0/gh-tool-0.1.0.tar.gz")
    ok("sync", "--locked", "--workspace", ws)

    # a newer release: the lock keeps v0.1.0 without asking GitHub anything
    github.add_release("acme", "gh-tool", "v0.2.0", assets={"gh-tool-0.2.0.tar.gz": archive_bytes("gh-tool", "0.2.0")})
    github.api.clear()
    assert ok("sync", "--workspace", ws)["plan"]["empty"] is True
    assert api_requests(github) == []

    # --frozen elsewhere finds the locked release through the API (private: the token is needed)
    lock = (ws / "pkgmgr.lock").read_bytes()
    clone = tmp_path / "user-home" / "clone"
    clone.mkdir()
    (clone / "pkgmgr.toml").write_bytes((ws / "pkgmgr.toml").read_bytes())
    (clone / "pkgmgr.lock").write_bytes(lock)
    monkeypatch.setenv("PKGMGR_HOME", str(tmp_path / "fresh-home"))
    ok("trust", "--workspace", clone)
    ok("sync", "--frozen", "--workspace", clone)
    assert installed(clone) == {"gh-tool": "0.1.0"}
    assert "/repos/acme/gh-tool/releases/tags/v0.1.0" in api_requests(github)

    # a lock whose checksum the release does not have is refused
    (clone / "pkgmgr.lock").write_text(lock.decode().replace(entry["sha256"], "f" * 64))
    ok("trust", "--workspace", clone)
    store_root(clone).rename(tmp_path / "old-store")
    ok("trust", "--workspace", clone)
    fail("checksum_mismatch", "sync", "--frozen", "--workspace", clone)
    assert installed(clone) == {}

    # --upgrade follows the latest release
    monkeypatch.setenv("PKGMGR_HOME", str(home))
    upgraded = ok("sync", "--upgrade", "gh-tool", "--workspace", ws)
    assert [(e["action"], e["version"]) for e in upgraded["plan"]["extensions"]] == [("switch", "0.2.0")]
    assert "github+acme/gh-tool@v0.2.0" in (ws / "pkgmgr.lock").read_text()


def test_github_source_with_a_tag_and_another_name(github: FakeGitHub, tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "ws"
    github.add_release("acme", "gh-tool", "v0.2.0", assets={"gh-tool-0.2.0.tar.gz": archive_bytes("gh-tool", "0.2.0")})
    declare(ws, '[extensions]\ngh-tool = { github = "acme/gh-tool@v0.1.0" }\n')
    ok("sync", "--workspace", ws)
    assert installed(ws) == {"gh-tool": "0.1.0"}
    (ws / "pkgmgr.toml").write_text('[extensions]\ngh-tool = { github = "acme/gh-tool@v0.2.0" }\n')
    ok("trust", "--workspace", ws)
    fail("lock_outdated", "sync", "--locked", "--workspace", ws)
    ok("sync", "--workspace", ws)
    assert installed(ws) == {"gh-tool": "0.2.0"}
    # a release that holds another extension than the one declared
    (ws / "pkgmgr.toml").write_text('[extensions]\nother-tool = { github = "acme/gh-tool@v0.2.0" }\n')
    ok("trust", "--workspace", ws)
    error = fail("invalid_config", "sync", "--workspace", ws)["error"]
    assert error["details"] == {"key": "extensions.other-tool.github", "name": "gh-tool"}
    assert "other-tool" not in (ws / "pkgmgr.lock").read_text()


def test_a_release_holding_another_extension_installs_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    ws = tmp_path / "user-home" / "ws"
    github.add_release("acme", "gh-tool", "v0.2.0", assets={"gh-tool-0.2.0.tar.gz": archive_bytes("gh-tool", "0.2.0")})
    declare(ws, '[extensions]\nother-tool = { github = "acme/gh-tool@v0.2.0" }\n')
    error = fail("invalid_config", "sync", "--workspace", ws)["error"]
    assert error["details"] == {"key": "extensions.other-tool.github", "name": "gh-tool"}
    assert "nothing was installed" in error["message"]
    human = run_cli(["sync", "--workspace", str(ws)])
    assert 'hint: declare it as gh-tool = { github = "acme/gh-tool@v0.2.0" }' in human.stderr, human
    assert installed(ws) == {}  # not even under its own name: the host never sees it
    assert not (ws / "pkgmgr.lock").exists()


def test_a_sync_batch_with_one_failure_installs_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    """The sync's installs are one batch (SPEC 4: sync follows ext install's rule): the good
    release is held when the other holds another extension than declared."""
    ws = tmp_path / "user-home" / "ws"
    github.add_repo("acme", "odd-tool")
    github.add_release("acme", "odd-tool", "v0.1.0", assets={"odd-tool-0.1.0.tar.gz": archive_bytes("gh-tool", "0.1.0")})
    declare(ws, '[extensions]\ngh-tool = { github = "acme/gh-tool@v0.1.0" }\n'
                'other-tool = { github = "acme/odd-tool@v0.1.0" }\n')
    document = fail("invalid_config", "sync", "--workspace", ws)
    assert document["installed"] == []
    assert installed(ws) == {}
    assert not (ws / "pkgmgr.lock").exists()
