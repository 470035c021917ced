"""Power loss (SPEC 4 "Durability"): what survives a power cut after (or during) a command.

The home (and the workspace) live on an ext4 filesystem in a loop-mounted image file. A power
cut is modelled by copying the image file while the filesystem is still mounted, without any
sync: the copy holds exactly the blocks ext4 has submitted to the block device, and not what
is still in the mounted filesystem's page cache (dirty data, delayed allocations, the running
journal transaction) — what a power cut loses. The copy is then mounted (ext4 replays its
journal, as after a reboot) and checked.

The filesystem is mounted with `commit=600`, so ext4's periodic journal commit (every 5 s by
default) never lands at a random moment; instead each run is cut twice:

- `at-exit`: right after the command ends (or is killed at a crash point): only what pkgmgr and
  SQLite made durable themselves is on disk;
- `journal-committed`: after an unrelated file on the filesystem was fsynced, which commits the
  running journal transaction — renames, unlinks, new inodes — without the delayed-allocated
  data of new files (what the periodic commit does a few seconds after a command, before the
  30 s data write-back: the zero-length files of issue 16).

Each cut must show the old or the new state (as `ext list`, `bundle list`, `resources list`
and pkgmgr.lock show them; a sync's steps each old or new), complete: `doctor --check` clean,
or only repairable leftovers that `doctor` removes (a tree no row names, not even as pending, is
an anomaly: SPEC 4 never deletes one, so a cut must never leave one), `pending_trees` then empty,
and `ext verify --all` passing. Skipped
where loop devices or mount are unavailable (not root, no mkfs.ext4, a container without
/dev/loop-control). PKGMGR_TEST_DURABILITY=off (pkgmgr/fsutil.py) restores the ordering before
issue 16 — no syncfs, no directory fsync, synchronous = NORMAL — and this harness then fails.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.registry.helpers import RegistryDir
from tests.reliability.helpers import (
    doctor_problems,
    mixed_units,
    only_leftovers,
    pending_rows,
    record,
    sweep,
    visible,
)
from tests.support.cli import run_cli, run_subprocess
from tests.support.servers import StaticFileServer
from tests.support.stores import store_root
from tests.workspace.helpers import (
    BUNDLED,
    STORY_MANIFEST,
    copy_release_crew,
    crew_archive,
    write_local_tool,
)

pytestmark = pytest.mark.slow

IMAGE_MIB = 48
MOUNT_OPTIONS = "loop,commit=600"  # no periodic journal commit: the harness decides when it happens
CUTS = ("at-exit", "journal-committed")
CRASH_ENV = "PKGMGR_TEST_CRASH_AT"
UNVERIFIED = ("--allow-unverified", "--yes")


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True, timeout=60)


def _unavailable(tmp: Path) -> str | None:
    """Why loop-mounted ext4 images cannot be used here (None when they can)."""
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root for losetup and mount"
    for tool in ("mkfs.ext4", "mount", "umount", "losetup", "cp"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (e2fsprogs, util-linux)"
    if not os.path.exists("/dev/loop-control") and not os.path.exists("/dev/loop0"):
        return "no loop devices (/dev/loop-control)"
    disk = Disk(tmp / "probe.img", tmp / "probe")
    try:
        disk.make()
        disk.mount(disk.image)
        disk.umount()
    except DiskError as error:
        return f"cannot loop-mount an ext4 image here: {error}"
    finally:
        disk.image.unlink(missing_ok=True)
    return None


class DiskError(Exception):
    pass


@dataclass
class Disk:
    """An ext4 image and the directory it is mounted on."""

    image: Path
    mnt: Path
    ticks: int = 0

    def make(self) -> None:
        self.image.parent.mkdir(parents=True, exist_ok=True)
        with open(self.image, "wb") as handle:
            handle.truncate(IMAGE_MIB * 1024 * 1024)
        # no lazy initialisation: nothing may write to the device in the background
        self._check(_run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.image))

    def mount(self, image: Path) -> None:
        self.mnt.mkdir(parents=True, exist_ok=True)
        self._check(_run("mount", "-o", MOUNT_OPTIONS, image, self.mnt))

    def umount(self) -> None:
        gc.collect()  # SQLite connections an in-process command left to the collector
        self._check(_run("umount", self.mnt))

    def cut(self, dest: Path) -> None:
        """The power cut: the image as the block device holds it, copied while mounted, no sync."""
        self._check(_run("cp", "--sparse=always", self.image, dest))

    def commit_journal(self) -> None:
        """Commit ext4's running journal transaction, as its periodic commit would: fsync a new
        file outside the store (delayed-allocated data of other files stays in memory)."""
        self.ticks += 1
        fd = os.open(self.mnt / f".tick-{self.ticks}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"tick\n")
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _check(proc: subprocess.CompletedProcess[str]) -> None:
        if proc.returncode != 0:
            raise DiskError(f"{' '.join(map(str, proc.args))}: {(proc.stderr or proc.stdout).strip()}")


@pytest.fixture(scope="module")
def loop_ok(tmp_path_factory: pytest.TempPathFactory) -> None:
    reason = _unavailable(tmp_path_factory.mktemp("loop-probe"))
    if reason is not None:
        pytest.skip(f"power-loss harness: {reason}")


@dataclass
class World:
    disk: Disk
    url: str
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.disk.mnt / "home"

    @property
    def ws(self) -> Path:
        return self.disk.mnt / "user-home" / "src" / "project"

    def run(self, *args: Any, code: int = 0) -> dict[str, Any]:
        result = run_cli([*map(str, args), "-o", "json"])
        assert result.code == code, result
        return result.json


# --- setups (in-process, on the mounted image) ------------------------------------------------------


def _registry(w: World) -> None:
    w.run("registry", "add", "team", w.url)


def _installed(w: World) -> None:
    _registry(w)
    w.run("ext", "install", f"{BUNDLED}@0.1.0")


def _activated(w: World) -> None:
    _installed(w)
    w.facts["act"] = w.run("bundle", "activate", BUNDLED)["activation"]["id"]


def _awaiting(w: World) -> None:
    _registry(w)
    source = copy_release_crew(w.disk.mnt / "release-crew")
    w.run("ext", "install", source, *UNVERIFIED)
    w.facts["act"] = w.run("bundle", "activate", "release-crew", code=8)["activation"]["id"]


def _trusted(w: World) -> None:
    write_local_tool(w.ws / "tools" / "local-tool")
    (w.ws / "pkgmgr.toml").write_text(STORY_MANIFEST.replace("@URL@", w.url), encoding="utf-8")
    w.run("trust", "--workspace", w.ws)


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: Callable[[World], None]
    command: Callable[[World], list[str]]
    labels: tuple[str, ...]  # crash points at which a run is killed, besides the run to its end
    workspace: bool = False
    hosts: bool = False  # the folder hosts' installs: their folders and records are part of the state
    unitwise: bool = False  # several changes one after the other: each unit old or new on its own
    sample: tuple[str, ...] | None = None  # the labels of the regular suite (all with PKGMGR_FAULT_SWEEP=1)
    view: Callable[[World], dict[str, Any]] | None = None  # what the state is, beside the scope's (None: the scope's)
    batch: tuple[str, ...] = ()  # units (by key prefix) one transaction changes together: one unit, old or new
    check: Callable[[World], list[str]] | None = None  # a cut's own repair and checks: what is wrong


SCENARIOS = [
    Scenario("install", _registry, lambda w: ["ext", "install", f"{BUNDLED}@0.1.0"],
             ("install.after_extract", "install.after_pending", "install.after_rename", "install.before_commit",
              "install.after_commit")),
    Scenario("switch", _activated, lambda w: ["ext", "install", f"{BUNDLED}@0.2.0"],
             ("install.after_pending", "install.after_rename", "activation.mid_projection", "install.before_commit",
              "install.after_commit", "install.after_old_removed")),
    Scenario("update", _activated, lambda w: ["ext", "update", BUNDLED],
             ("install.after_rename", "install.after_commit", "install.after_old_removed")),
    Scenario("remove", _activated, lambda w: ["ext", "remove", BUNDLED, "--deactivate"],
             ("remove.before_commit", "remove.after_commit", "remove.after_tree_removed")),
    Scenario("activate", _installed, lambda w: ["bundle", "activate", BUNDLED],
             ("activate.before_commit", "activate.after_commit")),
    Scenario("confirm", _awaiting, lambda w: ["bundle", "confirm", w.facts["act"], "--expected-version", "1"],
             ("confirm.before_commit", "confirm.after_commit")),
    Scenario("sync", _trusted, lambda w: ["sync", "--workspace", str(w.ws)],
             ("install.after_rename", "install.after_commit", "trust.keep.before_write", "sync.after_lock_write"),
             workspace=True),
]


# --- the folder hosts (issue 27): terva, Eva, Vera, Gemini CLI and Claude Code, their homes on the image ---

HOST_NAMES = ("tv-hello", "notes", "acme.context-tools", "gm-hello", "cl-hello")
HOST_HOMES = {"TERVA_HOME": "terva-home", "VERA_HOME": "vera-home", "GEMINI_CLI_HOME": "gemini-home",
              "CLAUDE_CONFIG_DIR": "claude-config"}


def _host_sources(w: World, generation: int) -> list[str]:
    """One extension of each folder host, at its first (0) or second (1) release, on the image."""
    from tests.hosts.helpers import claude_plugin, eva_script, gemini_extension, terva_extension, vera_extension

    src = w.disk.mnt / "src"
    script = eva_script(src / "eva", "notes")
    if generation:
        script.write_text(script.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    return [str(terva_extension(src / "tv-hello", "tv-hello", ("0.1.0", "0.2.0")[generation])), str(script),
            str(vera_extension(src / "ctx", version=("1.0.0", "1.1.0")[generation])),
            str(gemini_extension(src / "gm-hello", "gm-hello", ("1.0.0", "1.1.0")[generation])),
            str(claude_plugin(src / "cl-hello", "cl-hello", ("1.0.0", "1.1.0")[generation]))]


def _hosts_installed(w: World) -> None:
    w.run("ext", "install", *_host_sources(w, 0), *UNVERIFIED)


def _hosts_disabled(w: World) -> None:
    _hosts_installed(w)
    w.run("ext", "disable", *HOST_NAMES)


SYNC_DECLARATION = """\
[extensions]
tv-hello = { path = "tools/tv-hello" }
notes = { path = "tools/notes", host = "eva" }
demo-ext = { path = "tools/demo-ext" }
"""


def _three_hosts_declared(w: World) -> None:
    """A workspace declaring a terva extension, an Eva script and a Compozy extension (local paths)."""
    from tests.hosts.helpers import eva_script, terva_extension
    from tests.support.builders import minimal_manifest, write_extension

    terva_extension(w.ws / "tools" / "tv-hello", "tv-hello")
    eva_script(w.ws / "tools" / "notes", "notes")
    write_extension(w.ws / "tools" / "demo-ext", minimal_manifest(name="demo-ext", version="1.0.0"),
                    files={"note.txt": "1.0.0"})
    (w.ws / "pkgmgr.toml").write_text(SYNC_DECLARATION, encoding="utf-8")
    w.run("trust", "--workspace", w.ws)


def _project_folders(w: World) -> dict[str, Any]:
    """What terva and Eva load from the project (`.terva/extensions`, `.eva/extensions`; a terva
    manifest as terva decodes it)."""
    from tests.hosts.helpers import tree
    from tests.hosts.test_crash import _as_terva_reads

    seen: dict[str, Any] = {}
    for host in ("terva", "eva"):
        folder = w.ws / f".{host}" / "extensions"
        seen[f"project:{host}"] = {k: _as_terva_reads(v) if k.endswith("/extension.json") else v
                                   for k, v in tree(folder).items()} if folder.exists() else {}
    return seen


HOST_INSTALL = ("host.install.after_pending", "host.install.after_rename", "install.before_commit",
                "host.install.after_commit", "host.install.after_host_records")
HOST_SCENARIOS = [
    # one batch across the five hosts: every tree in, ONE commit, then each host's records
    Scenario("hosts-install", lambda w: None, lambda w: ["ext", "install", *_host_sources(w, 0), *UNVERIFIED],
             HOST_INSTALL, hosts=True, sample=("host.install.after_rename", "host.install.after_commit")),
    Scenario("hosts-update", _hosts_installed,
             lambda w: ["ext", "install", *_host_sources(w, 1), *UNVERIFIED, "--force"],
             (*HOST_INSTALL, "host.install.after_kept"), hosts=True, sample=("host.install.after_kept",)),
    Scenario("hosts-remove", _hosts_installed, lambda w: ["ext", "remove", *HOST_NAMES],
             ("host.remove.after_rename", "host.remove.after_commit"), hosts=True, unitwise=True,
             sample=("host.remove.after_commit",)),
    Scenario("hosts-disable", _hosts_installed, lambda w: ["ext", "disable", *HOST_NAMES],
             ("host.enable.after_pending", "host.enable.after_host_files", "host.enable.after_move"), hosts=True,
             unitwise=True, sample=("host.enable.after_host_files",)),
    # sync across three hosts (issue 27: a cut after the first host's commit left terva new, Eva and
    # Compozy old): the three installs are one batch, one unit; pkgmgr.lock follows on its own
    Scenario("sync-three-hosts", _three_hosts_declared, lambda w: ["sync", "--workspace", str(w.ws)],
             ("install.after_pending", "host.install.after_rename", "install.before_commit", "install.after_commit",
              "host.install.after_commit", "sync.after_lock_write"), workspace=True, unitwise=True,
             view=_project_folders, batch=("ext:", "project:"), sample=("install.after_commit",)),
    Scenario("hosts-enable", _hosts_disabled, lambda w: ["ext", "enable", *HOST_NAMES],
             ("host.enable.after_host_files", "host.enable.after_move"), hosts=True, unitwise=True,
             sample=("host.enable.after_move",)),
]


def _homes(w: World) -> Any:
    """tests/hosts' view of the host homes, on the image (pkgmgr's own home is `w.home`)."""
    from tests.hosts.helpers import Homes

    class OnDisk(Homes):
        @property
        def pkgmgr(self) -> Path:
            return w.home

    return OnDisk(w.disk.mnt)


def _host_view(w: World) -> dict[str, Any]:
    """What each host loads (tests/hosts/test_crash.py's `visible`, with Vera's enabled states)."""
    from tests.hosts.test_crash import visible as host_visible

    return {f"host:{k}": v for k, v in host_visible(_homes(w), records=True).items()}


def host_refusals(w: World) -> list[str]:
    """What a host would refuse of what pkgmgr left, its records parsed as the host parses them
    (pkgmgr's own checks, `doctor --check`'s `host_records`, are not trusted for this): Vera's
    records whose digest is not their tree's, Gemini's or Claude's record files that do not parse,
    a Claude install entry whose folder is gone, a terva manifest that does not decode."""
    from pkgmgr.hosts.vera import digest

    homes = _homes(w)
    found = []

    def parsed(path: Path) -> Any:
        try:
            return json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            found.append(f"{path}: {exc}")
            return None

    registry = homes.vera / "extensions.json"
    if registry.exists() and (document := parsed(registry)) is not None:
        for entry in document.get("extensions", []):
            tree = homes.vera / entry["directory"]
            if not tree.is_dir() or entry["digest"] != digest(tree):
                found.append(f"Vera's record of {entry['id']} names a digest its tree does not have")
    for manifest in (homes.terva / "extensions").glob("*/extension.json"):
        parsed(manifest)
    enablement = homes.gemini_extensions / "extension-enablement.json"
    if enablement.exists():
        parsed(enablement)
    installed = homes.claude / "plugins" / "installed_plugins.json"
    if installed.exists() and (document := parsed(installed)) is not None:
        for plugin, entries in document.get("plugins", {}).items():
            found.extend(f"Claude's install entry of {plugin} names {e['installPath']}, which is gone"
                         for e in entries if not Path(e["installPath"]).is_dir())
    return found


# --- signed metadata (TUF) and signed publishing, on the image -------------------------------------------

WHEN = "2026-01-01T00:00:00Z"  # publish's `published`: the same bytes in every run


def _signed(w: World) -> Any:
    """A signed index on the image (its TEST-ONLY keys beside it), review-pack 0.1.0 published;
    in the folder `w.facts["index_at"]` instead when set (off the image: test_disk_faults.py)."""
    from tests.publish.helpers import packed
    from tests.support.signed import SignedIndex, signed_index

    where = Path(w.facts.get("index_at", w.disk.mnt))
    index = where / "index"
    if (index / "registry.toml").exists():
        return SignedIndex(index, where / "acme-keys")
    idx = signed_index(index, name="acme", keys=where / "acme-keys")
    w.run("registry", "publish", packed(where / "pack", version="0.1.0"), "--index", idx.path, "--keys", idx.keys,
          "--published", WHEN)
    return idx


def _signed_only(w: World) -> None:
    _signed(w)


def _signed_added(w: World) -> None:
    idx = _signed(w)
    w.run("registry", "add", "acme", idx.path, "--root", idx.root_file)


def _signed_then_published(w: World) -> None:
    """Added, then a new version published: an install refreshes the trusted metadata (ngclient
    writes the new timestamp, snapshot and targets)."""
    from tests.publish.helpers import packed

    _signed_added(w)
    idx = _signed(w)
    w.run("registry", "publish", packed(idx.path.parent / "pack", version="0.2.0"), "--index", idx.path, "--keys", idx.keys,
          "--published", WHEN)


def _registries(w: World) -> dict[str, Any]:
    """What `registry list` says of the signed registry (configured, its trusted root) and the
    version of its trusted timestamp."""
    from pkgmgr.registry.trustroot import trusted_state

    listed = {r["name"]: r for r in w.run("registry", "list")["registries"]}
    acme = listed.get("acme")
    if acme is None:
        return {"registry:acme": None}
    return {"registry:acme": {"signed": acme["signed"], "root_sha256": acme.get("root_sha256"),
                              "trusted_root": trusted_state(w.home, acme["source"]).root_version}}


def _trust_usable(w: World) -> list[str]:
    """A configured signed registry is usable after the cut: its trusted root sound (`doctor
    --check` would name it otherwise) and its metadata read through TUF (`registry refresh`)."""
    if _registries(w)["registry:acme"] is None:
        return []
    refreshed = run_cli(["registry", "refresh", "acme", "-o", "json"])
    return [] if refreshed.code == 0 else [f"registry refresh acme exit {refreshed.code}: "
                                           f"{(refreshed.stdout + refreshed.stderr).strip()[:300]}"]


def _index_state(w: World) -> dict[str, Any]:
    from tests.reliability.test_registry_crash import state

    plain, versions = state(w.disk.mnt / "index")
    return {"index": plain, "metadata": versions}


def _index_settled(w: World) -> list[str]:
    """`registry doctor` completes or discards what the cut left of the publish; then the index's
    signatures verify (`registry validate`)."""
    from tests.reliability.test_registry_crash import validate

    index = w.disk.mnt / "index"
    found = []
    doctor = run_cli(["registry", "doctor", str(index), "-o", "json"])
    if doctor.code != 0:
        found.append(f"registry doctor exit {doctor.code}: {(doctor.stdout + doctor.stderr).strip()[:300]}")
    found.extend(f"registry validate: {p['message']}" for p in validate(index))
    return found


def _publish_command(w: World) -> list[str]:
    from tests.publish.helpers import packed

    idx = _signed(w)
    return ["registry", "publish", str(packed(w.disk.mnt / "pack", version="0.2.0")), "--index", str(idx.path),
            "--keys", str(idx.keys), "--published", WHEN]


TRUST_SCENARIOS = [
    Scenario("registry-add-signed", _signed_only,
             lambda w: ["registry", "add", "acme", str(_signed(w).path), "--root", str(_signed(w).root_file)], (),
             view=_registries, check=_trust_usable),
    Scenario("signed-install", _signed_then_published,
             lambda w: ["ext", "install", "review-pack@0.2.0", "--registry", "acme"],
             ("install.after_rename", "install.after_commit"), view=_registries, check=_trust_usable),
    Scenario("registry-publish", _signed_only, _publish_command,
             ("registry.switch.staged", "registry.switch.renamed#3", "registry.switch.done"), view=_index_state,
             check=_index_settled, sample=("registry.switch.renamed#3",)),
]


@pytest.fixture
def registry_url(tmp_path: Path) -> Iterator[str]:
    registry = RegistryDir(tmp_path / "team-index", "team")
    for version in ("0.1.0", "0.2.0"):
        registry.publish(BUNDLED, version, data=crew_archive(BUNDLED, version, prompt=f"Plan {version}."))
    with StaticFileServer(registry.root, name="team") as server:
        yield server.url + "/"


def _view(w: World, scenario: Scenario) -> dict[str, Any]:
    """What `ext list`, `bundle list`, `resources list` (and pkgmgr.lock) show of the scenario's
    scope; for the hosts' scenarios also what each host loads."""
    seen = visible(w.ws if scenario.workspace else None)
    if scenario.view is not None:
        seen = {**seen, **scenario.view(w)}
    if scenario.hosts:
        seen = {**seen, **_host_view(w)}
    if scenario.batch:
        together = {k: seen.pop(k) for k in sorted(seen) if k.startswith(scenario.batch)}
        seen["batch"] = together
    return seen


def _check_cut(w: World, scenario: Scenario, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The checks of one cut (the copy mounted): the state seen, and what was wrong."""
    anomalies: list[str] = list(scenario.check(w)) if scenario.check is not None else []
    repaired = False
    workspace = w.ws if scenario.workspace else None
    for scope in ([None, w.ws] if scenario.workspace else [None]):
        problems = doctor_problems(scope)
        # what an interrupted writer may leave: leftovers, and for a host a lock its dead owner held
        if problems and (only_leftovers(problems) or (scenario.hosts and all(p["repairable"] for p in problems))):
            extra = ["--workspace", str(scope)] if scope is not None else []
            fixed = run_cli(["doctor", *extra, "-o", "json"])
            repaired = True
            if fixed.code != 0:
                anomalies.append(f"doctor exit {fixed.code}: {fixed.stdout.strip()[:300]}")
            problems = doctor_problems(scope)
        if problems:
            anomalies.append("doctor --check: " + "; ".join(f"{p['check']}: {p['message']}" for p in problems)[:600])
        store = store_root(scope, w.home) if scope is not None else w.home
        if repaired and not problems and pending_rows(store):
            anomalies.append(f"pending_trees after doctor: {pending_rows(store)}")
    verify_args = ["ext", "verify", "--all", "-o", "json"]
    if workspace is not None:
        verify_args = ["--scope", "workspace", "--workspace", str(workspace), *verify_args]
    verified = run_cli(verify_args)
    if verified.code != 0:
        anomalies.append(f"ext verify --all exit {verified.code}: {(verified.stdout + verified.stderr).strip()[:300]}")
    for text in (verified.stdout, verified.stderr):
        if "Traceback" in text:
            anomalies.append("a traceback reached the user")
    if scenario.hosts:  # doctor --check said all is well: no host may refuse what pkgmgr left
        anomalies.extend(f"a host refuses it: {why}" for why in host_refusals(w))
    state = "?"
    if not anomalies:
        seen = _view(w, scenario)
        if seen == old:
            state = "old"
        elif seen == new:
            state = "new"
        elif (scenario.workspace or scenario.unitwise) and not mixed_units(seen, old, new):
            state = "partial"
        else:
            anomalies.append("mixed state: " + ", ".join(mixed_units(seen, old, new)))
    return {"state": state, "repaired": repaired, "anomalies": anomalies}


def _power_cuts(scenario: Scenario, labels: tuple[str | None, ...], url: str, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Build the scenario's starting state on a fresh image, then for each label (None: the run to
    its end, which must come first: it gives the new state) run the command from that state in a
    child process, cut the power twice and check each cut. Returns one outcome per cut."""
    disk = Disk(tmp_path / "base.img", tmp_path / "mnt")
    w = World(disk, url)
    monkeypatch.setenv("PKGMGR_HOME", str(w.home))
    monkeypatch.setenv("HOME", str(disk.mnt / "user-home"))
    for variable, folder in HOST_HOMES.items():  # the hosts' homes on the image too (Eva's is under HOME)
        monkeypatch.setenv(variable, str(disk.mnt / folder))
    disk.make()
    disk.mount(disk.image)
    try:
        scenario.setup(w)
        old = _view(w, scenario)
    finally:
        disk.umount()  # everything of the setup reaches the image

    new: dict[str, Any] | None = None
    results: list[dict[str, Any]] = []
    for label in labels:
        work = tmp_path / "work.img"
        shutil.copyfile(disk.image, work)
        disk.image, base = work, disk.image
        disk.mount(work)
        cuts = {}
        try:
            ran = run_subprocess(scenario.command(w), env={**(env or {}), **({CRASH_ENV: label} if label else {})})
            if label is None:
                assert ran.code == 0, ran
            else:
                assert ran.code == -9, f"{label} was not reached: {ran}"
            for cut in CUTS:
                if cut == "journal-committed":
                    disk.commit_journal()
                cuts[cut] = tmp_path / f"cut-{cut}.img"
                disk.cut(cuts[cut])
            if label is None:
                new = _view(w, scenario)
        finally:
            disk.umount()
            disk.image = base
            work.unlink()
        assert new is not None
        for cut, image in cuts.items():
            disk.mount(image)
            try:
                outcome = _check_cut(w, scenario, old, new)
            finally:
                disk.umount()
                image.unlink()
            outcome.update(command=scenario.name, point=label or "end", cut=cut)
            results.append(outcome)
    return results


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_a_power_cut_leaves_the_old_or_the_new_state_complete(
        scenario: Scenario, loop_ok: None, registry_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _power_cuts(scenario, (None, *scenario.labels), registry_url, tmp_path, monkeypatch)
    for outcome in results:
        record("power_loss", **outcome)
    bad = [r for r in results if r["anomalies"]]
    assert not bad, json.dumps(bad, indent=1)


def _host_labels(scenario: Scenario) -> tuple[str, ...]:
    if sweep() or scenario.sample is None:
        return scenario.labels
    return scenario.sample


@pytest.mark.parametrize("scenario", TRUST_SCENARIOS, ids=lambda s: s.name)
def test_a_power_cut_leaves_signed_metadata_and_a_signed_index_usable(
        scenario: Scenario, loop_ok: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TUF metadata (issue 27: a cut after `registry add --root` left the five metadata files 0
    bytes, every install then `registry_signature_invalid`, `doctor` silent) and signed publishing:
    after each cut the registry is configured with a sound trusted root that reads (or not
    configured at all), a signed install old or new, and a signed index old or new once `registry
    doctor` ran, its signatures verifying."""
    results = _power_cuts(scenario, (None, *_host_labels(scenario)), "", tmp_path, monkeypatch)
    for outcome in results:
        record("power_loss", **outcome)
    bad = [r for r in results if r["anomalies"]]
    assert not bad, json.dumps(bad, indent=1)


@pytest.mark.parametrize("scenario", HOST_SCENARIOS, ids=lambda s: s.name)
def test_a_power_cut_leaves_each_host_old_or_new(
        scenario: Scenario, loop_ok: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder hosts (issue 27): each cut leaves what every host loads — its folders, terva's
    manifests as terva decodes them, Vera's records and markers, Gemini's enablement, Claude's
    install entries and enabled plugins — old or new (each host on its own for a command that
    changes them one after the other), `doctor --check` consistent with `ext verify` and with what
    the hosts would load, `doctor` repairing the rest. The regular suite cuts at a sample of the
    crash points; PKGMGR_FAULT_SWEEP=1 (.ci/run) at every one."""
    results = _power_cuts(scenario, (None, *_host_labels(scenario)), "", tmp_path, monkeypatch)
    for outcome in results:
        record("power_loss", **outcome)
    bad = [r for r in results if r["anomalies"]]
    assert not bad, json.dumps(bad, indent=1)


def test_the_harness_catches_the_ordering_before_issue_16(
        loop_ok: None, registry_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the durability steps (no syncfs before the rename, synchronous = NORMAL) a switch
    that exited 0 leaves, after the cut, a recorded 0.2.0 whose files are empty: the model of
    lost writes still bites (if it stopped biting, the test above would prove nothing)."""
    switch = next(s for s in SCENARIOS if s.name == "switch")
    results = _power_cuts(switch, (None,), registry_url, tmp_path, monkeypatch, env={"PKGMGR_TEST_DURABILITY": "off"})
    # any, not all: the kernel's background write-back, under a neighbour's heavy writing, could
    # still put the new files' data on disk before one of the cuts
    assert any("tree checksum differs" in a for r in results for a in r["anomalies"]), json.dumps(results, indent=1)
