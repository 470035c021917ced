"""Hint scenarios: each makes the state a hint is printed in, runs the command that prints it,
runs the command the hint names exactly as printed, and asserts that it does what the hint says.
`tests/hints/test_hints.py` maps each hint site of the code to the scenario that tries it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from tests.hints.harness import MARKETING_ACT, MARKETING_DIGEST, UNVERIFIED, H

if TYPE_CHECKING:
    from tests.registry.helpers import RegistryDir
    from tests.support.signed import SignedIndex

# --- activations ------------------------------------------------------------------------------


def activate_then_show_and_confirm(h: H) -> None:
    """exit 8 names `bundle show ACT` (to review) and `bundle confirm ACT --expected-version N`,
    with the options that select a workspace scope, so both work from anywhere."""
    ws = h.declare('[extensions]\nmarketing-linear = "*"\n')
    h.ok("sync", cwd=ws)
    result = h.run("--scope", "workspace", "bundle", "activate", "marketing-linear:marketing-linear/lean",
                   code=8, cwd=ws)
    elsewhere = h.tmp
    shown = h.follow(result, "pkgmgr --scope workspace --workspace", cwd=elsewhere)
    assert "status:            awaiting_confirmation" in shown.stdout
    h.follow(result, "pkgmgr --scope workspace --workspace " + str(ws) + " bundle confirm", cwd=elsewhere)
    listed = json.loads(h.ok("--scope", "workspace", "bundle", "list", "-o", "json", cwd=ws).stdout)
    assert {a["profile"]: a["status"] for a in listed["activations"]}["lean"] == "active"


def show_an_unknown_activation(h: H) -> None:
    h.ok("ext", "install", "marketing-linear")
    h.run("bundle", "activate", "marketing-linear", code=8)
    result = h.run("bundle", "show", "act_0000000000000000", code=5)
    listed = h.follow(result, "pkgmgr bundle list")
    assert MARKETING_ACT in listed.stdout


def activate_a_disabled_extension(h: H) -> None:
    h.ok("ext", "install", "marketing-linear")
    h.ok("ext", "disable", "marketing-linear")
    result = h.run("bundle", "activate", "marketing-linear", code=5)
    h.follow(result, "pkgmgr ext enable")
    h.run("bundle", "activate", "marketing-linear", code=8)  # now it can be activated


def confirm_after_the_tree_changed(h: H) -> None:
    h.ok("ext", "install", "marketing-linear")
    h.run("bundle", "activate", "marketing-linear", code=8)
    listed = json.loads(h.ok("ext", "list", "-o", "json").stdout)["extensions"]
    soul = Path(listed[0]["path"]) / "agents" / "campaign-planner" / "SOUL.md"
    soul.write_text(soul.read_text(encoding="utf-8") + "\nchanged\n", encoding="utf-8")
    result = h.run("bundle", "confirm", MARKETING_ACT, "--expected-version", "1", code=4)
    verified = h.follow(result, "pkgmgr ext verify", code=4)
    assert "agents/campaign-planner/SOUL.md" in verified.stdout


def remove_an_extension_with_activations(h: H) -> None:
    h.ok("ext", "install", "marketing-linear", "review-pack")
    h.ok("bundle", "activate", "marketing-linear", "--confirm-network-requirement", MARKETING_DIGEST)
    result = h.run("ext", "remove", "marketing-linear", code=6)
    assert "pass --deactivate" in result.stderr
    h.follow(result, "pkgmgr bundle deactivate")  # the second way the hint offers
    h.ok("ext", "remove", "marketing-linear")
    h.ok("ext", "install", "marketing-linear")
    h.ok("bundle", "activate", "marketing-linear", "--confirm-network-requirement", MARKETING_DIGEST)
    h.run("ext", "remove", "marketing-linear", code=6)
    h.ok("ext", "remove", "marketing-linear", "--deactivate")  # the first way


def update_that_drops_a_profile(h: H) -> None:
    src = h.fixture("marketing-linear")
    h.ok("ext", "install", src, *UNVERIFIED)
    h.ok("bundle", "activate", "marketing-linear:marketing-linear/lean", "--confirm-network-requirement",
         MARKETING_DIGEST)
    manifest = src / "extension.toml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace('"0.1.0"', '"0.2.0"'), encoding="utf-8")
    bundle = src / "bundles" / "marketing.toml"
    bundle.write_text(bundle.read_text(encoding="utf-8").replace('name = "lean"', 'name = "small"'),
                      encoding="utf-8")
    result = h.run("ext", "install", src, *UNVERIFIED, code=6)
    assert "pass --deactivate-missing" in result.stderr
    h.ok("ext", "install", src, *UNVERIFIED, "--deactivate-missing")


def activate_with_a_wrong_digest(h: H) -> None:
    h.ok("ext", "install", "marketing-linear")
    result = h.run("bundle", "activate", "marketing-linear", "--confirm-network-requirement", "0" * 64, code=6)
    preview = h.follow(result, "pkgmgr bundle preview")
    assert MARKETING_DIGEST in preview.stdout


def activate_in_a_workspace_what_is_installed_globally(h: H) -> None:
    ws = h.declare("[extensions]\n")
    h.ok("ext", "install", "marketing-linear")
    result = h.run("--scope", "workspace", "bundle", "activate", "marketing-linear", code=5, cwd=ws)
    h.follow(result, "pkgmgr --scope workspace", cwd=h.tmp)  # from anywhere: it names the workspace
    h.run("--scope", "workspace", "bundle", "activate", "marketing-linear", code=8, cwd=ws)


def preview_then_activate(h: H) -> None:
    h.ok("ext", "install", "marketing-linear", "review-pack")
    preview = h.ok("bundle", "preview", "marketing-linear")
    h.follow(preview, "pkgmgr bundle activate")
    again = h.ok("bundle", "preview", "marketing-linear")
    shown = h.follow(again, "pkgmgr bundle show")
    assert "status:            active" in shown.stdout


def activate_twice(h: H) -> None:
    h.ok("ext", "install", "marketing-linear")
    h.run("bundle", "activate", "marketing-linear", code=8)
    result = h.run("bundle", "activate", "marketing-linear", code=6)
    shown = h.follow(result, "pkgmgr bundle show")
    assert MARKETING_ACT in shown.stdout


# --- workspaces, trust, locks -------------------------------------------------------------------


def trust_show_then_digest(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n', trust=False)
    result = h.run("sync", code=4, cwd=ws)
    shown = h.follow(result, "pkgmgr trust --show --workspace", cwd=h.tmp)
    assert "approved:  no" in shown.stdout
    h.follow(shown, "pkgmgr trust --digest", cwd=ws)
    h.ok("sync", cwd=ws)


def trust_with_a_digest_that_changed(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n', trust=False)
    result = h.run("trust", "--digest", "0" * 64, code=4, cwd=ws)
    shown = h.follow(result, "pkgmgr trust --show", cwd=ws)
    assert "digest:" in shown.stdout


def declared_registries_before_trust(h: H) -> None:
    ws = h.declare('[registries]\nteam = "team-index"\n\n[extensions]\n', trust=False)
    result = h.run("--scope", "workspace", "ext", "search", cwd=ws)
    assert "are not used until you approve them" in result.stderr
    h.follow(result, "pkgmgr trust --show", cwd=ws)


def sync_without_pkgmgr_toml(h: H) -> None:
    folder = h.ws
    result = h.run("sync", code=5, cwd=folder)
    h.follow(result, "pkgmgr ext install NAME --save", cwd=folder, replace={"NAME": "review-pack"})
    assert (folder / "pkgmgr.toml").is_file()
    h.ok("sync", cwd=folder)


def workspace_command_outside_a_workspace(h: H) -> None:
    folder = h.ws
    result = h.run("--scope", "workspace", "bundle", "activate", "marketing-linear", code=5, cwd=folder)
    assert f"create one in {folder} (empty will do)" in result.stderr
    (folder / "pkgmgr.toml").write_text("", encoding="utf-8")
    h.ok("--scope", "workspace", "ext", "install", "marketing-linear", cwd=folder)
    h.run("--scope", "workspace", "bundle", "activate", "marketing-linear", code=8, cwd=folder)
    other = h.tmp / "elsewhere"
    other.mkdir()
    src = h.fixture("review-pack")  # outside the folder: pkgmgr.toml could not declare it, so no --save
    result = h.run("--scope", "workspace", "ext", "install", src, *UNVERIFIED, code=5, cwd=other)
    assert "--save" not in result.stderr and "--workspace DIR" in result.stderr
    h.ok("--scope", "workspace", "--workspace", folder, "ext", "install", src, *UNVERIFIED, cwd=other)


def frozen_with_a_declaration_missing_from_the_lock(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n')
    h.ok("sync", cwd=ws)
    h.declare('[extensions]\nreview-pack = "<0.2"\nmarketing-linear = "*"\n')
    result = h.run("sync", "--frozen", code=6, cwd=ws)
    h.follow(result, "pkgmgr sync", cwd=ws)
    h.ok("sync", "--frozen", cwd=ws)


def locked_when_the_lock_is_stale(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n')
    h.ok("sync", cwd=ws)
    h.declare('[extensions]\nreview-pack = ">=0.2"\n')
    result = h.run("sync", "--locked", code=6, cwd=ws)
    h.follow(result, "pkgmgr sync", cwd=ws)
    h.ok("sync", "--locked", cwd=ws)


def frozen_with_a_lock_that_lists_more(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\nmarketing-linear = "*"\n')
    h.ok("sync", cwd=ws)
    h.declare('[extensions]\nreview-pack = "<0.2"\n')
    result = h.run("sync", "--frozen", code=6, cwd=ws)
    h.follow(result, "pkgmgr sync", cwd=ws)
    h.ok("sync", "--frozen", cwd=ws)


def locked_with_a_lock_written_by_hand(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n')
    h.ok("sync", cwd=ws)
    lock = ws / "pkgmgr.lock"
    lock.write_text(lock.read_text(encoding="utf-8").replace("\n\n", "\n\n\n"), encoding="utf-8")
    h.ok("trust", cwd=ws)
    result = h.run("sync", "--locked", code=6, cwd=ws)
    h.follow(result, "pkgmgr sync", cwd=ws)
    h.ok("sync", "--locked", cwd=ws)


def upgrade_a_name_not_declared(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n')
    result = h.run("sync", "--upgrade", "marketing-linear", code=2, cwd=ws)
    h.follow(result, "pkgmgr ext install NAME --save", cwd=ws, replace={"NAME": "marketing-linear"})
    h.ok("sync", "--upgrade", "marketing-linear", cwd=ws)


def save_while_declared_extensions_are_not_installed(h: H) -> None:
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n')
    result = h.ok("ext", "install", "marketing-linear", "--save", cwd=ws)
    assert "pkgmgr.lock was not updated" in result.stderr
    h.follow(result, "pkgmgr sync", cwd=ws)
    assert "marketing-linear" in (ws / "pkgmgr.lock").read_text(encoding="utf-8")


def a_store_left_in_the_work_tree(h: H) -> None:
    ws = h.declare("[extensions]\n")
    (ws / ".pkgmgr").mkdir()
    result = h.run("sync", cwd=ws)
    doctor = h.follow(result, "pkgmgr doctor", cwd=ws)
    assert f"rm -rf '{ws / '.pkgmgr'}'" in doctor.stdout + doctor.stderr


# --- installing -----------------------------------------------------------------------------------


def status_of_a_name_not_installed(h: H) -> None:
    result = h.run("ext", "status", "marketing-linear", code=5)
    assert "(no extensions installed)" not in h.follow(result, "pkgmgr ext list").stdout
    assert "marketing-linear" in h.follow(result, "pkgmgr ext search").stdout


def install_what_is_installed(h: H) -> None:
    h.ok("ext", "install", "review-pack@0.1.0")
    result = h.ok("ext", "install", "review-pack")
    h.follow(result, "pkgmgr ext update")
    assert "review-pack  0.2.0" in h.ok("ext", "list").stdout


def install_a_folder_that_is_no_extension(h: H) -> None:
    folder = h.tmp / "empty"
    folder.mkdir()
    result = h.run("ext", "install", folder, *UNVERIFIED, code=3)
    created = h.follow(result, "pkgmgr ext new NAME", cwd=h.tmp, replace={"NAME": "my-tool"})
    assert "my-tool" in created.stdout
    h.ok("ext", "install", h.tmp / "my-tool", *UNVERIFIED)


def install_unverified_without_consent(h: H) -> None:
    src = h.fixture("review-pack")
    result = h.run("ext", "install", src, code=4)
    assert "pass --allow-unverified" in result.stderr
    result = h.run("ext", "install", src, "--allow-unverified", code=4)
    assert "pass --yes together with --allow-unverified" in result.stderr
    h.ok("ext", "install", src, "--allow-unverified", "--yes")


def install_from_another_source(h: H) -> None:
    h.ok("ext", "install", "review-pack")
    result = h.run("ext", "install", h.fixture("review-pack"), *UNVERIFIED, code=6)
    assert "pass --force to replace it" in result.stderr
    h.ok("ext", "install", h.fixture("review-pack"), *UNVERIFIED, "--force")


def install_several_when_one_fails(h: H) -> None:
    result = h.run("ext", "install", "review-pack", "no-such-extension", code=5)
    assert "--keep-going installs the refs that succeed" in result.stdout + result.stderr
    h.run("ext", "install", "review-pack", "no-such-extension", "--keep-going", code=5)
    assert "review-pack" in h.ok("ext", "list").stdout


def verify_a_modified_tree(h: H) -> None:
    h.ok("ext", "install", "review-pack")
    path = Path(json.loads(h.ok("ext", "list", "-o", "json").stdout)["extensions"][0]["path"])
    (path / "extra.txt").write_text("x", encoding="utf-8")
    result = h.run("ext", "verify", "review-pack", code=4)
    h.follow(result, "pkgmgr ext install review-pack@")
    h.ok("ext", "verify", "review-pack")
    src = h.fixture("prompt-enhancer")
    h.ok("ext", "install", src, *UNVERIFIED)
    path = Path(json.loads(h.ok("ext", "status", "prompt-enhancer", "-o", "json").stdout)["path"])
    (path / "extra.txt").write_text("x", encoding="utf-8")
    result = h.run("ext", "verify", "prompt-enhancer", code=4)
    h.follow(result, "pkgmgr ext install " + str(src), answer="y")  # it asks, in a terminal
    h.ok("ext", "verify", "prompt-enhancer")
    ws = h.declare('[extensions]\nmarketing-linear = "*"\n')  # in a workspace, it reinstalls there
    h.ok("sync", cwd=ws)
    path = Path(json.loads(h.ok("ext", "status", "marketing-linear", "-o", "json", cwd=ws).stdout)["path"])
    (path / "extra.txt").write_text("x", encoding="utf-8")
    result = h.run("ext", "verify", "marketing-linear", code=4, cwd=ws)
    h.follow(result, "pkgmgr --scope workspace ext install marketing-linear@", cwd=ws)
    h.ok("ext", "verify", "marketing-linear", cwd=ws)


def verify_without_names(h: H) -> None:
    h.ok("ext", "install", "review-pack")
    result = h.run("ext", "verify", code=2)
    assert "or pass --all" in result.stderr
    h.ok("ext", "verify", "--all")


def update_usage(h: H) -> None:
    h.ok("ext", "install", "review-pack@0.1.0")
    result = h.run("ext", "update", code=2)
    h.follow(result, "pkgmgr ext update --all --check")
    result = h.run("ext", "update", "--exit-code", code=2)
    h.follow(result, "pkgmgr ext update --all --check --exit-code", code=10)
    result = h.run("ext", "update", "review-pack", "--all", code=2)
    assert "pass --all, not both" in result.stderr
    h.ok("ext", "update", "--all")


def install_with_grants(h: H) -> None:
    src = h.fixture("review-pack")
    manifest = src / "extension.toml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + '\n[security]\ncapabilities = ["session.write"]\n',
                        encoding="utf-8")
    result = h.run("ext", "install", src, *UNVERIFIED, code=4)
    assert "pass --allow-grants to accept" in result.stderr
    h.ok("ext", "install", src, *UNVERIFIED, "--allow-grants")


# --- registries ---------------------------------------------------------------------------------


def install_an_unknown_name(h: H) -> None:
    result = h.run("ext", "install", "no-such-extension", code=5)
    assert "marketing-linear" in h.follow(result, "pkgmgr ext search").stdout


def install_from_an_unknown_registry(h: H) -> None:
    result = h.run("ext", "install", "review-pack", "--registry", "acme", code=5)
    assert "default" in h.follow(result, "pkgmgr registry list").stdout


def remove_an_unknown_registry(h: H) -> None:
    result = h.run("registry", "remove", "acme", code=5)
    assert "default" in h.follow(result, "pkgmgr registry list").stdout


def add_a_registry_that_cannot_be_read(h: H) -> None:
    missing = h.tmp / "nonexistent"
    result = h.run("registry", "add", "acme", missing, code=5)
    h.follow(result, "pkgmgr registry add acme")
    assert "acme" in h.ok("registry", "list").stdout


def add_a_registry_name_taken(h: H) -> None:
    index = h.tmp / "index"
    h.ok("registry", "init", index, "--name", "acme")
    h.ok("registry", "add", "acme", index)
    other = h.tmp / "other"
    h.ok("registry", "init", other, "--name", "acme")
    result = h.run("registry", "add", "acme", other, code=2)
    h.follow(result, "pkgmgr registry remove acme")
    h.ok("registry", "add", "acme", other)


def _registry(h: H, name: str = "acme") -> RegistryDir:
    from tests.registry.helpers import RegistryDir

    registry = RegistryDir(h.tmp / f"{name}-index", name)
    registry.publish("acme-tool", "0.1.0")
    return registry


def a_configured_registry_that_is_down(h: H) -> None:
    """'registry remove', '--registry NAME' and, once its registry.toml is cached, '--offline'."""
    h.fast_retries()
    from tests.support.servers import StaticFileServer

    registry = _registry(h)
    with StaticFileServer(registry.root) as server:
        h.ok("registry", "add", "acme", server.url + "/")
        h.ok("ext", "info", "acme-tool")
    # the server is gone
    result = h.run("ext", "info", "acme-tool", code=7)
    assert "'--offline' uses what is cached" in result.stderr
    h.ok("ext", "info", "acme-tool", "--offline")
    result = h.run("ext", "install", "review-pack", code=7)
    assert "'--registry NAME' asks another registry (default)" in result.stderr
    h.ok("ext", "install", "review-pack", "--registry", "default")
    result = h.run("ext", "install", "marketing-linear", code=7)
    h.follow(result, "pkgmgr registry remove acme")
    h.ok("ext", "install", "marketing-linear")


def a_declared_registry_that_is_down(h: H) -> None:
    """The user's case: sync has no --registry, pkgmgr.toml's registry is no configured one, and
    nothing of it is cached — the hint offers none of those."""
    h.fast_retries()
    ws = h.declare('[registries]\nteam = "http://127.0.0.1:9/index/"\n\n[extensions]\nreview-pack = "*"\n')
    result = h.run("sync", code=7, cwd=ws)
    hint = result.stderr.split("hint: ", 1)[1]
    assert "registry remove" not in hint and "--registry" not in hint and "--offline" not in hint
    assert "it is declared in pkgmgr.toml" in hint
    h.declare('[extensions]\nreview-pack = "*"\n', trust=False)  # removed from [registries] there ...
    h.follow(result, "pkgmgr trust", cwd=ws)  # ... and approved
    h.ok("sync", cwd=ws)


def search_with_a_registry_down(h: H) -> None:
    h.fast_retries()
    h.ok("registry", "add", "acme", "http://127.0.0.1:9/index/", "--no-check")
    result = h.ok("ext", "search")
    h.follow(result, "pkgmgr registry remove acme")
    assert "warning" not in h.ok("ext", "search").stderr


def a_github_registry_that_is_gone(h: H) -> None:
    from tests.support.fakegithub import FakeGitHub

    with FakeGitHub(h.tmp / "github") as github:
        env = {"PKGMGR_GITHUB_API_URL": github.api_url, "PKGMGR_GITHUB_RAW_URL": github.raw_url}
        h.ok("registry", "add", "acme", "github:acme/gone", "--no-check", env=env)
        result = h.run("ext", "install", "review-pack", code=5, env=env)
        assert "GITHUB_TOKEN" in result.stderr  # its own hint first
        h.ok("ext", "install", "review-pack", "--registry", "default", env=env)
        h.follow(result, "pkgmgr registry remove acme")
        h.ok("ext", "install", "marketing-linear", env=env)


def a_version_another_registry_has(h: H) -> None:
    from tests.registry.helpers import RegistryDir

    registry = RegistryDir(h.tmp / "acme-index", "acme")
    registry.publish("review-pack", "0.9.0")
    h.ok("registry", "add", "acme", registry.root)  # before default: it answers for review-pack
    result = h.run("ext", "install", "review-pack@0.1.0", code=5)
    h.follow(result, "pkgmgr ext install review-pack@0.1.0 --registry default")


def a_registry_rolled_back(h: H) -> None:
    from tests.registry.helpers import RegistryDir

    registry = RegistryDir(h.tmp / "acme-index", "acme", serial=5)
    registry.publish("acme-tool", "0.1.0")
    h.ok("registry", "add", "acme", registry.root)
    registry.serial = 2
    registry.write()
    result = h.run("ext", "install", "acme-tool", code=4)
    h.follow(result, "pkgmgr registry remove acme")
    h.ok("registry", "add", "acme", registry.root)  # "and add it again"
    h.ok("ext", "install", "acme-tool")


def an_expired_registry(h: H) -> None:
    from tests.registry.helpers import RegistryDir

    registry = RegistryDir(h.tmp / "acme-index", "acme", expires="2020-01-01T00:00:00Z")
    registry.publish("acme-tool", "0.1.0")
    h.ok("registry", "add", "acme", registry.root, "--no-check")
    result = h.run("ext", "install", "acme-tool", code=4)
    assert "or pass --allow-expired" in result.stderr
    h.ok("ext", "install", "acme-tool", "--allow-expired")


def a_prerelease_only(h: H) -> None:
    from tests.registry.helpers import RegistryDir

    registry = RegistryDir(h.tmp / "acme-index", "acme")
    registry.publish("acme-tool", "1.0.0-rc.1")
    h.ok("registry", "add", "acme", registry.root)
    result = h.run("ext", "install", "acme-tool", code=5)
    assert "pass --pre" in result.stderr
    h.ok("ext", "install", "acme-tool", "--pre")


def a_registry_source_that_is_no_index(h: H) -> None:
    folder = h.tmp / "plain"
    folder.mkdir()
    h.ok("registry", "add", "acme", folder, "--no-check")
    result = h.run("ext", "install", "review-pack", code=3)
    listed = h.follow(result, "pkgmgr registry list")
    assert str(folder) in listed.stdout


def require_signed_refuses_an_unsigned_registry(h: H) -> None:
    from tests.support.signed import signed_index

    index = signed_index(h.tmp / "index", name="acme")
    h.ok("registry", "add", "acme", index.path, "--no-check")
    h.home.mkdir(exist_ok=True)
    config = h.home / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n[policy]\nrequire_signed = true\n", encoding="utf-8")
    result = h.run("ext", "install", "review-pack", code=4)
    h.follow(result, "pkgmgr registry remove acme")
    h.follow(result, "pkgmgr registry add acme", replace={"FILE": str(index.root_file)})
    result = h.run("registry", "add", "other", h.tmp / "nonexistent", code=4)
    assert "--root FILE or --root-sha256 HEX" in result.stderr
    h.ok("ext", "install", "marketing-linear")


def a_signed_registry_whose_trusted_root_is_lost(h: H) -> None:
    """A signed registry's trusted root lost (`<home>/tuf` gone) or damaged: the refused install
    prints the one command that re-establishes it (`trustroot.reestablish_command`, the command
    `doctor` prints), which runs as printed — the registry's source holding a space — after which
    the install goes through; `doctor --check` prints the very same command."""
    import shutil

    from tests.support.signed import signed_index

    index = signed_index(h.tmp / "my index", name="acme")
    h.ok("registry", "add", "acme", index.path, "--root", index.root_file)
    shutil.rmtree(h.home / "tuf")
    result = h.run("ext", "install", "review-pack", code=4)
    assert "no trusted root is recorded" in result.stderr and "registry remove" not in result.stderr, result
    printed = h.hinted(result, "pkgmgr registry add acme")
    assert printed.endswith(f"--root-sha256 {index.root_sha256()}"), printed
    h.follow(result, "pkgmgr registry add acme")
    h.ok("ext", "install", "review-pack")
    _damage_trusted_root(h, "truncated")
    result = h.run("ext", "install", "review-pack@0.1.0", code=4)
    assert h.hinted(result, "pkgmgr registry add acme") == printed
    assert h.hinted(h.run("doctor", "--check", code=4), "pkgmgr registry add acme") == printed  # doctor's command
    h.follow(result, "pkgmgr registry add acme")
    h.ok("ext", "install", "review-pack@0.1.0")
    h.ok("doctor", "--check")
    _doctor_reports_a_damaged_trusted_root(h, index)


def _damage_trusted_root(h: H, how: str) -> None:
    """Damage the trusted root of the one signed registry configured (`<home>/tuf/<key>/root.json`,
    ngclient's link to `root_history/<N>.root.json`) as a power cut or a hand could."""
    import json

    [folder] = [p for p in (h.home / "tuf").iterdir() if p.is_dir()]
    link = folder / "root.json"
    target = link.resolve()
    data = target.read_bytes()
    if how == "missing":
        link.unlink()
    elif how == "empty":
        target.write_bytes(b"")
    elif how == "truncated":
        target.write_bytes(data[: len(data) // 2])
    else:  # its signed part changed: the signatures no longer match it
        document = json.loads(data)
        document["signed"]["expires"] = "2099-01-01T00:00:00Z"
        target.write_bytes(json.dumps(document).encode())


def _doctor_reports_a_damaged_trusted_root(h: H, index: SignedIndex) -> None:
    """`doctor` on each damage of the trusted root of the signed registry `acme` (configured from
    `index`): a finding, not doctor's to repair; the command it prints re-establishes it."""
    for how in ("missing", "empty", "truncated", "invalid signature"):
        _damage_trusted_root(h, how)
        h.run("ext", "info", "review-pack", code=4)  # registry_signature_invalid: nothing is read from it
        result = h.run("doctor", "--check", code=4)
        assert "state_inconsistent" in result.stderr + result.stdout and "trusted root" in result.stderr, result
        assert h.run("doctor", code=4).stderr.count("trusted root") >= 1  # not doctor's to repair: it says so again
        h.follow(result, "pkgmgr registry add acme")  # exactly as printed: the source and the pinned root
        h.ok("doctor", "--check")
    h.ok("ext", "install", "review-pack")
    h.run("registry", "add", "acme", index.path, "--root", index.root_file, code=2)  # sound: the name is taken


def reestablish_a_trusted_root_with_another_root(h: H) -> None:
    """The command sits at the end of the hint, quoted for a shell: it runs as printed from an index
    whose path holds a quote and a space."""
    from tests.support.signed import signed_index

    index = signed_index(h.tmp / "the team's index", name="acme")
    h.ok("registry", "add", "acme", index.path, "--root", index.root_file)
    _damage_trusted_root(h, "missing")
    result = h.run("registry", "add", "acme", index.path, "--root-sha256", "0" * 64, code=4)
    assert "re-establishes only the root it pinned" in result.stderr, result
    h.follow(result, "pkgmgr registry add acme")
    h.ok("ext", "install", "review-pack")


def add_signed_a_source_already_configured(h: H) -> None:
    from tests.support.signed import signed_index

    index = signed_index(h.tmp / "index", name="acme")
    h.ok("registry", "add", "plain", index.path)
    result = h.run("registry", "add", "acme", index.path, "--root", index.root_file, code=2)
    h.follow(result, "pkgmgr registry remove plain")
    h.ok("registry", "add", "acme", index.path, "--root", index.root_file)


# --- maintaining an index -----------------------------------------------------------------------


def init_sign_then_add_and_publish(h: H) -> None:
    from tests.publish.helpers import packed
    from tests.support.signed import write_test_keys

    keys = write_test_keys(h.tmp / "keys")
    result = h.run("registry", "init", h.tmp / "index", "--name", "acme", "--keys", keys, code=2)
    assert "apply with --sign" in result.stderr
    created = h.ok("registry", "init", h.tmp / "index", "--name", "acme", "--keys", keys, "--sign")
    h.follow(created, "pkgmgr registry publish ARCHIVE", replace={"ARCHIVE": str(packed(h.tmp, version="0.1.0"))})
    h.follow(created, "pkgmgr registry add NAME SOURCE", replace={"NAME": "acme", "SOURCE": str(h.tmp / "index")})
    h.ok("ext", "install", "review-pack", "--registry", "acme")


def sign_an_unsigned_index(h: H) -> None:
    h.ok("registry", "init", h.tmp / "index", "--name", "acme")
    result = h.run("registry", "sign", h.tmp / "index", code=2)
    h.follow(result, "pkgmgr registry init DIR --sign", replace={"DIR": str(h.tmp / "signed")})
    assert (h.tmp / "signed" / "metadata" / "1.root.json").is_file()


def init_into_an_index(h: H) -> None:
    from tests.publish.helpers import packed

    h.ok("registry", "init", h.tmp / "index", "--name", "acme")
    result = h.run("registry", "init", h.tmp / "index", "--name", "acme", code=2)
    h.follow(result, "pkgmgr registry publish ARCHIVE --index DIR",
             replace={"ARCHIVE": str(packed(h.tmp, version="0.1.0")), "DIR": str(h.tmp / "index")})
    index = h.tmp / "index"
    comment = (index / "registry.toml").read_text(encoding="utf-8")
    assert "`pkgmgr registry validate .`" in comment
    h.ok("registry", "validate", ".", cwd=index)  # what registry.toml's comment says to run there


def publish_without_an_index(h: H) -> None:
    from tests.publish.helpers import packed

    archive = packed(h.tmp, version="0.1.0")
    result = h.run("registry", "publish", archive, "--index", h.tmp / "nothing", code=5)
    h.follow(result, "pkgmgr registry init")
    h.ok("registry", "publish", archive, "--index", h.tmp / "nothing")
    result = h.run("registry", "publish", archive, code=2)
    assert "DIR or --index DIR" in result.stderr
    result = h.run("registry", "publish", h.fixture("review-pack"), "--index", h.tmp / "nothing", code=3)
    packed_it = h.follow(result, "pkgmgr ext pack", cwd=h.tmp)
    assert "review-pack-0.1.0.tar.gz" in packed_it.stdout


def publish_into_a_broken_index(h: H) -> None:
    from tests.publish.helpers import packed

    index = h.tmp / "index"
    h.ok("registry", "init", index, "--name", "acme", "--format", "1")
    (index / "extensions" / "re").mkdir(parents=True)
    (index / "extensions" / "re" / "review-pack.toml").write_text("name = 3\n", encoding="utf-8")
    result = h.run("registry", "publish", packed(h.tmp, version="0.1.0"), "--index", index, code=3)
    validated = h.follow(result, "pkgmgr registry validate", code=3)
    assert "review-pack.toml" in validated.stdout + validated.stderr


def validate_an_index_out_of_step(h: H) -> None:
    from tests.publish.helpers import packed

    index = h.tmp / "index"
    h.ok("registry", "init", index, "--name", "acme", "--format", "1")
    empty = (index / "index.json").read_bytes()
    h.ok("registry", "publish", packed(h.tmp, version="0.1.0"), "--index", index)
    (index / "index.json").write_bytes(empty)  # as an interrupted publish leaves it
    result = h.run("registry", "validate", index, code=3)
    h.follow(result, "pkgmgr registry build")
    h.ok("registry", "validate", index)
    (index / "index.json").unlink()
    result = h.run("registry", "validate", index, code=3)
    h.follow(result, "pkgmgr registry build")
    h.ok("registry", "validate", index)


def validate_a_signed_index_changed_by_hand(h: H) -> None:
    from tests.publish.helpers import packed
    from tests.support.signed import signed_index

    index = signed_index(h.tmp / "index", name="acme")  # its keys where registry sign looks by default
    index.publish(packed(h.tmp, version="0.1.0"))
    registry = index.path / "registry.toml"
    registry.write_text(registry.read_text(encoding="utf-8").replace('description = "', 'description = "Our '),
                        encoding="utf-8")
    result = h.run("registry", "validate", index.path, code=3)
    h.follow(result, "pkgmgr registry sign")
    h.ok("registry", "validate", index.path)



# --- a format-2 index (docs/registry-format.md) -------------------------------------------------

CRASH_AT = "PKGMGR_TEST_CRASH_AT"  # pkgmgr/crash.py: read when a process starts, so a child is killed


def _index2(h: H, name: str = "index") -> Path:
    index = h.tmp / name
    h.ok("registry", "init", index, "--name", "acme", "--format", "2")
    return index


def _killed(*args: object, at: str) -> None:
    """A `pkgmgr` child killed at crash point `at` (tests/reliability/test_registry_crash.py)."""
    import signal

    from tests.support.cli import run_subprocess

    result = run_subprocess([str(a) for a in args], env={CRASH_AT: at})
    assert result.code == -signal.SIGKILL, result


def publish_past_the_index_json_cap(h: H) -> None:
    """Format 1's index.json over its cap (lowered here: the real one takes ~54,000 entries)
    refuses the publish; the migration the hint names takes the index to format 2, where the
    same publish goes through."""
    from unittest import mock

    from pkgmgr.registry import publish as publish_module
    from tests.publish.helpers import packed

    index = h.tmp / "index"
    h.ok("registry", "init", index, "--name", "acme", "--format", "1")
    h.ok("registry", "publish", packed(h.tmp, version="0.1.0"), "--index", index)
    archive = packed(h.tmp, version="0.2.0")
    with mock.patch.object(publish_module, "INDEX_MAX_BYTES", 64):
        result = h.run("registry", "publish", archive, "--index", index, code=3)
        assert "move the index to format 2" in result.stderr + result.stdout
        h.follow(result, "pkgmgr registry build")
        assert "format = 2" in (index / "registry.toml").read_text(encoding="utf-8")
        h.ok("registry", "publish", archive, "--index", index)
    h.ok("registry", "validate", index)


def validate_a_format_2_index_out_of_step(h: H) -> None:
    """A summary shard behind its entries (an entry edited by hand), then a shard list behind the
    serial and the shards (an older one put back): 'registry build' brings each in line."""
    from pkgmgr.registry.layout import SHARDS_FILE, entry_path
    from tests.publish.helpers import packed

    index = _index2(h)
    h.ok("registry", "publish", packed(h.tmp, version="0.1.0"), "--index", index)
    entry = index / entry_path("review-pack", 2)
    text = entry.read_text(encoding="utf-8")
    assert 'description = "' in text
    entry.write_text(text.replace('description = "', 'description = "Reviewed: ', 1), encoding="utf-8")
    result = h.run("registry", "validate", index, code=3)
    assert "is not in sync with the entries of its shard" in result.stdout + result.stderr
    h.follow(result, "pkgmgr registry build")
    h.ok("registry", "validate", index)
    shards = (index / SHARDS_FILE).read_bytes()
    h.ok("registry", "publish", packed(h.tmp, name="other-pack", version="0.1.0"), "--index", index)
    (index / SHARDS_FILE).write_bytes(shards)  # as a merge that kept one side's shard list leaves it
    result = h.run("registry", "validate", index, code=3)
    assert "is not in sync with registry.toml's serial" in result.stdout + result.stderr
    h.follow(result, "pkgmgr registry build")
    h.ok("registry", "validate", index)


def validate_a_misplaced_entry(h: H) -> None:
    """An entry where format 1 kept it (a contributor's habit): moved where the problem says,
    then built into the summary, the index validates and lists it."""
    import re
    import shutil

    from pkgmgr.registry.layout import entry_path
    from tests.publish.helpers import packed

    index = _index2(h)
    h.ok("registry", "publish", packed(h.tmp, version="0.1.0"), "--index", index)
    other = _index2(h, "other")
    h.ok("registry", "publish", packed(h.tmp, name="other-pack", version="0.1.0"), "--index", other)
    shutil.copy(other / "archives" / "other-pack-0.1.0.tar.gz", index / "archives")
    (index / "extensions" / "ot").mkdir()
    shutil.copy(other / entry_path("other-pack", 2), index / "extensions" / "ot" / "other-pack.toml")
    result = h.run("registry", "validate", index, code=3)
    found = re.search(r"belongs at (\S+) ", result.stdout + result.stderr)
    assert found is not None and found.group(1) == entry_path("other-pack", 2), result
    h.run("registry", "build", index, code=3)  # build does not guess: it says the same
    (index / found.group(1)).parent.mkdir(parents=True, exist_ok=True)
    (index / "extensions" / "ot" / "other-pack.toml").rename(index / found.group(1))  # "move it there"
    h.follow(result, "pkgmgr registry build")
    h.ok("registry", "validate", index)
    h.ok("registry", "add", "acme", index)
    assert "other-pack" in h.ok("ext", "search", "other-pack", "--registry", "acme").stdout


def validate_an_interrupted_change(h: H) -> None:
    """A publish killed with its change staged: validate says so, 'registry doctor' completes it."""
    from pkgmgr.registry.layout import entry_path
    from tests.publish.helpers import packed

    index = _index2(h)
    _killed("registry", "publish", packed(h.tmp, version="0.1.0"), "--index", index, at="registry.switch.staged")
    assert not (index / entry_path("review-pack", 2)).exists()
    result = h.run("registry", "validate", index, code=3)
    assert "an interrupted change of the index is pending" in result.stdout + result.stderr
    h.follow(result, "pkgmgr registry doctor")
    h.ok("registry", "validate", index)
    assert 'version = "0.1.0"' in (index / entry_path("review-pack", 2)).read_text(encoding="utf-8")


def a_change_that_cannot_be_completed(h: H) -> None:
    """A killed publish whose staging lost a file: doctor cannot complete it; what the hint says
    (the staging removed, the index restored from git, a build) leaves a valid index."""
    import json
    import re
    import shutil
    import subprocess

    from tests.publish.helpers import packed

    if shutil.which("git") is None:
        return
    index = _index2(h)
    h.ok("registry", "publish", packed(h.tmp, version="0.1.0"), "--index", index)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=index, check=True)
    subprocess.run([*git, "add", "-A"], cwd=index, check=True)
    subprocess.run([*git, "commit", "-qm", "index"], cwd=index, check=True)
    archive = packed(h.tmp, version="0.2.0")
    _killed("registry", "publish", archive, "--index", index, at="registry.switch.renamed#1")
    (tx,) = (index / ".pkgmgr-staging").iterdir()
    files = json.loads((tx / "journal.json").read_bytes())["files"]
    (tx / files[-1]["staged"]).unlink()  # the staging lost a file the change was writing
    result = h.run("registry", "doctor", index, code=4)
    found = re.search(r"remove (\S+), restore the index from its git history", result.stderr)
    assert found is not None and found.group(1) == str(tx), result
    shutil.rmtree(found.group(1))
    subprocess.run([*git, "checkout", "-q", "--", "."], cwd=index, check=True)
    subprocess.run([*git, "clean", "-qfd"], cwd=index, check=True)
    h.follow(result, "pkgmgr registry build")
    h.ok("registry", "validate", index)
    h.ok("registry", "publish", archive, "--index", index)  # the publish, again
    h.ok("registry", "validate", index)


def validate_a_signed_index_with_a_file_added_by_hand(h: H) -> None:
    import shutil

    from tests.publish.helpers import packed
    from tests.support.signed import signed_index

    index = signed_index(h.tmp / "index", name="acme")  # its keys where registry sign looks by default
    index.publish(packed(h.tmp, version="0.1.0"))
    shutil.copy(packed(h.tmp, version="0.2.0"), index.path / "archives" / "review-pack-0.2.0.tar.gz")
    result = h.run("registry", "validate", index.path, code=3)
    assert "archives/review-pack-0.2.0.tar.gz" in result.stdout + result.stderr
    h.follow(result, "pkgmgr registry sign")
    h.ok("registry", "validate", index.path)


def publish_with_keys_the_index_was_not_signed_with(h: H) -> None:
    """Another index's keys (--keys names the right ones), then a key rotation killed before its
    switch: put the old key back, or run the rotation again."""
    import os
    import re

    from tests.publish.helpers import packed
    from tests.support.signed import signed_index

    index = signed_index(h.tmp / "index", name="acme")
    index.publish(packed(h.tmp, version="0.1.0"))
    h.ok("registry", "init", h.tmp / "other", "--name", "other", "--sign", "--keys", h.tmp / "other-keys")
    archive = packed(h.tmp, version="0.2.0")
    result = h.run("registry", "publish", archive, "--index", index.path, "--keys", h.tmp / "other-keys", code=4)
    assert "use the keys directory the index was signed with (--keys DIR); after an interrupted" in result.stderr
    h.ok("registry", "publish", archive, "--index", index.path, "--keys", index.keys)

    _killed("registry", "rotate-key", index.path, "timestamp", at="registry.switch.staging#1")
    archive = packed(h.tmp, version="0.3.0")
    result = h.run("registry", "publish", archive, "--index", index.path, code=4)
    found = re.search(r"or put (\S+) back as (\S+)\)", result.stderr)
    assert found is not None, result
    os.replace(index.keys / found.group(1), index.keys / found.group(2))
    h.ok("registry", "publish", archive, "--index", index.path)

    _killed("registry", "rotate-key", index.path, "timestamp", at="registry.switch.staging#1")
    archive = packed(h.tmp, version="0.4.0")
    result = h.run("registry", "publish", archive, "--index", index.path, code=4)
    assert "after an interrupted 'registry rotate-key', run it again" in result.stderr
    h.ok("registry", "rotate-key", index.path, "timestamp")
    h.ok("registry", "publish", archive, "--index", index.path)
    h.ok("registry", "validate", index.path)


# --- a registry's local search index (the client) ------------------------------------------------


def _search_index(h: H) -> Path:
    (db,) = (h.home / "cache" / "registries").glob("*/search.sqlite")
    return db


def _damage_rows(db: Path) -> None:
    """A page of the rows' table overwritten (a disk fault): SQLite opens the file, and reading
    the rows fails."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'ext'").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(db.read_bytes())
    data[(page - 1) * size:page * size] = b"\xff" * size
    db.write_bytes(bytes(data))


def search_with_a_damaged_local_index(h: H) -> None:
    """A damaged search.sqlite, read as it is (the same serial) or brought up to a new one, is a
    lost cache: the search rebuilds it, with a warning. One that cannot even be removed (a
    directory in its place) is an io_error, which 'pkgmgr cache clean' clears."""
    from tests.publish.helpers import packed

    index = _index2(h)
    h.ok("registry", "publish", packed(h.tmp, name="acme-tool", version="0.1.0"), "--index", index)
    h.ok("registry", "add", "acme", index)
    assert "acme-tool" in h.ok("ext", "search", "acme", "--registry", "acme").stdout
    _damage_rows(_search_index(h))
    result = h.ok("ext", "search", "acme", "--registry", "acme")
    assert "acme-tool" in result.stdout and "rebuilding it from the registry" in result.stderr
    _damage_rows(_search_index(h))
    h.ok("registry", "publish", packed(h.tmp, name="acme-tool", version="0.2.0"), "--index", index)
    result = h.ok("ext", "search", "acme", "--registry", "acme")
    assert "0.2.0" in result.stdout and "rebuilding it from the registry" in result.stderr
    db = _search_index(h)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.mkdir()
    result = h.run("ext", "search", "acme", "--registry", "acme", code=9)
    assert "its local search index" in result.stderr and result.stderr.count("hint: try again;") == 1
    h.follow(result, "pkgmgr cache clean")
    assert "0.2.0" in h.ok("ext", "search", "acme", "--registry", "acme").stdout


def search_a_registry_without_its_shard_list(h: H) -> None:
    from pkgmgr.registry.layout import SHARDS_FILE
    from tests.publish.helpers import packed

    index = _index2(h)
    h.ok("registry", "publish", packed(h.tmp, name="acme-tool", version="0.1.0"), "--index", index)
    (index / SHARDS_FILE).unlink()
    h.ok("registry", "add", "acme", index)
    result = h.run("ext", "search", "acme", "--registry", "acme", code=3)
    h.follow(result, "pkgmgr registry build DIR", replace={"DIR": str(index)})  # its maintainers, in the index
    assert "acme-tool" in h.ok("ext", "search", "acme", "--registry", "acme").stdout


# --- authoring ----------------------------------------------------------------------------------


def new_extension_and_its_readme(h: H) -> None:
    result = h.ok("ext", "new", "my-crew", "--template", "bundle", cwd=h.tmp)
    h.follow(result, "pkgmgr ext validate", cwd=h.tmp)
    root = h.tmp / "my-crew"
    readme = (root / "README.md").read_text(encoding="utf-8")
    commands = [line.strip() for line in readme.splitlines() if line.strip().startswith("pkgmgr ")]
    assert len(commands) == 3
    for command in commands[:2]:
        h.ok(*command.split()[1:], cwd=root)
    h.run(*commands[2].split()[1:], cwd=root, answer="y", code=0)  # it asks, in a terminal
    manifest = (root / "extension.toml").read_text(encoding="utf-8")
    activate = manifest.split("'pkgmgr ", 1)[1].split("'", 1)[0]
    h.run(*activate.split(), code=0)
    again = h.run("ext", "new", "my-crew", cwd=h.tmp, code=2)
    assert "choose another NAME or --path DIR" in again.stderr
    h.ok("ext", "new", "my-crew", "--path", h.tmp / "elsewhere")


def help_man_with_a_command(h: H) -> None:
    result = h.run("help", "--man", "ext", code=2)
    page = h.follow(result, "pkgmgr help --man")
    assert page.stdout.startswith(".TH PKGMGR 1")
    result = h.run("help", "ext", "instal", code=2)
    assert "install" in h.follow(result, "pkgmgr ext --help").stdout


def an_unknown_option(h: H) -> None:
    result = h.run("ext", "install", "review-pack", "--frobnicate", code=2)
    assert "--allow-unverified" in h.follow(result, "pkgmgr ext install --help").stdout


def a_missing_argument(h: H) -> None:
    result = h.run("ext", "install", code=2)
    assert "REF" in h.follow(result, "pkgmgr ext install --help").stdout


def install_in_a_workspace_where_there_is_none(h: H) -> None:
    folder = h.ws
    result = h.run("--scope", "workspace", "ext", "install", "review-pack", code=5, cwd=folder)
    h.follow(result, "pkgmgr ext install review-pack --save", cwd=folder)
    listed = json.loads(h.ok("ext", "list", "-o", "json", cwd=folder).stdout)["extensions"]
    assert [(e["name"], e["scope"]) for e in listed] == [("review-pack", "workspace")]


# --- the state of the scopes ---------------------------------------------------------------------


def doctor_finds_a_modified_tree(h: H) -> None:
    h.ok("ext", "install", "review-pack")
    path = Path(json.loads(h.ok("ext", "list", "-o", "json").stdout)["extensions"][0]["path"])
    (path / "extra.txt").write_text("x", encoding="utf-8")
    result = h.run("doctor", "--check", code=4)
    h.follow(result, "pkgmgr ext install review-pack@")
    h.ok("doctor", "--check")
    ws = h.declare('[extensions]\nreview-pack = "<0.2"\n')
    h.ok("sync", cwd=ws)
    path = Path(json.loads(h.ok("--scope", "workspace", "ext", "status", "review-pack", "-o", "json",
                                cwd=ws).stdout)["path"])
    (path / "extra.txt").write_text("x", encoding="utf-8")
    result = h.run("doctor", "--check", code=4, cwd=ws)
    h.follow(result, "pkgmgr --scope workspace ext install review-pack@", cwd=ws)
    h.ok("doctor", "--check", cwd=ws)


def doctor_check_finds_leftovers(h: H) -> None:
    h.ok("ext", "install", "review-pack")
    staging = h.home / ".staging"
    staging.mkdir(exist_ok=True)
    (staging / "left-by-a-crash").mkdir()
    result = h.run("doctor", "--check", code=4)
    h.follow(result, "pkgmgr doctor")
    h.ok("doctor", "--check")


def a_tree_state_db_does_not_name(h: H) -> None:
    import shutil

    h.ok("ext", "install", "review-pack")
    path = Path(json.loads(h.ok("ext", "list", "-o", "json").stdout)["extensions"][0]["path"])
    shutil.copytree(path, path.parent.parent / "stray" / "0.1.0")
    result = h.run("doctor", "--check", code=4)
    h.follow(result, "pkgmgr doctor --rebuild", code=None)
    assert h.run("doctor", "--check").code in (0, 4)


def a_damaged_state_db(h: H) -> None:
    h.ok("ext", "install", "review-pack")
    db = h.home / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (page,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'extensions'").fetchone()
    (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    data = bytearray(db.read_bytes())
    data[(page - 1) * size:page * size] = b"\xff" * size  # a page of the extensions table overwritten
    db.write_bytes(bytes(data))
    result = h.run("ext", "list")
    assert result.code == 4, result
    checked = h.follow(result, "pkgmgr doctor --check", code=4)
    assert "state.db" in checked.stdout + checked.stderr


def a_lock_whose_checksum_the_registry_does_not_list(h: H) -> None:
    """checksum_mismatch from the lock: both ways out the hint offers."""
    import shutil
    import subprocess

    ws = h.declare('[extensions]\nreview-pack = "*"\n')
    h.ok("sync", cwd=ws)
    lock = ws / "pkgmgr.lock"
    good = lock.read_text(encoding="utf-8")
    bad = good.replace('sha256 = "a', 'sha256 = "0', 1)
    assert bad != good
    lock.write_text(bad, encoding="utf-8")
    h.ok("trust", cwd=ws)  # approved as it came (a merge the reviewer missed)
    result = h.run("sync", "--frozen", code=4, cwd=ws)
    h.follow(result, "pkgmgr sync --upgrade review-pack", cwd=ws)
    h.ok("sync", "--frozen", cwd=ws)
    assert lock.read_text(encoding="utf-8") == good
    if shutil.which("git") is None:
        return
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "pkgmgr.toml", "pkgmgr.lock"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "lock"], cwd=ws, check=True)
    lock.write_text(bad, encoding="utf-8")
    h.ok("trust", cwd=ws)
    result = h.run("sync", "--frozen", code=4, cwd=ws)
    import re

    restore = re.search(r"'(git checkout [^']*)'", result.stderr).group(1).split()  # type: ignore[union-attr]
    subprocess.run([*git, *restore[1:]], cwd=ws, check=True)
    assert lock.read_text(encoding="utf-8") == good
    h.ok("trust", cwd=ws)  # the restored lock is approved again, as any edit is
    h.ok("sync", "--frozen", cwd=ws)


# --- the other hosts (SPEC 13) -----------------------------------------------------------------------


def _host_folder(h: H, host: str, scope: str = "global", cwd: Path | None = None) -> Path:
    """Where `host` loads extensions from (`pkgmgr hosts`)."""
    shown = json.loads(h.ok("hosts", "-o", "json", cwd=cwd).stdout)["hosts"]
    return Path(next(entry for entry in shown if entry["name"] == host)["homes"][scope])


def _terva_extension(root: Path, name: str = "hello", script: str = "printf hello\n") -> Path:
    from tests.hosts.helpers import terva_extension

    terva_extension(root, name)
    (root / "run.sh").write_text("#!/bin/sh\n" + script, encoding="utf-8")
    return root


def install_over_a_hand_installed_extension(h: H) -> None:
    """An extension pkgmgr did not install is in the host's folder: adopting it takes it under
    management as it is; --force replaces it."""
    import shutil

    source = _terva_extension(h.tmp / "src" / "hello")
    by_hand = h.tmp / "user-home" / "hand"
    _terva_extension(by_hand / "hello", script="printf by-hand\n")
    folder = _host_folder(h, "terva")
    folder.mkdir(parents=True)
    shutil.copytree(by_hand / "hello", folder / "hello")
    result = h.run("ext", "install", source, *UNVERIFIED, code=6)
    h.follow(result, "pkgmgr adopt --host terva hello")
    adopted = json.loads(h.ok("ext", "status", "hello", "-o", "json").stdout)
    assert adopted["host"] == "terva" and adopted["provenance"]["locator"] == "adopted", adopted
    h.ok("ext", "remove", "hello")
    shutil.copytree(by_hand / "hello", folder / "hello")
    h.run("ext", "install", source, *UNVERIFIED, code=6)
    h.ok("ext", "install", source, *UNVERIFIED, "--force")
    assert (folder / "hello" / "run.sh").read_text(encoding="utf-8").endswith("printf hello\n")


def reinstall_changed_content_of_a_host_extension(h: H) -> None:
    source = _terva_extension(h.tmp / "src" / "hello")
    h.ok("ext", "install", source, *UNVERIFIED)
    (source / "run.sh").write_text("#!/bin/sh\nprintf changed\n", encoding="utf-8")
    result = h.run("ext", "install", source, *UNVERIFIED, code=6)
    assert "pass --force to replace it" in result.stderr
    h.ok("ext", "install", source, *UNVERIFIED, "--force")
    h.ok("ext", "verify", "hello")


def a_name_two_hosts_hold(h: H) -> None:
    """`--host` picks one of the installs two hosts hold under one name."""
    h.ok("ext", "install", h.fixture("review-pack"), *UNVERIFIED)
    h.ok("ext", "install", _terva_extension(h.tmp / "src" / "terva" / "review-pack", "review-pack"), *UNVERIFIED)
    result = h.run("ext", "status", "review-pack", code=2)
    assert "--host compozy or --host terva" in result.stderr
    shown = json.loads(h.ok("ext", "status", "review-pack", "--host", "terva", "-o", "json").stdout)
    assert shown["host"] == "terva"
    h.ok("ext", "disable", "review-pack", "--host", "compozy")


def a_name_a_host_does_not_hold(h: H) -> None:
    _terva_extension(h.tmp / "src" / "hello")
    h.ok("ext", "install", h.tmp / "src" / "hello", *UNVERIFIED)
    result = h.run("ext", "status", "hallo", "--host", "terva", code=5)
    listed = h.follow(result, "pkgmgr ext list --host terva")
    assert "hello" in listed.stdout


def a_tree_with_the_manifests_of_two_hosts(h: H) -> None:
    tree = h.fixture("review-pack")
    (tree / "vera.extension.json").write_text(json.dumps({"id": "review-pack", "version": "1.0.0", "sdk": "1",
                                                          "entrypoint": "./x.ts", "capabilities": []}),
                                              encoding="utf-8")
    (tree / "x.ts").write_text("export default function activate() {}\n", encoding="utf-8")
    result = h.run("ext", "validate", tree, code=3)
    assert "--host compozy or --host vera" in result.stderr
    h.ok("ext", "validate", tree, "--host", "compozy")
    assert "vera" in h.ok("ext", "validate", tree, "--host", "vera").stdout
    refused = h.run("ext", "validate", tree, "--host", "terva", code=3)
    assert "no extension manifest of terva here (--host terva; found:" in refused.stderr


def new_eva_extension_and_its_readme(h: H) -> None:
    """An Eva extension carries no version: its README's pack command names one, and pack without
    it says to."""
    h.ok("ext", "new", "my-notes", "--host", "eva", cwd=h.tmp)
    root = h.tmp / "my-notes"
    refused = h.run("ext", "pack", ".", cwd=root, code=2)
    assert "pass --release VERSION" in refused.stderr
    readme = (root / "README.md").read_text(encoding="utf-8")
    command = readme.split("'pkgmgr ", 1)[1].split("'", 1)[0]
    h.ok(*command.split(), cwd=root)
    assert (root / "my-notes-0.1.0.tar.gz").is_file()
    h.ok("ext", "install", root / "my-notes-0.1.0.tar.gz", *UNVERIFIED)


def eva_project_folder_holds_a_foreign_script(h: H) -> None:
    """A repository committed a script to .eva/extensions: --approve-host-trust refuses to approve
    it unnamed (the hint says to review it and name every file with --approve-host-trust=all); an
    install without the option says the same in its note. Run as printed, the approval covers the
    files the message lists."""
    ws = h.declare("")
    folder = ws / ".eva" / "extensions"
    folder.mkdir(parents=True)
    module = "defmodule Eva.Extension.{} do\n  use Eva.Core.Extension\n\n  def setup(_ctx), do: {{:ok, %Eva.Core.Extension.Spec{{}}}}\nend\n"
    (folder / "backdoor.exs").write_text(module.format("Backdoor"), encoding="utf-8")
    scripts = h.tmp / "scripts"
    scripts.mkdir()
    for name in ("notes", "tasks"):
        (scripts / f"{name}.exs").write_text(module.format(name.capitalize()), encoding="utf-8")
    install = ("--scope", "workspace", "ext", "install", scripts / "notes.exs", *UNVERIFIED)
    refused = h.run(*install, "--approve-host-trust", code=4, cwd=ws)
    assert "hint: review it; then run the same command with --approve-host-trust=all" in refused.stderr, refused
    assert "backdoor.exs" in refused.stderr and not (folder / "notes.exs").exists()
    trust = h.tmp / "user-home" / ".eva" / "trust.json"
    assert not trust.exists()
    done = h.ok(*install, "--approve-host-trust=all", cwd=ws)
    assert "covering backdoor.exs, notes.exs" in done.stdout
    assert "approved as you named them (--approve-host-trust=all), not installed by pkgmgr: backdoor.exs" in done.stdout
    first = json.loads(trust.read_text(encoding="utf-8"))["extension_dirs"][str(folder)]["content_hash"]
    second = h.ok("--scope", "workspace", "ext", "install", scripts / "tasks.exs", *UNVERIFIED, cwd=ws)
    assert "it holds scripts pkgmgr did not install (backdoor.exs): review them, then run the command again with " \
           "--approve-host-trust=all" in second.stdout, second
    h.ok("--scope", "workspace", "ext", "install", scripts / "tasks.exs", *UNVERIFIED, "--force",
         "--approve-host-trust=all", cwd=ws)
    assert json.loads(trust.read_text(encoding="utf-8"))["extension_dirs"][str(folder)]["content_hash"] != first


def eva_project_folder_changed(h: H) -> None:
    """A project install changes the content hash Eva approved: pkgmgr shows it, and records
    Eva's new approval only with --approve-host-trust."""
    ws = h.declare("")
    scripts = h.tmp / "scripts"
    scripts.mkdir()
    for name in ("notes", "tasks"):
        module = "".join(part.capitalize() for part in name.split("_"))
        (scripts / f"{name}.exs").write_text(
            f"defmodule Eva.Extension.{module} do\n  use Eva.Core.Extension\n\n"
            "  def setup(_ctx), do: {:ok, %Eva.Core.Extension.Spec{}}\nend\n", encoding="utf-8")
    first = h.ok("--scope", "workspace", "ext", "install", scripts / "notes.exs", *UNVERIFIED, cwd=ws)
    assert "pass --approve-host-trust to record the new hash" in first.stdout
    trust = h.tmp / "user-home" / ".eva" / "trust.json"
    assert not trust.exists()
    second = h.ok("--scope", "workspace", "ext", "install", scripts / "tasks.exs", *UNVERIFIED,
                  "--approve-host-trust", cwd=ws)
    assert "updated Eva's approval in" in second.stdout
    approved = json.loads(trust.read_text(encoding="utf-8"))["extension_dirs"]
    assert str(ws / ".eva" / "extensions") in approved


def rollback_then_unpin(h: H) -> None:
    """A rollback pins the version it restores and says how to release it: `update --all` leaves
    it, the printed `ext update NAME --unpin` moves it on again."""
    h.ok("ext", "install", "review-pack@0.1.0")
    h.ok("ext", "update", "review-pack")
    rolled = h.ok("ext", "rollback", "review-pack")
    assert "review-pack  0.1.0 (pinned)" in h.ok("ext", "list").stdout
    h.ok("ext", "update", "--all")
    assert "review-pack  0.1.0 (pinned)" in h.ok("ext", "list").stdout
    h.follow(rolled, "pkgmgr ext update review-pack --unpin")
    assert "review-pack  0.2.0 " in h.ok("ext", "list").stdout + " "


def rollback_with_nothing_kept(h: H) -> None:
    """Nothing replaced yet: not_found, naming `ext info` (the versions) and `ext install
    NAME@VERSION --pin`, which installs one and holds it."""
    h.ok("ext", "install", "review-pack@0.2.0")
    refused = h.run("ext", "rollback", "review-pack", code=5)
    assert "no previous version to roll back to" in refused.stderr
    info = h.follow(refused, "pkgmgr ext info")
    assert "0.1.0" in info.stdout
    h.follow(refused, "pkgmgr ext install", replace={"VERSION": "0.1.0"})
    assert "review-pack  0.1.0 (pinned)" in h.ok("ext", "list").stdout
    h.ok("ext", "update", "--all")
    assert "review-pack  0.1.0 (pinned)" in h.ok("ext", "list").stdout


def link_then_unlink(h: H) -> None:
    """A link says `ext unlink NAME` restores the install it replaced; a change other than unlink
    is refused with the same command."""
    h.ok("ext", "install", "review-pack@0.2.0")
    work = h.fixture("review-pack")
    linked = h.ok("ext", "link", work)
    assert "'pkgmgr ext unlink review-pack' restores 0.2.0" in linked.stdout
    refused = h.run("ext", "disable", "review-pack", code=6)
    h.follow(refused, "pkgmgr ext unlink")
    listed = h.ok("ext", "list").stdout
    assert "review-pack  0.2.0" in listed and "linked" not in listed
    assert (work / "extension.toml").is_file()
    h.ok("ext", "link", work)
    unlinked = h.follow(linked, "pkgmgr ext unlink")
    assert "restored 0.2.0" in unlinked.stdout


def doctor_sees_a_host_tree_modified_and_missing(h: H) -> None:
    """`doctor --check` of a host's install whose tree changed (`ext verify` names the file), then
    whose tree is gone (`ext remove` forgets it)."""
    import shutil

    h.ok("ext", "install", _terva_extension(h.tmp / "src" / "hello"), *UNVERIFIED)
    folder = _host_folder(h, "terva")
    (folder / "hello" / "run.sh").write_text("#!/bin/sh\nprintf changed\n", encoding="utf-8")
    verified = h.follow(h.run("doctor", "--check", code=4), "pkgmgr ext verify", code=None)
    assert "run.sh" in verified.stdout + verified.stderr, verified
    shutil.rmtree(folder / "hello")
    h.follow(h.run("doctor", "--check", code=4), "pkgmgr ext remove")
    h.ok("doctor", "--check")


def doctor_reclaims_a_stale_vera_lock(h: H) -> None:
    """A lock of Vera's records whose process is gone: named by `doctor --check`, removed by `doctor`."""
    import subprocess
    import sys

    from tests.hosts.helpers import vera_extension

    h.ok("ext", "install", vera_extension(h.tmp / "src" / "ctx"), *UNVERIFIED)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    lock = _host_folder(h, "vera").parent / "extensions.json.lock"
    lock.write_text(f'{{"pid":{int(gone.stdout)}}}\n', encoding="utf-8")
    h.follow(h.run("doctor", "--check", code=4), "pkgmgr doctor")
    assert not lock.exists()
    h.ok("doctor", "--check")


def adopt_a_linked_gemini_extension(h: H) -> None:
    """`gemini extensions link` made the folder: pkgmgr cannot adopt a tree that lives elsewhere;
    once Gemini's link is gone, the command the hint names installs a copy pkgmgr manages."""
    import shutil

    from tests.hosts.helpers import gemini_extension

    source = gemini_extension(h.tmp / "src" / "hello")
    linked = _host_folder(h, "gemini") / "hello"
    linked.mkdir(parents=True)
    (linked / ".gemini-extension-install.json").write_text(json.dumps({"source": str(source), "type": "link"}))
    result = h.run("adopt", "--host", "gemini", "hello", code=2)
    assert "'gemini extensions uninstall hello'" in result.stderr
    shutil.rmtree(linked)  # what `gemini extensions uninstall hello` does to a link
    h.follow(result, "pkgmgr ext install", answer="y")
    assert json.loads(h.ok("ext", "status", "hello", "-o", "json").stdout)["host"] == "gemini"


def vera_in_a_workspace(h: H) -> None:
    """Vera has no project scope: `--scope workspace ext install` says to run it without, which
    installs it where Vera loads it."""
    from tests.hosts.helpers import vera_extension

    source = vera_extension(h.tmp / "src" / "ctx")
    ws = h.declare("")
    refused = h.run("--scope", "workspace", "ext", "install", source, *UNVERIFIED, code=2, cwd=ws)
    assert "Vera extensions are global: run the command without --scope workspace" in refused.stderr
    h.ok("ext", "install", source, *UNVERIFIED, cwd=ws)
    assert (_host_folder(h, "vera") / "acme.context-tools" / "vera.extension.json").is_file()


def sync_of_a_declared_vera_extension(h: H) -> None:
    """A Vera extension declared in pkgmgr.toml is refused by `sync` before anything moves (a
    declared terva extension is not installed either), and the command the hint names installs
    it where Vera loads it — run as printed by a POSIX shell, from a workspace whose path holds a
    space, `$`, `"` and a backquote (each quoted in the command, none expanded)."""
    import subprocess

    from tests.hosts.helpers import vera_extension

    ws = h.tmp / "user-home" / 'my $HOME "dev" `id` project'
    ws.mkdir(parents=True)
    vera_extension(ws / "tools" / "ctx")
    _terva_extension(ws / "tools" / "hello")
    (ws / "pkgmgr.toml").write_text('[extensions]\nhello = { path = "tools/hello", host = "terva" }\n'
                                    '"acme.context-tools" = { path = "tools/ctx", host = "vera" }\n', encoding="utf-8")
    h.ok("trust", cwd=ws)
    refused = h.run("sync", code=2, cwd=ws)
    assert "declares acme.context-tools for Vera, which has no project scope" in refused.stderr
    assert not (ws / ".terva").exists() and not (ws / "pkgmgr.lock").exists()
    printed = h.hinted(refused, "pkgmgr ext install")
    # what a shell makes of the printed command: the path as it is, one word
    argv = subprocess.run(["sh", "-c", "for word in " + printed + '; do printf "%s\\n" "$word"; done'],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert argv == ["pkgmgr", "ext", "install", str(ws / "tools" / "ctx"), "--allow-unverified"], argv
    h.follow(refused, "pkgmgr ext install", cwd=h.tmp, answer="y")  # at a terminal, asked to confirm
    assert (_host_folder(h, "vera") / "acme.context-tools" / "vera.extension.json").is_file()


def offline_with_nothing_cached(h: H) -> None:
    """`--offline` before a registry was ever read: the command, run without --offline as the
    hint says, fills the cache, after which --offline answers."""
    from tests.support.servers import StaticFileServer

    registry = _registry(h)
    with StaticFileServer(registry.root) as server:
        h.ok("registry", "add", "acme", server.url + "/", "--no-check")
        result = h.run("--offline", "ext", "info", "acme-tool", code=7)
        assert "without --offline" in result.stderr
        h.ok("ext", "info", "acme-tool")
    h.ok("--offline", "ext", "info", "acme-tool")


def every_hosts_scaffold_readme_runs_as_written(h: H) -> None:
    """`ext new --host H`'s README names the next commands, for every host: run from the new
    folder as written (the install answered at a terminal), they validate, pack, install and
    publish it into the registry index beside it."""
    import shlex

    author = h.tmp / "author"
    h.ok("registry", "init", author / "my-registry", "--name", "mine")
    for host, name in (("terva", "hi-terva"), ("eva", "hi-eva"), ("vera", "hi-vera"), ("gemini", "hi-gemini"),
                       ("claude", "hello-plugin")):
        h.ok("ext", "new", name, "--host", host, cwd=author)
        readme = (author / name / "README.md").read_text(encoding="utf-8")
        commands = [shlex.split(line) for line in readme.splitlines() if line.startswith("    pkgmgr ")]
        assert [words[1:3] for words in commands] == [["ext", "validate"], ["ext", "pack"], ["ext", "install"],
                                                      ["registry", "publish"]], (host, readme)
        for words in commands:
            h.run(*words[1:], code=0, cwd=author / name, answer="y" if words[2] == "install" else None)
        listed = json.loads(h.ok("ext", "list", "--host", host, "-o", "json").stdout)["extensions"]
        assert [e["name"] for e in listed] == [name], host
    assert json.loads(h.ok("registry", "validate", author / "my-registry", "-o", "json").stdout)["valid"] is True
    h.ok("registry", "add", "mine", author / "my-registry")
    found = json.loads(h.ok("ext", "search", "--registry", "mine", "-o", "json").stdout)["results"]
    assert sorted(r["name"] for r in found) == ["hello-plugin", "hi-eva", "hi-gemini", "hi-terva", "hi-vera"]
