"""Crash safety of host installs (SPEC 4, 13): a real `pkgmgr` child killed with SIGKILL at each of
the host pipeline's crash points leaves, in the host's folder, exactly the old install or exactly
the new one; the next writer settles pkgmgr's records (and Vera's) to what is on disk, and the
command then completes as if nothing had happened."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.hosts.vera import digest
from tests.hosts.helpers import (
    UNVERIFIED,
    Homes,
    claude_plugin,
    eva_directory,
    eva_script,
    gemini_extension,
    ok,
    terva_extension,
    tree,
    vera_extension,
)
from tests.reliability.helpers import record
from tests.support.cli import run_subprocess

HOMES = ("pkgmgr-home", "terva-home", "vera-home", "user-home", "gemini-home", "claude-config")


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Path], None]
    command: Callable[[Path], list[str]]
    labels: tuple[str, ...]
    records: bool = False  # what the host sees includes the enabled state of its own records (Vera's markers)
    batch: bool = False  # several hosts: between two hosts' renames a kill leaves a mix, which `doctor` settles


def _terva_src(tmp: Path, version: str = "0.1.0") -> Path:
    return terva_extension(tmp / "src" / "hello", version=version)


def _install(source: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    return lambda tmp: ["ext", "install", str(source(tmp)), *UNVERIFIED]


def _nothing(tmp: Path) -> None:
    pass


def _terva_installed(tmp: Path) -> None:
    ok("ext", "install", _terva_src(tmp), *UNVERIFIED)


def _terva_installed_then_raised(tmp: Path) -> None:
    _terva_installed(tmp)
    _terva_src(tmp, "0.2.0")


def _vera_installed(tmp: Path) -> None:
    ok("ext", "install", vera_extension(tmp / "src" / "ctx"), *UNVERIFIED)


def _gemini_src(tmp: Path, version: str = "1.0.0") -> Path:
    return gemini_extension(tmp / "src" / "hello", version=version)


def _gemini_installed(tmp: Path) -> None:
    ok("ext", "install", _gemini_src(tmp), *UNVERIFIED)


def _gemini_installed_disabled_then_raised(tmp: Path) -> None:
    _gemini_installed(tmp)
    ok("ext", "disable", "hello")
    _gemini_src(tmp, "1.1.0")


def _claude_src(tmp: Path, version: str = "1.0.0") -> Path:
    return claude_plugin(tmp / "src" / "hello", version=version)


def _claude_installed(tmp: Path) -> None:
    ok("ext", "install", _claude_src(tmp), *UNVERIFIED)


def _claude_installed_disabled_then_raised(tmp: Path) -> None:
    _claude_installed(tmp)
    ok("ext", "disable", "hello")
    _claude_src(tmp, "1.1.0")


def _eva_installed(tmp: Path) -> None:
    ok("ext", "install", eva_script(tmp / "src", "notes"), *UNVERIFIED)


def _eva_changed(tmp: Path) -> Path:
    script = eva_script(tmp / "src", "notes")
    script.write_text(script.read_text() + "# changed\n")
    return script


def _vera_installed_then_linked(tmp: Path) -> None:
    _vera_installed(tmp)
    ok("ext", "link", vera_extension(tmp / "work" / "ctx", version="2.0.0-dev"))


def _claude_installed_and_worked_on(tmp: Path) -> None:
    _claude_installed(tmp)
    claude_plugin(tmp / "work" / "hello", version="2.0.0-dev")


def _three_hosts_installed(tmp: Path) -> None:
    ok("ext", "install", _terva_src(tmp), eva_script(tmp / "src", "notes"), vera_extension(tmp / "src" / "ctx"),
       *UNVERIFIED)


INSTALL = ("host.install.after_pending", "host.install.after_rename", "host.install.after_commit")
CASES = [
    Case("terva-install", _nothing, _install(_terva_src), INSTALL),
    # the replaced tree moved where it is kept for a rollback; between the two renames of a switch
    # (`switch_in`) the old tree is where the new one was staged
    Case("terva-update", _terva_installed_then_raised, _install(lambda tmp: tmp / "src" / "hello"),
         (*INSTALL, "host.install.after_kept", "host.install.after_exchange")),
    # a development link replaced by the install it hid, and the reverse
    Case("vera-unlink", _vera_installed_then_linked, lambda tmp: ["ext", "unlink", "acme.context-tools"],
         ("host.install.after_exchange", "host.install.after_rename", "host.install.after_commit")),
    Case("claude-link", _claude_installed_and_worked_on, lambda tmp: ["ext", "link", str(tmp / "work" / "hello")],
         INSTALL),
    Case("eva-install", _nothing, _install(lambda tmp: eva_script(tmp / "src", "notes")), INSTALL),
    # the script becomes a directory: the old tree is at another place, and a kill after the commit
    # must not leave it in the scanned folder beside the new one (a tree no row names)
    Case("eva-script-to-directory", _eva_installed,
         lambda tmp: ["ext", "install", str(eva_directory(tmp / "dir" / "notes", "notes")), *UNVERIFIED, "--force"],
         INSTALL),
    Case("vera-install", _nothing, _install(lambda tmp: vera_extension(tmp / "src" / "ctx")),
         ("host.install.after_pending", "host.install.after_host_records", "host.install.after_rename",
          "host.install.after_commit")),
    Case("terva-remove", _terva_installed, lambda tmp: ["ext", "remove", "hello"],
         ("host.remove.after_rename", "host.remove.after_commit")),
    Case("vera-remove", _vera_installed, lambda tmp: ["ext", "remove", "acme.context-tools"],
         ("host.remove.after_rename", "host.remove.after_commit")),
    Case("eva-disable", _eva_installed, lambda tmp: ["ext", "disable", "notes"], ("host.enable.after_move",)),
    # the enabled state written in place, in the host's own files (issue 27: killed after the host's
    # file changed and before pkgmgr's row, the host said disabled while `ext list` said enabled)
    Case("terva-disable", _terva_installed, lambda tmp: ["ext", "disable", "hello"],
         ("host.enable.after_pending", "host.enable.after_host_files")),
    # one batch across hosts (SPEC 4: one transaction; issue 27 found terva at the new generation and
    # the others at the old after a kill): every tree in, ONE commit, then the hosts' own records
    Case("three-hosts", _three_hosts_installed,
         lambda tmp: ["ext", "install", str(_terva_src(tmp, "0.2.0")),
                      str(_eva_changed(tmp)),
                      str(vera_extension(tmp / "src" / "ctx", version="1.1.0")), *UNVERIFIED, "--force"],
         ("install.after_pending", "host.install.after_pending", "host.install.after_rename",
          "install.before_commit", "install.after_commit", "host.install.after_commit",
          "host.install.after_host_records"), batch=True),
    Case("vera-disable", _vera_installed, lambda tmp: ["ext", "disable", "acme.context-tools"],
         ("host.enable.after_host_files",), records=True),
    Case("gemini-install", _nothing, _install(_gemini_src),
         ("host.install.after_pending", "host.install.after_host_records", "host.install.after_rename",
          "host.install.after_commit")),
    Case("gemini-update", _gemini_installed_disabled_then_raised, _install(lambda tmp: tmp / "src" / "hello"), INSTALL),
    Case("gemini-remove", _gemini_installed, lambda tmp: ["ext", "remove", "hello"],
         ("host.remove.after_rename", "host.remove.after_commit")),
    Case("claude-install", _nothing, _install(_claude_src),
         ("host.install.after_pending", "host.install.after_host_records", "host.install.after_rename",
          "host.install.after_commit")),
    Case("claude-update", _claude_installed_disabled_then_raised, _install(lambda tmp: tmp / "src" / "hello"), INSTALL),
    # Claude's records leave before the plugin folder (issue 31): a kill in between leaves Claude no
    # record of a folder that is gone
    Case("claude-remove", _claude_installed, lambda tmp: ["ext", "remove", "hello"],
         ("host.remove.after_host_records", "host.remove.after_rename", "host.remove.after_commit")),
]
POINTS = [(case, label) for case in CASES for label in case.labels]


def _as_terva_reads(raw: bytes) -> dict[str, Any]:
    document = json.loads(raw)
    document["enabled"] = document.get("enabled") is not False  # absent or null: enabled (IsEnabled)
    return document


def visible(homes: Homes, records: bool = False) -> dict[str, Any]:
    """What each host loads: the files of its folders (pkgmgr's own staging left out; a terva
    manifest as terva decodes it: `terva ext disable` rewrites it in its own layout), and with
    `records` the enabled state Vera reads from its records."""
    seen: dict[str, Any] = {}
    for name, folder in (("terva", homes.terva / "extensions"), ("eva", homes.eva / "extensions"),
                         ("eva-disabled", homes.eva / ".pkgmgr-disabled"), ("vera", homes.vera / "extensions")):
        seen[name] = {k: _as_terva_reads(v) if name == "terva" and k.endswith("/extension.json") else v
                      for k, v in tree(folder).items() if not k.startswith(".managed/")} if folder.exists() else {}
    gemini = homes.gemini_extensions
    seen["gemini"] = {k: v for k, v in tree(gemini).items() if "/" in k} if gemini.exists() else {}
    enablement = gemini / "extension-enablement.json"
    rules = json.loads(enablement.read_text()) if enablement.exists() else {}
    # an enablement entry of a name no folder carries is inert: Gemini loads what has a folder
    seen["gemini-rules"] = {name: rules[name] for name in rules if (gemini / name).is_dir()}
    # what Claude Code loads: the plugin folders of pkgmgr's marketplace, the install entries and
    # the enabled states (a plugin the marketplace lists with no install entry is not loaded)
    plugins = homes.pkgmgr / "claude" / "plugins"
    installed = homes.claude / "plugins" / "installed_plugins.json"
    entries = json.loads(installed.read_text())["plugins"] if installed.exists() else {}
    loaded = {Path(e["installPath"]).name for i in entries for e in entries[i]}  # a folder no entry names: not loaded
    seen["claude"] = {k: v for k, v in tree(plugins).items() if k.split("/")[0] in loaded} if plugins.exists() else {}
    seen["claude-installed"] = {i: [(e["scope"], e["installPath"], e["version"]) for e in entries[i]] for i in entries}
    settings = homes.claude / "settings.json"
    seen["claude-enabled"] = json.loads(settings.read_text()).get("enabledPlugins", {}) if settings.exists() else {}
    if not records:
        return seen
    markers = homes.vera / "extensions" / ".managed"
    registry = homes.vera / "extensions.json"
    if registry.exists():  # the enabled state Vera reads: its marker's, for each id its registry names
        named = {r["id"] for r in json.loads(registry.read_text())["extensions"]}
        seen["vera-enabled"] = {p.stem: json.loads(p.read_text())["enabled"] for p in markers.glob("*.json")
                                if p.stem in named}
    return seen


def records_agree(homes: Homes) -> None:
    """pkgmgr's rows and Vera's records say what is on disk, and `doctor --check` finds nothing
    (a development link's row names the folder the host loads)."""
    assert ok("doctor", "--check")["ok"] is True
    listed = ok("ext", "list")["extensions"]
    for entry in listed:
        assert Path(entry["path"]).exists(), entry
    assert all(r["ok"] for r in ok("ext", "verify", "--all")["verified"])
    registry = homes.vera / "extensions.json"
    if registry.exists():
        for record in json.loads(registry.read_text())["extensions"]:
            assert record["digest"] == digest(homes.vera / record["directory"]), record
    assert not any((homes.terva / ".pkgmgr-staging").glob("*")) if (homes.terva / ".pkgmgr-staging").exists() else True


def save(tmp: Path) -> Path:
    saved = tmp / "saved"
    for name in HOMES:
        if (tmp / name).exists():
            shutil.copytree(tmp / name, saved / name, symlinks=True)
    return saved


def restore(tmp: Path, saved: Path) -> None:
    for name in HOMES:
        shutil.rmtree(tmp / name, ignore_errors=True)
        if (saved / name).exists():
            shutil.copytree(saved / name, tmp / name, symlinks=True)


def test_every_host_crash_point_is_exercised() -> None:
    import re

    from tests.reliability.test_crash_harness import REPO

    found = set()
    for path in (REPO / "pkgmgr" / "hosts").rglob("*.py"):
        found.update(re.findall(r'crashpoint\("([a-z_.]+)"\)', path.read_text(encoding="utf-8")))
    assert found == {label for _, label in POINTS if label.startswith("host.")}


@pytest.mark.parametrize("case, label", POINTS, ids=[f"{c.name}@{label}" for c, label in POINTS])
def test_a_kill_leaves_the_old_or_the_new_install(tmp_path: Path, homes: Homes, case: Case, label: str) -> None:
    case.setup(tmp_path)
    old = visible(homes, case.records)
    saved = save(tmp_path)
    ok(*case.command(tmp_path))  # the reference: the new state
    new = visible(homes, case.records)
    assert new != old
    restore(tmp_path, saved)
    assert visible(homes, case.records) == old

    killed = run_subprocess(case.command(tmp_path), env={"PKGMGR_TEST_CRASH_AT": label})
    assert killed.code == -9, killed  # it reached the point and died there
    mid = visible(homes, case.records)
    assert case.batch or mid in (old, new)

    # the next writer settles what the killed one left: the same command again while the old state
    # is what the host sees, else another writer of that host, which finishes a change that was
    # committed and undoes one that was not (`store.pending`): the old or the new state, never a mix
    left = "old" if mid == old else "new" if mid == new else "mixed"
    settled = old
    if mid == old:
        ok(*case.command(tmp_path))
    else:
        ok(*(["doctor"] if case.batch else ["adopt", "--host", case.name.split("-")[0]]))
        settled = visible(homes, case.records)
        assert settled in (old, new)
        records_agree(homes)
        if settled == old:  # undone (killed before its commit): the command again
            ok(*case.command(tmp_path))
    assert visible(homes, case.records) == new
    records_agree(homes)
    record("host_crash", case=case.name, label=label, mid=left, settled="old" if settled == old else "new")


@pytest.mark.parametrize("label", INSTALL)
def test_doctor_lists_and_settles_a_killed_host_switch(tmp_path: Path, homes: Homes, label: str) -> None:
    """SPEC 4: what a killed writer left (a pending intent, its transaction directory) is a leftover
    `doctor --check` lists without touching, and `doctor` settles it to the old install (killed
    before the commit) or the new one (after it)."""
    from tests.hosts.helpers import fail

    _terva_installed_then_raised(tmp_path)
    command = _install(lambda tmp: tmp / "src" / "hello")(tmp_path)
    old = visible(homes)
    assert run_subprocess(command, env={"PKGMGR_TEST_CRASH_AT": label}).code == -9
    mid = visible(homes)
    before = tree(homes.terva)
    problems = fail("state_inconsistent", "doctor", "--check")["problems"]
    assert problems and all(p["check"] == "leftover" and p["repairable"] for p in problems), problems
    assert any(p["message"].startswith("terva") for p in problems), problems
    assert tree(homes.terva) == before
    repaired = ok("doctor")
    assert repaired["ok"] is True and repaired["repaired"], repaired
    # a switch killed before its commit is undone (the old install), one killed after it finished
    assert visible(homes) == (mid if label == "host.install.after_commit" else old)
    assert mid == old or label != "host.install.after_pending"
    assert ok("doctor", "--check")["ok"] is True
    records_agree(homes)
