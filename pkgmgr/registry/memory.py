"""What the client remembers of each registry source (SPEC 5.4): the highest serial and every
(name, version, sha256) it has seen, with whether it was ever seen yanked (yanks are sticky), in
the GLOBAL scope's state.db, keyed by the source URL.

Reads never create the database; a record is one transaction and only ever raises a serial.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from pkgmgr.crash import crashpoint
from pkgmgr.registry.metadata_checks import known_versions


class Memory:
    def __init__(self, home: Path) -> None:
        from pkgmgr.store.scope import global_scope

        self._scope = global_scope(home)

    def serial(self, source: str) -> int | None:
        conn = self._scope.reader()
        if conn is None:
            return None
        from pkgmgr.store.db import one_row

        row = one_row(conn, "registry_serials", "SELECT serial FROM registry_serials WHERE source = ?", (source,))
        return int(row["serial"]) if row else None

    def known(self, source: str, name: str) -> dict[Any, tuple[str, str]]:
        """Remembered versions of `name` in `source`, keyed by parsed version."""
        conn = self._scope.reader()
        if conn is None:
            return {}
        from pkgmgr.store.db import rows

        found = rows(conn, "registry_versions", "SELECT version, sha256 FROM registry_versions "
                     "WHERE source = ? AND name = ?", (source, name))
        return known_versions([(r["version"], r["sha256"]) for r in found])

    def seen(self, source: str, name: str) -> tuple[dict[Any, tuple[str, str]], frozenset[str]]:
        """`known` and `yanked` of `name` in `source` in one query (what `Registry.entry` asks)."""
        conn = self._scope.reader()
        if conn is None:
            return {}, frozenset()
        from pkgmgr.store.db import rows

        found = rows(conn, "registry_versions", "SELECT version, sha256, yanked FROM registry_versions "
                     "WHERE source = ? AND name = ?", (source, name))
        return (known_versions([(r["version"], r["sha256"]) for r in found]),
                frozenset(r["version"] for r in found if r["yanked"] == 1))

    def yanked(self, source: str, name: str) -> frozenset[str]:
        """The versions of `name` (as written) this client has ever seen yanked in `source`."""
        conn = self._scope.reader()
        if conn is None:
            return frozenset()
        rows = conn.execute("SELECT version FROM registry_versions WHERE source = ? AND name = ? AND yanked = 1",
                            (source, name)).fetchall()
        return frozenset(r[0] for r in rows)

    def record(self, source: str, serial: int | None, versions: Iterable[tuple[str, str, str, bool]]) -> None:
        """Remember `serial` (never lowering it) and (name, version, sha256, yanked) rows,
        atomically. A version already known keeps its first sha256 (a change is refused before
        we get here) and, once seen yanked, stays yanked. What would change nothing — a serial
        not above the remembered one, a version known (and remembered yanked if it is yanked
        now) — is not written: a check that finds nothing new commits no transaction (each is
        a WAL fsync: ~18 ms of a 50-extension `ext update --check`)."""
        serial, rows = self._news(source, serial, list(versions))
        if serial is None and not rows:
            return
        from pkgmgr.store.db import transaction
        from pkgmgr.store.switch import now_utc  # here: a read that finds nothing new never loads the switch

        conn = self._scope.db
        with transaction(conn):
            if serial is not None:
                conn.execute(
                    "INSERT INTO registry_serials (source, serial, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (source) DO UPDATE SET serial = max(serial, excluded.serial), "
                    "updated_at = excluded.updated_at",
                    (source, serial, now_utc()),
                )
            conn.executemany(
                "INSERT INTO registry_versions (source, name, version, sha256, yanked) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (source, name, version) DO UPDATE SET yanked = max(yanked, excluded.yanked)",
                [(source, name, version, sha256, int(yanked)) for name, version, sha256, yanked in rows],
            )
            crashpoint("memory.before_commit")

    def _news(self, source: str, serial: int | None,
              rows: list[tuple[str, str, str, bool]]) -> tuple[int | None, list[tuple[str, str, str, bool]]]:
        """`serial` (None when it is not above the remembered one) and the `rows` that would change
        `registry_versions`. A remembered value that is not what pkgmgr writes counts as none:
        the write goes ahead as it always did."""
        conn = self._scope.reader()
        if conn is None:
            return serial, rows
        if serial is not None:
            found = conn.execute("SELECT serial FROM registry_serials WHERE source = ?", (source,)).fetchone()
            if found is not None and type(found[0]) is int and serial <= found[0]:
                serial = None
        remembered: dict[str, dict[str, Any]] = {}
        for name in dict.fromkeys(name for name, *_ in rows):
            remembered[name] = dict(conn.execute("SELECT version, yanked FROM registry_versions "
                                                 "WHERE source = ? AND name = ?", (source, name)).fetchall())
        news = [row for row in rows
                if row[1] not in remembered[row[0]] or (row[3] and remembered[row[0]][row[1]] != 1)]
        return serial, news

    def forget(self, source: str) -> None:
        from pkgmgr.store.db import transaction

        if self._scope.reader() is None:
            return
        conn = self._scope.db  # a reader's connection may be read-only
        with transaction(conn):
            conn.execute("DELETE FROM registry_serials WHERE source = ?", (source,))
            conn.execute("DELETE FROM registry_versions WHERE source = ?", (source,))

    def close(self) -> None:
        self._scope.close()
