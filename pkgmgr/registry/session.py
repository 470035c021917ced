"""Everything one remote operation shares: configuration, the fetcher (`pkgmgr.net.fetcher`),
the GitHub client, the download cache, the rollback memory and the registries — each created
lazily, once, under a lock (the fetch pool may touch them from several threads).

The caller assembles it: the configured registries plus `extra_registries` (those of an
approved workspace, which `pkgmgr.cli.workspace_registries.session_for` finds); nothing here
knows the command line."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.config import Config, RegistryConfig

if TYPE_CHECKING:
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.net.fetcher import Fetcher
    from pkgmgr.net.github import GitHub
    from pkgmgr.net.oci import OciClient
    from pkgmgr.registry.client import Registries
    from pkgmgr.registry.memory import Memory


class Session:
    def __init__(
        self,
        home: Path,
        config: Config,
        *,
        offline: bool = False,
        allow_expired: bool = False,
        warn: Callable[[str], None] | None = None,
        extra_registries: Sequence[RegistryConfig] = (),
        fetcher: Fetcher | None = None,
        record: bool = True,
    ) -> None:
        """`record=False` (a dry run) reads the rollback memory but never writes it."""
        self.home = home
        self.config = config
        self.offline = offline
        self.allow_expired = allow_expired
        self._warn = warn
        self.extra_registries = tuple(extra_registries)
        self.record = record
        self._lock = threading.RLock()
        self._objects: dict[str, Any] = {} if fetcher is None else {"http": fetcher}
        self._warned: set[str] = set()

    def warn(self, message: str) -> None:
        with self._lock:
            if message in self._warned:
                return
            self._warned.add(message)
        if self._warn is not None:
            self._warn(message)

    def _once(self, key: str, factory: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._objects:
                self._objects[key] = factory()
            return self._objects[key]

    @property
    def http(self) -> Fetcher:
        """The one fetcher of the operation (an `HttpClient` unless one was given); the token goes
        only to GitHub's API and raw hosts."""
        def make() -> Fetcher:
            from pkgmgr.net.github_hosts import github_client

            return github_client(self.config.network, offline=self.offline, notify=self.warn)

        return self._once("http", make)

    @property
    def github(self) -> GitHub:
        """The GitHub client (PKGMGR_GITHUB_API_URL / PKGMGR_GITHUB_RAW_URL) over `http`."""
        def make() -> GitHub:
            from pkgmgr.net.github import GitHub

            return GitHub(self.http)

        return self._once("github", make)

    @property
    def oci(self) -> OciClient:
        """The OCI distribution client (SPEC 5.6) over `http`: its credentials and tokens live
        for this operation."""
        def make() -> OciClient:
            from pkgmgr.net.oci import OciClient

            return OciClient(self.http, warn=self.warn)

        return self._once("oci", make)

    @property
    def downloads(self) -> DownloadCache:
        def make() -> DownloadCache:
            from pkgmgr.net.cache import DownloadCache

            return DownloadCache(self.home / "cache" / "downloads")

        return self._once("downloads", make)

    @property
    def memory(self) -> Memory:
        def make() -> Memory:
            from pkgmgr.registry.memory import Memory

            return Memory(self.home)

        return self._once("memory", make)

    @property
    def registries(self) -> "Registries":
        def make() -> Any:
            from pkgmgr.registry.client import Registries

            return Registries(self, self.config.registries, self.extra_registries)

        return self._once("registries", make)

    def close(self) -> None:
        memory = self._objects.get("memory")
        if memory is not None:
            memory.close()
        http = self._objects.get("http")
        if http is not None:
            http.close()
