"""Plans for `github:OWNER/REPO[@TAG]` (SPEC 6): the release and asset are chosen when
planning, the download (checked against the release's checksum file when it has one) happens
in `fetch`, and such a plan is never verified. Against a fake GitHub on loopback."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

import pytest

from pkgmgr.config import Config, Limits, NetworkSettings
from pkgmgr.errors import PkgmgrError
from pkgmgr.progress import Reporter
from pkgmgr.refs import parse_ref
from pkgmgr.registry.github_plan import asset_name, plan_github, tag_version
from pkgmgr.registry.session import Session
from tests.registry.helpers import archive_bytes
from tests.support.fakegithub import FakeGitHub

FAST = NetworkSettings(connect_timeout=2.0, read_timeout=2.0, retries=1)


class Recorder(Reporter):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def download_started(self, key: str, label: str, total: int | None) -> None:
        self.events.append(("started", key, label, total))

    def download_finished(self, key: str) -> None:
        self.events.append(("finished", key))


@pytest.fixture
def session(home: Path, fake_github: FakeGitHub) -> Iterator[Session]:
    s = Session(home, Config(network=FAST))
    yield s
    s.close()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def storage_hits(fake: FakeGitHub) -> int:
    return fake.storage.count()


# --- tag_version and asset_name ---------------------------------------------------------------------


@pytest.mark.parametrize(("tag", "version"), [
    ("v1.2.0", "1.2.0"),
    ("V1.2.0", "1.2.0"),
    ("1.2.0", "1.2.0"),
    ("v2.0.0-rc.1", "2.0.0-rc.1"),
    ("release/v3.1.4", "3.1.4"),  # the last segment of a tag with slashes
    ("tools/1.0.0", "1.0.0"),
    ("latest", None),
    ("v1.2", None),  # not a semantic version
    ("vv1.0.0", None),
    ("version-1.0.0", None),
    ("", None),
])
def test_tag_version(tag: str, version: str | None) -> None:
    assert tag_version(tag) == version


@pytest.mark.parametrize(("url", "name"), [
    ("https://github.com/acme/tools/releases/download/v1.0.0/tools-1.0.0.tar.gz", "tools-1.0.0.tar.gz"),
    ("https://storage.example/assets/tools-1.0.0.zip?sig=abc#frag", "tools-1.0.0.zip"),
    ("https://api.github.com/repos/acme/tools/tarball/v1.0.0", "v1.0.0"),
    ("https://github.com/acme/tools/releases/download/v1.0.0/", None),
    ("https://github.com", None),
    ("", None),
    (None, None),
])
def test_asset_name(url: str | None, name: str | None) -> None:
    assert asset_name(url) == name


# --- planning ---------------------------------------------------------------------------------------


def test_plan_then_fetch_one_asset(session: Session, fake_github: FakeGitHub) -> None:
    data = archive_bytes("gh-tool", "1.1.0")
    fake_github.add_repo("acme", "gh-tool")
    release = fake_github.add_release("acme", "gh-tool", "v1.1.0", assets={"gh-tool-1.1.0.tar.gz": data})
    ref = parse_ref("github:acme/gh-tool")
    plan = plan_github(session, ref, pre=False)
    url = release["assets"][0]["browser_download_url"]
    assert (plan.ref, plan.kind, plan.verified, plan.version) == (ref, "github", False, "1.1.0")
    assert plan.needs_consent
    assert plan.label == "acme/gh-tool@v1.1.0 (gh-tool-1.1.0.tar.gz)"
    assert plan.extra == {"repository": "acme/gh-tool", "tag": "v1.1.0", "asset": "gh-tool-1.1.0.tar.gz",
                          "url": url}
    assert storage_hits(fake_github) == 0  # planning downloads nothing
    reporter = Recorder()
    fetched = plan.fetch(reporter)
    assert fetched.kind == "github" and fetched.locator == "acme/gh-tool" and fetched.verified is False
    assert fetched.archive is not None and fetched.archive.read_bytes() == data
    assert fetched.sha256 == sha(data) and fetched.source_url == url and fetched.label == "github:acme/gh-tool"
    assert fetched.direct and fetched.expects.entry is None
    key = "acme/gh-tool@v1.1.0/gh-tool-1.1.0.tar.gz"
    assert reporter.events == [("started", key, "gh-tool-1.1.0.tar.gz", len(data)), ("finished", key)]


def test_a_named_tag(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.0.0", assets={"a.tar.gz": b"one"})
    fake_github.add_release("acme", "gh-tool", "v2.0.0", assets={"a.tar.gz": b"two"})
    plan = plan_github(session, parse_ref("github:acme/gh-tool@v1.0.0"), pre=False)
    assert (plan.version, plan.extra["tag"]) == ("1.0.0", "v1.0.0")
    assert plan.fetch(Reporter()).archive.read_bytes() == b"one"
    assert plan_github(session, parse_ref("github:acme/gh-tool"), pre=False).version == "2.0.0"


def test_a_tag_that_is_no_version(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "nightly", assets={"tool.zip": b"zip"})
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False)
    assert plan.version is None and plan.extra["tag"] == "nightly"
    assert plan.label == "acme/gh-tool@nightly (tool.zip)"


def test_prereleases_need_pre(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v2.0.0-rc.1", assets={"a.tar.gz": b"rc"}, prerelease=True)
    with pytest.raises(PkgmgrError) as exc:
        plan_github(session, parse_ref("github:acme/gh-tool"), pre=False)
    assert exc.value.code == "version_not_found"
    assert plan_github(session, parse_ref("github:acme/gh-tool"), pre=True).version == "2.0.0-rc.1"


def test_an_unknown_repository_is_not_found(session: Session, fake_github: FakeGitHub) -> None:
    with pytest.raises(PkgmgrError) as exc:
        plan_github(session, parse_ref("github:acme/nothing"), pre=False)
    assert exc.value.code == "not_found"


# --- choosing the asset -----------------------------------------------------------------------------


TWO = {"gh-tool-1.1.0.tar.gz": b"tool", "gh-tool-docs-1.1.0.tar.gz": b"docs", "notes.txt": b"text"}


def test_several_archives_are_ambiguous(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.1.0", assets=TWO)
    with pytest.raises(PkgmgrError) as exc:
        plan_github(session, parse_ref("github:acme/gh-tool"), pre=False)
    assert exc.value.code == "ambiguous_asset"
    assert exc.value.details["assets"] == ["gh-tool-1.1.0.tar.gz", "gh-tool-docs-1.1.0.tar.gz"]


def test_an_asset_named(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.1.0", assets=TWO)
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False, asset="gh-tool-docs-1.1.0.tar.gz")
    assert plan.extra["asset"] == "gh-tool-docs-1.1.0.tar.gz"
    assert plan.fetch(Reporter()).archive.read_bytes() == b"docs"
    with pytest.raises(PkgmgrError) as exc:
        plan_github(session, parse_ref("github:acme/gh-tool"), pre=False, asset="missing.tar.gz")
    assert exc.value.code == "not_found"


def test_the_previous_asset_with_the_new_version(session: Session, fake_github: FakeGitHub) -> None:
    """`ext update`: the asset named like the installed one, its version replaced."""
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.1.0", assets=TWO)
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False,
                       previous_asset="gh-tool-docs-1.0.0.tar.gz", previous_version="1.0.0")
    assert plan.extra["asset"] == "gh-tool-docs-1.1.0.tar.gz"
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False,
                       previous_asset="gh-tool-1.0.0.tar.gz", previous_version="1.0.0")
    assert plan.extra["asset"] == "gh-tool-1.1.0.tar.gz"


def test_the_previous_asset_found_from_its_recorded_url(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    old = fake_github.add_release("acme", "gh-tool", "v1.0.0", assets={
        "gh-tool+linux-1.0.0.tar.gz": b"linux", "gh-tool+mac-1.0.0.tar.gz": b"mac"})
    fake_github.add_release("acme", "gh-tool", "v1.1.0", assets={
        "gh-tool+linux-1.1.0.tar.gz": b"linux", "gh-tool+mac-1.1.0.tar.gz": b"mac"})
    recorded = old["assets"][0]["browser_download_url"]  # what an install records as source_url
    assert asset_name(recorded) == "gh-tool+linux-1.0.0.tar.gz"
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False,
                       previous_asset=asset_name(recorded), previous_version="1.0.0")
    assert plan.extra["asset"] == "gh-tool+linux-1.1.0.tar.gz"


def test_an_explicit_asset_wins_over_the_previous_one(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.1.0", assets=TWO)
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False, asset="gh-tool-1.1.0.tar.gz",
                       previous_asset="gh-tool-docs-1.0.0.tar.gz", previous_version="1.0.0")
    assert plan.extra["asset"] == "gh-tool-1.1.0.tar.gz"


def test_a_previous_asset_the_release_lacks_falls_back_to_the_usual_choice(session: Session,
                                                                           fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.1.0", assets=TWO)
    with pytest.raises(PkgmgrError) as exc:
        plan_github(session, parse_ref("github:acme/gh-tool"), pre=False,
                    previous_asset="renamed-1.0.0.tar.gz", previous_version="1.0.0")
    assert exc.value.code == "ambiguous_asset"
    fake_github.add_release("acme", "gh-tool", "v1.2.0", assets={"only-1.2.0.tar.gz": b"x"})
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False,
                       previous_asset="renamed-1.0.0.tar.gz", previous_version="1.0.0")
    assert plan.extra["asset"] == "only-1.2.0.tar.gz"


def test_no_previous_renaming_when_the_tag_is_no_version(session: Session, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "nightly", assets={"t-1.0.0.tar.gz": b"a", "t-nightly.tar.gz": b"b"})
    with pytest.raises(PkgmgrError) as exc:
        plan_github(session, parse_ref("github:acme/gh-tool"), pre=False,
                    previous_asset="t-1.0.0.tar.gz", previous_version="1.0.0")
    assert exc.value.code == "ambiguous_asset"


def test_without_archive_assets_the_source_tarball(session: Session, fake_github: FakeGitHub) -> None:
    files = {"extension.toml": 'name = "gh-tool"\n'}
    fake_github.add_repo("acme", "gh-tool", files)
    fake_github.add_release("acme", "gh-tool", "v0.3.0", assets={"README.txt": b"no archive here"})
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False)
    assert plan.extra["asset"] == "gh-tool-v0.3.0.tar.gz" and plan.version == "0.3.0"
    fetched = plan.fetch(Reporter())
    assert fetched.archive is not None and fetched.archive.read_bytes()[:2] == b"\x1f\x8b"  # a gzip


# --- verifying --------------------------------------------------------------------------------------


def test_the_release_checksum_file_is_checked(session: Session, fake_github: FakeGitHub) -> None:
    data = b"the real archive"
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.0.0", assets={
        "gh-tool-1.0.0.tar.gz": data, "SHA256SUMS": f"{sha(data)}  gh-tool-1.0.0.tar.gz\n".encode()})
    fetched = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False).fetch(Reporter())
    assert fetched.sha256 == sha(data) and fetched.verified is False  # integrity, not authenticity


def test_an_archive_that_differs_from_its_checksum_is_refused(session: Session, fake_github: FakeGitHub) -> None:
    data = b"a tampered archive"
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.0.0", assets={
        "gh-tool-1.0.0.tar.gz": data, "gh-tool-1.0.0.tar.gz.sha256": sha(b"the published one").encode()})
    plan = plan_github(session, parse_ref("github:acme/gh-tool"), pre=False)
    with pytest.raises(PkgmgrError) as exc:
        plan.fetch(Reporter())
    assert exc.value.code == "checksum_mismatch"
    assert session.downloads.get(sha(data)) is None


def test_the_archive_limit_applies(home: Path, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "gh-tool")
    fake_github.add_release("acme", "gh-tool", "v1.0.0", assets={"gh-tool-1.0.0.tar.gz": b"x" * 200})
    s = Session(home, Config(network=FAST, limits=Limits(max_archive_bytes=100)))
    try:
        plan = plan_github(s, parse_ref("github:acme/gh-tool"), pre=False)
        with pytest.raises(PkgmgrError) as exc:
            plan.fetch(Reporter())
    finally:
        s.close()
    assert exc.value.code == "archive_too_large"
    assert storage_hits(fake_github) == 0  # refused from the announced size, before any byte
