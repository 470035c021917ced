"""pkgmgr.net.oci against a real registry (Debian's docker-registry on 127.0.0.1, SPEC 5.6):
pull and push, Basic and Bearer authentication, credentials' sources and scope, and the faults
— a layer that is not the entry's, two layers, a wrong media type, a 401 without credentials, a
blob redirect to another host, a registry that dies in the middle of a blob."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.net.oci import (
    ARTIFACT_TYPE,
    LAYER_MEDIA_TYPE,
    OciClient,
    env_name,
    find_credentials,
    oci_url_problem,
    parse_challenge,
    parse_oci,
    render_manifest,
)
from tests.support.ociregistry import (
    LAYER,
    PASSWORD,
    SKIP_REASON,
    USER,
    BlobHost,
    RealRegistry,
    RegistryProxy,
    TokenServer,
    basic,
    registry_binary,
    upload,
)

needs_registry = pytest.mark.skipif(registry_binary() is None, reason=SKIP_REASON)


def blob(tag: str) -> bytes:
    return f"pkgmgr test archive {tag}\n".encode() * 200


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def oci(http, tmp_path: Path, **env: str) -> OciClient:
    return OciClient(http, env=env, home=tmp_path / "user-home")


def fetch(client: OciClient, url: str, data: bytes, cache, reporter, **kwargs):
    return client.fetch(url, sha256=kwargs.pop("sha256", sha(data)), size=kwargs.pop("size", len(data)), cache=cache,
                        reporter=reporter, key="k", label="demo 1.0.0", max_bytes=50 * 1024 * 1024)


def error_of(call) -> PkgmgrError:
    with pytest.raises(PkgmgrError) as info:
        call()
    return info.value


# --------------------------------------------------------------------------- references


def test_references_parse_and_tags_are_refused_in_entries() -> None:
    digest = "a" * 64
    ref = parse_oci(f"oci://127.0.0.1:5000/acme/tools/demo@sha256:{digest}")
    assert (ref.host, ref.repository, ref.digest, ref.base) == ("127.0.0.1:5000", "acme/tools/demo", digest,
                                                                "http://127.0.0.1:5000")
    assert parse_oci(f"oci://ghcr.io/acme/demo@sha256:{digest}").base == "https://ghcr.io"
    assert parse_oci("oci://ghcr.io/acme/demo:1.0.0", tag_ok=True).tag == "1.0.0"
    assert "names a tag" in oci_url_problem("oci://ghcr.io/acme/demo:1.0.0")
    for bad in ("oci://ghcr.io/Acme/demo@sha256:" + digest, "oci://ghcr.io/acme@sha256:abc",
                "oci://user:pw@ghcr.io/acme/demo@sha256:" + digest, "oci://ghcr.io/acme/demo"):
        assert oci_url_problem(bad) is not None, bad


def test_an_entry_with_a_tag_url_is_invalid_index() -> None:
    from pkgmgr.registry.index_format import url_problem

    assert url_problem("oci://ghcr.io/acme/demo@sha256:" + "b" * 64) is None
    assert "names a tag" in url_problem("oci://ghcr.io/acme/demo:latest")


def test_credentials_come_from_the_variable_docker_config_and_github_token_for_ghcr_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert env_name("127.0.0.1:5000") == "PKGMGR_OCI_AUTH_127_0_0_1___5000"
    found = find_credentials("127.0.0.1:5000", {"PKGMGR_OCI_AUTH_127_0_0_1___5000": "bob:pw"}, home)
    assert (found.username, found.password) == ("bob", "pw") and "pw" not in repr(found)
    (home / ".docker").mkdir(parents=True)
    auth = base64.b64encode(b"carol:docker-pw").decode()
    (home / ".docker" / "config.json").write_text(json.dumps({"auths": {"https://registry.example.com/v1/":
                                                                        {"auth": auth}}}))
    found = find_credentials("registry.example.com", {}, home)
    assert (found.username, found.password) == ("carol", "docker-pw")
    assert find_credentials("registry.example.com:444", {}, home) is None
    token = {"GITHUB_TOKEN": "ghp_tok"}
    assert find_credentials("ghcr.io", token, home).password == "ghp_tok"
    assert find_credentials("registry.example.org", token, home) is None
    assert find_credentials("ghcr.io.evil.example", token, home) is None
    with pytest.raises(PkgmgrError) as info:
        find_credentials("h", {"PKGMGR_OCI_AUTH_H": "no-colon"}, home)
    assert info.value.code == "invalid_config" and "no-colon" not in info.value.message


def test_challenges_parse() -> None:
    scheme, params = parse_challenge('Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:a/b:pull"')
    assert scheme == "bearer" and params == {"realm": "https://ghcr.io/token", "service": "ghcr.io",
                                             "scope": "repository:a/b:pull"}
    assert parse_challenge('Basic realm="Registry Realm"') == ("basic", {"realm": "Registry Realm"})


def test_the_manifest_pushed_is_deterministic() -> None:
    one = render_manifest("c" * 64, 10, title="demo-1.0.0.tar.gz")
    assert one == render_manifest("c" * 64, 10, title="demo-1.0.0.tar.gz")
    doc = json.loads(one)
    assert doc["artifactType"] == ARTIFACT_TYPE and doc["layers"][0]["mediaType"] == LAYER_MEDIA_TYPE


# --------------------------------------------------------------------------- pull


@needs_registry
def test_pull_verifies_and_caches_and_a_cached_archive_needs_no_request(
        open_registry: RealRegistry, client, cache, reporter, tmp_path: Path) -> None:
    data = blob("pull")
    url = upload(open_registry.url, "acme/pull", "1.0.0", [(LAYER, data)])
    with RegistryProxy(open_registry.url) as proxy:
        via = url.replace(open_registry.host, f"127.0.0.1:{proxy.port}")
        path = fetch(oci(client, tmp_path), via, data, cache, reporter)
        assert path.read_bytes() == data and path == cache.path_for(sha(data))
        assert proxy.count() >= 2
        proxy.clear()
        assert fetch(oci(client, tmp_path), via, data, cache, reporter) == path
        assert proxy.count() == 0


@needs_registry
def test_a_layer_that_is_not_the_entrys_is_metadata_mismatch(open_registry, client, cache, reporter,
                                                             tmp_path: Path) -> None:
    data, other = blob("entry"), blob("other")
    url = upload(open_registry.url, "acme/wrong-digest", "1.0.0", [(LAYER, other)])
    error = error_of(lambda: fetch(oci(client, tmp_path), url, data, cache, reporter))
    assert error.code == "metadata_mismatch" and error.exit_code == 4
    assert error.details["layer_digest"] == sha(other)
    wrong_size = error_of(lambda: fetch(oci(client, tmp_path), url, other, cache, reporter, size=len(other) + 1))
    assert wrong_size.code == "metadata_mismatch"
    assert not list((cache.root / "sha256").glob("*/*")) if (cache.root / "sha256").exists() else True


@needs_registry
def test_two_layers_or_another_media_type_or_artifact_type_is_invalid_archive(open_registry, client, cache, reporter,
                                                                             tmp_path: Path) -> None:
    data = blob("shape")
    two = upload(open_registry.url, "acme/shape", "two", [(LAYER, data), (LAYER, blob("second"))])
    media = upload(open_registry.url, "acme/shape", "media", [("application/vnd.oci.image.layer.v1.tar+gzip", data)])
    artifact = upload(open_registry.url, "acme/shape", "artifact", [(LAYER, data)],
                      artifact_type="application/vnd.example.other")
    for url, words in ((two, "2 layers"), (media, "media type"), (artifact, "artifactType")):
        error = error_of(lambda url=url: fetch(oci(client, tmp_path), url, data, cache, reporter))
        assert error.code == "invalid_archive" and error.exit_code == 3, url
        assert words in error.message


@needs_registry
def test_a_registry_that_dies_mid_blob_is_network_error_and_nothing_is_cached(open_registry, client, cache,
                                                                             reporter, sleeps,
                                                                             tmp_path: Path) -> None:
    data = blob("cut") * 10
    url = upload(open_registry.url, "acme/cut", "1.0.0", [(LAYER, data)])
    with RegistryProxy(open_registry.url, cut_after=1000) as proxy:
        via = url.replace(open_registry.host, f"127.0.0.1:{proxy.port}")
        error = error_of(lambda: fetch(oci(client, tmp_path), via, data, cache, reporter))
    assert error.code == "network_error" and error.exit_code == 7
    assert len(sleeps) == 2  # retried with backoff (3 tries in all), then given up
    assert cache.get(sha(data)) is None
    assert not any(cache.root.joinpath("tmp").iterdir())


# --------------------------------------------------------------------------- authentication


@needs_registry
def test_a_401_without_credentials_is_auth_required_and_github_token_is_not_sent(
        auth_registry, client, cache, reporter, tmp_path: Path) -> None:
    data = blob("auth")
    url = upload(auth_registry.url, "acme/private", "1.0.0", [(LAYER, data)], auth=basic(USER, PASSWORD))
    with RegistryProxy(auth_registry.url) as proxy:
        via = url.replace(auth_registry.host, f"127.0.0.1:{proxy.port}")
        error = error_of(lambda: fetch(oci(client, tmp_path, GITHUB_TOKEN="ghp_never_sent"), via, data, cache,
                                       reporter))
        assert all("authorization" not in r.headers for r in proxy.requests)
        assert env_name(f"127.0.0.1:{proxy.port}") in (error.hint or "")
    assert error.code == "auth_required" and error.exit_code == 4


@needs_registry
def test_basic_credentials_from_the_variable_pull_and_wrong_ones_are_refused(auth_registry, client, cache, reporter,
                                                                           tmp_path: Path) -> None:
    data = blob("basic")
    url = upload(auth_registry.url, "acme/basic", "1.0.0", [(LAYER, data)], auth=basic(USER, PASSWORD))
    name = env_name(auth_registry.host)
    wrong = error_of(lambda: fetch(oci(client, tmp_path, **{name: f"{USER}:not-the-password"}), url, data, cache,
                                   reporter))
    assert wrong.code == "auth_required" and "refused the credentials" in wrong.message
    assert "not-the-password" not in json.dumps(wrong.to_json()) + (wrong.hint or "")
    path = fetch(oci(client, tmp_path, **{name: f"{USER}:{PASSWORD}"}), url, data, cache, reporter)
    assert path.read_bytes() == data


@needs_registry
def test_docker_config_credentials_pull(auth_registry, client, cache, reporter, tmp_path: Path) -> None:
    data = blob("docker")
    url = upload(auth_registry.url, "acme/docker", "1.0.0", [(LAYER, data)], auth=basic(USER, PASSWORD))
    config = tmp_path / "user-home" / ".docker" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"auths": {auth_registry.host: {"username": USER, "password": PASSWORD}}}))
    assert fetch(oci(client, tmp_path), url, data, cache, reporter).read_bytes() == data


@needs_registry
def test_the_bearer_token_flow_sends_credentials_only_to_the_realm(open_registry, client, cache, reporter,
                                                                  tmp_path: Path) -> None:
    data = blob("bearer")
    url = upload(open_registry.url, "acme/bearer", "1.0.0", [(LAYER, data)])
    with TokenServer(USER, PASSWORD, "tok-123") as realm, \
            RegistryProxy(open_registry.url, bearer=(f"{realm.url}/token", "tok-123")) as proxy:
        via = url.replace(open_registry.host, f"127.0.0.1:{proxy.port}")
        creds = {env_name(f"127.0.0.1:{proxy.port}"): f"{USER}:{PASSWORD}"}
        assert fetch(oci(client, tmp_path, **creds), via, data, cache, reporter).read_bytes() == data
        sent = [r.headers.get("authorization") for r in proxy.requests]
        assert sent[0] is None and set(sent[1:]) == {"Bearer tok-123"}
        assert [r.headers.get("authorization") for r in realm.requests] == [basic(USER, PASSWORD)["Authorization"]]
        assert "scope=repository%3Aacme%2Fbearer%3Apull" in realm.requests[0].path
        anonymous = error_of(lambda: fetch(oci(client, tmp_path), via.replace("bearer@", "bearer@"), blob("x"),
                                           cache, reporter, sha256="d" * 64))
        assert anonymous.code == "auth_required"


@needs_registry
def test_a_blob_redirect_to_another_host_gets_no_credentials(auth_registry, client, cache, reporter,
                                                            tmp_path: Path) -> None:
    data = blob("redirect")
    url = upload(auth_registry.url, "acme/redirect", "1.0.0", [(LAYER, data)], auth=basic(USER, PASSWORD))
    with BlobHost(auth_registry.url, auth=basic(USER, PASSWORD)) as storage, \
            RegistryProxy(auth_registry.url, redirect_to=storage.url) as proxy:
        via = url.replace(auth_registry.host, f"127.0.0.1:{proxy.port}")
        creds = {env_name(f"127.0.0.1:{proxy.port}"): f"{USER}:{PASSWORD}"}
        assert fetch(oci(client, tmp_path, **creds), via, data, cache, reporter).read_bytes() == data
        assert storage.count() == 1
        assert all("authorization" not in r.headers for r in storage.requests)
        assert any(r.headers.get("authorization") for r in proxy.requests)


# --------------------------------------------------------------------------- push


@needs_registry
def test_push_then_pull_with_credentials(auth_registry, client, cache, reporter, tmp_path: Path) -> None:
    data = blob("push")
    archive = tmp_path / "demo-1.0.0.tar.gz"
    archive.write_bytes(data)
    creds = {env_name(auth_registry.host): f"{USER}:{PASSWORD}"}
    ref = parse_oci(f"oci://{auth_registry.host}/acme/pushed:1.0.0", tag_ok=True)
    url = oci(client, tmp_path, **creds).push(ref, archive, sha256=sha(data), size=len(data),
                                              title=archive.name)
    again = oci(client, tmp_path, **creds).push(ref, archive, sha256=sha(data), size=len(data), title=archive.name)
    assert url == again and url.startswith(f"oci://{auth_registry.host}/acme/pushed@sha256:")
    assert fetch(oci(client, tmp_path, **creds), url, data, cache, reporter).read_bytes() == data
    denied = error_of(lambda: oci(client, tmp_path).push(ref, archive, sha256=sha(data), size=len(data),
                                                         title=archive.name))
    assert denied.code == "auth_required"


@needs_registry
def test_credentials_never_go_to_a_plain_http_realm_on_another_host(open_registry, client, cache, reporter,
                                                                   tmp_path: Path) -> None:
    data = blob("realm")
    url = upload(open_registry.url, "acme/realm", "1.0.0", [(LAYER, data)])
    with RegistryProxy(open_registry.url, bearer=("http://tokens.example.com/token", "t")) as proxy:
        via = url.replace(open_registry.host, f"127.0.0.1:{proxy.port}")
        creds = {env_name(f"127.0.0.1:{proxy.port}"): f"{USER}:{PASSWORD}"}
        error = error_of(lambda: fetch(oci(client, tmp_path, **creds), via, data, cache, reporter))
    assert error.code == "auth_required" and "token realm" in error.message
    assert PASSWORD not in json.dumps(error.to_json())


def test_send_follows_no_redirect_and_maps_statuses(fault_server, client, sleeps) -> None:
    from tests.support.servers import Reply

    moved = fault_server.script("/v2/a/blobs/x", Reply.redirect("http://127.0.0.1:1/elsewhere", 307))
    error = error_of(lambda: client.send("HEAD", moved, ok=frozenset({200, 404})))
    assert error.code == "http_error" and error.details["status"] == 307
    missing = fault_server.script("/v2/a/blobs/y", Reply(404))
    assert client.send("HEAD", missing, ok=frozenset({200, 404})).status == 404
    broken = fault_server.script("/v2/a/blobs/z", Reply(503))
    assert error_of(lambda: client.send("HEAD", broken, ok=frozenset({200}))).code == "http_error"
    assert len(sleeps) == 2
    challenge = fault_server.script("/v2/", Reply(401, headers={"WWW-Authenticate": 'Basic realm="r"'}))
    denied = error_of(lambda: client.send("HEAD", challenge, ok=frozenset({200})))
    assert denied.code == "auth_required" and denied.details["www_authenticate"] == 'Basic realm="r"'
