"""pkgmgr.net.github against the fake GitHub (tests/support/fakegithub.py): commits, raw
files, releases, assets, checksums, and where the token goes."""

from __future__ import annotations

import hashlib

import pytest

from pkgmgr.config import NetworkSettings
from pkgmgr.errors import PkgmgrError
from pkgmgr.net.github import Asset, GitHub, Release, parse_checksums
from pkgmgr.net.github_hosts import github_client, github_token_hosts
from tests.net.conftest import TOKEN
from tests.support.fakegithub import FakeGitHub
from tests.support.servers import Reply

MIB = 1024 * 1024
ARCHIVE = b"\x1f\x8b fake archive bytes" * 100


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def gh(make_client, fake_github: FakeGitHub) -> GitHub:
    """A GitHub with the token, scoped to the fake's API and raw hosts."""
    http = make_client(token=TOKEN, token_hosts=github_token_hosts(fake_github.api_url, fake_github.raw_url))
    return GitHub(http, api_url=fake_github.api_url, raw_url=fake_github.raw_url)


@pytest.fixture
def anon(make_client, fake_github: FakeGitHub) -> GitHub:
    http = make_client(token_hosts=github_token_hosts(fake_github.api_url, fake_github.raw_url))
    return GitHub(http, api_url=fake_github.api_url, raw_url=fake_github.raw_url)


def fails(code: str, call, *args, **kwargs) -> PkgmgrError:
    with pytest.raises(PkgmgrError) as info:
        call(*args, **kwargs)
    assert info.value.code == code, info.value
    return info.value


def release(tag="v1.0.0", names=("a.tar.gz",), tarball="https://api.example/tarball/v1.0.0") -> Release:
    assets = tuple(Asset(n, f"https://web.example/{n}", f"https://api.example/assets/{i}", 10, "")
                   for i, n in enumerate(names))
    return Release(tag, tag, False, False, assets, tarball, "", owner="acme", repo="tool")


# --------------------------------------------------------------------------- configuration


def test_bases_come_from_the_environment(fake_github: FakeGitHub, monkeypatch, client) -> None:
    default = GitHub(client)
    assert (default.api_url, default.raw_url) == ("https://api.github.com", "https://raw.githubusercontent.com")
    fake_github.env(monkeypatch)
    configured = GitHub(client)
    assert (configured.api_url, configured.raw_url) == (fake_github.api_url, fake_github.raw_url)


def test_a_plain_http_base_that_is_not_loopback_is_refused(monkeypatch, client) -> None:
    monkeypatch.setenv("PKGMGR_GITHUB_API_URL", "http://ghe.example.com/api/v3")
    err = fails("invalid_config", GitHub, client)
    assert "PKGMGR_GITHUB_API_URL" in err.message


def test_github_client_carries_the_env_token_for_the_github_hosts(fake_github: FakeGitHub, monkeypatch) -> None:
    fake_github.env(monkeypatch)
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    fake_github.add_repo("acme", "index")
    with github_client(NetworkSettings()) as http:
        assert http.has_token
        GitHub(http).commit_sha("acme", "index", "main")
    assert fake_github.api.requests[-1].headers["authorization"] == f"Bearer {TOKEN}"


# --------------------------------------------------------------------------- commits and raw files


def test_commit_sha_and_a_conditional_revalidation(gh: GitHub, fake_github: FakeGitHub) -> None:
    sha1 = fake_github.add_repo("acme", "index", {"registry.toml": "[registry]\n"})
    ref = gh.commit_sha("acme", "index", "main")
    assert ref == type(ref)(sha1, f'"{sha1}"', False)
    assert fake_github.api.requests[-1].headers["accept"] == "application/vnd.github.sha"

    unchanged = gh.commit_sha("acme", "index", "main", etag=ref.etag)
    assert unchanged.not_modified and unchanged.sha is None and unchanged.etag == ref.etag

    sha2 = fake_github.commit("acme", "index", {"registry.toml": "[registry]\nserial = 1\n"})
    moved = gh.commit_sha("acme", "index", "main", etag=ref.etag)
    assert (moved.sha, moved.not_modified) == (sha2, False)


def test_commit_sha_of_unknown_things(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "index")
    err = fails("not_found", gh.commit_sha, "acme", "index", "no-such-branch")
    assert "acme/index" in err.message
    fails("not_found", gh.commit_sha, "acme", "missing", "main")
    fails("usage", gh.commit_sha, "acme/../x", "index", "main")
    fails("usage", gh.commit_sha, "acme", "..", "main")


def test_commit_sha_rejects_a_body_that_is_not_a_sha(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "index")
    fake_github.queue_api(Reply(200, b"<html>hello</html>"))
    fails("http_error", gh.commit_sha, "acme", "index", "main")


def test_raw_files_at_a_commit(gh: GitHub, fake_github: FakeGitHub) -> None:
    sha1 = fake_github.add_repo("acme", "index", {"extensions/de/demo-ext.toml": 'name = "demo-ext"\n'})
    url = gh.raw_file_url("acme", "index", sha1, "extensions/de/demo-ext.toml")
    assert url == f"{fake_github.raw_url}/acme/index/{sha1}/extensions/de/demo-ext.toml"
    first = gh.http.get_small(url, max_bytes=MIB)
    assert first.body == b'name = "demo-ext"\n'
    assert gh.http.get_small(url, etag=first.etag, max_bytes=MIB).status == 304
    for bad in ("", "/abs", "a/../b", "a//b", "a\\b", "./a"):
        fails("usage", gh.raw_file_url, "acme", "index", sha1, bad)


def test_private_repository_needs_the_token(gh: GitHub, anon: GitHub, fake_github: FakeGitHub) -> None:
    sha1 = fake_github.add_repo("acme", "secret-index", {"registry.toml": "x"}, private=True)
    assert gh.commit_sha("acme", "secret-index", "main").sha == sha1
    assert gh.http.get_small(gh.raw_file_url("acme", "secret-index", sha1, "registry.toml"), max_bytes=10).body == b"x"
    err = fails("not_found", anon.commit_sha, "acme", "secret-index", "main")
    assert "GITHUB_TOKEN" in (err.hint or "")
    fails("not_found", anon.http.get_small, anon.raw_file_url("acme", "secret-index", sha1, "registry.toml"),
          max_bytes=10)


# --------------------------------------------------------------------------- releases


def test_latest_release(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0", assets={"tool-1.0.0.tar.gz": ARCHIVE})
    fake_github.add_release("acme", "tool", "v1.1.0-rc.1", prerelease=True)
    rel = gh.release("acme", "tool", None, pre=False)
    assert (rel.tag, rel.owner, rel.repo, rel.draft, rel.prerelease) == ("v1.0.0", "acme", "tool", False, False)
    assert rel.assets[0].name == "tool-1.0.0.tar.gz" and rel.assets[0].size == len(ARCHIVE)
    assert rel.tarball_url.endswith("/repos/acme/tool/tarball/v1.0.0")
    assert fake_github.api.count("/repos/acme/tool/releases/latest") == 1


def test_pre_takes_the_newest_non_draft(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0")
    fake_github.add_release("acme", "tool", "v1.1.0-rc.1", prerelease=True)
    fake_github.add_release("acme", "tool", "v2.0.0", draft=True)
    assert gh.release("acme", "tool", None, pre=True).tag == "v1.1.0-rc.1"


def test_latest_404_falls_back_to_the_list(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v0.9.0")
    fake_github.add_release("acme", "tool", "v1.0.0")
    fake_github.queue_api(Reply(404, b'{"message": "Not Found"}', {"Content-Type": "application/json"}))
    assert gh.release("acme", "tool", None, pre=False).tag == "v1.0.0"
    assert fake_github.api.count("/repos/acme/tool/releases?per_page=30") == 1


def test_no_published_release(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0-rc.1", prerelease=True)
    fake_github.add_release("acme", "tool", "v1.0.0", draft=True)
    err = fails("version_not_found", gh.release, "acme", "tool", None, pre=False)
    assert "1 draft" in err.message and "1 prerelease" in err.message and "--pre" in err.hint
    fake_github.add_repo("acme", "empty")
    fails("version_not_found", gh.release, "acme", "empty", None, pre=True)
    fails("not_found", gh.release, "acme", "missing", None, pre=False)


def test_release_by_tag(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0")
    fake_github.add_release("acme", "tool", "v1.1.0-rc.1", prerelease=True)
    fake_github.add_release("acme", "tool", "v2.0.0", draft=True)
    assert gh.release("acme", "tool", "v1.0.0", pre=False).tag == "v1.0.0"
    err = fails("version_not_found", gh.release, "acme", "tool", "v1.1.0-rc.1", pre=False)
    assert "prerelease" in err.message and err.details["reason"] == "prerelease"
    assert gh.release("acme", "tool", "v1.1.0-rc.1", pre=True).prerelease
    for pre in (False, True):
        err = fails("version_not_found", gh.release, "acme", "tool", "v2.0.0", pre=pre)
        assert "draft" in err.message
    err = fails("not_found", gh.release, "acme", "tool", "v9.9.9", pre=False)
    assert "v9.9.9" in err.message


def test_malformed_release_json(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.add_repo("acme", "tool")
    json_headers = {"Content-Type": "application/json"}
    for body in (b"not json", b"[]", b'{"tag_name": 3}', b'{"tag_name": "v1", "assets": [{"name": 1}]}'):
        fake_github.queue_api(Reply(200, body, json_headers))
        fails("http_error", gh.release, "acme", "tool", "v1", pre=False)


# --------------------------------------------------------------------------- assets


def test_select_asset() -> None:
    gh = GitHub.__new__(GitHub)
    assert gh.select_asset(release(names=("a.tar.gz", "a.tar.gz.sha256")), None).name == "a.tar.gz"
    assert gh.select_asset(release(names=("notes.txt", "x.ZIP")), None).name == "x.ZIP"
    assert gh.select_asset(release(names=("a.tgz", "b.zip")), "b.zip").name == "b.zip"
    err = fails("ambiguous_asset", gh.select_asset, release(names=("a.tgz", "b.zip", "c.txt")), None)
    assert err.details["assets"] == ["a.tgz", "b.zip"] and "--asset" in err.hint
    err = fails("not_found", gh.select_asset, release(names=("a.tgz",)), "b.zip")
    assert "a.tgz" in err.message
    pseudo = gh.select_asset(release(names=("README.md",)), None)
    assert pseudo.pseudo and pseudo.url == "https://api.example/tarball/v1.0.0" and pseudo.size is None
    assert pseudo.name == "tool-v1.0.0.tar.gz"
    fails("not_found", gh.select_asset, release(names=(), tarball=None), None)


@pytest.mark.parametrize("text, bare_ok, expected", [
    ("A" * 64 + "\n", True, "a" * 64),
    ("a" * 64 + "\n", False, None),
    ("b" * 64 + "  other.tar.gz\n" + "a" * 64 + "  tool.tar.gz\n", False, "a" * 64),
    ("a" * 64 + " *tool.tar.gz\n", False, "a" * 64),
    ("a" * 64 + "  dist/tool.tar.gz\n", False, "a" * 64),
    ("# comment\n\nSHA256 (tool.tar.gz) = " + "a" * 64 + "\n", False, "a" * 64),
    ("b" * 64 + "  other.tar.gz\n", True, None),
    ("not-a-digest  tool.tar.gz\n", True, None),
])
def test_parse_checksums(text: str, bare_ok: bool, expected: str | None) -> None:
    assert parse_checksums(text, "tool.tar.gz", bare_ok=bare_ok) == expected


@pytest.mark.parametrize("files", [
    {"tool.tar.gz.sha256": f"{sha(ARCHIVE)}\n".encode()},
    {"SHA256SUMS": f"{'0' * 64}  other.zip\n{sha(ARCHIVE)}  tool.tar.gz\n".encode()},
    {"checksums.txt": f"{sha(ARCHIVE)}  tool.tar.gz\n".encode()},
])
def test_asset_checksum_from_the_release(gh: GitHub, fake_github: FakeGitHub, cache, reporter, files) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": ARCHIVE, **files})
    rel = gh.release("acme", "tool", "v1.0.0", pre=False)
    asset = gh.select_asset(rel, None)
    assert gh.asset_checksum(rel, asset, cache=cache, reporter=reporter) == sha(ARCHIVE)


def test_asset_checksum_absent_or_unusable(gh: GitHub, fake_github: FakeGitHub, cache, reporter) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1", assets={"tool.tar.gz": ARCHIVE, "SHA256SUMS": b"0" * 64 + b"  x\n"})
    fake_github.add_release("acme", "tool", "v2", assets={"tool.tar.gz": ARCHIVE, "tool.tar.gz.sha256": b"garbage"})
    rel1 = gh.release("acme", "tool", "v1", pre=False)
    assert gh.asset_checksum(rel1, gh.select_asset(rel1, None), cache=cache, reporter=reporter) is None
    rel2 = gh.release("acme", "tool", "v2", pre=False)
    fails("checksum_mismatch", gh.asset_checksum, rel2, gh.select_asset(rel2, None), cache=cache, reporter=reporter)
    assert gh.asset_checksum(rel2, gh.select_asset(release(names=()), None), cache=cache, reporter=reporter) is None


def test_asset_download_with_token_goes_through_the_api_and_the_storage_host_never_sees_it(
        gh: GitHub, fake_github: FakeGitHub, cache, reporter) -> None:
    fake_github.add_repo("acme", "tool", private=True)
    fake_github.add_release("acme", "tool", "v1.0.0",
                            assets={"tool.tar.gz": ARCHIVE, "tool.tar.gz.sha256": sha(ARCHIVE).encode()})
    rel = gh.release("acme", "tool", None, pre=False)
    asset = gh.select_asset(rel, None)
    digest = gh.asset_checksum(rel, asset, cache=cache, reporter=reporter)
    got = gh.download_asset(rel, asset, cache=cache, reporter=reporter, expected_sha256=digest, max_bytes=MIB)
    assert got.path.read_bytes() == ARCHIVE and got.sha256 == sha(ARCHIVE)
    assert reporter.events[0] == ("started", "acme/tool@v1.0.0/tool.tar.gz", "tool.tar.gz", len(ARCHIVE))

    log = fake_github.auth_log()
    assert {auth for server, _, auth in log if server == "api"} == {f"Bearer {TOKEN}"}
    assert [auth for server, _, auth in log if server == "storage"] == [None, None]
    assert fake_github.web.requests == []
    asset_calls = [r for r in fake_github.api.requests if "/releases/assets/" in r.path]
    assert {r.headers["accept"] for r in asset_calls} == {"application/octet-stream"}
    assert all(r.headers["accept"] == "application/octet-stream" for r in fake_github.storage.requests)


def test_public_asset_without_token_uses_the_download_url(anon: GitHub, fake_github: FakeGitHub, cache,
                                                          reporter) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": ARCHIVE})
    rel = anon.release("acme", "tool", None, pre=False)
    got = anon.download_asset(rel, anon.select_asset(rel, None), cache=cache, reporter=reporter,
                              expected_sha256=sha(ARCHIVE), max_bytes=MIB)
    assert got.size == len(ARCHIVE)
    assert [s for s, _, _ in fake_github.auth_log() if s != "api"] == ["web", "storage"]
    assert all(auth is None for _, _, auth in fake_github.auth_log())


def test_source_tarball_pseudo_asset(gh: GitHub, fake_github: FakeGitHub, cache, reporter) -> None:
    fake_github.add_repo("acme", "tool", {"extension.toml": 'name = "tool"\n'})
    fake_github.add_release("acme", "tool", "v1.0.0")
    rel = gh.release("acme", "tool", None, pre=False)
    asset = gh.select_asset(rel, None)
    assert gh.asset_checksum(rel, asset, cache=cache, reporter=reporter) is None
    got = gh.download_asset(rel, asset, cache=cache, reporter=reporter, expected_sha256=None, max_bytes=MIB)
    import tarfile

    with tarfile.open(got.path) as tar:
        assert [m.name.split("/", 1)[1] for m in tar.getmembers()] == ["extension.toml"]
    assert [auth for s, _, auth in fake_github.auth_log() if s == "storage"] == [None]


def test_asset_with_the_wrong_checksum_is_not_cached(gh: GitHub, fake_github: FakeGitHub, cache, reporter) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": ARCHIVE})
    rel = gh.release("acme", "tool", None, pre=False)
    fails("checksum_mismatch", gh.download_asset, rel, gh.select_asset(rel, None), cache=cache, reporter=reporter,
          expected_sha256=sha(b"other"), max_bytes=MIB)
    assert not (cache.root / "sha256").exists()
    fails("archive_too_large", gh.download_asset, rel, gh.select_asset(rel, None), cache=cache, reporter=reporter,
          expected_sha256=None, max_bytes=len(ARCHIVE) - 1)


# --------------------------------------------------------------------------- limits and secrets


def test_rate_limit_names_the_reset_time(gh: GitHub, fake_github: FakeGitHub, sleeps) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.queue_api(Reply(403, b'{"message": "API rate limit exceeded"}',
                                {"Content-Type": "application/json", "X-RateLimit-Remaining": "0",
                                 "X-RateLimit-Reset": "1800000000"}))
    err = fails("rate_limited", gh.release, "acme", "tool", None, pre=False)
    assert "2027-01-15T08:00:00Z" in err.message and sleeps == []


def test_secondary_rate_limit_is_waited_out(gh: GitHub, fake_github: FakeGitHub, sleeps) -> None:
    fake_github.add_repo("acme", "tool")
    fake_github.add_release("acme", "tool", "v1.0.0")
    fake_github.queue_api(Reply(403, b"", {"Retry-After": "3"}), Reply(502))
    assert gh.release("acme", "tool", "v1.0.0", pre=False).tag == "v1.0.0"
    assert sleeps == [3.0, 0.02]


def test_bad_credentials(gh: GitHub, fake_github: FakeGitHub) -> None:
    fake_github.queue_api(Reply(401, b'{"message": "Bad credentials"}', {"Content-Type": "application/json"}))
    err = fails("auth_required", gh.commit_sha, "acme", "tool", "main")
    assert "Bad credentials" in err.message


def test_the_token_never_leaks(gh: GitHub, fake_github: FakeGitHub, cache, reporter) -> None:
    fake_github.add_repo("acme", "tool", private=True)
    fake_github.add_release("acme", "tool", "v1.0.0", assets={"tool.tar.gz": ARCHIVE})
    echo = {"Content-Type": "application/json"}
    fake_github.queue_api(Reply(401, f'{{"message": "{TOKEN} revoked"}}'.encode(), echo),
                          Reply(403, b"", {"X-RateLimit-Remaining": "0"}),
                          Reply(500), Reply(500), Reply(500))
    errors = []
    for call in (lambda: gh.commit_sha("acme", "tool", "main"),
                 lambda: gh.release("acme", "tool", None, pre=False),
                 lambda: gh.release("acme", "tool", "v1.0.0", pre=False),
                 lambda: gh.release("acme", "nope", None, pre=False)):
        with pytest.raises(PkgmgrError) as info:
            call()
        errors.append(info.value)
    rel = gh.release("acme", "tool", None, pre=False)
    got = gh.download_asset(rel, gh.select_asset(rel, None), cache=cache, reporter=reporter,
                            expected_sha256=None, max_bytes=MIB)
    texts = [repr(gh), repr(gh.http), repr(rel), repr(got), str(reporter.events)]
    for err in errors:
        texts += [str(err), repr(err), str(err.to_json()), str(err.hint)]
    assert all(TOKEN not in text for text in texts)
    assert all(auth is None for server, _, auth in fake_github.auth_log() if server in ("storage", "web"))
