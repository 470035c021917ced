"""The standard-library first hop over TLS: a conditional GET to an https:// server is verified
against the same CA bundle requests uses (REQUESTS_CA_BUNDLE here), answers as requests does,
and refuses a certificate that bundle does not vouch for exactly as requests refuses it.

The server is a real TLS server on 127.0.0.1 with a certificate for that address, signed by a
CA made for the test."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

ETAG = '"v1"'
BODY = b"registry file\n"


def _certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate | None,
                 issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (x509.CertificateBuilder().subject_name(name)
               .issuer_name(issuer.subject if issuer is not None else name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                        critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pki")
    ca_key, other_key, server_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca = _certificate("pkgmgr test CA", ca_key, None, ca_key, ca=True)
    other = _certificate("another CA", other_key, None, other_key, ca=True)
    server = _certificate("127.0.0.1", server_key, ca, ca_key, ca=False)
    (root / "ca.pem").write_bytes(_pem(ca))
    (root / "other-ca.pem").write_bytes(_pem(other))
    (root / "server.pem").write_bytes(_pem(server))
    (root / "server.key").write_bytes(server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return {name: root / f"{name}.pem" for name in ("ca", "other-ca", "server")} | {"key": root / "server.key"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[str | None] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.seen.append(self.headers.get("If-None-Match"))
        if self.headers.get("If-None-Match") == ETAG:
            self.send_response(304)
            self.send_header("ETag", ETAG)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("ETag", ETAG)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def tls_url(pki: dict[str, Path]) -> Iterator[str]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki["server"], pki["key"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    _Handler.seen = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/registry.toml"
    finally:
        server.shutdown()
        server.server_close()


def test_a_304_over_tls_is_verified_and_answered_by_the_stdlib(make_client, tls_url: str, pki: dict[str, Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki["ca"]))
    client = make_client()
    for _ in range(2):
        resp = client.get_small(tls_url, etag=ETAG, max_bytes=100)
        assert (resp.status, resp.body, resp.etag) == (304, None, ETAG)
    assert "_requests" not in client.__dict__  # both answered by the stdlib hop, over TLS
    fresh = client.get_small(tls_url, etag='"old"', max_bytes=100)  # a changed file: fetched as before
    assert (fresh.status, fresh.body, fresh.etag) == (200, BODY, ETAG)
    assert _Handler.seen == [ETAG, ETAG, '"old"']  # the changed file is fetched once


def test_a_certificate_the_bundle_does_not_vouch_for_is_refused_as_requests_refuses_it(
        make_client, tls_url: str, pki: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki["other-ca"]))
    outcomes = []
    for etag in ('"v1"', None):  # conditional: the stdlib hop; unconditional: requests
        with pytest.raises(PkgmgrError) as caught:
            make_client().get_small(tls_url, etag=etag, max_bytes=100)
        outcomes.append(caught.value.code)
    assert outcomes[0] == outcomes[1] == "network_error"
    assert _Handler.seen == []  # no request got through the handshake
