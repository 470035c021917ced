"""The configured registries, opened for one operation, with the protections of SPEC 5.4.

`Registries` orders them (ascending priority, the shipped `default` always last) and answers
"which registry lists NAME" — the first one does, and an unreadable one stops the search.
`Registry` reads `registry.toml` once, then only the entry files asked for, checks expiry,
rollback and changed checksums against what the client remembers, re-yanks the versions it
has seen yanked (yanks are sticky), and records what it saw (only after a successful verified
read, in one transaction) when `remember()` is called. A file fetched from the network enters
the registry cache, with its validators, only once it passed every one of these checks
(`Reader.keep`): a refused file is never re-served by a later 304.

A command that names several extensions lets `Registries.prefetch` read their entry files
concurrently first (one round trip for all instead of one each); the checks still run when
`entry()` is asked, in the caller's order, and a read that failed raises there — so requests,
warnings and errors are those of reading one by one. A failed `registry.toml` is not read again
in the same operation.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar

from pkgmgr.config import RegistryConfig
from pkgmgr.errors import Code, PkgmgrError, ValidationFailed
from pkgmgr.registry.cache import FileCache, cache_root
from pkgmgr.registry.index_format import (
    ENTRY_MAX_BYTES,
    INDEX_FILE,
    INDEX_MAX_BYTES,
    PARSED_FORMAT,
    REGISTRY_FILE,
    REGISTRY_MAX_BYTES,
    Entry,
    Index,
    IndexExtension,
    RegistryMeta,
    VersionEntry,
    entry_from_json,
    entry_path,
    entry_to_json,
    is_extension_name,
    meta_from_json,
    meta_to_json,
    parse_entry,
    parse_index,
    parse_registry,
)
from pkgmgr.registry.metadata_checks import check_entry, check_meta, check_serial, sticky_yanks
from pkgmgr.registry.readers import (
    CachedParse,
    Location,
    NamedRegistryError,
    Reader,
    SourceSpec,
    check_source_allowed,
    make_reader,
    parse_source,
)

if TYPE_CHECKING:
    from pkgmgr.registry.session import Session

T = TypeVar("T")
DEFAULT_NAME = "default"
DEFAULT_PRIORITY = 1000
# registry.toml's parse, kept beside its cached body (readers.CachedParse); entries: `_read_entry`
_META_PARSE = CachedParse(lambda raw: parse_registry(raw, REGISTRY_FILE), f"registry/{PARSED_FORMAT}",
                          meta_to_json, meta_from_json)


def default_registry_config() -> RegistryConfig:
    from pkgmgr.resources_data import default_registry_dir

    return RegistryConfig(DEFAULT_NAME, str(default_registry_dir()), DEFAULT_PRIORITY)


class Registry:
    """One registry during one operation (thread-safe: the fetch pool may ask for locations)."""

    def __init__(self, config: RegistryConfig, session: "Session", *, exempt: bool = False,
                 declared: bool = False) -> None:
        self.config = config
        self.declared = declared  # declared by the workspace's approved pkgmgr.toml, not config.toml
        self.name = config.name
        self.session = session
        try:
            self.spec: SourceSpec = parse_source(config.source)
        except PkgmgrError as error:
            raise PkgmgrError(f"registry {self.name}: {error.message}", code=Code.INVALID_CONFIG,
                              details={"registry": self.name}) from None
        self.exempt = exempt  # the shipped default: part of the package, no rollback memory
        self.bootstrap: bytes | None = None  # a root being pinned by `registry add` (SPEC 5.4a)
        self._reader: Reader | None = None
        self._meta: RegistryMeta | None = None
        self._meta_error: PkgmgrError | None = None
        self._entries: dict[str, Entry | None] = {}
        self._prefetched: dict[str, Entry | None | Exception] = {}  # read, not yet checked
        self._vanished: dict[str, tuple[str, ...]] = {}
        self._seen: dict[tuple[str, str], tuple[str, bool]] = {}  # (name, version) -> (sha256, yanked)
        self._lock = threading.RLock()

    @property
    def source(self) -> str:
        return self.spec.text

    @property
    def insecure(self) -> bool:
        return self.config.insecure

    @property
    def cache(self) -> FileCache:
        return FileCache(cache_root(self.session.home, self.source))

    @property
    def reader(self) -> Reader:
        with self._lock:
            if self._reader is None:
                try:
                    check_source_allowed(self.spec, insecure=self.insecure)
                except PkgmgrError as error:
                    raise PkgmgrError(f"registry {self.name}: {error.message}", code=Code.INVALID_CONFIG,
                                      details={"registry": self.name}, hint=error.hint) from None
                plain = make_reader(self.spec, self.session, self.cache, insecure=self.insecure)
                self._reader = self._signed_reader(plain) if self.signed else plain
            return self._reader

    @property
    def signed(self) -> bool:
        return self.config.signed and not self.exempt

    @property
    def trust_source(self) -> str:
        """What the trusted TUF metadata of this registry is kept under (`trustroot.tuf_dir`): its
        source; for a registry a workspace declares, its source and pinned root, so that the root
        a pkgmgr.toml pins is never served by metadata another pin (or `registry add`) trusted."""
        if self.declared and self.config.root_sha256:
            return f"{self.source}#root_sha256={self.config.root_sha256}"
        return self.source

    def _signed_reader(self, plain: Reader) -> Reader:
        # imports tuf: only for a signed registry
        from pkgmgr.registry.signed import SignedReader
        from pkgmgr.registry.trustroot import reestablish_hint

        # a configured registry's lost or damaged trusted root: the one command that re-establishes it
        repair = reestablish_hint(self.config) if self.config.root_sha256 and not self.declared else None
        return SignedReader(plain, self.session, self.cache, label=self.name, bootstrap=self.bootstrap,
                            trust_source=self.trust_source,
                            pin=self.config.root_sha256 if self.declared else None, repair=repair)

    def persist_root(self) -> None:
        """Record `bootstrap` as the trusted root without reading the registry (offline add)."""
        from pkgmgr.registry.signed import SignedReader

        reader = self.reader
        assert isinstance(reader, SignedReader)
        reader.persist_root()

    def check_policy(self) -> None:
        """`policy.require_signed` refuses an unsigned registry; the shipped `default` is part of
        the installed package and exempt (SPEC 5.4a)."""
        if self.session.config.require_signed and not self.exempt and not self.signed:
            raise PkgmgrError(f"registry {self.name} ({self.source}) is not signed, and policy.require_signed "
                              "refuses unsigned registries", code=Code.REGISTRY_SIGNATURE_INVALID,
                              details={"registry": self.name},
                              hint=f"add it again with its TUF root: 'pkgmgr registry remove {self.name}', then "
                                   f"'pkgmgr registry add {self.name} {self.source} --root FILE'")

    def _read(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        self.check_policy()
        try:
            return self.reader.read(rel, cap, parse)
        except ValidationFailed as error:
            summary = f"registry {self.name} ({self.reader.describe()}):"
            raise ValidationFailed(error.problems, summary=summary) from None
        except PkgmgrError as error:
            if not isinstance(error, NamedRegistryError):
                error.message = f"registry {self.name} ({self.source}): {error.message}"
                error.args = (error.message,)
                error.details.setdefault("registry", self.name)
            # what the commands that get past an unreadable registry depend on (cli.app.registry_hint)
            error.details.setdefault("registry_source", self.source)
            if self.declared:
                error.details.setdefault("declared_in", "pkgmgr.toml")
            raise

    def tier(self, entry: Entry) -> str:
        """The tier this client grants `entry`. A tier is the registry maintainers' claim, so it
        counts only as far as the user trusts the registry (SPEC 7): a registry a workspace's
        pkgmgr.toml declares counts at most as `community`, whatever its entries say."""
        if self.declared and entry.tier == "official":
            return "community"
        return entry.tier

    def remembered_serial(self) -> int | None:
        return None if self.exempt else self.session.memory.serial(self.source)

    def meta(self) -> RegistryMeta:
        """`registry.toml`, checked for expiry and rollback (once per operation, failure included)."""
        with self._lock:
            if self._meta_error is not None:
                raise self._meta_error
            if self._meta is None:
                try:
                    self._meta = self._read_meta()
                except PkgmgrError as error:
                    self._meta_error = error  # one attempt per operation, however many names ask
                    raise
            return self._meta

    def _read_meta(self) -> RegistryMeta:
        meta = self._read(REGISTRY_FILE, REGISTRY_MAX_BYTES, _META_PARSE)
        if meta is None:
            raise PkgmgrError(f"registry {self.name} ({self.source}) has no {REGISTRY_FILE}",
                              code=Code.INVALID_INDEX, details={"registry": self.name, "file": REGISTRY_FILE},
                              hint="is the source a registry index? 'pkgmgr registry list' shows it")
        check_meta(meta, label=self.name, remembered_serial=self.remembered_serial(),
                   allow_expired=self.session.allow_expired)
        self.reader.keep(REGISTRY_FILE)
        return meta

    def entry(self, name: str) -> Entry | None:
        """The entry of `name`, or None when this registry does not list it. Raises
        invalid_index, registry_checksum_changed and the errors of `meta()` and of the network."""
        with self._lock:
            if name in self._entries:
                return self._entries[name]
            self.meta()
            read = self._prefetched.pop(name) if name in self._prefetched else self._read_entry(name)
            if isinstance(read, Exception):
                raise read
            entry = read
            if entry is not None and not self.exempt:
                known, yanked = self.session.memory.seen(self.source, name)
                vanished = check_entry(entry, label=self.name, known=known)
                if vanished:
                    self._vanished[name] = vanished
                    self.session.warn(f"registry {self.name}: {name} {', '.join(vanished)} no longer listed; "
                                      "treated as yanked")
                entry, unyanked = sticky_yanks(entry, yanked)
                if unyanked:
                    self.session.warn(f"registry {self.name}: {name} {', '.join(unyanked)} was seen yanked before; "
                                      "it stays yanked (install it by naming the version exactly)")
                for version in entry.versions:
                    self._seen.setdefault((name, version.version), (version.sha256, version.yanked))
            if entry is not None:
                self.reader.keep(entry_path(name, self.meta().format))
            self._entries[name] = entry
            return entry

    def _read_entry(self, name: str) -> Entry | None:
        if not is_extension_name(name):
            return None
        rel = entry_path(name, self.meta().format)
        return self._read(rel, ENTRY_MAX_BYTES, CachedParse(
            lambda raw: parse_entry(raw, rel, expected_name=name), f"entry/{PARSED_FORMAT}/{name}",
            entry_to_json, lambda doc: entry_from_json(doc, expected_name=name)))

    def prefetch(self, names: Iterable[str], *, workers: int) -> bool:
        """Read the entry files of `names` concurrently, for `entry()` to check later (module
        docstring). False when nothing was read: a local directory (no round trips to save) or
        an unreadable `registry.toml` (`entry()` raises its error)."""
        if self.spec.kind == "dir":
            return False
        try:
            self.meta()  # in this thread: it consults the rollback memory (SQLite)
        except PkgmgrError:
            return False
        with self._lock:
            todo = [n for n in dict.fromkeys(names)
                    if n not in self._entries and n not in self._prefetched and is_extension_name(n)]
        if not todo:
            return True

        def read(name: str) -> Entry | None | Exception:
            try:
                return self._read_entry(name)
            except Exception as error:  # noqa: BLE001 - raised again by entry(), where it belongs
                return error

        from pkgmgr.threads import map_in_threads  # here: a search or a lone read starts no thread

        results = map_in_threads(read, todo, workers=workers, name="pkgmgr-registry")
        with self._lock:
            for name, result in zip(todo, results):
                self._prefetched.setdefault(name, result)
        return True

    def listed(self, name: str) -> bool | None:
        """Whether this registry lists `name`, as far as read so far (None: not read, or the
        read failed)."""
        with self._lock:
            value = self._entries[name] if name in self._entries else self._prefetched.get(name, False)
        if value is False or isinstance(value, Exception):
            return None
        return value is not None

    def vanished(self, name: str) -> tuple[str, ...]:
        return self._vanished.get(name, ())

    def index(self) -> Index | None:
        """`index.json` (for search), None when the registry has none."""
        meta = self.meta()
        index = self._read(INDEX_FILE, INDEX_MAX_BYTES, lambda raw: parse_index(raw, INDEX_FILE))
        if index is not None and not self.exempt:
            check_serial(index.serial, label=self.name, file=INDEX_FILE, remembered_serial=self.remembered_serial())
            if index.serial > meta.serial:
                self.session.warn(f"registry {self.name}: {INDEX_FILE} (serial {index.serial}) is newer than "
                                  f"{REGISTRY_FILE} (serial {meta.serial})")
        self.reader.keep(INDEX_FILE)
        return index

    def read_file(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        """`parse` of the registry's file `rel` (None when it has none), through its reader: caps,
        the cache, a signed registry's checks. Call `reader.keep(rel)` once it is accepted."""
        return self._read(rel, cap, parse)

    def search(self, term: str) -> list[IndexExtension] | None:
        """The extensions whose name or lower-cased description contains `term` (lower-case;
        every one when empty), by name; None when the registry has no summary to search. A
        format-2 registry is searched in its local index, brought up to date first
        (registry/search_index.py); a format-1 registry through `index()`."""
        if self.meta().format >= 2:
            from pkgmgr.registry.search_index import search

            return search(self, term)
        summary = self.index()
        if summary is None:
            return None
        return [ext for ext in summary.extensions if not term or term in ext.name or term in ext.description.lower()]

    def names_near(self, word: str) -> list[str]:
        """The names this registry lists that may be a misspelling of `word` away from it (for "did
        you mean"): every name of a format-1 registry's index.json, a format-2 registry's nearest in
        its local search index (registry/search_index.py); none when it has no summary."""
        if self.meta().format >= 2:
            from pkgmgr.registry.search_index import names_near

            return names_near(self, word)
        summary = self.index()
        return [] if summary is None else [ext.name for ext in summary.extensions]

    def locate(self, version: VersionEntry) -> Location:
        """Where the archive of `version` is; an http:// url needs a loopback host or --insecure."""
        if self.signed:
            from pkgmgr.registry.signed import SignedReader

            reader = self.reader
            assert isinstance(reader, SignedReader)
            reader.check_archive(version.url, version.sha256, version.size, f"version {version.version}")
        location = self.reader.locate(version.url)
        if location.path is None:
            from pkgmgr.net.http import UrlNotAllowed
            from pkgmgr.registry.stores import NO_STORE, store_for

            store = store_for(location.url)
            try:
                if store is None:
                    raise UrlNotAllowed(f"{location.url}: {NO_STORE}")
                store.allowed(location.url, insecure=self.insecure)
            except UrlNotAllowed as error:
                raise PkgmgrError(f"registry {self.name}: version {version.version}: {error.message}",
                                  code=Code.INVALID_INDEX, details={"registry": self.name, "url": version.url},
                                  hint=error.hint) from None
        return location

    def remember(self) -> None:
        """Record the serial and the versions read so far (one transaction). Call only after
        the reads succeeded; a no-op for the exempt default registry and in a session that
        records nothing (a dry run)."""
        with self._lock:
            if self.exempt or self._meta is None or not self.session.record:
                return
            rows = [(name, version, sha, yanked) for (name, version), (sha, yanked) in sorted(self._seen.items())]
            self.session.memory.record(self.source, self._meta.serial, rows)
            self._seen.clear()

    def to_json(self) -> dict[str, Any]:
        data = {"name": self.name, "source": self.source, "priority": self.config.priority,
                "insecure": self.insecure, "workspace": self.declared, **self.signature_json()}
        if self.exempt:
            data["shipped"] = True
        return data

    def signature_json(self) -> dict[str, Any]:
        """`signed`, and for a signed registry the sha256 of its current trusted root and the
        expiry of its trusted timestamp (SPEC 5.4a), read without importing tuf."""
        if not self.signed:
            return {"signed": False}
        from pkgmgr.registry.trustroot import trusted_state

        state = trusted_state(self.session.home, self.trust_source)
        return {"signed": True, "root_sha256": state.root_sha256 or self.config.root_sha256,
                "root_version": state.root_version, "expires": state.expires}


class Registries:
    """The registries of one operation, in resolution order."""

    def __init__(self, session: "Session", configs: Sequence[RegistryConfig],
                 extra: Sequence[RegistryConfig] = ()) -> None:
        """`configs`: config.toml's registries; `extra`: a workspace's (pkgmgr.toml), which
        come after them whatever their priority, may not reuse their names, and precede
        `default` (SPEC 5.3)."""
        self.session = session
        names = {c.name for c in configs} | {DEFAULT_NAME}
        clash = sorted(c.name for c in extra if c.name in names)
        if clash:
            raise PkgmgrError(f"pkgmgr.toml declares registries that reuse configured names: {', '.join(clash)}",
                              code=Code.INVALID_CONFIG, details={"registries": clash})
        self.ordered = [Registry(c, session) for c in _by_priority(configs)]
        self.ordered += [Registry(c, session, declared=True) for c in _by_priority(extra)]
        self.ordered.append(Registry(default_registry_config(), session, exempt=True))

    def names(self) -> list[str]:
        return [r.name for r in self.ordered]

    def get(self, name: str) -> Registry:
        for registry in self.ordered:
            if registry.name == name:
                return registry
        error = UnknownRegistry(f"no registry named {name!r} is configured", code=Code.NOT_FOUND,
                            details={"registry": name, "registries": self.names()},
                            hint="'pkgmgr registry list' shows the configured registries")
        from pkgmgr.errors import suggest_close

        suggest_close(error, name, self.names())
        raise error

    def prefetch(self, names: Sequence[str]) -> None:
        """Read ahead, concurrently, the entry files `lookup` will read for `names`: in each
        registry, in order, the names no earlier registry lists (module docstring)."""
        pending = [n for n in dict.fromkeys(names) if is_extension_name(n)]
        workers = self.session.config.network.parallel
        for registry in self.ordered:
            if not pending or not registry.prefetch(pending, workers=workers):
                return
            pending = [n for n in pending if registry.listed(n) is False]

    def lookup(self, name: str) -> tuple[Registry, Entry]:
        """The first registry (by priority) that lists `name` answers for it; a registry that
        cannot be read stops the search with its error. Raises not_found when none lists it."""
        for registry in self.ordered:
            entry = registry.entry(name)
            if entry is not None:
                return registry, entry
        raise NotListed(
            f"{name}: no registry lists this extension (looked in {', '.join(self.names())})",
            code=Code.NOT_FOUND,
            details={"name": name, "registries": self.names()},
            hint="'pkgmgr ext search' lists what the registries offer",
        )


class NotListed(PkgmgrError):
    """No configured registry lists a name (`Registries.lookup`): not_found."""


class UnknownRegistry(PkgmgrError):
    """No registry of that name is configured (`Registries.get`): not_found."""


def _by_priority(configs: Sequence[RegistryConfig]) -> list[RegistryConfig]:
    """Ascending priority, ties in declaration order; a configured `default` is ignored (the
    name belongs to the shipped registry)."""
    return sorted((c for c in configs if c.name != DEFAULT_NAME), key=lambda c: c.priority)
