"""OCI registries as archive stores (SPEC 5.6): `oci://HOST[:PORT]/REPOSITORY@sha256:<hex>`.

pkgmgr speaks the distribution API itself, over the fetcher port (`pkgmgr.net.fetcher.Fetcher`:
`get_small`, `download`, and `send` for HEAD, POST and PUT; no OCI library): every request goes
through the one network layer, so the caps, timeouts, deadline, retries, redirect rules, the
GitHub token rule and the content-addressed download cache hold for OCI as for any URL. The
session owns one `OciClient` (`Session.oci`); this module knows nothing of sessions.

- Pull: the image manifest is fetched (capped at `MAX_MANIFEST_BYTES`, its sha256 checked
  against the digest the URL names), its shape checked (`invalid_archive`): OCI image manifest,
  `artifactType` pkgmgr's, exactly one layer of pkgmgr's media type; the layer's digest and
  size must be the entry's (`metadata_mismatch`). The blob is then downloaded with
  `Fetcher.download` (exact size, sha256 while streaming, only a verified file cached).
- Push (`push_archive`): the blob (and the empty config) by a monolithic upload (POST, then
  PUT with the digest), skipped when the registry already has it, then the manifest under
  the tag; returns the digest URL to record.
- Authentication: on a 401 the registry's `WWW-Authenticate` challenge decides: `Basic` sends
  the credentials to the registry; `Bearer` asks the challenge's token realm (https, or http on
  loopback) for a token, with the credentials when there are any, and sends the token to the
  registry. Credentials come from `PKGMGR_OCI_AUTH_<HOST>` (`user:password`, `env_name`: one name
  for one host), else Docker's `config.json` `auths` (`$DOCKER_CONFIG/config.json`, default
  `~/.docker/config.json`), else — for `ghcr.io` only — `GITHUB_TOKEN`/`GH_TOKEN`. They are sent
  only to the registry's origin and the token realm its challenge names; a blob redirect to
  another origin gets no `Authorization` (`HttpClient` drops it once a redirect chain leaves its
  first origin), and a challenge from any origin but the registry's (a redirect target, an upload
  `Location`) is never answered (`_asked`). Credentials and tokens live in memory for one
  command: never printed, logged or stored.

Scheme: a loopback host (127.0.0.0/8, localhost, ::1) is reached over http://, every other
host over https:// (SPEC 5.1's rule for plain http).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urljoin

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.net.fetcher import FetchError
from pkgmgr.net.http import is_loopback_host, origin, redact_url

if TYPE_CHECKING:
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.net.fetcher import Fetcher
    from pkgmgr.net.http import SmallResponse
    from pkgmgr.progress import Reporter

MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
ARTIFACT_TYPE = "application/vnd.pkgmgr.extension.v1"
LAYER_MEDIA_TYPE = "application/vnd.pkgmgr.extension.v1.tar+gzip"
EMPTY_BLOB = b"{}"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
MAX_TOKEN_BYTES = 1024 * 1024
MAX_DOCKER_CONFIG_BYTES = 4 * 1024 * 1024
GHCR = "ghcr.io"

_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(?::[0-9]{1,5})?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REPOSITORY = rf"{_COMPONENT}(?:/{_COMPONENT})*"
_REF = re.compile(
    rf"oci://(?P<host>{_HOST})/(?P<repo>{_REPOSITORY})"
    r"(?:@sha256:(?P<digest>[0-9a-f]{64})|:(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))"
)
_TOKEN_CHARS = re.compile(r"[\x21-\x7e]{1,8192}")


@dataclass(frozen=True)
class OciRef:
    """A parsed `oci://` reference: `digest` (hex, no prefix) or `tag`, never both."""

    host: str
    repository: str
    digest: str | None = None
    tag: str | None = None

    @property
    def base(self) -> str:
        """`http(s)://host[:port]` of the registry's API."""
        hostname = self.host.rsplit(":", 1)[0] if not self.host.endswith("]") else self.host
        scheme = "http" if is_loopback_host(hostname.strip("[]")) else "https"
        return f"{scheme}://{self.host}"

    def api(self, kind: str, reference: str) -> str:
        return f"{self.base}/v2/{self.repository}/{kind}/{quote(reference, safe=':')}"

    def with_digest(self, digest: str) -> str:
        return f"oci://{self.host}/{self.repository}@sha256:{digest}"

    def __str__(self) -> str:
        return self.with_digest(self.digest) if self.digest else f"oci://{self.host}/{self.repository}:{self.tag}"


def is_oci_url(url: str) -> bool:
    return isinstance(url, str) and url[:6].lower() == "oci://"


def parse_oci(url: str, *, tag_ok: bool = False) -> OciRef:
    """Parse `oci://HOST[:PORT]/REPOSITORY@sha256:<hex>` (or `:TAG` when `tag_ok`). Raises
    `PkgmgrError(usage)` saying what is wrong; callers reading an index re-raise as
    `invalid_index`."""
    problem = oci_url_problem(url, tag_ok=tag_ok)
    if problem is not None:
        raise PkgmgrError(f"{redact_url(url)!r} {problem}", code=Code.USAGE)
    match = _REF.fullmatch(url)
    assert match is not None
    return OciRef(match["host"].lower(), match["repo"], match["digest"], match["tag"])


def oci_url_problem(url: str, *, tag_ok: bool = False) -> str | None:
    """Why `url` is not an acceptable oci:// reference, or None (used by index validation)."""
    match = _REF.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        if isinstance(url, str) and re.search(r"@sha256:(?=[0-9a-fA-F]{64}$)[0-9a-f]*[A-F]", url):
            return "must name its digest in lower-case hex (oci://HOST[:PORT]/REPOSITORY@sha256:<hex>)"
        return ("is not an OCI reference oci://HOST[:PORT]/REPOSITORY@sha256:<digest> (lower-case repository "
                "path components)")
    if match["tag"] is not None and not tag_ok:
        return ("names a tag; an entry records the manifest digest (oci://HOST/REPOSITORY@sha256:<hex>), which "
                "'registry publish --push' resolves and records")
    port = match["host"].rsplit(":", 1)[1] if re.search(r":[0-9]+$", match["host"]) else None
    if port is not None and not 0 < int(port) < 65536:
        return "has an invalid port"
    return None


# --------------------------------------------------------------------------- credentials


ENV_PREFIX = "PKGMGR_OCI_AUTH_"
# a host name whose labels are letters and digits with inner hyphens, then an optional port: for
# these the encoding of `env_name` is injective (a run of one `_` is a dot, of an even number
# 2k is k hyphens, of three is the colon before the port — no other run can occur)
_NAMEABLE_HOST = re.compile(r"[a-z0-9]+(?:-+[a-z0-9]+)*(?:\.[a-z0-9]+(?:-+[a-z0-9]+)*)*(?::[0-9]{1,5})?")


def env_name(host: str) -> str | None:
    """`PKGMGR_OCI_AUTH_<HOST>` for registry `host[:port]` (SPEC 5.6): upper-cased, `.` -> `_`,
    `-` -> `__`, `:` -> `___` (`127.0.0.1:5000` -> `PKGMGR_OCI_AUTH_127_0_0_1___5000`), so two
    hosts never share a name. None for a host that no name can denote alone (an IPv6 literal, a
    label that starts or ends with `-` or is empty): its credentials come only from Docker's
    config."""
    host = host.lower()
    if not _NAMEABLE_HOST.fullmatch(host):
        return None
    name, _, port = host.partition(":")
    return ENV_PREFIX + name.upper().replace("-", "__").replace(".", "_") + (f"___{port}" if port else "")


def legacy_env_name(host: str) -> str:
    """The spelling before SPEC 5.6 made the names injective (every non-alphanumeric as `_`):
    `a-b.example`, `a.b.example` and `a.b.example:5000`... shared one. Never read for credentials."""
    return ENV_PREFIX + re.sub(r"[^A-Z0-9]", "_", host.upper())


def legacy_warning(host: str, env: Mapping[str, str] | None = None) -> str | None:
    """A warning when the old spelling of `host`'s variable is set and is not also its name
    today (for a host of letters, digits and dots the two spellings are one)."""
    env = os.environ if env is None else env
    old, new = legacy_env_name(host), env_name(host)
    if old == new or not env.get(old) or (new is not None and env.get(new)):
        return None
    instead = f"set {new} instead" if new is not None else f"log in with 'docker login {host}' instead"
    return (f"{old} is not used for the credentials of {host}: since a name must denote one host, "
            f"'.' is written '_', '-' '__' and ':' '___'; {instead}")


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str
    source: str  # where they came from, as it may be shown (a variable's or file's name)

    def __repr__(self) -> str:
        return f"Credentials(username={self.username!r}, password='***', source={self.source!r})"

    def basic(self) -> str:
        raw = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(raw).decode("ascii")


def _safe(value: str) -> bool:
    return all(0x20 <= ord(ch) < 0x7F for ch in value)


def find_credentials(host: str, env: Mapping[str, str] | None = None, home: Path | None = None) -> Credentials | None:
    """The credentials for registry `host` (host[:port], lower-case): the environment
    variable, else Docker's config, else GITHUB_TOKEN for ghcr.io. Raises `invalid_config` for
    a malformed variable or config entry (naming it, never its value)."""
    env = os.environ if env is None else env
    name = env_name(host)
    value = env.get(name, "") if name is not None else ""
    if name is not None and value:
        user, sep, password = value.partition(":")
        if not sep or not user or not password or not _safe(value):
            raise PkgmgrError(f"{name} must be user:password (printable ASCII)", code=Code.INVALID_CONFIG,
                              details={"variable": name})
        return Credentials(user, password, name)
    docker = _docker_credentials(host, env, home)
    if docker is not None:
        return docker
    if host == GHCR:
        saved = {k: v for k, v in env.items() if k in ("GITHUB_TOKEN", "GH_TOKEN")}
        token = _env_token(saved)
        if token:
            user = env.get("GITHUB_ACTOR", "").strip() or "pkgmgr"
            return Credentials(user, token, "GITHUB_TOKEN" if saved.get("GITHUB_TOKEN", "").strip() else "GH_TOKEN")
    return None


def _env_token(env: Mapping[str, str]) -> str | None:
    for key in ("GITHUB_TOKEN", "GH_TOKEN"):
        value = env.get(key, "").strip()
        if value:
            return value
    return None


def _docker_credentials(host: str, env: Mapping[str, str], home: Path | None) -> Credentials | None:
    directory = env.get("DOCKER_CONFIG")
    base = Path(directory) if directory else (home if home is not None else Path.home()) / ".docker"
    path = base / "config.json"
    shown = "$DOCKER_CONFIG/config.json" if directory else "~/.docker/config.json"
    from pkgmgr.documents import DocumentError, read_json_file
    from pkgmgr.fsutil import NotRegularFile

    try:  # the bounded primitive and decoder: a FIFO is refused without blocking, a bomb is an error
        data = read_json_file(path, max_bytes=MAX_DOCKER_CONFIG_BYTES, follow_symlinks=True)
    except NotRegularFile as exc:
        if exc.kind == "a directory":
            return None
        raise PkgmgrError(f"{shown} is {exc.kind}, not a regular file", code=Code.INVALID_CONFIG,
                          details={"file": shown}) from None
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    except DocumentError as exc:
        raise PkgmgrError(f"{shown}: {exc.message}", code=Code.INVALID_CONFIG, details={"file": shown}) from None
    if not isinstance(data, dict):
        raise PkgmgrError(f"{shown}: not a JSON object", code=Code.INVALID_CONFIG, details={"file": shown})
    auths = data.get("auths")
    if not isinstance(auths, dict):
        return None
    for key, item in auths.items():
        if not isinstance(key, str) or _auth_key_host(key) != host or not isinstance(item, dict):
            continue
        user, password = item.get("username"), item.get("password")
        encoded = item.get("auth")
        if isinstance(encoded, str) and encoded:
            try:
                user, sep, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
            except ValueError:
                sep = ""
            if not sep:
                raise PkgmgrError(f"{shown}: auths[{key!r}].auth is not base64 of user:password",
                                  code=Code.INVALID_CONFIG, details={"file": shown})
        if isinstance(user, str) and isinstance(password, str) and user and password:
            if not _safe(user) or not _safe(password):
                raise PkgmgrError(f"{shown}: auths[{key!r}] holds non-printable characters", code=Code.INVALID_CONFIG,
                                  details={"file": shown})
            return Credentials(user, password, shown)
    return None


def _auth_key_host(key: str) -> str:
    """`https://ghcr.io/v1/` and `ghcr.io` both name host `ghcr.io` (as Docker matches them)."""
    text = key.strip().lower()
    text = re.sub(r"^[a-z]+://", "", text)
    return text.split("/", 1)[0]


# --------------------------------------------------------------------------- challenges


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """`Bearer realm="...",service="...",scope="..."` -> ("bearer", {...}); ("", {}) if none."""
    scheme, _, rest = header.strip().partition(" ")
    params = {m[1].lower(): m[2] if m[2] is not None else m[3]
              for m in re.finditer(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"([^"]*)"|([^\s,"]+))', rest)}
    return scheme.lower(), params


class OciClient:
    """The distribution API over one `Fetcher`, with per-command credentials and tokens.

    Safe to share between threads (tokens are cached under a lock). `env` and `home` exist for
    tests; by default the process environment and the user's home directory."""

    def __init__(self, http: Fetcher, *, env: Mapping[str, str] | None = None, home: Path | None = None,
                 warn: Callable[[str], None] | None = None) -> None:
        self.http = http
        self._env = env
        self._home = home
        self._warn = warn
        self._lock = threading.Lock()
        self._auth: dict[tuple[str, str], str] = {}  # (host, scope) -> Authorization value
        self._secrets: list[str] = []

    def __repr__(self) -> str:
        return f"OciClient(hosts={sorted({h for h, _ in self._auth})!r})"

    # ------------------------------------------------------------------ pull

    def fetch(
        self,
        url: str,
        *,
        sha256: str,
        size: int,
        cache: DownloadCache,
        reporter: Reporter,
        key: str,
        label: str,
        max_bytes: int,
    ) -> Path:
        """The archive an entry's `oci://…@sha256:` url names, verified against the entry's
        `sha256` and `size` and cached. A cached archive with that sha256 is returned without
        contacting the registry. Raises `auth_required`, `invalid_archive` (a manifest of the
        wrong shape), `metadata_mismatch` (its layer is not the entry's), `checksum_mismatch`,
        `archive_too_large`, `not_found` and the network codes."""
        ref = parse_oci(url)
        cached = cache.get(sha256)
        if cached is not None and cached.stat().st_size == size:
            return cached
        layer = self.resolve(ref, label=label)
        if layer.digest != sha256.lower() or layer.size != size:
            raise PkgmgrError(
                f"{label}: the OCI artifact {url} holds layer sha256:{layer.digest} ({layer.size} bytes), but the "
                f"registry entry says sha256:{sha256} ({size} bytes)",
                code=Code.METADATA_MISMATCH,
                details={"url": url, "layer_digest": layer.digest, "layer_size": layer.size,
                         "sha256": sha256, "size": size},
            )
        blob = ref.api("blobs", f"sha256:{layer.digest}")
        scope = f"repository:{ref.repository}:pull"

        def download(headers: dict[str, str]) -> Path:
            return self.http.download(blob, expected_sha256=sha256, expected_size=size, cache=cache,
                                      reporter=reporter, key=key, label=label, max_bytes=max_bytes,
                                      extra_headers=headers).path

        return self._authorized(ref, scope, download, label)

    def resolve(self, ref: OciRef, *, label: str) -> Layer:
        """The single layer of the manifest `ref` names, its shape checked (`invalid_archive`)."""
        assert ref.digest is not None
        scope = f"repository:{ref.repository}:pull"
        url = ref.api("manifests", f"sha256:{ref.digest}")

        def get(headers: dict[str, str]) -> SmallResponse:
            return self.http.get_small(url, max_bytes=MAX_MANIFEST_BYTES, accept=MANIFEST_MEDIA_TYPE,
                                       extra_headers=headers)

        response = self._authorized(ref, scope, get, label)
        body = response.body or b""
        actual = hashlib.sha256(body).hexdigest()
        if actual != ref.digest:
            raise PkgmgrError(f"{label}: the registry served a manifest whose sha256 is {actual}, not the "
                              f"{ref.digest} that {ref} names", code=Code.CHECKSUM_MISMATCH,
                              details={"url": str(ref), "actual": actual})
        return parse_manifest(body, str(ref), label=label)

    # ------------------------------------------------------------------ push

    def push(self, ref: OciRef, archive: Path, *, sha256: str, size: int, title: str) -> str:
        """Push `archive` as pkgmgr's artifact under `ref`'s tag; return the digest URL.
        Raises `auth_required`, `http_error` and the network codes."""
        assert ref.tag is not None
        scope = f"repository:{ref.repository}:pull,push"
        from pkgmgr.fsutil import read_regular

        data = read_regular(archive, limit=size, follow_symlinks=True)  # at most size + 1 bytes; a FIFO refused
        if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
            raise PkgmgrError(f"{archive}: changed while being published", code=Code.CHECKSUM_MISMATCH)
        empty = hashlib.sha256(EMPTY_BLOB).hexdigest()
        self._push_blob(ref, scope, empty, EMPTY_BLOB)
        self._push_blob(ref, scope, sha256, data)
        manifest = render_manifest(sha256, size, title=title)
        url = ref.api("manifests", ref.tag)
        headers = {"Content-Type": MANIFEST_MEDIA_TYPE}

        def put(auth: dict[str, str]) -> SmallResponse:
            return self.http.send("PUT", url, ok=frozenset({201}), body=manifest, headers={**headers, **auth})

        response = self._authorized(ref, scope, put)
        digest = hashlib.sha256(manifest).hexdigest()
        answered = response.headers.get("Docker-Content-Digest")
        if answered and answered.strip().lower() != f"sha256:{digest}":
            raise PkgmgrError(f"{ref}: the registry stored the manifest as {answered}, not sha256:{digest}",
                              code=Code.HTTP_ERROR, details={"url": str(ref)})
        return ref.with_digest(digest)

    def _push_blob(self, ref: OciRef, scope: str, digest: str, data: bytes) -> None:
        blob = ref.api("blobs", f"sha256:{digest}")

        def head(auth: dict[str, str]) -> SmallResponse:
            return self.http.send("HEAD", blob, ok=frozenset({200, 404}), headers=auth)

        if self._authorized(ref, scope, head).status == 200:
            return

        def start(auth: dict[str, str]) -> SmallResponse:
            return self.http.send("POST", f"{ref.base}/v2/{ref.repository}/blobs/uploads/", ok=frozenset({202}),
                                  headers={"Content-Length": "0", **auth})

        location = self._authorized(ref, scope, start).headers.get("Location")
        if not location:
            raise PkgmgrError(f"{ref}: the registry started an upload without a Location", code=Code.HTTP_ERROR,
                              details={"url": str(ref)})
        target = urljoin(ref.base + "/", location.strip())
        target += ("&" if "?" in target else "?") + urlencode({"digest": f"sha256:{digest}"})
        same_origin = origin(target) == origin(ref.base)

        def put(auth: dict[str, str]) -> SmallResponse:
            headers = {"Content-Type": "application/octet-stream", **(auth if same_origin else {})}
            return self.http.send("PUT", target, ok=frozenset({201}), body=data, headers=headers)

        self._authorized(ref, scope, put)

    # ------------------------------------------------------------------ auth

    def _authorized(self, ref: OciRef, scope: str, call: Any, label: str = "") -> Any:
        """Run `call(headers)`; on a 401 with a challenge, authenticate once and run it again.
        `label` (what is being fetched) starts the message of an `auth_required`."""
        with self._lock:
            known = self._auth.get((ref.host, scope))
        try:
            return self._scrubbed(call, {"Authorization": known} if known else {})
        except PkgmgrError as error:
            challenge = error.details.get("www_authenticate")
            if error.code != Code.AUTH_REQUIRED or not isinstance(error, FetchError) or error.status != 401 \
                    or not challenge:
                raise
            if not self._asked(ref, error):
                raise self._foreign(ref, error, label) from None
            value = self._answer(ref, scope, challenge, error, label)
        with self._lock:
            self._auth[(ref.host, scope)] = value
        try:
            return self._scrubbed(call, {"Authorization": value})
        except PkgmgrError as error:
            if error.code == Code.AUTH_REQUIRED:
                if isinstance(error, FetchError) and not self._asked(ref, error):
                    raise self._foreign(ref, error, label) from None
                raise self._refused(ref, error, label) from None
            raise

    @staticmethod
    def _asked(ref: OciRef, error: FetchError) -> bool:
        """Whether the refusal came from the registry `ref` names (its origin): a challenge is
        answered only there. A 401 from another origin — where a blob download was redirected,
        or an upload `Location` pointed — is never answered with the registry's credentials
        (nor sent to the realm that origin names), so no token another origin minted is cached
        under the registry or sent to it (SPEC 5.6)."""
        return origin(error.url) == origin(ref.base)

    def _foreign(self, ref: OciRef, error: FetchError, label: str) -> PkgmgrError:
        where = origin(error.url)
        message = (f"{ref}: {where}, where the registry sent the request, asks for authentication; pkgmgr "
                   f"answers only the challenge of the registry itself ({origin(ref.base)}), with its credentials")
        if label:
            message = f"{label}: {message}"
        return PkgmgrError(message, code=Code.AUTH_REQUIRED,
                           hint="the registry must serve its blobs (or accept uploads) without a second login; "
                                "report it to the registry's operators",
                           details={"url": str(ref), "origin": where, "status": error.status})

    def _credentials(self, host: str) -> Credentials | None:
        found = find_credentials(host, self._env, self._home)
        if found is None or found.source != env_name(host):
            warning = legacy_warning(host, self._env)
            if warning is not None and self._warn is not None:
                self._warn(warning)
        return found

    def _answer(self, ref: OciRef, scope: str, challenge: str, error: PkgmgrError, label: str) -> str:
        scheme, params = parse_challenge(challenge)
        credentials = self._credentials(ref.host)
        if credentials is not None:
            self._remember_secret(credentials.password)
        if scheme == "basic":
            if credentials is None:
                raise self._refused(ref, error, label)
            return credentials.basic()
        if scheme != "bearer" or not params.get("realm"):
            raise PkgmgrError(f"{ref}: the registry asks for an authentication pkgmgr does not speak "
                              f"({challenge[:80]})", code=Code.AUTH_REQUIRED, details={"url": str(ref)})
        realm = params["realm"]
        query = {"service": params["service"]} if params.get("service") else {}
        query["scope"] = params.get("scope") or scope
        url = realm + ("&" if "?" in realm else "?") + urlencode(query)
        headers = {"Authorization": credentials.basic()} if credentials is not None else {}
        try:
            response = self._scrubbed(lambda h: self.http.get_small(url, max_bytes=MAX_TOKEN_BYTES,
                                                                    accept="application/json", extra_headers=h),
                                      headers)
        except PkgmgrError as failure:
            if failure.code == Code.USAGE:  # the realm's URL is refused by the URL policy
                raise PkgmgrError(f"{ref}: the registry names a token realm pkgmgr will not send credentials to "
                                  f"({failure.message})", code=Code.AUTH_REQUIRED, details={"url": str(ref)}) from None
            if failure.code == Code.AUTH_REQUIRED:
                raise self._refused(ref, failure, label) from None
            raise
        token = _token_of(response.body or b"")
        if token is None:
            raise PkgmgrError(f"{ref}: the token realm {redact_url(realm)} answered without a usable token",
                              code=Code.AUTH_REQUIRED, details={"url": str(ref)})
        self._remember_secret(token)
        return f"Bearer {token}"

    def _refused(self, ref: OciRef, error: PkgmgrError, label: str = "") -> PkgmgrError:
        credentials = self._credentials(ref.host)
        if credentials is None:
            name = env_name(ref.host)
            hint = ((f"set {name}=user:password, or log in" if name is not None else "log in")
                    + f" with 'docker login {ref.host}'" + (" (or set GITHUB_TOKEN)" if ref.host == GHCR else ""))
            message = f"{ref}: the registry requires authentication and no credentials are configured"
        else:
            hint = f"check the credentials from {credentials.source}: the registry refused them"
            message = f"{ref}: the registry refused the credentials from {credentials.source}"
        if label:
            message = f"{label}: {message}"
        return PkgmgrError(message, code=Code.AUTH_REQUIRED, hint=hint,
                           details={"url": str(ref), "status": error.details.get("status")})

    def _remember_secret(self, value: str) -> None:
        with self._lock:
            if value and value not in self._secrets:
                self._secrets.append(value)

    def _scrubbed(self, call: Any, headers: dict[str, str]) -> Any:
        """`call(headers)`, with any credential or token removed from an error's text."""
        try:
            return call(headers)
        except PkgmgrError as error:
            with self._lock:
                secrets = list(self._secrets)
            for secret in secrets:
                if secret in error.message:
                    error.message = error.message.replace(secret, "***")
                    error.args = (error.message,)
            raise


def _token_of(body: bytes) -> str | None:
    from pkgmgr.documents import DocumentError, decode_json

    try:
        data = decode_json(body, max_bytes=MAX_TOKEN_BYTES)
    except DocumentError:
        return None
    if not isinstance(data, dict):
        return None
    for key in ("token", "access_token"):
        value = data.get(key)
        if isinstance(value, str) and _TOKEN_CHARS.fullmatch(value):
            return value
    return None


# --------------------------------------------------------------------------- manifests


@dataclass(frozen=True)
class Layer:
    digest: str  # hex, no prefix
    size: int


def parse_manifest(body: bytes, shown: str, *, label: str) -> Layer:
    """The single pkgmgr layer of an artifact manifest. Raises `invalid_archive` naming what
    is wrong (not JSON, not an OCI image manifest, another artifact type, not exactly one layer,
    a layer of another media type)."""

    def bad(why: str) -> PkgmgrError:
        return PkgmgrError(f"{label}: {shown} is not a pkgmgr extension artifact: {why}", code=Code.INVALID_ARCHIVE,
                           details={"url": shown})

    from pkgmgr.documents import DocumentError, decode_json

    try:
        doc = decode_json(body, max_bytes=MAX_MANIFEST_BYTES)
    except DocumentError as exc:
        raise bad(f"its manifest is not JSON pkgmgr reads ({exc.message})") from None
    if not isinstance(doc, dict):
        raise bad("its manifest is not a JSON object")
    if doc.get("schemaVersion") != 2 or doc.get("mediaType", MANIFEST_MEDIA_TYPE) != MANIFEST_MEDIA_TYPE:
        raise bad(f"the manifest is not an OCI image manifest ({MANIFEST_MEDIA_TYPE}, schemaVersion 2)")
    if not isinstance(doc.get("config"), dict):
        raise bad("the manifest has no config descriptor")
    artifact = doc.get("artifactType")
    if artifact != ARTIFACT_TYPE:
        raise bad(f"artifactType is {artifact!r}, expected {ARTIFACT_TYPE!r}")
    layers = doc.get("layers")
    if not isinstance(layers, list) or len(layers) != 1:
        count = len(layers) if isinstance(layers, list) else 0
        raise bad(f"it has {count} layers; a pkgmgr artifact has exactly one")
    layer = layers[0]
    if not isinstance(layer, dict) or layer.get("mediaType") != LAYER_MEDIA_TYPE:
        media = layer.get("mediaType") if isinstance(layer, dict) else None
        raise bad(f"its layer's media type is {media!r}, expected {LAYER_MEDIA_TYPE!r}")
    digest, size = layer.get("digest"), layer.get("size")
    match = re.fullmatch(r"sha256:([0-9a-f]{64})", digest) if isinstance(digest, str) else None
    if match is None or not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise bad("its layer has no sha256 digest and size")
    return Layer(match[1], size)


def render_manifest(sha256: str, size: int, *, title: str) -> bytes:
    """The artifact manifest of one archive (deterministic: the same archive, the same digest)."""
    doc = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": ARTIFACT_TYPE,
        "config": {"mediaType": EMPTY_MEDIA_TYPE, "digest": f"sha256:{hashlib.sha256(EMPTY_BLOB).hexdigest()}",
                   "size": len(EMPTY_BLOB)},
        "layers": [{"mediaType": LAYER_MEDIA_TYPE, "digest": f"sha256:{sha256}", "size": size,
                    "annotations": {"org.opencontainers.image.title": title}}],
    }
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def push_archive(client: OciClient, target: str, archive: Path, *, sha256: str, size: int, title: str) -> str:
    """`registry publish --push oci://HOST[:PORT]/REPOSITORY:TAG`: push with `client` (the
    session's, `Session.oci`) and return the digest URL to record. Raises `usage` for a target
    that is not a tag reference."""
    ref = parse_oci(target, tag_ok=True)
    if ref.tag is None:
        raise PkgmgrError(f"--push {target}: name a tag (oci://HOST/REPOSITORY:TAG); the digest is what pkgmgr "
                          "records", code=Code.USAGE)
    if not title.endswith((".tar.gz", ".tgz")):
        raise PkgmgrError(f"--push {target}: only .tar.gz archives are pushed (the artifact's layer is "
                          f"{LAYER_MEDIA_TYPE}); pack the extension with 'pkgmgr ext pack DIR'", code=Code.USAGE)
    return client.push(ref, archive, sha256=sha256, size=size, title=title)


__all__ = ["OciClient", "OciRef", "find_credentials", "is_oci_url", "oci_url_problem", "parse_oci", "push_archive"]
