"""The remote planner: plans for registry names, GitHub releases and URLs, and fetches that
verify wherever the bytes come from — safely from several threads at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pkgmgr.config import Config, NetworkSettings, RegistryConfig
from pkgmgr.errors import PkgmgrError
from pkgmgr.install.options import InstallOptions
from pkgmgr.progress import Reporter
from pkgmgr.refs import parse_ref
from pkgmgr.registry.memory import Memory
from pkgmgr.registry.plan import make_planner
from pkgmgr.registry.session import Session
from tests.registry.helpers import RegistryDir, archive_bytes
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import StaticFileServer


def ctx(home: Path, *registries: RegistryConfig, offline: bool = False) -> Session:
    config = Config(network=NetworkSettings(retries=1), registries=tuple(registries))
    return Session(home, config, offline=offline, warn=lambda message: None)


def test_registry_plan_and_fetch(home: Path, regdir: RegistryDir, static_server: StaticFileServer) -> None:
    published = regdir.publish("demo-ext", "0.1.0", permissions=("session.read",), tier="official")
    planner = make_planner(ctx(home, RegistryConfig("acme", static_server.url)), options=InstallOptions())
    plan = planner(parse_ref("demo-ext"))
    assert (plan.kind, plan.verified, plan.tier, plan.name, plan.version) == \
        ("registry", True, "official", "demo-ext", "0.1.0")
    fetched = plan.fetch(Reporter())
    assert fetched.kind == "registry" and fetched.locator == "acme" and fetched.registry == "acme"
    assert fetched.sha256 == published.sha256 and fetched.verified and fetched.tier == "official"
    assert fetched.source_url == f"{static_server.url}/{published.url}"
    assert fetched.archive is not None and fetched.archive.read_bytes() == published.data
    assert fetched.expects.entry is not None and fetched.expects.entry.permissions == ("session.read",)


def test_fetches_are_thread_safe(home: Path, regdir: RegistryDir, static_server: StaticFileServer) -> None:
    names = [f"ext-{i:02d}" for i in range(12)]
    for name in names:
        regdir.publish(name, "1.0.0", write=False)
    regdir.write()
    planner = make_planner(ctx(home, RegistryConfig("acme", static_server.url)), options=InstallOptions())
    plans = [planner(parse_ref(name)) for name in names] + [planner(parse_ref(names[0]))]
    with ThreadPoolExecutor(max_workers=8) as pool:
        fetched = list(pool.map(lambda p: p.fetch(Reporter()), plans))
    assert [f.archive.read_bytes() for f in fetched[:-1]] == [
        archive_bytes(name, "1.0.0") for name in names]
    assert fetched[-1].archive == fetched[0].archive


def test_local_directory_registry_copies_and_verifies(home: Path, regdir: RegistryDir) -> None:
    published = regdir.publish("demo-ext", "0.1.0")
    plan = make_planner(ctx(home, RegistryConfig("local", str(regdir.root))), options=InstallOptions())(
        parse_ref("demo-ext"))
    fetched = plan.fetch(Reporter())
    assert fetched.archive != (regdir.root / published.url) and fetched.archive.read_bytes() == published.data
    assert fetched.source_url == str((regdir.root / published.url).resolve())


def test_resolution_records_the_memory(home: Path, regdir: RegistryDir) -> None:
    regdir.publish("demo-ext", "0.1.0")
    make_planner(ctx(home, RegistryConfig("local", str(regdir.root))), options=InstallOptions())(
        parse_ref("demo-ext"))
    memory = Memory(home)
    assert memory.serial(str(regdir.root)) == regdir.serial
    assert [v for v, _ in memory.known(str(regdir.root), "demo-ext").values()] == ["0.1.0"]


def test_memory_never_lowers_a_serial(home: Path) -> None:
    memory = Memory(home)
    memory.record("src", 5, [("a-ext", "1.0.0", "a" * 64, False)])
    memory.record("src", 3, [("a-ext", "1.0.0", "b" * 64, False)])
    assert memory.serial("src") == 5
    assert list(memory.known("src", "a-ext").values()) == [("1.0.0", "a" * 64)]
    memory.forget("src")
    assert memory.serial("src") is None and memory.known("src", "a-ext") == {}


def test_url_plan_needs_https_or_loopback(home: Path) -> None:
    planner = make_planner(ctx(home), options=InstallOptions())
    with pytest.raises(PkgmgrError) as exc:
        planner(parse_ref("http://example.com/a.tar.gz"))
    assert exc.value.code == "usage"
    plan = planner(parse_ref("http://127.0.0.1:9/a.tar.gz"))
    assert (plan.kind, plan.verified) == ("url", False)


def test_github_plan(home: Path, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.2.0", assets={"tool.tar.gz": archive_bytes("gh-tool", "1.2.0")})
    fake_github.add_release("acme", "tool", "v2.0.0-rc.1", prerelease=True,
                            assets={"tool.tar.gz": archive_bytes("gh-tool", "2.0.0-rc.1")})
    planner = make_planner(ctx(home), options=InstallOptions())
    plan = planner(parse_ref("github:acme/tool"))
    assert (plan.kind, plan.verified, plan.version) == ("github", False, "1.2.0")
    fetched = plan.fetch(Reporter())
    assert fetched.kind == "github" and fetched.locator == "acme/tool" and not fetched.verified
    with pytest.raises(PkgmgrError) as exc:
        planner(parse_ref("github:acme/tool@v2.0.0-rc.1"))
    assert exc.value.code == "version_not_found"
    pre = make_planner(ctx(home), options=InstallOptions(pre=True))(parse_ref("github:acme/tool"))
    assert pre.version == "2.0.0-rc.1"
