"""Where a registry's files come from (SPEC 5.2): a local directory, a static http(s) base
URL, or `github:OWNER/REPO[@REF]` read at one commit per operation.

A reader answers two questions: the bytes of a file of the registry (None when it does not
exist: a name the registry does not list), and where a version's `url` points (relative urls
resolve against the registry's own base). HTTP reads are cached with their validators and
revalidated with conditional requests — a fetched body only once the caller `keep`s it, after
every check that decides whether it is used; offline, only the cache answers.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar
from urllib.parse import urljoin, urlsplit

from pkgmgr.errors import Code, PkgmgrError, Problem, ValidationFailed
from pkgmgr.fsutil import user_path
from pkgmgr.registry.cache import COMMIT_FILE, CachedFile, FileCache
from pkgmgr.registry.index_format import MIB, read_capped

if TYPE_CHECKING:
    from pkgmgr.registry.session import Session

T = TypeVar("T")
# GitHub's own rules (as `refs.parse_ref`): owners are letters, digits and inner '-'; a
# repository is never '.' or '..'
_GITHUB_SOURCE = re.compile(r"^github:([A-Za-z0-9][A-Za-z0-9-]{0,38})/(?!\.{1,2}(?:@|$))([A-Za-z0-9_.-]{1,100})"
                            r"(?:@([^\s@]+))?$")
DEFAULT_REF = "main"


@dataclass(frozen=True)
class SourceSpec:
    """A parsed registry SOURCE. `text` is its canonical form: the key of the cache and of the
    rollback memory, and what `registry list` shows."""

    kind: str  # dir | http | github
    text: str
    path: Path | None = None
    base_url: str | None = None
    owner: str | None = None
    repo: str | None = None
    ref: str | None = None


def parse_source(text: str, *, cwd: Path | None = None) -> SourceSpec:
    """Classify a registry source. Raises `usage` for something unusable."""
    text = (text or "").strip()
    if not text:
        raise PkgmgrError("a registry source is required", code=Code.USAGE)
    if text.startswith("github:"):
        match = _GITHUB_SOURCE.fullmatch(text)
        if not match:
            raise PkgmgrError(f"{text!r}: expected github:OWNER/REPO[@REF]", code=Code.USAGE)
        owner, repo, ref = match.groups()
        ref = ref or DEFAULT_REF
        return SourceSpec("github", f"github:{owner}/{repo}@{ref}", owner=owner, repo=repo, ref=ref)
    if "://" in text:
        from pkgmgr.redact import redact_url

        shown = redact_url(text)  # never the credentials it may carry
        try:
            parts = urlsplit(text)
            host = parts.hostname
        except ValueError as exc:
            raise PkgmgrError(f"{shown!r} is not a valid URL: {exc}", code=Code.USAGE) from None
        if parts.scheme not in ("https", "http") or not host:
            raise PkgmgrError(f"{shown!r}: a registry URL must be https:// (or http:// on loopback)", code=Code.USAGE)
        if "@" in parts.netloc or parts.query or parts.fragment:
            raise PkgmgrError(f"{shown!r}: a registry URL may not carry credentials, a query or a fragment",
                              code=Code.USAGE)
        base = text if text.endswith("/") else text + "/"
        return SourceSpec("http", base, base_url=base)
    path = user_path(text)
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    path = Path(*path.parts)  # normalise separators, keep symlinks as written
    return SourceSpec("dir", str(path.absolute()), path=path.absolute())


@dataclass(frozen=True)
class CachedParse(Generic[T]):
    """A parse whose validated result a caching reader keeps beside the body, as JSON: a body
    the server confirms with a 304 (or a cached one read offline) is then not parsed again.
    `key` names what the result depends on besides the body (the parser, its format, the name
    looked up); `load` must raise ValueError (or TypeError, KeyError) for anything but what
    `dump` writes, and then the body is parsed instead. Other readers just call it."""

    parse: Callable[[bytes], T]
    key: str
    dump: Callable[[T], Any]
    load: Callable[[Any], T]

    def __call__(self, raw: bytes) -> T:
        return self.parse(raw)


@dataclass(frozen=True)
class Location:
    """Where a version's archive is: a URL, or a file of a local-directory registry."""

    url: str
    path: Path | None = None


class Reader:
    """Reads the files of one registry for one operation."""

    spec: SourceSpec
    insecure: bool = False

    def read(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        """`parse(bytes)` of the file `rel`, or None when the registry has no such file."""
        raise NotImplementedError

    def keep(self, rel: str) -> None:
        """Cache the body of `rel` fetched by this operation's `read`, with its validators: call
        it once the parsed file passed every check that decides whether it is used (SPEC 5.4)."""

    def prune(self, folder: str, stale: Callable[[str], bool]) -> None:
        """Drop the cached files of `folder` (directly in it) whose name `stale` says no read will
        need again. A reader that caches nothing has nothing to drop."""

    def locate(self, url: str) -> Location:
        raise NotImplementedError

    def describe(self) -> str:
        return self.spec.text

    @classmethod
    def check_allowed(cls, spec: SourceSpec, *, insecure: bool) -> None:
        """Refuse a source the policy does not let pkgmgr read (SPEC 5.1/5.2); raises
        `net.http.UrlNotAllowed`. Every source kind but plain http is allowed as it is."""


class DirReader(Reader):
    """A registry directory on this machine."""

    def __init__(self, spec: SourceSpec, session: Session | None = None, cache: FileCache | None = None, *,
                 insecure: bool = False) -> None:
        assert spec.path is not None
        self.spec = spec
        self.root = spec.path

    def read(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        path = self.root / rel
        if not os.path.lexists(path):  # a dangling link is no absence: read_capped refuses it
            if not self.root.is_dir():
                raise PkgmgrError(f"registry directory {self.root} does not exist", code=Code.NOT_FOUND)
            return None
        return parse(read_capped(path, cap, rel, root=self.root))

    def locate(self, url: str) -> Location:
        if urlsplit(url).scheme:
            return Location(url)
        root = self.root.resolve()
        path = (root / url).resolve()
        if not path.is_relative_to(root):
            raise PkgmgrError(f"registry {self.root}: archive url {url!r} resolves outside the registry",
                              code=Code.INVALID_INDEX)
        return Location(str(path), path)


class CachingReader(Reader):
    """A reader of remote files: fresh bodies wait in `_fresh` until `keep` caches them."""

    def __init__(self, spec: SourceSpec, session: Session, cache: FileCache, *, insecure: bool) -> None:
        self.spec = spec
        self.session = session
        self.cache = cache
        self.insecure = insecure
        self._fresh: dict[str, CachedFile] = {}
        self._fresh_lock = threading.Lock()

    def _cached_read(self, rel: str, url: str, cap: int, parse: Callable[[bytes], T], *,
                     immutable: bool = False) -> T | None:
        with self._fresh_lock:
            self._fresh.pop(rel, None)  # only what this read fetched may be kept
        value, fresh = cached_read(self.session, self.cache, rel, url, cap, parse, insecure=self.insecure,
                                   immutable=immutable)
        if fresh is not None:
            with self._fresh_lock:
                self._fresh[rel] = fresh
        return value

    def keep(self, rel: str) -> None:
        with self._fresh_lock:
            fresh = self._fresh.pop(rel, None)
        if fresh is not None:
            self.cache.store(rel, fresh)

    def prune(self, folder: str, stale: Callable[[str], bool]) -> None:
        self.cache.prune(folder, stale)


class HttpReader(CachingReader):
    """Static files under a base URL."""

    def __init__(self, spec: SourceSpec, session: Session, cache: FileCache, *, insecure: bool) -> None:
        assert spec.base_url is not None
        super().__init__(spec, session, cache, insecure=insecure)

    def read(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        return self._cached_read(rel, urljoin(self.spec.base_url or "", rel), cap, parse)

    def locate(self, url: str) -> Location:
        return Location(urljoin(self.spec.base_url or "", url))

    @classmethod
    def check_allowed(cls, spec: SourceSpec, *, insecure: bool) -> None:
        """http:// only for loopback hosts or an --insecure registry (SPEC 5.1/5.2)."""
        from pkgmgr.net.http import check_url_allowed

        check_url_allowed(spec.base_url or "", insecure=insecure)


class GitHubReader(CachingReader):
    """A GitHub repository read at one commit: REF is resolved to a SHA once (a conditional
    request: an unchanged branch costs a 304), then files come from the raw host at that SHA.
    Files at a SHA never change, so a cached one is used without asking again."""

    def __init__(self, spec: SourceSpec, session: "Session", cache: FileCache, *, insecure: bool) -> None:
        super().__init__(spec, session, cache, insecure=insecure)
        self._sha: str | None = None
        self._lock = threading.Lock()

    @property
    def sha(self) -> str:
        with self._lock:
            if self._sha is None:
                self._sha = self._resolve()
            return self._sha

    def _resolve(self) -> str:
        owner, repo, ref = self.spec.owner or "", self.spec.repo or "", self.spec.ref or DEFAULT_REF
        remembered = self.cache.load_json(COMMIT_FILE) or {}
        if remembered.get("ref") != ref:
            remembered = {}
        if self.session.offline:
            sha = remembered.get("sha")
            if not isinstance(sha, str):
                raise offline_error(f"registry {self.spec.text}: the commit of {ref}")
            return sha
        known = remembered.get("sha") if isinstance(remembered.get("sha"), str) else None
        result = self.session.github.commit_sha(owner, repo, ref, etag=remembered.get("etag") if known else None)
        if result.not_modified and known:
            return known
        if result.sha is None:
            raise PkgmgrError(f"registry {self.spec.text}: GitHub answered 304 for an unknown commit",
                              code=Code.HTTP_ERROR)
        self.cache.store_json(COMMIT_FILE, {"ref": ref, "sha": result.sha, "etag": result.etag})
        return result.sha

    def file_url(self, rel: str) -> str:
        return self.session.github.raw_file_url(self.spec.owner or "", self.spec.repo or "", self.sha, rel)

    def read(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        return self._cached_read(rel, self.file_url(rel), cap, parse, immutable=True)

    def locate(self, url: str) -> Location:
        if urlsplit(url).scheme:
            return Location(url)
        return Location(self.file_url(url))

    def describe(self) -> str:
        return f"{self.spec.text} (commit {self._sha[:12]})" if self._sha else self.spec.text


class NamedRegistryError(PkgmgrError):
    """A reader's error whose message already names its registry (`registry NAME: ...`), which
    `Registry` therefore does not name a second time."""


def offline_error(what: str) -> PkgmgrError:
    return PkgmgrError(f"offline: {what} is not cached", code=Code.NETWORK_ERROR,
                       hint="run the command once without --offline to fill the cache")


def is_missing(error: PkgmgrError) -> bool:
    """A 404 from the server: the registry has no such file."""
    from pkgmgr.net.fetcher import FetchError

    return error.code == Code.NOT_FOUND or (isinstance(error, FetchError) and error.status == 404)


def cached_read(session: "Session", cache: FileCache, rel: str, url: str, cap: int, parse: Callable[[bytes], T],
                *, insecure: bool, immutable: bool = False) -> tuple[T | None, CachedFile | None]:
    """Read `url` through the cache: revalidated with If-None-Match/If-Modified-Since (a 304
    costs no body), offline from the cache only. Returns the parsed value and, for a body the
    server sent (and `parse` accepted), the `CachedFile` to store once the caller's own checks
    pass: nothing is cached here. An immutable file (at a commit) is used from the cache without
    asking, unless `registry refresh` marked it stale."""
    cached = cache.load(rel)
    if cached is not None and cached.url != url:
        cached = None
    if session.offline or (immutable and cached is not None and not cached.stale):
        if cached is None:
            raise offline_error(url)
        return _parse_cached(cached, parse, repair=not session.offline)
    try:
        response = session.http.get_small(
            url, etag=cached.etag if cached else None, last_modified=cached.last_modified if cached else None,
            max_bytes=cap, insecure=insecure,
        )
    except PkgmgrError as error:
        if is_missing(error):
            cache.forget(rel)
            return None, None
        if error.code == Code.ARCHIVE_TOO_LARGE:  # a registry file over its cap is a broken registry
            raise ValidationFailed([Problem(Code.INVALID_INDEX, rel, "", f"is larger than {cap // MIB} MiB")]) from None
        raise
    if response.status == 304:
        if cached is None:
            raise PkgmgrError(f"{url}: the server answered 304 to an unconditional request", code=Code.HTTP_ERROR)
        return _parse_cached(cached, parse)
    body: bytes = response.body or b""
    value = parse(body)
    parsed = (parse.key, parse.dump(value)) if isinstance(parse, CachedParse) else None
    return value, CachedFile(url, body, response.etag, response.last_modified, parsed=parsed)


def _parse_cached(cached: CachedFile, parse: Callable[[bytes], T], *,
                  repair: bool = True) -> tuple[T, CachedFile | None]:
    """The value of a cached body: its kept parse when there is a sound one for this `parse`,
    else the body parsed again — and then, for a `CachedParse` and unless `repair` is off
    (offline: the cache is only read), the parse to keep in its cache file (`keep` writes it, once
    the caller's checks passed, as for a fetched body)."""
    if not isinstance(parse, CachedParse):
        return parse(cached.body), None
    if cached.parsed is not None and cached.parsed[0] == parse.key:
        try:
            return parse.load(cached.parsed[1]), None
        except (ValueError, TypeError, KeyError):
            pass  # not what `dump` writes: parse the body
    value = parse(cached.body)
    if not repair or cached.stale:
        return value, None
    return value, replace(cached, parsed=(parse.key, parse.dump(value)))


# the one table from a source's kind (`SourceSpec.kind`) to its reader (a signed registry wraps its
# reader in `registry.signed.SignedReader`)
READERS: dict[str, type[Reader]] = {"dir": DirReader, "http": HttpReader, "github": GitHubReader}


def make_reader(spec: SourceSpec, session: "Session", cache: FileCache, *, insecure: bool) -> Reader:
    return READERS[spec.kind](spec, session, cache, insecure=insecure)  # type: ignore[call-arg]


def check_source_allowed(spec: SourceSpec, *, insecure: bool) -> None:
    """Refuse a source the policy does not let pkgmgr read (its reader's `check_allowed`)."""
    READERS[spec.kind].check_allowed(spec, insecure=insecure)
