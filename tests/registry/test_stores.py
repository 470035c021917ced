"""registry.stores: one table from a version URL's scheme to its archive store; each store says
which URLs an entry may name, which the policy lets pkgmgr fetch, and fetches them verified."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pkgmgr.config import NetworkSettings
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.net.cache import DownloadCache
from pkgmgr.net.http import HttpClient, UrlNotAllowed
from pkgmgr.progress import Reporter
from pkgmgr.registry.index_format import url_problem
from pkgmgr.registry.stores import NO_STORE, STORES, Channel, OciStore, RelativeStore, WebStore, store_for
from tests.support.servers import StaticFileServer

DIGEST = "oci://ghcr.io/acme/x@sha256:" + "a" * 64


@pytest.mark.parametrize("url, kind", [("https://example.org/x.tar.gz", WebStore),
                                       ("http://127.0.0.1:8000/x.tar.gz", WebStore),
                                       ("archives/x-1.0.0.tar.gz", RelativeStore), (DIGEST, OciStore)])
def test_the_scheme_picks_the_store(url: str, kind: type) -> None:
    store = store_for(url)
    assert isinstance(store, kind) and store.url_problem(url) is None and url_problem(url) is None


@pytest.mark.parametrize("url, problem", [
    ("ftp://example.org/x.tar.gz", NO_STORE),
    ("https:///x.tar.gz", "has no host"),
    ("https://user:pw@example.org/x.tar.gz", "must not carry credentials"),
    ("/archives/x.tar.gz", "a relative url must not start with '/'"),
    ("archives/../x.tar.gz", "a relative url must not contain empty, '.' or '..' segments"),
    ("oci://ghcr.io/acme/x:1.0.0", "names a tag"),
])
def test_each_store_says_what_an_entry_may_not_name(url: str, problem: str) -> None:
    found = url_problem(url)
    assert found is not None and found.startswith(problem)
    assert store_for("ftp://example.org/x") is None and set(STORES) == {"https", "http", "", "oci"}


def test_plain_http_is_fetched_only_on_loopback_or_when_insecure() -> None:
    web = WebStore()
    web.allowed("http://127.0.0.1:9/x.tar.gz", insecure=False)
    web.allowed("http://example.org/x.tar.gz", insecure=True)
    with pytest.raises(UrlNotAllowed):
        web.allowed("http://example.org/x.tar.gz", insecure=False)
    OciStore().allowed(DIGEST, insecure=False)  # the OCI client applies the policy to each request


def _channel(tmp_path: Path) -> Channel:
    return Channel(HttpClient(NetworkSettings(retries=0)), DownloadCache(tmp_path / "cache"), Reporter(), 1 << 20)


def test_the_web_and_the_relative_store_fetch_verified(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    body = b"an archive"
    (served / "x.tar.gz").write_bytes(body)
    sha256 = hashlib.sha256(body).hexdigest()
    channel = _channel(tmp_path)
    with StaticFileServer(served) as server:
        fetched = WebStore().fetch(f"{server.url}/x.tar.gz", channel, sha256=sha256, size=len(body), key="x",
                                   label="x 1.0.0")
    assert fetched.read_bytes() == body
    copied = RelativeStore().fetch(str(served / "x.tar.gz"), channel, sha256=sha256, size=len(body), key="x",
                                   label="x 1.0.0")
    assert copied.read_bytes() == body
    with pytest.raises(PkgmgrError) as caught:
        RelativeStore().fetch(str(served / "x.tar.gz"), channel, sha256="0" * 64, size=len(body), key="x",
                              label="x 1.0.0")
    assert caught.value.code == Code.CHECKSUM_MISMATCH


def test_only_an_oci_registry_is_pushed_to(tmp_path: Path) -> None:
    with pytest.raises(PkgmgrError) as caught:
        WebStore().push(None, "https://example.org/x.tar.gz", tmp_path / "x.tar.gz", sha256="0" * 64, size=1,  # type: ignore[arg-type]
                        title="x-1.0.0.tar.gz")
    assert caught.value.code == Code.USAGE and "oci://" in caught.value.message
