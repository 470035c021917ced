"""OCI credentials stay with the registry that asked (SPEC 5.6, issue 25 points 1 and 2).

Two loopback origins: the registry on 127.0.0.1 and a storage host on 127.0.0.2 that the
registry redirects blob downloads (and points uploads) to. The storage host answers every
request with a 401 whose challenge names a token realm on 127.0.0.2 that mints a token for
anyone. Every server records every header it receives. Each attack changes one thing from a
download (or push) that works, asserts `auth_required`, then asserts that nothing moved: the
registry's credentials never reached 127.0.0.2, 127.0.0.2's realm was never asked, its token
never reached the registry, and nothing was cached.

Then the names of `PKGMGR_OCI_AUTH_<HOST>`: one name, one host.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.errors import PkgmgrError
from pkgmgr.net.oci import OciClient, env_name, find_credentials, legacy_env_name, parse_oci
from tests.publish.helpers import ok, packed
from tests.support.cli import run_cli
from tests.support.ociregistry import (
    PASSWORD,
    USER,
    ChallengingStorage,
    FakeDistribution,
    TokenServer,
    basic,
)
from tests.support.servers import LoopbackServer

DATA = b"pkgmgr test archive for two origins\n" * 100
SHA = hashlib.sha256(DATA).hexdigest()
GOOD_TOKEN = "registry-minted-token"
BASIC = basic(USER, PASSWORD)["Authorization"]


@pytest.fixture
def storage() -> Iterator[ChallengingStorage]:
    with ChallengingStorage() as server:
        yield server
    assert server.errors == []


@pytest.fixture
def realm() -> Iterator[TokenServer]:
    with TokenServer(USER, PASSWORD, GOOD_TOKEN) as server:
        yield server


def registry_with(storage: LoopbackServer, realm: TokenServer | None = None, **kwargs) -> FakeDistribution:
    auth = {"bearer": (f"{realm.url}/token", GOOD_TOKEN)} if realm is not None else {"basic": (USER, PASSWORD)}
    return FakeDistribution(DATA, blobs_at=storage.url, uploads_at=storage.url, **auth, **kwargs)


def client_for(http, registry: FakeDistribution, tmp_path: Path) -> OciClient:
    return OciClient(http, env={env_name(f"127.0.0.1:{registry.port}"): f"{USER}:{PASSWORD}"},
                     home=tmp_path / "user-home")


def pull(oci: OciClient, registry: FakeDistribution, cache, reporter) -> Path:
    return oci.fetch(registry.ref(), sha256=SHA, size=len(DATA), cache=cache, reporter=reporter, key="k",
                     label="demo 1.0.0", max_bytes=1 << 20)


def push(oci: OciClient, registry: FakeDistribution, tmp_path: Path) -> str:
    archive = tmp_path / "demo-1.0.0.tar.gz"
    archive.write_bytes(DATA)
    ref = parse_oci(f"oci://127.0.0.1:{registry.port}/acme/demo:1.0.0", tag_ok=True)
    return oci.push(ref, archive, sha256=SHA, size=len(DATA), title=archive.name)


def failure(call) -> PkgmgrError:
    with pytest.raises(PkgmgrError) as info:
        call()
    return info.value


def headers_seen(*servers: LoopbackServer) -> list[tuple[str, str, str | None]]:
    return [(s.name, r.path, r.headers.get("authorization")) for s in servers for r in s.requests]


def assert_nothing_leaked(registry: FakeDistribution, storage: ChallengingStorage, allowed: set[str]) -> None:
    """The registry's credentials (or its realm's token) never reached 127.0.0.2; 127.0.0.2's
    realm was never asked; no token it minted reached the registry."""
    assert storage.requests, "the attack must reach the storage host"
    assert all("authorization" not in r.headers for r in storage.requests), headers_seen(storage)
    assert not [r for r in storage.requests if r.path.startswith("/token")]
    assert {r.headers.get("authorization") for r in registry.requests} <= allowed | {None}, headers_seen(registry)
    assert storage.token not in json.dumps(headers_seen(registry, storage))


# --------------------------------------------------------------------------- the controls


def test_a_blob_redirect_to_a_storage_that_serves_it_downloads(client, cache, reporter, tmp_path: Path) -> None:
    with ChallengingStorage(data=DATA) as storage, registry_with(storage) as registry:
        assert pull(client_for(client, registry, tmp_path), registry, cache, reporter).read_bytes() == DATA
    assert all("authorization" not in r.headers for r in storage.requests) and storage.requests


def test_an_upload_location_on_the_registry_pushes_with_its_credentials(client, tmp_path: Path) -> None:
    with FakeDistribution(DATA, basic=(USER, PASSWORD)) as registry:
        assert push(client_for(client, registry, tmp_path), registry, tmp_path).endswith(registry.digest)
    puts = [r for r in registry.requests if r.method == "PUT"]
    assert len(puts) == 3 and all(r.headers.get("authorization") == BASIC for r in puts)  # config, layer, manifest


# --------------------------------------------------------------------------- the attacks


def test_a_401_from_the_blob_redirect_target_is_not_answered_with_basic_credentials(
        storage: ChallengingStorage, client, cache, reporter, tmp_path: Path) -> None:
    with registry_with(storage) as registry:
        oci = client_for(client, registry, tmp_path)
        error = failure(lambda: pull(oci, registry, cache, reporter))
        assert error.code == "auth_required" and error.exit_code == 4
        assert error.details["origin"] == f"http://127.0.0.2:{storage.port}"
        assert "127.0.0.2" in error.message and PASSWORD not in json.dumps(error.to_json())
        again = failure(lambda: pull(oci, registry, cache, reporter))  # nothing remembered from the first try
        assert again.code == "auth_required"
    assert_nothing_leaked(registry, storage, {BASIC})
    assert cache.get(SHA) is None and not list(cache.root.rglob("*.part"))


def test_a_401_from_the_blob_redirect_target_gets_no_token_flow(storage: ChallengingStorage, realm: TokenServer,
                                                                client, cache, reporter, tmp_path: Path) -> None:
    with registry_with(storage, realm) as registry:
        oci = client_for(client, registry, tmp_path)
        assert failure(lambda: pull(oci, registry, cache, reporter)).code == "auth_required"
        assert failure(lambda: pull(oci, registry, cache, reporter)).code == "auth_required"
    assert_nothing_leaked(registry, storage, {f"Bearer {GOOD_TOKEN}"})
    assert {r.headers.get("authorization") for r in realm.requests} == {BASIC}
    assert cache.get(SHA) is None


def test_an_upload_location_on_another_origin_is_not_answered(storage: ChallengingStorage, client,
                                                              tmp_path: Path) -> None:
    with registry_with(storage) as registry:
        error = failure(lambda: push(client_for(client, registry, tmp_path), registry, tmp_path))
        assert error.code == "auth_required" and "127.0.0.2" in error.message
    assert_nothing_leaked(registry, storage, {BASIC})
    assert [r.method for r in storage.requests] == ["PUT"]  # tried once, without credentials
    assert not [r for r in registry.requests if r.method == "PUT"]  # no manifest pushed


def test_an_upload_location_on_another_origin_gets_no_token_flow(storage: ChallengingStorage, realm: TokenServer,
                                                                 client, tmp_path: Path) -> None:
    with registry_with(storage, realm) as registry:
        error = failure(lambda: push(client_for(client, registry, tmp_path), registry, tmp_path))
        assert error.code == "auth_required"
    assert_nothing_leaked(registry, storage, {f"Bearer {GOOD_TOKEN}"})


# --------------------------------------------------------------------------- one name, one host


def test_the_names_of_look_alike_hosts_differ() -> None:
    names = {host: env_name(host) for host in ("a-b.example", "a.b.example", "a.b.example:5000", "a--b.example",
                                               "a.b.example.5000", "127.0.0.1:5000", "ghcr.io")}
    assert names == {
        "a-b.example": "PKGMGR_OCI_AUTH_A__B_EXAMPLE",
        "a.b.example": "PKGMGR_OCI_AUTH_A_B_EXAMPLE",
        "a.b.example:5000": "PKGMGR_OCI_AUTH_A_B_EXAMPLE___5000",
        "a--b.example": "PKGMGR_OCI_AUTH_A____B_EXAMPLE",
        "a.b.example.5000": "PKGMGR_OCI_AUTH_A_B_EXAMPLE_5000",
        "127.0.0.1:5000": "PKGMGR_OCI_AUTH_127_0_0_1___5000",
        "ghcr.io": "PKGMGR_OCI_AUTH_GHCR_IO",
    }
    # hosts no name can denote alone get none: their credentials come from Docker's config only
    for host in ("[::1]:5000", "a.-b.example", "a-.b", "a..b", "-a.b"):
        assert env_name(host) is None, host


_label = st.from_regex(r"[a-z0-9]{1,3}(-{1,2}[a-z0-9]{1,3}){0,2}", fullmatch=True)
_host = st.builds(lambda labels, port: ".".join(labels) + (f":{port}" if port is not None else ""),
                  st.lists(_label, min_size=1, max_size=4), st.none() | st.integers(1, 65535))


@given(_host, _host)
def test_two_hosts_never_share_a_name(one: str, two: str) -> None:
    if one != two:
        assert env_name(one) != env_name(two)
    assert env_name(one) is not None


def test_a_look_alike_host_gets_no_credentials(tmp_path: Path) -> None:
    env = {env_name("a-b.example"): "alice:s3cret"}
    assert find_credentials("a-b.example", env, tmp_path).password == "s3cret"
    for look_alike in ("a.b.example", "a.b.example:5000", "a--b.example", "a-b.example:443"):
        assert find_credentials(look_alike, env, tmp_path) is None, look_alike


def test_the_old_spelling_is_not_used_and_a_warning_names_the_new_one(client, cache, reporter,
                                                                      tmp_path: Path) -> None:
    with FakeDistribution(DATA, basic=(USER, PASSWORD)) as registry:
        host = f"127.0.0.1:{registry.port}"
        old, new = legacy_env_name(host), env_name(host)
        assert (old, new) == (f"PKGMGR_OCI_AUTH_127_0_0_1_{registry.port}", f"PKGMGR_OCI_AUTH_127_0_0_1___{registry.port}")
        warnings: list[str] = []
        oci = OciClient(client, env={old: f"{USER}:{PASSWORD}"}, home=tmp_path / "user-home", warn=warnings.append)
        error = failure(lambda: pull(oci, registry, cache, reporter))
        assert error.code == "auth_required" and new in (error.hint or "")
        assert warnings and old in warnings[0] and new in warnings[0] and PASSWORD not in warnings[0]
        assert all("authorization" not in r.headers for r in registry.requests)
        both = OciClient(client, env={old: "x:y", new: f"{USER}:{PASSWORD}"}, home=tmp_path / "user-home",
                         warn=warnings.append)
        warnings.clear()
        assert pull(both, registry, cache, reporter).read_bytes() == DATA
        assert warnings == []


def test_ext_install_warns_about_the_old_spelling_and_installs_with_the_new(tmp_path: Path) -> None:
    archive = packed(tmp_path, "review-pack", name="acme-oci")
    data = archive.read_bytes()
    with FakeDistribution(data, basic=(USER, PASSWORD)) as registry:
        index = tmp_path / "index"
        ok("registry", "init", index, "--name", "acme")
        ok("registry", "publish", archive, "--index", index, "--url", registry.ref())
        home = tmp_path / "home"
        run_cli(["registry", "add", "acme", str(index)], env={"PKGMGR_HOME": str(home)})
        host = f"127.0.0.1:{registry.port}"
        result = run_cli(["ext", "install", "acme-oci", "-o", "json"],
                         env={"PKGMGR_HOME": str(home), legacy_env_name(host): f"{USER}:{PASSWORD}"})
        assert result.code == 4 and result.json["error"]["code"] == "auth_required", result
        assert env_name(host) in result.stderr and legacy_env_name(host) in result.stderr
        assert PASSWORD not in result.stdout + result.stderr
        assert all("authorization" not in r.headers for r in registry.requests)
        result = run_cli(["ext", "install", "acme-oci", "-o", "json"],
                         env={"PKGMGR_HOME": str(home), env_name(host): f"{USER}:{PASSWORD}"})
        assert result.code == 0, result
        assert legacy_env_name(host) not in result.stderr
