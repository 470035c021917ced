"""The standard-library first hop of a GET (`HttpClient._plain_send`), conditional or not, and
of a download: whatever the server answers, the outcome is the one requests gives (status,
body, final URL, the file, or the error's code and message), the token rule holds, and an
answered request never loads requests."""

from __future__ import annotations

import gzip

import pytest

from pkgmgr.config import NetworkSettings
from pkgmgr.errors import PkgmgrError
from tests.net.conftest import TOKEN
from tests.support.servers import FaultServer, Reply, closed_port_url

MIB = 1024 * 1024
BODY = b"x" * 5000

SCENARIOS = {
    "ok": ([Reply(body=b"hello")], 100),
    "gzip": ([Reply(body=gzip.compress(BODY), headers={"Content-Encoding": "gzip"})], 8000),
    "gzip-over-cap": ([Reply(body=gzip.compress(BODY), headers={"Content-Encoding": "gzip"})], 4000),
    "gzip-two-members": ([Reply(body=gzip.compress(b"ab") + gzip.compress(b"cd"),
                                headers={"Content-Encoding": "gzip"})], 100),
    "gzip-broken": ([Reply(body=b"not gzip at all", headers={"Content-Encoding": "gzip"})], 100),
    "bomb": ([Reply(body=gzip.compress(b"\0" * (4 * MIB), compresslevel=1),
                    headers={"Content-Encoding": "gzip"})], MIB),
    # a body that costs a decoder per member, or wire bytes, and decodes to (almost) nothing (issue 25)
    "gzip-member-flood": ([Reply(body=gzip.compress(b"ab", mtime=0) + gzip.compress(b"", mtime=0) * 100_000,
                                 headers={"Content-Encoding": "gzip"})], 100),
    "gzip-empty-blocks": ([Reply(body=b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\x00\x00\x00\xff\xff" * 40_000
                                 + b"\x03\x00" + b"\x00" * 8, headers={"Content-Encoding": "gzip"})], 100),
    "gzip-twenty-members": ([Reply(body=b"".join(gzip.compress(bytes([65 + i]) * 40_000, mtime=0) for i in range(20)),
                                   headers={"Content-Encoding": "gzip"})], 1_000_000),
    "over-cap": ([Reply(body=b"y" * 2000)], 1000),
    "endless": ([Reply(endless=True)], 100_000),
    "redirect": ([Reply.redirect("/new", 301)], 100),
    "json-401": ([Reply(401, b'{"message": "Bad credentials"}', {"Content-Type": "application/json"})], 100),
    "404": ([Reply(404, b"nope")], 100),
    "418": ([Reply(418, b"nope")], 100),
    "502": ([Reply(502)], 100),
    "503-then-ok": ([Reply(503, headers={"Retry-After": "7"}), Reply(200, b"ok")], 100),
    "rate-limited": ([Reply(403, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000000"})], 100),
    "reset": ([Reply(body=b"z" * 1000, reset_after=10)], 5000),
    "truncated": ([Reply(body=b"abc", declared_length=10)], 100),
    "chunked": ([Reply(raw=b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")], 100),
    "headers-dripped": ([Reply(raw=b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-Slow: " + b"a" * 5000,
                               drip=(1, 0.01))], 100),
}


def outcome(client, url: str, max_bytes: int, **kwargs) -> tuple:
    try:
        resp = client.get_small(url, max_bytes=max_bytes, **kwargs)
    except PkgmgrError as exc:
        return ("error", exc.code, exc.message, exc.details.get("status"))
    return ("ok", resp.status, resp.body, resp.url)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_stdlib_hop_answers_as_requests_does(make_client, fault_server: FaultServer, sleeps, name: str) -> None:
    replies, cap = SCENARIOS[name]
    settings = NetworkSettings(connect_timeout=2.0, read_timeout=0.4, min_rate=1024.0, min_rate_after=30.0, retries=3)
    for etag in (None, '"not-this"'):
        seen = []
        for stdlib in (False, True):  # requests, then the stdlib first hop
            fault_server.script("/new", Reply(body=b"moved"))
            url = fault_server.script("/x", *replies)
            before = fault_server.count("/x")
            sleeps.clear()
            client = make_client(settings=settings, stdlib_first_hop=stdlib)
            seen.append((outcome(client, url, cap, etag=etag), fault_server.count("/x") - before, list(sleeps)))
        assert seen[0] == seen[1]


DOWNLOADS = {name: SCENARIOS[name] for name in ("ok", "over-cap", "endless", "redirect", "404", "502", "503-then-ok",
                                                "reset", "truncated", "chunked", "headers-dripped")}


def fetch(client, url: str, cache_dir, cap: int, expected: bytes | None) -> tuple:
    import hashlib

    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.progress import Reporter

    try:
        got = client.download(url, expected_sha256=hashlib.sha256(expected).hexdigest() if expected else None,
                              expected_size=None, cache=DownloadCache(cache_dir), reporter=Reporter(), key="k",
                              label="a.tar.gz", max_bytes=cap)
    except PkgmgrError as exc:
        return ("error", exc.code, exc.message, exc.details.get("status"))
    return ("ok", got.path.read_bytes(), got.size, got.sha256)


@pytest.mark.parametrize("name", sorted(DOWNLOADS))
def test_a_download_by_the_stdlib_hop_is_the_one_requests_gives(make_client, fault_server: FaultServer, sleeps,
                                                                 tmp_path, name: str) -> None:
    replies, cap = DOWNLOADS[name]
    settings = NetworkSettings(connect_timeout=2.0, read_timeout=0.4, min_rate=1024.0, min_rate_after=30.0, retries=3)
    for expected in (None, b"hello", b"moved"):
        seen = []
        for stdlib in (False, True):
            fault_server.script("/new", Reply(body=b"moved"))
            url = fault_server.script("/x", *replies)
            before = fault_server.count("/x")
            sleeps.clear()
            client = make_client(settings=settings, stdlib_first_hop=stdlib)
            result = fetch(client, url, tmp_path / f"cache-{stdlib}-{expected!r}", cap, expected)
            seen.append((result, fault_server.count("/x") - before, list(sleeps)))
        assert seen[0] == seen[1]


def test_an_unconditional_get_and_a_download_answered_never_load_requests(make_client, fault_server: FaultServer,
                                                                          tmp_path) -> None:
    client = make_client()
    url = fault_server.script("/x", Reply(body=b"hello"), Reply(body=b"hello"))
    assert client.get_small(url, max_bytes=100).body == b"hello"
    assert fetch(client, url, tmp_path / "cache", 100, b"hello")[0] == "ok"
    assert "_requests" not in client.__dict__
    assert len({r.client for r in fault_server.requests}) == 1, "kept alive"


def test_a_304_answered_by_the_stdlib_never_loads_requests(make_client, fault_server: FaultServer) -> None:
    client = make_client()
    url = fault_server.script("/x", Reply(304, headers={"ETag": '"v2"'}))
    for _ in range(3):
        resp = client.get_small(url, etag='"v1"', max_bytes=100)
        assert (resp.status, resp.body, resp.etag, resp.headers["etag"]) == (304, None, '"v2"', '"v2"')
    assert "_requests" not in client.__dict__
    assert len({r.client for r in fault_server.requests}) == 1, "kept alive"
    assert all(r.headers.get("if-none-match") == '"v1"' for r in fault_server.requests)
    plain = make_client(stdlib_first_hop=False)
    assert outcome(plain, url, 100) == outcome(client, url, 100)  # unconditional 304: the same http_error


def test_the_token_rule_holds_on_the_stdlib_hop(make_client, fault_server: FaultServer) -> None:
    with FaultServer(host="127.0.0.2") as other:
        client = make_client(token=TOKEN, token_hosts=frozenset({fault_server.url}))
        mine = fault_server.script("/x", Reply(304))
        theirs = other.script("/x", Reply(304))
        bounce = fault_server.script("/bounce", Reply.redirect(f"{other.url}/y"))
        other.script("/y", Reply(body=b"ok"))
        assert client.get_small(mine, etag='"a"', max_bytes=10).status == 304
        assert client.get_small(theirs, etag='"a"', max_bytes=10).status == 304
        assert client.get_small(bounce, etag='"a"', max_bytes=10).body == b"ok"
        assert [r.headers.get("authorization") for r in fault_server.requests] == [f"Bearer {TOKEN}"] * 2
        assert [r.headers.get("authorization") for r in other.requests] == [None, None]


def test_a_refused_connection_is_reported_as_requests_reports_it(make_client, sleeps) -> None:
    url = closed_port_url() + "/x"
    plain = outcome(make_client(), url, 100, etag='"a"')
    assert plain == outcome(make_client(stdlib_first_hop=False), url, 100)
    assert "Connection refused" in plain[2]
