"""pkgmgr.net.http against real loopback servers: URL policy, statuses, retries, redirects,
tokens, limits, slow and broken bodies, downloads into the cache."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate
from pathlib import Path

import pytest

from pkgmgr.config import NetworkSettings
from pkgmgr.errors import PkgmgrError
from pkgmgr.net.http import (
    Downloaded,
    UrlNotAllowed,
    check_redirect,
    check_url_allowed,
    origin,
    redact_url,
    token_from_env,
)
from tests.net.conftest import TOKEN
from tests.support.servers import FaultServer, Reply, StaticFileServer, closed_port_url

MIB = 1024 * 1024


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def download(client, url, cache, reporter, *, data: bytes | None = None, **kwargs) -> Downloaded:
    """`client.download` with the expected digest/size of `data` unless given."""
    if data is not None:
        kwargs.setdefault("expected_sha256", sha(data))
        kwargs.setdefault("expected_size", len(data))
    kwargs.setdefault("expected_sha256", None)
    kwargs.setdefault("expected_size", None)
    kwargs.setdefault("max_bytes", 50 * MIB)
    return client.download(url, cache=cache, reporter=reporter, key="k", label="archive.tar.gz", **kwargs)


def cache_entries(cache) -> list[Path]:
    return [p for p in cache.root.rglob("*") if p.is_file()]


def fails(code: str, call, *args, **kwargs) -> PkgmgrError:
    with pytest.raises(PkgmgrError) as info:
        call(*args, **kwargs)
    assert info.value.code == code, info.value
    return info.value


# --------------------------------------------------------------------------- URL policy


@pytest.mark.parametrize("url", [
    "https://example.com/a.tar.gz",
    "http://127.0.0.1:8080/x",
    "http://127.9.8.7/x",
    "http://localhost/x",
    "http://[::1]:9000/x",
])
def test_allowed_urls(url: str) -> None:
    check_url_allowed(url, insecure=False)


@pytest.mark.parametrize("url, why", [
    ("http://example.com/a.tar.gz", "loopback"),
    ("http://10.0.0.1/a", "loopback"),
    ("https://user:hunter2@example.com/a", "credentials"),
    ("https://token@example.com/a", "credentials"),
    ("https://example.com/a#frag", "fragment"),
    ("ftp://example.com/a", "https"),
    ("file:///etc/passwd", "https"),
    ("https:///nohost", "no host"),
    ("https://exa mple.com/a", "whitespace"),
    ("https://example.com:99999/a", "valid"),
])
def test_refused_urls(url: str, why: str) -> None:
    with pytest.raises(UrlNotAllowed) as info:
        check_url_allowed(url, insecure=False)
    assert info.value.code == "usage"
    assert why in info.value.message
    assert "hunter2" not in info.value.message


def test_every_character_a_url_may_not_hold() -> None:
    """The rule as it was written, a loop over the characters: whitespace (str.isspace), C0
    controls and DEL are refused, everything else is left to urlsplit."""
    from pkgmgr.net.http import _NOT_IN_URL

    refused = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() or c < 0x20 or c == 0x7F]
    assert [chr(c) for c in range(sys.maxunicode + 1) if _NOT_IN_URL.search(chr(c))] == refused
    for ch in refused:
        with pytest.raises(UrlNotAllowed, match="whitespace or control"):
            check_url_allowed(f"https://example.com/a{ch}b", insecure=False)


def test_insecure_allows_plain_http_but_not_credentials() -> None:
    check_url_allowed("http://mirror.internal/a", insecure=True)
    with pytest.raises(UrlNotAllowed):
        check_url_allowed("http://u:p@mirror.internal/a", insecure=True)


def test_redirect_rules() -> None:
    check_redirect("http://127.0.0.1/a", "https://example.com/b", insecure=False)
    check_redirect("https://a.example/a", "https://b.example/b", insecure=False)
    check_redirect("http://127.0.0.1/a", "http://127.0.0.2/b", insecure=False)
    for insecure in (False, True):
        with pytest.raises(PkgmgrError) as info:
            check_redirect("https://api.example/a", "http://storage.example/b", insecure=insecure)
        assert info.value.code == "network_error"
        assert "https to" in info.value.message
    with pytest.raises(PkgmgrError) as info:
        check_redirect("http://127.0.0.1/a", "http://evil.example/b", insecure=False)
    assert info.value.code == "network_error"
    check_redirect("http://127.0.0.1/a", "http://mirror.internal/b", insecure=True)


def test_redact_url() -> None:
    assert redact_url("https://u:pw@host/p?q=1") == "https://host/p?q=1"
    assert redact_url("https://s3/obj?X-Amz-Signature=abc&sig=1") == "https://s3/obj?<redacted>"
    assert redact_url("https://api/x?access_token=abc") == "https://api/x?<redacted>"


def test_origin_makes_default_ports_explicit() -> None:
    assert origin("https://API.github.com/repos") == "https://api.github.com:443"
    assert origin("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080"
    assert origin("http://[::1]/x") == "http://[::1]:80"


def test_token_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert token_from_env() is None
    monkeypatch.setenv("GH_TOKEN", "gh")
    assert token_from_env() == "gh"
    monkeypatch.setenv("GITHUB_TOKEN", " github ")
    assert token_from_env() == "github"
    monkeypatch.setenv("GITHUB_TOKEN", "")
    assert token_from_env() == "gh"


def test_importing_the_net_package_does_not_import_requests() -> None:
    code = "import sys, pkgmgr.net.http, pkgmgr.net.cache, pkgmgr.net.github; print('requests' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "False"


def test_disallowed_url_is_refused_before_any_request(client, fault_server: FaultServer, cache, reporter) -> None:
    fails("usage", client.get_small, "http://example.com/registry.toml", max_bytes=100)
    fails("usage", download, client, "https://u:p@example.com/a.tar.gz", cache, reporter)


# --------------------------------------------------------------------------- get_small


def test_get_small_and_conditional_requests(client, static_server: StaticFileServer, www: Path) -> None:
    (www / "registry.toml").write_bytes(b"[registry]\nname = 'x'\n")
    url = f"{static_server.url}/registry.toml"
    first = client.get_small(url, max_bytes=1024)
    assert first.status == 200 and first.body == b"[registry]\nname = 'x'\n"
    assert first.etag and first.last_modified and first.url == url
    assert first.headers["etag"] == first.etag

    again = client.get_small(url, etag=first.etag, max_bytes=1024)
    assert (again.status, again.body, again.etag) == (304, None, first.etag)
    by_date = client.get_small(url, last_modified=first.last_modified, max_bytes=1024)
    assert by_date.status == 304 and by_date.last_modified == first.last_modified

    seen = static_server.requests
    assert seen[1].headers["if-none-match"] == first.etag
    assert seen[2].headers["if-modified-since"] == first.last_modified
    assert len({r.client for r in seen}) == 1, "keep-alive: one connection for all three"

    (www / "registry.toml").write_bytes(b"changed")
    changed = client.get_small(url, etag=first.etag, max_bytes=1024)
    assert changed.status == 200 and changed.body == b"changed" and changed.etag != first.etag


def test_get_small_caps_the_body(client, www: Path, static_server: StaticFileServer, fault_server: FaultServer) -> None:
    (www / "index.json").write_bytes(b"x" * 2000)
    err = fails("archive_too_large", client.get_small, f"{static_server.url}/index.json", max_bytes=1000)
    assert "1000" in err.message
    endless = fault_server.script("/endless", Reply(endless=True))
    fails("archive_too_large", client.get_small, endless, max_bytes=100_000)
    exact = fault_server.script("/exact", Reply(body=b"y" * 1000))
    assert client.get_small(exact, max_bytes=1000).body == b"y" * 1000


def test_get_small_decodes_gzip_in_bounded_steps(client, www: Path) -> None:
    (www / "index.json").write_bytes(b'{"a": 1}' * 1000)
    with StaticFileServer(www, gzip=True) as server:
        resp = client.get_small(f"{server.url}/index.json", max_bytes=8000)
        assert resp.body == b'{"a": 1}' * 1000
        assert server.requests[0].headers["accept-encoding"] == "gzip"
        fails("archive_too_large", client.get_small, f"{server.url}/index.json", max_bytes=7999)


def test_gzip_bomb_is_refused_without_decoding_it(client, fault_server: FaultServer) -> None:
    bomb = gzip.compress(b"\0" * (16 * MIB), compresslevel=1)
    url = fault_server.script("/bomb", Reply(body=bomb, headers={"Content-Encoding": "gzip"}))
    fails("archive_too_large", client.get_small, url, max_bytes=MIB)


def test_get_small_follows_redirects_and_reports_the_final_url(client, fault_server: FaultServer) -> None:
    fault_server.script("/old", Reply.redirect("/new", 301))
    fault_server.script("/new", Reply(body=b"moved"))
    resp = client.get_small(f"{fault_server.url}/old", max_bytes=100)
    assert resp.body == b"moved" and resp.url == f"{fault_server.url}/new"


# --------------------------------------------------------------------------- statuses


@pytest.mark.parametrize("status, code", [
    (401, "auth_required"),
    (403, "auth_required"),
    (404, "not_found"),
    (410, "not_found"),
    (400, "http_error"),
    (418, "http_error"),
    (206, "http_error"),
])
def test_status_mapping_without_retry(client, fault_server: FaultServer, sleeps, status: int, code: str) -> None:
    url = fault_server.script("/x", Reply(status, b"nope"))
    err = fails(code, client.get_small, url, max_bytes=100)
    assert err.details["status"] == status
    from pkgmgr.net.fetcher import FetchError

    assert isinstance(err, FetchError) and err.status == status and err.url == url  # typed, for the callers
    assert fault_server.count("/x") == 1 and sleeps == []


def test_unconditional_304_is_an_http_error(client, fault_server: FaultServer) -> None:
    url = fault_server.script("/x", Reply(304))
    fails("http_error", client.get_small, url, max_bytes=100)


def test_json_error_message_is_shown(client, fault_server: FaultServer) -> None:
    url = fault_server.script("/x", Reply(401, b'{"message": "Bad credentials"}', {"Content-Type": "application/json"}))
    err = fails("auth_required", client.get_small, url, max_bytes=100)
    assert "Bad credentials" in err.message


def test_5xx_is_retried_with_exponential_backoff(client, fault_server: FaultServer, sleeps) -> None:
    url = fault_server.script("/x", Reply(502))
    err = fails("http_error", client.get_small, url, max_bytes=100)
    assert err.details["status"] == 502
    assert fault_server.count("/x") == 3
    assert sleeps == [0.01, 0.02]


def test_500_then_success(client, fault_server: FaultServer, sleeps) -> None:
    url = fault_server.script("/x", Reply(500), Reply(500), Reply(200, b"ok"))
    assert client.get_small(url, max_bytes=100).body == b"ok"
    assert fault_server.count("/x") == 3 and len(sleeps) == 2


def test_503_retry_after_is_honoured(client, fault_server: FaultServer, sleeps) -> None:
    url = fault_server.script("/x", Reply(503, headers={"Retry-After": "7"}), Reply(200, b"ok"))
    assert client.get_small(url, max_bytes=100).body == b"ok"
    assert sleeps == [7.0]


def test_a_5xx_asking_to_wait_more_than_60s_fails_at_once(make_client, fault_server: FaultServer, sleeps) -> None:
    notes: list[str] = []
    client = make_client(notify=notes.append)
    url = fault_server.script("/x", Reply(503, headers={"Retry-After": "120"}), Reply(200, b"ok"))
    err = fails("http_error", client.get_small, url, max_bytes=100)
    assert "asked to retry after 120 s" in err.message
    assert err.details["status"] == 503 and err.details["retry_after"] == 120.0
    assert fault_server.count("/x") == 1 and sleeps == [] and notes == []


def test_a_wait_longer_than_2s_is_announced(make_client, fault_server: FaultServer, sleeps) -> None:
    notes: list[str] = []
    client = make_client(notify=notes.append)
    url = fault_server.script("/x", Reply(503, headers={"Retry-After": "2"}), Reply(503, headers={"Retry-After": "9"}),
                              Reply(200, b"ok"))
    assert client.get_small(url, max_bytes=100).body == b"ok"
    assert sleeps == [2.0, 9.0]
    assert len(notes) == 1, "a wait of 2 s passes silently"
    assert notes[0].endswith("HTTP 503: server error; retrying in 9 s (attempt 3 of 3)") and url in notes[0]


def test_retry_after_as_http_date(client, fault_server: FaultServer, sleeps) -> None:
    when = formatdate(time.time() + 30, usegmt=True)
    url = fault_server.script("/x", Reply(429, headers={"Retry-After": when}), Reply(200, b"ok"))
    client.get_small(url, max_bytes=100)
    assert len(sleeps) == 1 and 25 <= sleeps[0] <= 31


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_is_retried_then_rate_limited(client, fault_server: FaultServer, sleeps,
                                                           status: int) -> None:
    url = fault_server.script("/x", Reply(status, headers={"Retry-After": "5"}))
    err = fails("rate_limited", client.get_small, url, max_bytes=100)
    assert err.details["status"] == status
    assert fault_server.count("/x") == 3 and sleeps == [5.0, 5.0]


def test_429_without_retry_after_is_retried_with_backoff(client, fault_server: FaultServer, sleeps) -> None:
    url = fault_server.script("/x", Reply(429), Reply(200, b"ok"))
    assert client.get_small(url, max_bytes=100).body == b"ok"
    assert sleeps == [0.01]


@pytest.mark.parametrize("status", [403, 429])
def test_long_retry_after_is_rate_limited_at_once(client, fault_server: FaultServer, sleeps, status: int) -> None:
    url = fault_server.script("/x", Reply(status, headers={"Retry-After": "61"}))
    fails("rate_limited", client.get_small, url, max_bytes=100)
    assert fault_server.count("/x") == 1 and sleeps == []


@pytest.mark.parametrize("status", [403, 429])
def test_exhausted_rate_limit_fails_at_once_naming_the_reset(client, fault_server: FaultServer, sleeps,
                                                             status: int) -> None:
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000000", "Retry-After": "1"}
    url = fault_server.script("/x", Reply(status, headers=headers))
    err = fails("rate_limited", client.get_small, url, max_bytes=100)
    assert "2027-01-15T08:00:00Z" in err.message and err.details["reset"] == "2027-01-15T08:00:00Z"
    assert fault_server.count("/x") == 1 and sleeps == []


def test_retries_setting_is_the_number_of_tries(make_client, fault_server: FaultServer, sleeps) -> None:
    client = make_client(settings=NetworkSettings(retries=1))
    url = fault_server.script("/x", Reply(500))
    fails("http_error", client.get_small, url, max_bytes=100)
    assert fault_server.count("/x") == 1 and sleeps == []


# --------------------------------------------------------------------------- transport faults


def test_connection_refused_is_retried_then_network_error(client, sleeps) -> None:
    err = fails("network_error", client.get_small, closed_port_url() + "/x", max_bytes=100)
    assert "Connection refused" in err.message
    assert len(sleeps) == 2


def test_reset_mid_body_is_retried(client, fault_server: FaultServer, cache, reporter) -> None:
    data = b"a" * 100_000
    url = fault_server.script("/x", Reply(body=data, reset_after=1000), Reply(body=data))
    got = download(client, url, cache, reporter, data=data)
    assert got.path.read_bytes() == data and fault_server.count("/x") == 2


def test_reset_mid_body_every_time(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"a" * 100_000, reset_after=1000))
    err = fails("network_error", download, client, url, cache, reporter, data=b"a" * 100_000)
    assert "connection" in err.message
    assert cache_entries(cache) == []


def test_body_shorter_than_content_length(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"a" * 500, declared_length=1000))
    fails("network_error", download, client, url, cache, reporter, expected_sha256=sha(b"a" * 1000))
    assert fault_server.count("/x") == 3
    assert cache_entries(cache) == []


def test_read_timeout(make_client, fault_server: FaultServer) -> None:
    client = make_client(settings=NetworkSettings(read_timeout=0.2, retries=1))
    url = fault_server.script("/x", Reply(body=b"late", delay=0.6))
    err = fails("network_error", client.get_small, url, max_bytes=100)
    assert "timed out" in err.message


def test_slow_drip_is_cut_off(make_client, fault_server: FaultServer, cache, reporter) -> None:
    client = make_client(settings=NetworkSettings(min_rate=2000, min_rate_after=0.2))
    data = b"d" * 4000
    url = fault_server.script("/x", Reply(body=data, drip=(20, 0.02)))
    start = time.monotonic()
    err = fails("network_error", download, client, url, cache, reporter, data=data)
    assert "too slow" in err.message
    assert time.monotonic() - start < 2
    assert fault_server.count("/x") == 1, "a too-slow server is not retried"
    assert cache_entries(cache) == []


def test_a_body_over_its_deadline_is_cut_off(make_client, fault_server: FaultServer, cache, reporter) -> None:
    # fast enough for the minimum rate, and every read well within read_timeout: only the
    # overall deadline (deadline + size / deadline_rate) ends it
    client = make_client(settings=NetworkSettings(min_rate=0, deadline=0.05, deadline_rate=1e6))
    data = b"d" * 4000
    url = fault_server.script("/x", Reply(body=data, drip=(20, 0.02)))
    err = fails("network_error", download, client, url, cache, reporter, data=data)
    assert "not received within" in err.message and err.details["deadline"] == pytest.approx(0.054)
    assert 0 < err.details["received"] < len(data)
    assert fault_server.count("/x") == 1, "a download over its deadline is not retried"
    assert cache_entries(cache) == []


def test_the_deadline_grows_with_the_expected_size(make_client, fault_server: FaultServer, cache, reporter) -> None:
    client = make_client(settings=NetworkSettings(min_rate=0, deadline=0.05, deadline_rate=2000))
    data = b"d" * 4000  # 2 s allowed; the server takes 0.2 s
    url = fault_server.script("/x", Reply(body=data, drip=(1000, 0.05)))
    assert download(client, url, cache, reporter, data=data).size == len(data)
    without = make_client(settings=NetworkSettings(min_rate=0, deadline=0, deadline_rate=0))  # 0: no deadline
    assert without.get_small(url, max_bytes=len(data)).body == data


def test_headers_dripped_a_byte_at_a_time_are_cut_off(make_client, fault_server: FaultServer, sleeps) -> None:
    # every read gets its byte well within read_timeout: only a deadline on the headers as a
    # whole stops a server that never finishes them
    client = make_client(settings=NetworkSettings(read_timeout=0.4, retries=2))
    headers = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n" + b"X-Slow: " + b"a" * 5000
    url = fault_server.script("/x", Reply(raw=headers, drip=(1, 0.01)))
    start = time.monotonic()
    err = fails("network_error", client.get_small, url, max_bytes=100)
    assert "timed out" in err.message
    assert fault_server.count("/x") == 2 and len(sleeps) == 1, "a timeout is retried like any other"
    assert time.monotonic() - start < 5


def test_the_watchdog_fires_what_is_due_and_nothing_disarmed() -> None:
    import threading

    from pkgmgr.net.transport import _Watchdog

    watchdog = _Watchdog()
    fired: list[str] = []
    due = threading.Event()
    late = watchdog.arm(60, lambda: fired.append("late"))
    soon = watchdog.arm(0.01, lambda: (fired.append("soon"), due.set()))
    kept = watchdog.arm(30, lambda: fired.append("kept"))
    assert watchdog.disarm(kept)  # in time: never fires
    assert due.wait(5)
    assert not watchdog.disarm(soon)  # fired: too late to disarm
    assert watchdog.disarm(late) and not watchdog.disarm(late)
    last = threading.Event()
    watchdog.arm(0, last.set)  # the thread serves deadlines in order: everything earlier was handled
    assert last.wait(5)
    assert fired == ["soon"]


def test_a_later_deadline_armed_without_waking_the_watchdog_still_fires() -> None:
    import threading

    from pkgmgr.net.transport import _Watchdog

    watchdog = _Watchdog()
    order: list[str] = []
    done = threading.Event()
    watchdog.arm(0.02, lambda: order.append("first"))
    watchdog.arm(0.05, lambda: (order.append("second"), done.set()))  # later: the thread is not woken for it
    assert done.wait(5)
    assert order == ["first", "second"]


def test_headers_within_the_deadline_keep_the_connection(make_client, fault_server: FaultServer) -> None:
    client = make_client(settings=NetworkSettings(read_timeout=2.0, retries=1))
    url = fault_server.script("/x", Reply(body=b"fine"))
    for _ in range(3):  # the deadline's timer never touches a connection that answered in time
        assert client.get_small(url, max_bytes=100).body == b"fine"


def test_fast_enough_drip_succeeds(make_client, fault_server: FaultServer) -> None:
    client = make_client(settings=NetworkSettings(min_rate=100, min_rate_after=0.05))
    url = fault_server.script("/x", Reply(body=b"d" * 600, drip=(100, 0.02)))
    assert client.get_small(url, max_bytes=1000).body == b"d" * 600


def test_endless_body_download(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(endless=True))
    fails("archive_too_large", download, client, url, cache, reporter, max_bytes=MIB)
    assert reporter.received("k") <= MIB + 1
    err = fails("archive_too_large", download, client, url, cache, reporter, expected_size=1000, max_bytes=MIB)
    assert err.details["limit"] == 1000
    assert cache_entries(cache) == []


@pytest.mark.parametrize("raw", [
    b"garbage\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nxx",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Encoding: gzip\r\n\r\nxxxxx",
    b"HTTP/1.1 302 Found\r\nLocation: http://[::1\r\nContent-Length: 0\r\n\r\n",
    b"",
])
def test_malformed_responses_raise_only_pkgmgr_errors(make_client, fault_server: FaultServer, cache, reporter,
                                                      raw: bytes) -> None:
    client = make_client(settings=NetworkSettings(retries=1))
    url = fault_server.script("/x", Reply(raw=raw))
    for call in (lambda: client.get_small(url, max_bytes=100), lambda: download(client, url, cache, reporter)):
        try:
            call()
        except PkgmgrError as exc:
            assert exc.code in ("network_error", "http_error", "checksum_mismatch")
    assert cache.root.joinpath("tmp").exists() is False or list(cache.root.joinpath("tmp").iterdir()) == []


# --------------------------------------------------------------------------- redirects


def test_redirect_loop(client, fault_server: FaultServer) -> None:
    fault_server.script("/a", Reply.redirect("/b"))
    fault_server.script("/b", Reply.redirect("/a"))
    err = fails("network_error", client.get_small, f"{fault_server.url}/a", max_bytes=100)
    assert "loop" in err.message
    assert fault_server.count() == 2


def test_too_many_redirects(client, fault_server: FaultServer) -> None:
    for i in range(12):
        fault_server.script(f"/r{i}", Reply.redirect(f"/r{i + 1}", 307))
    err = fails("network_error", client.get_small, f"{fault_server.url}/r0", max_bytes=100)
    assert "redirects" in err.message
    assert fault_server.count() == 11


def test_redirect_to_a_non_loopback_http_host_is_refused(client, fault_server: FaultServer) -> None:
    url = fault_server.script("/x", Reply.redirect("http://example.invalid/a.tar.gz"))
    err = fails("network_error", client.get_small, url, max_bytes=100)
    assert "refusing a redirect" in err.message


def test_redirect_with_an_endless_body_is_not_read(client, fault_server: FaultServer) -> None:
    fault_server.script("/x", Reply(302, headers={"Location": "/ok"}, endless=True))
    fault_server.script("/ok", Reply(body=b"ok"))
    assert client.get_small(f"{fault_server.url}/x", max_bytes=100).body == b"ok"


def test_redirect_without_location(client, fault_server: FaultServer) -> None:
    url = fault_server.script("/x", Reply(302))
    fails("http_error", client.get_small, url, max_bytes=100)


# --------------------------------------------------------------------------- token scoping


def test_token_goes_only_to_token_hosts_and_never_across_a_redirect(make_client, www: Path) -> None:
    (www / "a.tar.gz").write_bytes(b"archive")
    with FaultServer() as api, StaticFileServer(www, host="127.0.0.2") as storage:
        client = make_client(token=TOKEN, token_hosts=frozenset({api.url}))
        api.script("/file", Reply(body=b"direct"))
        api.script("/asset", Reply.redirect(f"{storage.url}/a.tar.gz"))
        assert client.get_small(f"{api.url}/file", max_bytes=100).body == b"direct"
        assert client.get_small(f"{api.url}/asset", max_bytes=100,
                                extra_headers={"Authorization": "Basic Y2FsbGVy"}).body == b"archive"
        assert client.get_small(f"{storage.url}/a.tar.gz", max_bytes=100).body == b"archive"
        assert [r.headers.get("authorization") for r in api.requests] == [f"Bearer {TOKEN}"] * 2
        assert [r.headers.get("authorization") for r in storage.requests] == [None, None]


def test_token_is_not_sent_again_after_the_chain_left_its_origin(make_client, fault_server: FaultServer) -> None:
    with FaultServer(host="127.0.0.2") as other:
        client = make_client(token=TOKEN, token_hosts=frozenset({fault_server.url, other.url}))
        fault_server.script("/start", Reply.redirect(f"{other.url}/bounce"))
        other.script("/bounce", Reply.redirect(f"{fault_server.url}/end"))
        fault_server.script("/end", Reply(body=b"ok"))
        assert client.get_small(f"{fault_server.url}/start", max_bytes=10).body == b"ok"
        assert [r.headers.get("authorization") for r in fault_server.requests] == [f"Bearer {TOKEN}", None]
        assert other.requests[0].headers.get("authorization") is None


def test_chunked_bodies(client, fault_server: FaultServer, cache, reporter) -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    url = fault_server.script("/x", Reply(raw=raw))
    assert client.get_small(url, max_bytes=100).body == b"hello world"
    assert download(client, url, cache, reporter, data=b"hello world").path.read_bytes() == b"hello world"
    assert reporter.events[0][3] == len(b"hello world"), "total from expected_size"


def test_token_hosts_compare_scheme_host_and_port(make_client, fault_server: FaultServer) -> None:
    url = fault_server.script("/x", Reply(body=b"ok"))
    other_port = f"http://127.0.0.1:{fault_server.port + 1 if fault_server.port < 65535 else 1}"
    for hosts in ({other_port}, {f"https://127.0.0.1:{fault_server.port}"}, {"127.0.0.1"}):
        make_client(token=TOKEN, token_hosts=frozenset(hosts)).get_small(url, max_bytes=10)
    make_client(token=TOKEN, token_hosts=frozenset({f"http://127.0.0.1:{fault_server.port}/api/v3"})).get_small(
        url, max_bytes=10)
    assert [r.headers.get("authorization") for r in fault_server.requests] == [None, None, None, f"Bearer {TOKEN}"]


def test_token_never_appears_in_errors_or_reprs(make_client, fault_server: FaultServer) -> None:
    client = make_client(token=TOKEN, token_hosts=frozenset({fault_server.url}))
    echo = f'{{"message": "token {TOKEN} is bad"}}'.encode()
    url = fault_server.script("/x", Reply(401, echo, {"Content-Type": "application/json"}))
    err = fails("auth_required", client.get_small, url, max_bytes=100)
    texts = [str(err), repr(err), err.message, str(err.details), str(err.hint), repr(client)]
    assert all(TOKEN not in t for t in texts)
    assert "***" in err.message and "***" in repr(client)
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)


def test_netrc_never_injects_credentials(client, fault_server: FaultServer, tmp_path: Path) -> None:
    netrc = tmp_path / "user-home" / ".netrc"
    netrc.parent.mkdir(parents=True, exist_ok=True)
    netrc.write_text("machine 127.0.0.1 login me password netrc-secret\n")
    netrc.chmod(0o600)
    url = fault_server.script("/x", Reply(body=b"ok"))
    client.get_small(url, max_bytes=10)
    assert "authorization" not in fault_server.requests[0].headers


def test_loopback_never_goes_through_a_proxy(client, fault_server: FaultServer, monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", closed_port_url())
    monkeypatch.setenv("http_proxy", closed_port_url())
    url = fault_server.script("/x", Reply(body=b"ok"))
    assert client.get_small(url, max_bytes=10).body == b"ok"


def test_cookies_are_refused(client, fault_server: FaultServer) -> None:
    url = fault_server.script("/x", Reply(body=b"ok", headers={"Set-Cookie": "session=abc; Path=/"}))
    client.get_small(url, max_bytes=10)
    client.get_small(url, max_bytes=10)
    assert "cookie" not in fault_server.requests[1].headers


def test_invalid_token_is_refused() -> None:
    from pkgmgr.net.http import HttpClient

    with pytest.raises(PkgmgrError) as info:
        HttpClient(NetworkSettings(), token="abc\r\nX-Injected: 1")
    assert info.value.code == "invalid_config" and "abc" not in info.value.message


# --------------------------------------------------------------------------- offline


def test_offline_refuses_every_request(make_client, fault_server: FaultServer, cache, reporter) -> None:
    client = make_client(offline=True)
    url = fault_server.script("/x", Reply(body=b"data"))
    err = fails("network_error", client.get_small, url, max_bytes=100)
    assert "offline" in err.message and err.details["offline"] is True
    fails("network_error", download, client, url, cache, reporter, data=b"data")
    assert fault_server.count() == 0


def test_offline_download_is_served_from_the_cache(make_client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"data"))
    download(make_client(), url, cache, reporter, data=b"data")
    got = download(make_client(offline=True), url, cache, reporter, data=b"data")
    assert got.from_cache and got.path.read_bytes() == b"data"
    assert fault_server.count() == 1


# --------------------------------------------------------------------------- downloads


def test_download_verifies_caches_and_reports(client, www: Path, static_server: StaticFileServer, cache,
                                             reporter) -> None:
    data = bytes(range(256)) * 10_000
    (www / "a.tar.gz").write_bytes(data)
    url = f"{static_server.url}/a.tar.gz"
    got = download(client, url, cache, reporter, data=data)
    assert got == Downloaded(cache.path_for(sha(data)), sha(data), len(data), False)
    assert got.path.read_bytes() == data
    assert static_server.requests[0].headers["accept-encoding"] == "identity"
    assert reporter.events[0] == ("started", "k", "archive.tar.gz", len(data))
    assert reporter.received("k") == len(data) and reporter.events[-1] == ("finished", "k")

    again = download(client, url, cache, reporter, data=data)
    assert again.from_cache and again.path == got.path and static_server.count() == 1
    assert list((cache.root / "tmp").iterdir()) == []


def test_download_without_checksum_is_cached_under_its_digest(client, fault_server: FaultServer, cache,
                                                              reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"unverified"))
    got = download(client, url, cache, reporter)
    assert got.sha256 == sha(b"unverified") and got.path == cache.path_for(got.sha256)
    assert reporter.events[0] == ("started", "k", "archive.tar.gz", None), "shown before the server answers"
    assert reporter.events[1] == ("answered", "k", len(b"unverified")), "total from Content-Length"


def test_download_hashes_the_raw_bytes_never_decoded(client, fault_server: FaultServer, cache, reporter) -> None:
    raw = gzip.compress(b"tar bytes", mtime=0)
    url = fault_server.script("/x", Reply(body=raw, headers={"Content-Encoding": "gzip"}))
    got = download(client, url, cache, reporter, data=raw)
    assert got.path.read_bytes() == raw


def test_static_gzip_server_sends_identity_to_downloads(client, www: Path, cache, reporter) -> None:
    (www / "a.tar.gz").write_bytes(b"z" * 5000)
    with StaticFileServer(www, gzip=True) as server:
        got = download(client, f"{server.url}/a.tar.gz", cache, reporter, data=b"z" * 5000)
    assert got.size == 5000


def test_checksum_mismatch_never_enters_the_cache(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"tampered"))
    err = fails("checksum_mismatch", download, client, url, cache, reporter, expected_sha256=sha(b"original"))
    assert err.details["actual"] == sha(b"tampered")
    assert cache_entries(cache) == []
    assert fault_server.count("/x") == 1, "a mismatch is not retried"
    assert reporter.events[-1] == ("finished", "k")


def test_html_instead_of_an_archive(client, fault_server: FaultServer, cache, reporter) -> None:
    html = b"<!doctype html><html><body>Sign in</body></html>"
    url = fault_server.script("/x", Reply(body=html, headers={"Content-Type": "text/html"}))
    fails("checksum_mismatch", download, client, url, cache, reporter, expected_sha256=sha(b"\x1f\x8b archive"))
    assert cache_entries(cache) == []


def test_size_is_exact(client, fault_server: FaultServer, cache, reporter) -> None:
    longer = fault_server.script("/longer", Reply(body=b"x" * 1001))
    err = fails("archive_too_large", download, client, longer, cache, reporter, expected_size=1000)
    assert err.details["expected"] == 1000 and reporter.received("k") == 0, "refused before reading"
    shorter = fault_server.script("/shorter", Reply(body=b"x" * 999))
    err = fails("checksum_mismatch", download, client, shorter, cache, reporter, expected_size=1000)
    assert "999" in err.message
    exact = fault_server.script("/exact", Reply(body=b"x" * 1000))
    assert download(client, exact, cache, reporter, expected_size=1000).size == 1000
    assert len(cache_entries(cache)) == 1


def test_unannounced_longer_body_is_cut_at_size_plus_one(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"y" * 300_000, endless=True))
    fails("archive_too_large", download, client, url, cache, reporter, expected_size=5000)
    assert reporter.received("k") == 5001


def test_max_bytes_without_expected_size(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"x" * 2000))
    err = fails("archive_too_large", download, client, url, cache, reporter, max_bytes=1999)
    assert err.details["limit"] == 1999 and reporter.received("k") == 0


def test_expected_size_over_the_limit_is_refused_without_a_request(client, fault_server: FaultServer, cache,
                                                                   reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"x"))
    fails("archive_too_large", download, client, url, cache, reporter, expected_size=2000, max_bytes=1000)
    assert fault_server.count() == 0


def test_malformed_expected_sha256_is_a_caller_bug(client, cache, reporter) -> None:
    with pytest.raises(ValueError):
        download(client, "http://127.0.0.1:1/x", cache, reporter, expected_sha256="abc")


def test_corrupted_cache_entry_is_downloaded_again(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"good archive"))
    first = download(client, url, cache, reporter, data=b"good archive")
    first.path.write_bytes(b"evil archive")
    second = download(client, url, cache, reporter, data=b"good archive")
    assert not second.from_cache and second.path.read_bytes() == b"good archive"
    assert fault_server.count("/x") == 2


def test_cached_entry_whose_size_disagrees(client, fault_server: FaultServer, cache, reporter) -> None:
    url = fault_server.script("/x", Reply(body=b"content"))
    download(client, url, cache, reporter, data=b"content")
    fails("checksum_mismatch", download, client, url, cache, reporter, expected_sha256=sha(b"content"),
          expected_size=8)


def test_parallel_downloads_from_many_threads(make_client, www: Path, cache, reporter) -> None:
    client = make_client(settings=NetworkSettings(parallel=4))
    files = {f"ext-{i}.tar.gz": bytes([i]) * (50_000 + i * 997) for i in range(24)}
    for name, data in files.items():
        (www / name).write_bytes(data)
    with StaticFileServer(www) as server, StaticFileServer(www, host="127.0.0.2") as mirror:
        def fetch(item):
            name, data = item
            host = server if len(data) % 2 else mirror
            return client.download(f"{host.url}/{name}", expected_sha256=sha(data), expected_size=len(data),
                                   cache=cache, reporter=reporter, key=name, label=name, max_bytes=MIB)

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(fetch, files.items()))
        assert [r.path.read_bytes() for r in results] == list(files.values())
        assert {r.headers["accept-encoding"] for r in server.requests + mirror.requests} == {"identity"}
        assert len({r.client for r in server.requests}) <= 8
    assert len(cache_entries(cache)) == len(files)
    assert all(reporter.received(name) == len(data) for name, data in files.items())


def test_a_slow_server_is_shown_while_it_has_not_answered(client, cache) -> None:
    """The user's case (issue 29): the bar appears when the request goes out, not when the first
    byte comes. The server holds its answer until the reporter has shown the download (bounded:
    a client that shows nothing first makes it answer anyway, and the test fail)."""
    import threading
    from http.server import BaseHTTPRequestHandler

    from pkgmgr.progress import Reporter
    from tests.support.servers import LoopbackServer, respond

    shown = threading.Event()
    seen_before_answer: list[bool] = []

    class Held(LoopbackServer):
        def handle(self, h: BaseHTTPRequestHandler) -> None:
            seen_before_answer.append(shown.wait(timeout=10))
            respond(h, 200, b"slow body")

    class Watching(Reporter):
        def __init__(self) -> None:
            self.events: list[str] = []

        def download_started(self, key: str, label: str, total: int | None) -> None:
            self.events.append("started")
            shown.set()

        def download_answered(self, key: str, total: int | None) -> None:
            self.events.append(f"answered {total}")

        def download_finished(self, key: str) -> None:
            self.events.append("finished")

    watching = Watching()
    with Held() as server:
        got = download(client, server.url + "/slow.tar.gz", cache, watching)
    assert seen_before_answer == [True]
    assert watching.events == ["started", f"answered {len(b'slow body')}", "finished"]
    assert got.size == len(b"slow body")
@pytest.mark.parametrize("stdlib", [True, False], ids=["stdlib", "requests"])
def test_a_gzip_member_flood_is_refused_at_once(make_client, fault_server: FaultServer, stdlib: bool) -> None:
    """Issue 25: 100,000 empty gzip members (2 MB that decode to nothing) cost a decoder each;
    only members that carry content are read through (as in archives), on either transport."""
    body = gzip.compress(b"[registry]\n", mtime=0) + gzip.compress(b"", mtime=0) * 100_000
    url = fault_server.script("/registry.toml", Reply(body=body, headers={"Content-Encoding": "gzip"}))
    with pytest.raises(PkgmgrError) as caught:
        make_client(stdlib_first_hop=stdlib).get_small(url, max_bytes=MIB)
    assert caught.value.code == "http_error" and caught.value.details["members"] == 17
    assert fault_server.count("/registry.toml") == 1  # not retried


def test_an_encoded_body_is_capped_on_the_wire_too(make_client, fault_server: FaultServer) -> None:
    """A gzip member of empty deflate blocks: 200 KB on the wire that decode to nothing is refused
    at 2 x max_bytes + 64 KiB on the wire; twenty members that carry content decode."""
    empty_blocks = (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\x00\x00\x00\xff\xff" * 40_000 + b"\x03\x00"
                    + b"\x00" * 8)
    url = fault_server.script("/empty", Reply(body=empty_blocks, headers={"Content-Encoding": "gzip"}))
    with pytest.raises(PkgmgrError) as caught:
        make_client().get_small(url, max_bytes=100)
    assert caught.value.code == "archive_too_large" and caught.value.details["limit"] == 2 * 100 + 64 * 1024
    members = b"".join(gzip.compress(bytes([65 + i]) * 40_000, mtime=0) for i in range(20))
    url = fault_server.script("/members", Reply(body=members, headers={"Content-Encoding": "gzip"}))
    body = make_client().get_small(url, max_bytes=MIB).body
    assert body == b"".join(bytes([65 + i]) * 40_000 for i in range(20))
