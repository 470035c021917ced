"""`ext update` (pkgmgr.updater): each installed extension moves to the newest allowed version
of its recorded source — never lower, no prerelease without --pre, compatible with the host —;
pinned ones and path/archive installs stay; one extension's failure hides no other outcome;
committing goes through the installer (consent, writer lock). Real registries on disk and on
loopback, a fake GitHub, a URL served on loopback."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from pkgmgr.config import Config, NetworkSettings, RegistryConfig
from pkgmgr.errors import PkgmgrError
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.pipeline import InstallRequest, install
from pkgmgr.progress import Reporter
from pkgmgr.registry.index_format import entry_path
from pkgmgr.registry.memory import Memory
from pkgmgr.registry.plan import RemotePlanner
from pkgmgr.registry.session import Session
from pkgmgr.store.lock import ExclusiveLock
from pkgmgr.store.scope import global_scope
from pkgmgr.store.switch import get_installed
from pkgmgr.updater import UpdateItem, Updater, UpdateReport
from tests.registry.conftest import fake_github, regdir, static_server  # noqa: F401 - shared fixtures
from tests.registry.helpers import RegistryDir, archive_bytes
from tests.support.builders import tar_gz, write_extension
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import StaticFileServer

FAST = NetworkSettings(connect_timeout=2.0, read_timeout=2.0, retries=1)
DIRECT = InstallOptions(allow_unverified=True, yes=True)  # github, URL, path and archive installs


class Recorder(Reporter):
    def __init__(self) -> None:
        self.started: list[str] = []

    def download_started(self, key: str, label: str, total: int | None) -> None:
        self.started.append(key)


class Env:
    """The global scope of `home` and the operations run on it (each with its own Session)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.scope = global_scope(home)
        self.registries: tuple[RegistryConfig, ...] = ()
        self.host_version: str | None = None
        self._sessions: list[Session] = []

    def session(self) -> Session:
        s = Session(self.home, Config(network=FAST, registries=self.registries, host_version=self.host_version))
        self._sessions.append(s)
        return s

    def install(self, *refs: str, options: InstallOptions = InstallOptions(), asset: str | None = None) -> None:
        s = self.session()
        batch = install(InstallRequest(self.scope, list(refs), config=s.config, options=options,
                        planner=RemotePlanner(s, options=options, asset=asset)))
        assert batch.first_error is None, batch.first_error
        s.close()

    def update(self, names: Sequence[str] = (), *, all_: bool = False, check: bool = False,
               options: InstallOptions = InstallOptions(), asset: str | None = None,
               reporter: Reporter | None = None, lock_timeout: float = 5.0) -> UpdateReport:
        s = self.session()
        try:
            return Updater(s, self.scope, options=options, asset=asset).run(
                names, all_=all_, check=check, config=s.config, reporter=reporter, lock_timeout=lock_timeout)
        finally:
            s.close()

    def version(self, name: str) -> str | None:
        installed = get_installed(self.scope, name)
        return None if installed is None else installed.version

    def close(self) -> None:
        for s in self._sessions:
            s.close()
        self.scope.close()


@pytest.fixture
def env(home: Path) -> Iterator[Env]:
    e = Env(home)
    yield e
    e.close()


@pytest.fixture
def acme(env: Env, regdir: RegistryDir) -> RegistryDir:
    """Registry `acme` (a local directory) with demo-ext 0.1.0 installed from it."""
    regdir.publish("demo-ext", "0.1.0")
    env.registries = (RegistryConfig("acme", str(regdir.root)),)
    env.install("demo-ext")
    return regdir


def statuses(report: UpdateReport) -> list[tuple[str, str]]:
    return [(item.name, item.status) for item in report.items]


# --- registry installs -----------------------------------------------------------------------------


def test_check_reports_a_newer_version_and_changes_nothing(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0")
    report = env.update(["demo-ext"], check=True)
    [item] = report.items
    assert (item.name, item.version, item.status, item.target, item.source) == \
        ("demo-ext", "0.1.0", "available", "0.2.0", "registry")
    assert item.to_json() == {"name": "demo-ext", "version": "0.1.0", "source": "registry", "latest": "0.2.0"}
    assert env.version("demo-ext") == "0.1.0" and report.first_error is None


def test_update_installs_the_newest_allowed_version(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0")
    published = acme.publish("demo-ext", "0.3.0")
    report = env.update(["demo-ext"])
    [item] = report.items
    assert item.status == "updated" and item.installed.version == "0.3.0"
    assert item.to_json() == {"name": "demo-ext", "version": "0.3.0", "previous_version": "0.1.0",
                              "source": "registry", "scope": "global", "sha256": published.sha256,
                              "verified": True, "summary": item.summary}
    assert item.summary is not None and item.summary["version"] == "0.3.0"
    assert env.version("demo-ext") == "0.3.0"
    again = env.update(["demo-ext"])
    assert statuses(again) == [("demo-ext", "unchanged")]
    assert again.items[0].reason == "up to date (newest allowed in registry acme: 0.3.0)"


def test_up_to_date_is_unchanged_and_the_registry_is_remembered(env: Env, home: Path, acme: RegistryDir) -> None:
    acme.publish("other-ext", "1.0.0")  # a new serial, nothing new for demo-ext
    report = env.update(["demo-ext"], check=True)
    [item] = report.items
    assert (item.status, item.target) == ("unchanged", "0.1.0")
    assert item.reason == "up to date (newest allowed in registry acme: 0.1.0)"
    assert item.to_json() == {"name": "demo-ext", "version": "0.1.0", "source": "registry",
                              "reason": item.reason}
    memory = Memory(home)
    try:
        assert memory.serial(str(acme.root)) == acme.serial
    finally:
        memory.close()


def test_never_moves_to_a_lower_version(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0")
    env.update(["demo-ext"])
    acme.change("demo-ext", "0.2.0", yanked=True)  # the newest allowed is now 0.1.0
    report = env.update(["demo-ext"])
    [item] = report.items
    assert (item.status, item.target) == ("unchanged", "0.1.0") and "up to date" in item.reason
    assert env.version("demo-ext") == "0.2.0"


def test_prereleases_only_with_pre(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0-rc.1")
    assert statuses(env.update(["demo-ext"], check=True)) == [("demo-ext", "unchanged")]
    report = env.update(["demo-ext"], options=InstallOptions(pre=True))
    assert statuses(report) == [("demo-ext", "updated")] and env.version("demo-ext") == "0.2.0-rc.1"


def test_only_versions_the_host_can_run(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0", min_compozy_version="0.6.0")
    acme.publish("demo-ext", "0.3.0", min_compozy_version="9.0.0")
    env.host_version = "0.7.0"
    [item] = env.update(["demo-ext"], check=True).items
    assert (item.status, item.target) == ("available", "0.2.0")


def test_no_allowed_version_is_reported_not_failed(env: Env, acme: RegistryDir) -> None:
    acme.change("demo-ext", "0.1.0", yanked=True)
    report = env.update(["demo-ext"])
    [item] = report.items
    assert item.status == "unchanged" and item.error is None
    assert item.reason.startswith("no allowed version: ") and "0.1.0" in item.reason and "\n" not in item.reason


def test_a_registry_that_no_longer_lists_it(env: Env, acme: RegistryDir) -> None:
    (acme.root / entry_path("demo-ext")).unlink()
    [item] = env.update(["demo-ext"]).items
    assert item.status == "failed" and item.error is not None and item.error.code == "not_found"
    assert item.error.message == "demo-ext: registry acme no longer lists it"
    assert item.to_json() == {"name": "demo-ext", "version": "0.1.0", "error": item.error.to_json()}


def test_a_registry_no_longer_configured(env: Env, acme: RegistryDir) -> None:
    env.registries = ()
    [item] = env.update(["demo-ext"]).items
    assert item.status == "failed" and item.error.code == "not_found"
    assert item.error.details["registry"] == "acme"


def test_pinned_extensions_are_left_alone(env: Env, acme: RegistryDir) -> None:
    acme.publish("other-ext", "1.0.0")
    env.install("other-ext", options=InstallOptions(pin=True))
    acme.publish("other-ext", "2.0.0")
    (acme.root / "registry.toml").unlink()  # not even read for a pinned extension
    report = env.update(["other-ext"])
    [item] = report.items
    assert (item.status, item.reason) == ("pinned", "pinned at 1.0.0")
    assert item.to_json() == {"name": "other-ext", "version": "1.0.0", "source": "registry",
                              "reason": "pinned at 1.0.0"}
    assert env.version("other-ext") == "1.0.0"


# --- which extensions ---------------------------------------------------------------------------------


def test_an_unknown_name_fails_without_hiding_the_others(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0")
    report = env.update(["ghost-ext", "demo-ext", "ghost-ext"])
    assert sorted(statuses(report)) == [("demo-ext", "updated"), ("ghost-ext", "failed")]  # once each
    ghost = report.by_status("failed")[0]
    assert ghost.version is None and ghost.error.code == "not_found"
    assert ghost.error.message == "ghost-ext is not installed in the global scope"
    assert report.first_error is ghost.error
    assert env.version("demo-ext") == "0.2.0"


def test_all_covers_every_installed_extension(env: Env, acme: RegistryDir, tmp_path: Path) -> None:
    acme.publish("other-ext", "1.0.0")
    env.install("other-ext")
    acme.publish("other-ext", "1.1.0")
    acme.publish("demo-ext", "0.2.0")
    report = env.update(all_=True)
    assert sorted(statuses(report)) == [("demo-ext", "updated"), ("other-ext", "updated")]
    assert (env.version("demo-ext"), env.version("other-ext")) == ("0.2.0", "1.1.0")
    check = env.update(all_=True, check=True)
    assert sorted(statuses(check)) == [("demo-ext", "unchanged"), ("other-ext", "unchanged")]


def test_nothing_installed(env: Env) -> None:
    report = env.update(all_=True)
    assert report.items == [] and report.activations == [] and report.first_error is None


def test_one_broken_registry_hides_no_other_update(env: Env, acme: RegistryDir, tmp_path: Path) -> None:
    other = RegistryDir(tmp_path / "other-index", "other")
    other.publish("other-ext", "1.0.0")
    env.registries = (RegistryConfig("acme", str(acme.root)), RegistryConfig("other", str(other.root)))
    env.install("other-ext")
    other.publish("other-ext", "1.1.0")
    (acme.root / "registry.toml").write_text("not toml [", encoding="utf-8")
    report = env.update(all_=True)
    assert sorted(statuses(report)) == [("demo-ext", "failed"), ("other-ext", "updated")]
    assert report.first_error is not None and report.first_error.code == "invalid_index"
    assert env.version("other-ext") == "1.1.0" and env.version("demo-ext") == "0.1.0"


# --- path and archive installs ------------------------------------------------------------------------


def test_path_and_archive_installs_are_not_updatable(env: Env, tmp_path: Path) -> None:
    tree = write_extension(tmp_path / "src" / "local-ext", {"name": "local-ext", "version": "0.1.0",
                                                            "min_compozy_version": "0.5.0"})
    archive = tar_gz(tmp_path / "packed-ext-1.0.0.tar.gz", {
        "packed-ext/extension.toml": 'name = "packed-ext"\nversion = "1.0.0"\nmin_compozy_version = "0.5.0"\n'})
    env.install(str(tree), str(archive), options=DIRECT)
    report = env.update(all_=True)
    by_name = {item.name: item for item in report.items}
    assert by_name["local-ext"].status == by_name["packed-ext"].status == "unchanged"
    assert by_name["local-ext"].reason == (f"not updatable: installed from a path ({tree}); "
                                           "install it again to change it")
    assert by_name["packed-ext"].reason.startswith(f"not updatable: installed from a archive ({archive})")


# --- GitHub releases ---------------------------------------------------------------------------------


@pytest.fixture
def github(env: Env, fake_github: FakeGitHub) -> FakeGitHub:
    """gh-tool v1.0.0 released on the fake GitHub and installed from it."""
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.0.0",
                            assets={"gh-tool-1.0.0.tar.gz": archive_bytes("gh-tool", "1.0.0")})
    env.install("github:acme/gh-tool", options=DIRECT)
    return fake_github


def test_github_latest_release(env: Env, github: FakeGitHub) -> None:
    [item] = env.update(["gh-tool"], check=True, options=DIRECT).items
    assert (item.status, item.target, item.source) == ("unchanged", "1.0.0", "github")
    assert item.reason == "up to date (latest release v1.0.0)"
    github.add_release("acme", "gh-tool", "v1.1.0", assets={"gh-tool-1.1.0.tar.gz": archive_bytes("gh-tool", "1.1.0")})
    [item] = env.update(["gh-tool"], check=True, options=DIRECT).items
    assert (item.status, item.target) == ("available", "1.1.0")
    [item] = env.update(["gh-tool"], options=DIRECT).items
    assert item.status == "updated" and env.version("gh-tool") == "1.1.0"
    installed = get_installed(env.scope, "gh-tool")
    assert installed.source == "acme/gh-tool" and installed.source_url.endswith("/v1.1.0/gh-tool-1.1.0.tar.gz")


def test_github_picks_the_asset_named_like_the_installed_one(env: Env, github: FakeGitHub) -> None:
    github.add_release("acme", "gh-tool", "v1.1.0", assets={
        "gh-tool-1.1.0.tar.gz": archive_bytes("gh-tool", "1.1.0"),
        "gh-tool-docs-1.1.0.tar.gz": b"not the extension"})
    report = env.update(["gh-tool"], options=DIRECT)
    assert statuses(report) == [("gh-tool", "updated")] and env.version("gh-tool") == "1.1.0"


def test_github_never_moves_to_a_lower_release(env: Env, github: FakeGitHub) -> None:
    github.add_release("acme", "gh-tool", "v0.9.0", assets={"gh-tool-0.9.0.tar.gz": archive_bytes("gh-tool", "0.9.0")})
    [item] = env.update(["gh-tool"], options=DIRECT).items  # the latest release is an older version
    assert (item.status, item.target) == ("unchanged", "0.9.0") and env.version("gh-tool") == "1.0.0"


def test_github_a_tag_that_is_no_version_compares_urls(env: Env, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "nightly",
                            assets={"gh-tool.tar.gz": archive_bytes("gh-tool", "1.0.0")})
    env.install("github:acme/gh-tool", options=DIRECT)
    [item] = env.update(["gh-tool"], check=True, options=DIRECT).items
    assert (item.status, item.target, item.reason) == ("unchanged", "nightly", "up to date (latest release nightly)")
    fake_github.add_release("acme", "gh-tool", "nightly-2",
                            assets={"gh-tool.tar.gz": archive_bytes("gh-tool", "1.0.1")})
    [item] = env.update(["gh-tool"], check=True, options=DIRECT).items
    assert (item.status, item.target) == ("available", "nightly-2")


def test_github_errors_are_per_extension(env: Env, github: FakeGitHub, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0")
    github.add_release("acme", "gh-tool", "v2.0.0", assets={"a.tar.gz": b"1", "b.tar.gz": b"2"})
    report = env.update(all_=True, options=DIRECT)
    assert sorted(statuses(report)) == [("demo-ext", "updated"), ("gh-tool", "failed")]
    assert report.by_status("failed")[0].error.code == "ambiguous_asset"


def test_github_asset_option(env: Env, github: FakeGitHub) -> None:
    github.add_release("acme", "gh-tool", "v2.0.0", assets={"a.tar.gz": b"1",
                                                             "b.tar.gz": archive_bytes("gh-tool", "2.0.0")})
    report = env.update(["gh-tool"], options=DIRECT, asset="b.tar.gz")
    assert statuses(report) == [("gh-tool", "updated")] and env.version("gh-tool") == "2.0.0"


def test_github_two_extensions_from_one_release_both_update(env: Env, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tools")
    fake_github.add_release("acme", "tools", "v1.0.0", assets={
        "a-ext-1.0.0.tar.gz": archive_bytes("a-ext", "1.0.0"), "b-ext-1.0.0.tar.gz": archive_bytes("b-ext", "1.0.0")})
    env.install("github:acme/tools", options=DIRECT, asset="a-ext-1.0.0.tar.gz")
    env.install("github:acme/tools", options=DIRECT, asset="b-ext-1.0.0.tar.gz")
    fake_github.add_release("acme", "tools", "v1.1.0", assets={
        "a-ext-1.1.0.tar.gz": archive_bytes("a-ext", "1.1.0"), "b-ext-1.1.0.tar.gz": archive_bytes("b-ext", "1.1.0")})
    report = env.update(all_=True, options=DIRECT)
    assert sorted(statuses(report)) == [("a-ext", "updated"), ("b-ext", "updated")]
    assert (env.version("a-ext"), env.version("b-ext")) == ("1.1.0", "1.1.0")


# --- URL installs ----------------------------------------------------------------------------------


@pytest.fixture
def served(env: Env, tmp_path: Path) -> Iterator[tuple[StaticFileServer, Path]]:
    """url-ext 1.0.0 served at /url-ext.tar.gz and installed from that URL."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "url-ext.tar.gz").write_bytes(archive_bytes("url-ext", "1.0.0"))
    with StaticFileServer(www) as server:
        env.install(f"{server.url}/url-ext.tar.gz", options=DIRECT)
        yield server, www / "url-ext.tar.gz"


def test_url_check_downloads_and_compares_the_checksum(env: Env, served: tuple[StaticFileServer, Path]) -> None:
    server, path = served
    [item] = env.update(["url-ext"], check=True, options=DIRECT).items
    assert (item.status, item.reason, item.source) == \
        ("unchanged", "up to date (the URL serves the installed archive)", "url")
    path.write_bytes(archive_bytes("url-ext", "1.1.0"))
    [item] = env.update(["url-ext"], check=True, options=DIRECT).items
    assert (item.status, item.target, item.reason) == ("available", None, "the URL serves a different archive")
    assert env.version("url-ext") == "1.0.0"


def test_url_update_installs_what_it_serves_now(env: Env, served: tuple[StaticFileServer, Path]) -> None:
    server, path = served
    [item] = env.update(["url-ext"], options=DIRECT).items
    assert (item.status, item.reason) == ("unchanged", "up to date (same version and content)")
    path.write_bytes(archive_bytes("url-ext", "1.1.0"))
    [item] = env.update(["url-ext"], options=DIRECT).items
    assert item.status == "updated" and env.version("url-ext") == "1.1.0"
    assert item.installed.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_url_update_needs_consent(env: Env, served: tuple[StaticFileServer, Path]) -> None:
    server, path = served
    path.write_bytes(archive_bytes("url-ext", "1.1.0"))
    [item] = env.update(["url-ext"], options=InstallOptions()).items  # no --allow-unverified
    assert item.status == "failed" and item.error.code == "unverified_source"
    assert env.version("url-ext") == "1.0.0"


# --- committing ----------------------------------------------------------------------------------------


def test_dry_run_plans_without_installing(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0")
    report = env.update(["demo-ext"], options=InstallOptions(dry_run=True))
    [item] = report.items
    assert (item.status, item.target) == ("planned", "0.2.0")
    assert item.summary is not None and item.summary["version"] == "0.2.0"
    assert item.to_json() == {"name": "demo-ext", "version": "0.1.0", "source": "registry", "latest": "0.2.0",
                              "summary": item.summary}
    assert env.version("demo-ext") == "0.1.0"


def test_another_writer_holding_the_lock_fails_the_updates(env: Env, acme: RegistryDir) -> None:
    acme.publish("demo-ext", "0.2.0")
    with ExclusiveLock(env.scope.lock_path, timeout=0):
        report = env.update(["demo-ext"], lock_timeout=0)
    [item] = report.items
    assert item.status == "failed" and item.error.code == "locked"
    assert env.version("demo-ext") == "0.1.0"
    assert statuses(env.update(["demo-ext"])) == [("demo-ext", "updated")]  # released: works again


def test_over_http_each_entry_is_read_once_and_downloads_are_reported(env: Env, regdir: RegistryDir,
                                                                      static_server: StaticFileServer) -> None:
    for name in ("a-ext", "b-ext", "c-ext"):
        regdir.publish(name, "1.0.0", write=False)
    regdir.write()
    env.registries = (RegistryConfig("acme", static_server.url),)
    env.install("a-ext", "b-ext", "c-ext")
    for name in ("a-ext", "b-ext"):
        regdir.publish(name, "1.1.0", write=False)
    regdir.write()
    static_server.clear()
    reporter = Recorder()
    report = env.update(all_=True, reporter=reporter)
    assert sorted(statuses(report)) == [("a-ext", "updated"), ("b-ext", "updated"), ("c-ext", "unchanged")]
    entries = sorted(r.route for r in static_server.requests if r.route.startswith("/extensions/"))
    assert entries == sorted("/" + entry_path(n) for n in ("a-ext", "b-ext", "c-ext"))
    assert sorted(reporter.started) == ["a-ext@1.1.0", "b-ext@1.1.0"]


# --- the report ----------------------------------------------------------------------------------------


def test_report_helpers() -> None:
    error = PkgmgrError("boom", code="not_found")
    later = PkgmgrError("later", code="locked")
    report = UpdateReport([UpdateItem("a-ext", "1.0.0", "updated"), UpdateItem("b-ext", None, "failed", error=error),
                           UpdateItem("c-ext", "1.0.0", "failed", error=later)])
    assert report.first_error is error
    assert [i.name for i in report.by_status("failed")] == ["b-ext", "c-ext"]
    assert report.by_status("pinned") == []
    assert UpdateReport().first_error is None


def test_an_updated_item_without_its_installation_keeps_its_own_fields() -> None:
    item = UpdateItem("a-ext", "1.0.0", "updated", source="registry", reason="why")
    assert item.to_json() == {"name": "a-ext", "version": "1.0.0", "source": "registry", "reason": "why"}


def test_options_are_passed_to_the_installer(env: Env, acme: RegistryDir) -> None:
    """--pin given to update pins the new version (the options reach install.pipeline.install)."""
    acme.publish("demo-ext", "0.2.0")
    env.update(["demo-ext"], options=InstallOptions(pin=True))
    installed = get_installed(env.scope, "demo-ext")
    assert installed.version == "0.2.0" and installed.pinned
    acme.publish("demo-ext", "0.3.0")
    assert statuses(env.update(["demo-ext"])) == [("demo-ext", "pinned")]
