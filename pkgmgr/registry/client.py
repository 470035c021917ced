"""The configured registries, opened for one operation, with the protections of SPEC 5.4.

`Registries` orders them (ascending priority, the shipped `default` always last) and answers
"which registry lists NAME" — the first one does, and an unreadable one stops the search.
`Registry` reads `registry.toml` once, then only the entry files asked for, checks expiry,
rollback and changed checksums against what the client remembers, and records what it saw
(only after a successful verified read, in one transaction) when `remember()` is called.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from pkgmgr.config import RegistryConfig
from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.registry.cache import FileCache, cache_root
from pkgmgr.registry.model import (
    ENTRY_MAX_BYTES,
    INDEX_FILE,
    INDEX_MAX_BYTES,
    REGISTRY_FILE,
    REGISTRY_MAX_BYTES,
    Entry,
    Index,
    RegistryMeta,
    VersionEntry,
    entry_path,
    is_extension_name,
    parse_entry,
    parse_index,
    parse_registry,
)
from pkgmgr.registry.sources import Location, Reader, SourceSpec, check_source_allowed, make_reader, parse_source
from pkgmgr.registry.trust import check_entry, check_meta, check_serial

if TYPE_CHECKING:
    from pkgmgr.registry.session import Session

T = TypeVar("T")
DEFAULT_NAME = "default"
DEFAULT_PRIORITY = 1000


def default_registry_config() -> RegistryConfig:
    from pkgmgr.resources_data import default_registry_dir

    return RegistryConfig(DEFAULT_NAME, str(default_registry_dir()), DEFAULT_PRIORITY)


class Registry:
    """One registry during one operation (thread-safe: the fetch pool may ask for locations)."""

    def __init__(self, config: RegistryConfig, session: "Session", *, exempt: bool = False) -> None:
        self.config = config
        self.name = config.name
        self.session = session
        try:
            self.spec: SourceSpec = parse_source(config.source)
        except PkgmgrError as error:
            raise PkgmgrError(f"registry {self.name}: {error.message}", code="invalid_config",
                              details={"registry": self.name}) from None
        self.exempt = exempt  # the shipped default: part of the package, no rollback memory
        self._reader: Reader | None = None
        self._meta: RegistryMeta | None = None
        self._entries: dict[str, Entry | None] = {}
        self._vanished: dict[str, tuple[str, ...]] = {}
        self._seen: dict[tuple[str, str], str] = {}
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
                    raise PkgmgrError(f"registry {self.name}: {error.message}", code="invalid_config",
                                      details={"registry": self.name}, hint=error.hint) from None
                self._reader = make_reader(self.spec, self.session, self.cache, insecure=self.insecure)
            return self._reader

    def _read(self, rel: str, cap: int, parse: Callable[[bytes], T]) -> T | None:
        try:
            return self.reader.read(rel, cap, parse)
        except ValidationFailed as error:
            summary = f"registry {self.name} ({self.reader.describe()}):"
            raise ValidationFailed(error.problems, summary=summary) from None
        except PkgmgrError as error:
            if f"registry {self.name}" not in error.message:
                error.message = f"registry {self.name} ({self.source}): {error.message}"
                error.args = (error.message,)
                error.details.setdefault("registry", self.name)
            raise

    def remembered_serial(self) -> int | None:
        return None if self.exempt else self.session.memory.serial(self.source)

    def meta(self) -> RegistryMeta:
        """`registry.toml`, checked for expiry and rollback (once per operation)."""
        with self._lock:
            if self._meta is None:
                meta = self._read(REGISTRY_FILE, REGISTRY_MAX_BYTES, lambda raw: parse_registry(raw, REGISTRY_FILE))
                if meta is None:
                    raise PkgmgrError(f"registry {self.name} ({self.source}) has no {REGISTRY_FILE}",
                                      code="invalid_index", details={"registry": self.name, "file": REGISTRY_FILE},
                                      hint="is the source a registry index? 'pkgmgr registry list' shows it")
                check_meta(meta, label=self.name, remembered_serial=self.remembered_serial(),
                           allow_expired=self.session.allow_expired)
                self._meta = meta
            return self._meta

    def entry(self, name: str) -> Entry | None:
        """The entry of `name`, or None when this registry does not list it. Raises
        invalid_index, registry_checksum_changed and the errors of `meta()` and of the network."""
        with self._lock:
            if name in self._entries:
                return self._entries[name]
            self.meta()
            entry = None
            if is_extension_name(name):
                rel = entry_path(name)
                entry = self._read(rel, ENTRY_MAX_BYTES, lambda raw: parse_entry(raw, rel, expected_name=name))
            if entry is not None and not self.exempt:
                vanished = check_entry(entry, label=self.name, known=self.session.memory.known(self.source, name))
                if vanished:
                    self._vanished[name] = vanished
                    self.session.warn(f"registry {self.name}: {name} {', '.join(vanished)} no longer listed; "
                                      "treated as yanked")
                for version in entry.versions:
                    self._seen.setdefault((name, version.version), version.sha256)
            self._entries[name] = entry
            return entry

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
        return index

    def locate(self, version: VersionEntry) -> Location:
        """Where the archive of `version` is; an http:// url needs a loopback host or --insecure."""
        location = self.reader.locate(version.url)
        if location.path is None:
            from pkgmgr.net.http import UrlNotAllowed, check_url_allowed

            try:
                check_url_allowed(location.url, insecure=self.insecure)
            except UrlNotAllowed as error:
                raise PkgmgrError(f"registry {self.name}: version {version.version}: {error.message}",
                                  code="invalid_index", details={"registry": self.name, "url": version.url},
                                  hint=error.hint) from None
        return location

    def remember(self) -> None:
        """Record the serial and the versions read so far (one transaction). Call only after
        the reads succeeded; a no-op for the exempt default registry."""
        with self._lock:
            if self.exempt or self._meta is None:
                return
            rows = [(name, version, sha) for (name, version), sha in sorted(self._seen.items())]
            self.session.memory.record(self.source, self._meta.serial, rows)
            self._seen.clear()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "priority": self.config.priority,
                "insecure": self.insecure}


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
                              code="invalid_config", details={"registries": clash})
        self.ordered = [Registry(c, session) for c in [*_by_priority(configs), *_by_priority(extra)]]
        self.ordered.append(Registry(default_registry_config(), session, exempt=True))

    def names(self) -> list[str]:
        return [r.name for r in self.ordered]

    def get(self, name: str) -> Registry:
        for registry in self.ordered:
            if registry.name == name:
                return registry
        raise PkgmgrError(f"no registry named {name!r} is configured", code="not_found",
                          details={"registry": name, "registries": self.names()},
                          hint="'pkgmgr registry list' shows the configured registries")

    def lookup(self, name: str) -> tuple[Registry, Entry]:
        """The first registry (by priority) that lists `name` answers for it; a registry that
        cannot be read stops the search with its error. Raises not_found when none lists it."""
        for registry in self.ordered:
            entry = registry.entry(name)
            if entry is not None:
                return registry, entry
        raise PkgmgrError(
            f"{name}: no registry lists this extension (looked in {', '.join(self.names())})",
            code="not_found",
            details={"name": name, "registries": self.names()},
            hint="'pkgmgr ext search' lists what the registries offer",
        )


def _by_priority(configs: Sequence[RegistryConfig]) -> list[RegistryConfig]:
    """Ascending priority, ties in declaration order; a configured `default` is ignored (the
    name belongs to the shipped registry)."""
    return sorted((c for c in configs if c.name != DEFAULT_NAME), key=lambda c: c.priority)
