"""Reading a signed registry (SPEC 5.4a): The Update Framework, verified by python-tuf's
`ngclient` — never re-implemented here.

`NetFetcher` is ngclient's `FetcherInterface` over pkgmgr's own network layer: the HTTP client
(caps while streaming, timeouts, minimum rate, deadline, retries, the token rule) and the
registry cache (ETags; offline, the cache answers). `SignedReader` wraps a registry's plain
reader: it refreshes the top-level metadata once per operation (root rotation, versions,
expiry, signatures), then serves every file the registry reads — `registry.toml`, entry
files, `index.json` — only as a TUF target whose length and hashes the signed targets
metadata names. Archives named by a relative url are targets too (`check_archive`); external
ones are covered by the entry's signed sha256 and size.

The trusted metadata lives per registry source in `<home>/tuf/<key>/` (ngclient's own
`metadata_dir`, holding `root.json` and `root_history/`). It is written only with metadata
ngclient accepted; a body the registry cache keeps is likewise stored only after the
verification that decides whether it is used. This module imports `tuf`: import it only when a
signed registry is read.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

from tuf.api import exceptions as tuf_errors
from tuf.api.metadata import Metadata, Root
from tuf.ngclient import FetcherInterface, Updater, UpdaterConfig

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError, Problem, ValidationFailed, io_error, path_error
from pkgmgr.redact import redact_url
from pkgmgr.registry.cache import CachedFile, FileCache, is_plain_rel
from pkgmgr.registry.index_format import MIB
from pkgmgr.registry.readers import GitHubReader, NamedRegistryError, Reader, cached_read, is_missing
from pkgmgr.registry.trustroot import (
    METADATA_DIR,
    ROOT_MAX_BYTES,
    SNAPSHOT_MAX_BYTES,
    TARGETS_MAX_BYTES,
    TIMESTAMP_MAX_BYTES,
    read_trusted,
    tuf_dir,
)

if TYPE_CHECKING:
    from pkgmgr.registry.session import Session

T = TypeVar("T")
# ngclient's own caps for metadata whose length nothing signed declares (root, timestamp)
CONFIG = UpdaterConfig(max_root_rotations=64, root_max_length=ROOT_MAX_BYTES, timestamp_max_length=TIMESTAMP_MAX_BYTES,
                       snapshot_max_length=SNAPSHOT_MAX_BYTES, targets_max_length=TARGETS_MAX_BYTES,
                       prefix_targets_with_hash=False)
# TUF metadata is a handful of levels deep: deeper is refused before anything parses it
METADATA_MAX_DEPTH = 32


LOCK_TIMEOUT = 60.0  # seconds another process may hold a registry's trusted metadata


class NetError(tuf_errors.DownloadError):
    """A pkgmgr network failure inside ngclient, carried out unchanged (`error`)."""

    def __init__(self, error: PkgmgrError) -> None:
        super().__init__(error.message)
        self.error = error


class NetFetcher(FetcherInterface):
    """ngclient's fetcher: files of one registry, through pkgmgr's HTTP client or from its
    directory. `download_bytes` passes ngclient's maximum length down as the HTTP client's cap,
    so an endless body stops at max + 1 bytes. Metadata bodies are revalidated with the
    registry cache's validators and kept there only when `keep()` is called after ngclient
    accepted them."""

    def __init__(self, session: Session, cache: FileCache, base_url: str, *, directory: Path | None,
                 insecure: bool, immutable: bool) -> None:
        self.session = session
        self.cache = cache
        self.base_url = base_url
        self.directory = directory
        self.insecure = insecure
        self.immutable = immutable
        self._fresh: dict[str, CachedFile] = {}
        self._lock = threading.Lock()

    def rel(self, url: str) -> str:
        """The registry file `url` names, relative to the registry. Raises NetError
        (registry_signature_invalid) for a URL outside the registry, and for a name that is no
        plain relative path once unquoted: ngclient quotes a delegated role's name into the URL
        (`..%2F..%2Fx.json`), and that name is used as a path of the registry cache, so a role
        named `../../../../x` would read, delete or write `x.json` outside it."""
        if not url.startswith(self.base_url):
            raise NetError(PkgmgrError(f"{redact_url(url)}: outside the registry", code=Code.REGISTRY_SIGNATURE_INVALID))
        rel = unquote(url[len(self.base_url):])
        if not is_plain_rel(rel):
            raise NetError(PkgmgrError(f"{rel!r} is not a file of the registry (its metadata names a file outside "
                                       "it)", code=Code.REGISTRY_SIGNATURE_INVALID))
        return rel

    def _fetch(self, url: str) -> Iterator[bytes]:
        return iter([self.get(url, CONFIG.targets_max_length, conditional=False)])

    @contextlib.contextmanager
    def download_file(self, url: str, max_length: int) -> Iterator[IO[bytes]]:
        with tempfile.TemporaryFile() as handle:
            handle.write(self.get(url, max_length, conditional=False))
            handle.seek(0)
            yield handle

    def download_bytes(self, url: str, max_length: int) -> bytes:
        """A metadata file (ngclient calls this for metadata only), refused when it is nested
        deeper than TUF metadata is (`METADATA_MAX_DEPTH`) before ngclient parses it."""
        body = self.get(url, max_length, conditional=True)
        _check_depth(body, self.rel(url))
        return body

    def get(self, url: str, max_length: int, *, conditional: bool) -> bytes:
        """The body at `url`, at most `max_length` bytes. Raises DownloadHTTPError(404) for a
        file the registry does not have, DownloadLengthMismatchError for a longer body and
        NetError for any other failure."""
        rel = self.rel(url)
        if self.directory is not None:
            return self._read_file(rel, max_length)
        if self.session.offline and rel.endswith(".root.json") and self.cache.load(rel) is None:
            raise tuf_errors.DownloadHTTPError(f"{rel}: not cached", 404)  # offline: no newer root known
        try:
            if conditional:
                body, fresh = cached_read(self.session, self.cache, rel, url, max_length, lambda raw: raw,
                                          insecure=self.insecure, immutable=self.immutable)
            else:
                response = self.session.http.get_small(url, max_bytes=max_length, insecure=self.insecure)
                body, fresh = response.body, None
        except ValidationFailed:  # cached_read's refusal of a body over the cap
            raise tuf_errors.DownloadLengthMismatchError(f"{rel} is longer than {max_length} bytes") from None
        except PkgmgrError as error:
            if error.code == Code.ARCHIVE_TOO_LARGE:
                raise tuf_errors.DownloadLengthMismatchError(f"{rel} is longer than {max_length} bytes") from None
            if is_missing(error):
                raise tuf_errors.DownloadHTTPError(f"{rel}: not found", 404) from None
            raise NetError(error) from None
        if body is None:
            raise tuf_errors.DownloadHTTPError(f"{rel}: not found", 404)
        if fresh is not None:
            with self._lock:
                self._fresh[rel] = fresh
        return body

    def _read_file(self, rel: str, max_length: int) -> bytes:
        assert self.directory is not None
        path = self.directory / rel
        root = self.directory.resolve()
        try:
            inside = path.resolve().is_relative_to(root)
        except (OSError, RuntimeError):
            inside = False
        if not inside:
            raise NetError(PkgmgrError(f"{rel} resolves outside the registry directory",
                                       code=Code.REGISTRY_SIGNATURE_INVALID))
        from pkgmgr.fsutil import NotRegularFile, read_regular

        try:
            data = read_regular(path, limit=max_length)  # never blocks on a FIFO, no final link (SPEC 10)
        except (FileNotFoundError, NotADirectoryError):  # not there (or gone since it was listed): as a 404
            raise tuf_errors.DownloadHTTPError(f"{rel}: not found", 404) from None
        except NotRegularFile as exc:
            raise NetError(PkgmgrError(f"registry file {rel} is {exc.kind}, not a regular file; registry files "
                                       "must be regular files", code=Code.INVALID_INDEX)) from None
        except OSError as exc:  # a local registry on a failing (or unreadable) disk: `io_error` naming the file
            raise NetError(io_error(exc, path) or PkgmgrError(
                f"registry file {path} cannot be read: {exc.strerror or exc}", code=Code.INVALID_INDEX,
                details={"path": str(path), "errno": errno.errorcode.get(exc.errno or 0, exc.errno)})) from None
        if len(data) > max_length:
            raise tuf_errors.DownloadLengthMismatchError(f"{rel} is longer than {max_length} bytes")
        return data

    def keep(self) -> None:
        """Cache the metadata bodies fetched so far (ngclient accepted them)."""
        with self._lock:
            fresh, self._fresh = self._fresh, {}
        for rel, item in fresh.items():
            self.cache.store(rel, item)


def _check_depth(body: bytes, rel: str) -> None:
    from pkgmgr.documents import DocumentError, check_json_depth

    try:
        check_json_depth(body.decode("utf-8", "replace"), METADATA_MAX_DEPTH)
    except DocumentError as exc:
        raise NetError(PkgmgrError(f"{rel} is not TUF metadata: {exc.message}",
                                   code=Code.REGISTRY_SIGNATURE_INVALID)) from None


class BoundedUpdater(Updater):
    """ngclient's Updater, reading its `metadata_dir` — pkgmgr's own state, which another process
    could have replaced — only through the bounded primitive (`trustroot.read_trusted`): a FIFO,
    a device, a link or an oversized file planted there is a file ngclient does not have (it
    fetches the metadata again and replaces it), never a read that hangs. The two methods are
    ngclient's only reads of that directory (`tests/registry/test_signed_state.py` holds tuf to
    it)."""

    def _load_local_metadata(self, rolename: str) -> bytes:
        from urllib import parse

        data = read_trusted(self._dir, f"{parse.quote(rolename, '')}.json")
        _check_local_depth(data)
        return data

    def _persist_file(self, filename: str, data: bytes) -> None:
        """ngclient's write of a metadata file it accepted, made durable (issue 27: a power cut
        after `registry add --root` left every file 0 bytes): temporary file, fsync, rename,
        directory fsync (`fsutil.atomic_write_bytes`). A file that already holds `data` (the
        trusted root every operation persists again) is not rewritten."""
        from pkgmgr.fsutil import atomic_write_bytes

        path = Path(filename)
        try:
            if read_trusted(path.parent, path.name) == data:
                return
        except OSError:
            pass  # not there, or not a regular file: written anew
        atomic_write_bytes(path, data, mode=0o600, temp_dir=Path(self._dir))

    def _update_root_symlink(self) -> None:
        """ngclient's `root.json` link to the trusted root in `root_history/`, replaced in one
        rename and made durable (ngclient removes it, then links it again: a power cut between
        left no trusted root); nothing is written when it names that root already."""
        from pkgmgr.fsutil import fsync_dir

        link = Path(self._dir, "root.json")
        current = os.path.join("root_history", f"{self._trusted_set.root.version}.root.json")
        with contextlib.suppress(OSError):
            if os.readlink(link) == current:
                return
        temporary = link.with_name(f".root.json.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        os.symlink(current, temporary)
        os.replace(temporary, link)
        fsync_dir(link.parent)

    def _load_root(self) -> None:
        """ngclient's `_load_root` (tuf 6, 7) with its read of `root_history/` bounded."""
        lower_bound = self._trusted_set.root.version + 1
        upper_bound = lower_bound + self.config.max_root_rotations
        try:
            for next_version in range(lower_bound, upper_bound):
                try:
                    data = read_trusted(self._dir, f"root_history/{next_version}.root.json")
                    _check_local_depth(data)
                    self._trusted_set.update_root(data)
                    continue
                except (OSError, tuf_errors.RepositoryError):
                    pass  # not kept locally, or not valid: ask the registry
                try:
                    data = self._download_metadata(Root.type, self.config.root_max_length, next_version)
                    self._trusted_set.update_root(data)
                    self._persist_root(next_version, data)
                except tuf_errors.DownloadHTTPError as exception:
                    if exception.status_code not in {403, 404}:
                        raise
                    break  # the current root is the newest
        finally:
            self._update_root_symlink()


def _check_local_depth(data: bytes) -> None:
    from pkgmgr.documents import DocumentError, check_json_depth

    try:
        check_json_depth(data.decode("utf-8", "replace"), METADATA_MAX_DEPTH)
    except DocumentError as exc:  # treated by ngclient as a file it does not have
        raise tuf_errors.RepositoryError(f"trusted metadata: {exc.message}") from None


def tuf_error(exc: BaseException, label: str) -> PkgmgrError:
    """The SPEC 5.4a code of an ngclient failure: rollback, expiry, else a bad signature."""
    if isinstance(exc, NetError):
        return exc.error
    if isinstance(exc, PkgmgrError):
        return exc
    details = {"registry": label, "reason": str(exc) or type(exc).__name__}
    if isinstance(exc, tuf_errors.ExpiredMetadataError):
        return NamedRegistryError(f"registry {label}: its signed metadata has expired ({exc})",
                                  code=Code.REGISTRY_EXPIRED, details=details,
                                  hint="the maintainers must re-sign it ('pkgmgr registry sign')")
    if isinstance(exc, tuf_errors.BadVersionNumberError):
        return NamedRegistryError(f"registry {label}: signed metadata older than what this client trusts ({exc}): "
                                  "a rollback or a mix of versions", code=Code.REGISTRY_ROLLBACK, details=details)
    if isinstance(exc, tuf_errors.DownloadHTTPError) and exc.status_code in (403, 404):
        return NamedRegistryError(f"registry {label}: its TUF metadata is missing ({exc}); a signed registry may "
                                  "not be served unsigned", code=Code.REGISTRY_SIGNATURE_INVALID, details=details)
    if isinstance(exc, tuf_errors.DownloadLengthMismatchError):
        return NamedRegistryError(f"registry {label}: signed metadata over its length ({exc})",
                                  code=Code.REGISTRY_SIGNATURE_INVALID, details=details)
    if isinstance(exc, tuf_errors.RepositoryError):
        return NamedRegistryError(f"registry {label}: signature verification failed ({exc})",
                                  code=Code.REGISTRY_SIGNATURE_INVALID, details=details)
    if isinstance(exc, tuf_errors.DownloadError):
        return NamedRegistryError(f"registry {label}: {exc}", code=Code.NETWORK_ERROR, details=details)
    if isinstance(exc, OSError):
        # a full, read-only, failing or forbidden disk under the trusted metadata: the disk's doing
        disk = io_error(exc) or path_error(exc)
        if disk is not None:
            return disk
        # anything else (a file or directory of it gone in a race): the trust it held cannot be used
        return NamedRegistryError(f"registry {label}: its trusted metadata cannot be used ({exc.strerror or exc}"
                                  + (f": {exc.filename}" if exc.filename else "") + ")",
                                  code=Code.REGISTRY_SIGNATURE_INVALID, details=details)
    return NamedRegistryError(f"registry {label}: invalid signed metadata ({exc})",
                              code=Code.REGISTRY_SIGNATURE_INVALID, details=details)


def base_url_of(reader: Reader) -> tuple[str, Path | None]:
    """(the base URL of the registry's files, its directory for a local registry)."""
    if reader.spec.kind == "dir":
        assert reader.spec.path is not None
        return reader.spec.path.absolute().as_uri() + "/", reader.spec.path.absolute()
    if isinstance(reader, GitHubReader):  # the raw host at the commit this operation reads
        url = reader.file_url(METADATA_DIR)
        return url[: -len(METADATA_DIR)], None
    return reader.spec.base_url or "", None


class SignedReader(Reader):
    """A registry's files as TUF targets (module docstring)."""

    def __init__(self, plain: Reader, session: Session, cache: FileCache, *, label: str,
                 bootstrap: bytes | None = None, trust_source: str | None = None, pin: str | None = None,
                 repair: str | None = None) -> None:
        self.plain = plain
        self.spec = plain.spec
        self.insecure = plain.insecure
        self.session = session
        self.cache = cache
        self.label = label
        self.bootstrap = bootstrap
        # a registry a workspace declares with root_sha256: its first root, fetched when none is trusted yet
        self.pin = pin
        # the hint for a trusted root lost or damaged: `trustroot.reestablish_hint`, as doctor says it,
        # for a configured registry; a declared one's pin re-establishes it on the next read
        self.repair = repair or "run the command again: the root_sha256 pkgmgr.toml pins re-establishes it"
        self.metadata_dir = tuf_dir(session.home, trust_source or plain.spec.text)
        self._updater: Updater | None = None
        self._fetcher: NetFetcher | None = None
        self._error: PkgmgrError | None = None
        self._fresh: dict[str, CachedFile] = {}
        self._lock = threading.RLock()

    def updater(self) -> Updater:
        """ngclient's Updater, refreshed (once per operation; a failure is raised again)."""
        with self._lock:
            if self._error is not None:
                raise self._error
            if self._updater is None:
                try:
                    self._updater = self._refreshed()
                except Exception as exc:  # noqa: BLE001 - every ngclient failure has a SPEC code
                    self._error = tuf_error(exc, self.label)
                    raise self._error from None
            return self._updater

    def _refreshed(self) -> Updater:
        base, directory = base_url_of(self.plain)
        self._fetcher = NetFetcher(self.session, self.cache, base, directory=directory, insecure=self.insecure,
                                   immutable=isinstance(self.plain, GitHubReader))
        bootstrap = self.bootstrap
        if bootstrap is None and self.pin is not None and root_problem(self.metadata_dir) is not None:
            # missing or damaged: the root pkgmgr.toml pins re-establishes it, as `registry add` would
            bootstrap = self._pinned_root(base)
        if bootstrap is None and not (self.metadata_dir / "root.json").exists():
            raise NamedRegistryError(f"registry {self.label}: no trusted root is recorded for {self.spec.text}",
                                     code=Code.REGISTRY_SIGNATURE_INVALID, details={"registry": self.label},
                                     hint=self.repair)
        self.metadata_dir.mkdir(parents=True, exist_ok=True)
        with self._metadata_lock():  # ngclient's metadata_dir is for one process at a time
            if bootstrap is None:
                bootstrap = self._trusted_root()
            updater = BoundedUpdater(str(self.metadata_dir), base + METADATA_DIR + "/", fetcher=self._fetcher,
                                     config=CONFIG, bootstrap=bootstrap)
            crashpoint("registry.tuf.before_refresh")
            updater.refresh()
        self._fetcher.keep()
        return updater

    def _pinned_root(self, base: str) -> bytes:
        """The registry's `metadata/1.root.json`, which must be the root `pin` names (a
        workspace's `root_sha256`) and be signed by its own threshold of keys. Raises
        registry_signature_invalid (and what fetching it raises)."""
        assert self._fetcher is not None and self.pin is not None
        try:
            data = self._fetcher.get(f"{base}{METADATA_DIR}/1.root.json", CONFIG.root_max_length, conditional=False)
        except Exception as exc:  # noqa: BLE001 - mapped to its SPEC code
            raise tuf_error(exc, self.label) from None
        actual = root_sha256(data)
        if actual != self.pin:
            raise NamedRegistryError(f"registry {self.label}: {METADATA_DIR}/1.root.json has sha256 {actual}, not the "
                                     f"root_sha256 pkgmgr.toml pins ({self.pin})", code=Code.REGISTRY_SIGNATURE_INVALID,
                                     details={"registry": self.label, "expected": self.pin, "actual": actual})
        try:
            check_root(data, self.label)
        except PkgmgrError as error:  # its message names the registry already
            raise NamedRegistryError(error.message, code=error.code, details=error.details) from None
        return data
    def _trusted_root(self) -> bytes:
        """The trusted root.json, read with the bounded primitive (`trustroot.read_trusted`) and
        parsed once its depth is known to be bounded."""
        try:
            data = read_trusted(self.metadata_dir, "root.json")
            _check_local_depth(data)
            Metadata[Root].from_bytes(data)
            return data
        except Exception as exc:  # noqa: BLE001 - whatever is wrong with it, the trusted root is gone
            if isinstance(exc, FileNotFoundError):
                why = "is missing"
            elif isinstance(exc, OSError):
                why = f"cannot be read ({exc.strerror or exc})"
            else:
                why = f"is not a valid TUF root ({exc})"
            raise NamedRegistryError(f"registry {self.label}: the trusted root recorded for {self.spec.text} {why}",
                                     code=Code.REGISTRY_SIGNATURE_INVALID, details={"registry": self.label},
                                     hint=self.repair) from None

    @contextlib.contextmanager
    def _metadata_lock(self) -> Iterator[None]:
        from pkgmgr.store.lock import ExclusiveLock, LockTimeout

        lock = ExclusiveLock(self.metadata_dir.with_name(self.metadata_dir.name + ".lock"), LOCK_TIMEOUT)
        try:
            lock.acquire()
        except LockTimeout:
            raise NamedRegistryError(f"registry {self.label}: another pkgmgr is updating its trusted metadata; "
                                     f"gave up after {LOCK_TIMEOUT:g} s", code=Code.LOCKED) from None
        try:
            yield
        finally:
            lock.release()

    def persist_root(self) -> None:
        """Trust `bootstrap` from now on, reading nothing (ngclient stores it as root.json)."""
        assert self.bootstrap is not None
        self.metadata_dir.mkdir(parents=True, exist_ok=True)
        base, _ = base_url_of(self.plain) if self.spec.kind != "github" else ("github:", None)
        try:
            BoundedUpdater(str(self.metadata_dir), base + METADATA_DIR + "/", config=CONFIG, bootstrap=self.bootstrap)
        except Exception as exc:  # noqa: BLE001
            raise tuf_error(exc, self.label) from None

    def targetinfo(self, rel: str) -> Any:
        updater = self.updater()
        with self._lock:
            try:
                return updater.get_targetinfo(rel)
            except Exception as exc:  # noqa: BLE001
                raise tuf_error(exc, self.label) from None

    def read(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        info = self.targetinfo(rel)
        if info is None:
            return None  # not a signed target: the registry has no such file
        if info.length > cap:
            raise ValidationFailed([Problem(Code.INVALID_INDEX, rel, "", f"is larger than {cap // MIB} MiB")])
        cached = self.cache.load(rel)
        if cached is not None and _matches(info, cached.body):
            return parse(cached.body)
        assert self._fetcher is not None
        url = self._fetcher.base_url + rel
        try:
            body = self._fetcher.get(url, info.length, conditional=False)
            info.verify_length_and_hashes(body)
        except Exception as exc:  # noqa: BLE001
            error = tuf_error(exc, self.label)
            if error.code == Code.REGISTRY_SIGNATURE_INVALID:
                error.message = f"registry {self.label}: {rel} is not the file its signed metadata names ({exc})"
                error.args = (error.message,)
            raise error from None
        value = parse(body)
        with self._lock:
            self._fresh[rel] = CachedFile(url, body)
        return value

    def keep(self, rel: str) -> None:
        with self._lock:
            fresh = self._fresh.pop(rel, None)
        if fresh is not None:
            self.cache.store(rel, fresh)

    def prune(self, folder: str, stale: Callable[[str], bool]) -> None:
        self.cache.prune(folder, stale)

    def locate(self, url: str) -> Any:
        return self.plain.locate(url)

    def describe(self) -> str:
        return self.plain.describe()

    def check_archive(self, url: str, sha256: str, size: int, label: str) -> None:
        """An archive named by a relative url is a target: its signed length and sha256 must be
        the entry's (which the download then enforces). An absolute url is covered by the
        entry's own sha256 and size, which are signed with the entry file."""
        if urlsplit(url).scheme:
            return
        rel = os.path.normpath(url).replace(os.sep, "/")
        info = self.targetinfo(rel)
        signed = None if info is None else info.hashes.get("sha256")
        if info is None or info.length != size or signed != sha256:
            raise NamedRegistryError(f"registry {self.label}: {label}: the archive {rel} is not the target its "
                                     "signed metadata names", code=Code.REGISTRY_SIGNATURE_INVALID,
                                     details={"registry": self.label, "file": rel})


def _matches(info: Any, body: bytes) -> bool:
    try:
        info.verify_length_and_hashes(body)
    except tuf_errors.LengthOrHashMismatchError:
        return False
    return True


def root_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def trusted_root_problem(home: Path, source: str) -> str | None:
    """What is wrong with the trusted root recorded for the signed registry `source` (in its
    metadata directory): missing, unreadable, empty, not a TUF root (truncated, garbage), or not
    signed by its own threshold of keys; None when it is sound. Every install from the registry
    fails until it is re-established (`registry add` again). Reads only, bounded."""
    return root_problem(tuf_dir(home, source))


def root_problem(folder: Path) -> str | None:
    """What is wrong with the trusted root kept in the metadata directory `folder`
    (`trusted_root_problem`); None when it is sound."""
    try:
        data = read_trusted(folder, "root.json")
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not data:
        return "is empty (0 bytes)"
    try:
        _check_local_depth(data)
        root = Metadata[Root].from_bytes(data)
    except Exception as exc:  # noqa: BLE001 - whatever is wrong with it, it is not a trusted root
        return f"is not a TUF root ({exc})"
    try:
        root.verify_delegate(Root.type, root)
    except Exception as exc:  # noqa: BLE001
        return f"is not signed by its own keys ({exc})"
    return None


def check_root(data: bytes, label: str) -> Metadata[Root]:
    """Parse a root metadata file and check it is signed by its own threshold of keys.
    Raises registry_signature_invalid."""
    try:
        root = Metadata[Root].from_bytes(data)
        root.verify_delegate(Root.type, root)
    except Exception as exc:  # noqa: BLE001 - whatever is wrong with it, it is not a trusted root
        raise PkgmgrError(f"registry {label}: not a valid TUF root ({exc})", code=Code.REGISTRY_SIGNATURE_INVALID,
                          details={"registry": label}) from None
    return root
