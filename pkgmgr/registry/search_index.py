"""The client's local search index of a format-2 registry (docs/registry-format.md).

One SQLite database per registry source (`<home>/cache/registries/<key>/search.sqlite`, WAL):
a row per extension (its summary record), and, where SQLite has FTS5, a trigram index over
the lower-cased name and description. It records the serial it reflects and the sha256 of
each summary shard it loaded. `sync` brings it to the registry's serial, fetching only what
changed: the changes log's chunks since its serial, else (too far behind, a gap, a `reset`)
the shard list and the shards whose sha256 it does not hold. Every file is read through the
registry's reader (caps, TUF checks for a signed registry). A cache: losing it costs a
resynchronisation, so writes are not fsynced; a damaged database is rebuilt from scratch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

from pkgmgr.errors import Code, PkgmgrError, Problem, ValidationFailed
from pkgmgr.registry.index_format import IndexExtension, valid_records
from pkgmgr.registry.layout import (
    CHANGES_DIR,
    CHANGES_MAX_BYTES,
    INCREMENTAL_CHUNKS,
    SHARDS_FILE,
    SHARDS_MAX_BYTES,
    SUMMARY_MAX_BYTES,
    chunk_of,
    chunk_path,
    shard_of,
    summary_path,
)
from pkgmgr.registry.summary import Change, ShardList, parse_chunk, parse_shard, parse_shards, record_json

if TYPE_CHECKING:
    from pkgmgr.registry.client import Registry

T = TypeVar("T")
DB_FILE = "search.sqlite"
SCHEMA_VERSION = 1
UNKNOWN_SERIAL = -1  # the rows reflect no one serial: the next sync resynchronises from the shards
_SCHEMA = """
CREATE TABLE IF NOT EXISTS state (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL,
                                  source TEXT NOT NULL, serial INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS shards (shard TEXT PRIMARY KEY, sha256 TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ext (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, shard TEXT NOT NULL,
                                hay TEXT NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS ext_shard ON ext (shard);
"""
_FTS_TABLE = """CREATE VIRTUAL TABLE IF NOT EXISTS ext_fts USING fts5(hay, content='ext', content_rowid='id',
                                                      tokenize='trigram case_sensitive 1', detail='none')"""
_TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS ext_ai AFTER INSERT ON ext BEGIN
       INSERT INTO ext_fts(rowid, hay) VALUES (new.id, new.hay); END""",
    """CREATE TRIGGER IF NOT EXISTS ext_ad AFTER DELETE ON ext BEGIN
       INSERT INTO ext_fts(ext_fts, rowid, hay) VALUES ('delete', old.id, old.hay); END""",
    """CREATE TRIGGER IF NOT EXISTS ext_au AFTER UPDATE ON ext BEGIN
       INSERT INTO ext_fts(ext_fts, rowid, hay) VALUES ('delete', old.id, old.hay);
       INSERT INTO ext_fts(rowid, hay) VALUES (new.id, new.hay); END""",
)
NEAR_LIMIT = 200  # the candidates "did you mean" ranks (registry/plan.py)
NEAR_GRAMS = 32  # the pieces of a (long) misspelt name that count
_GLOB_SPECIAL = str.maketrans({"*": "[*]", "?": "[?]", "[": "[[]"})


@dataclass(frozen=True)
class SyncReport:
    """What one `sync` did: how it caught up and what it fetched."""

    serial: int
    mode: str  # current | changes | shards
    files: int
    bytes: int
    extensions: int


def _hay(ext: IndexExtension) -> str:
    return f"{ext.name}\n{ext.description.lower()}"


def extensions_from_rows(rows: list[tuple[str, str]]) -> list[IndexExtension]:
    """(name, record) rows, by name, back to their values; each record is checked as a summary
    shard's is (SQLite stores whatever it is given), and must name its row. Raises `Damaged`."""
    try:
        records = [json.loads(record) for _, record in rows]
    except (ValueError, TypeError) as exc:  # ValueError: bad JSON too; TypeError: a record not text
        raise Damaged(f"a row's record is not one pkgmgr wrote ({type(exc).__name__})") from None
    found = valid_records(records)
    if found is None or [ext.name for ext in found] != [name for name, _ in rows]:
        raise Damaged("a row's record is not one pkgmgr wrote (not a summary record of its name)")
    return list(found)


class SearchIndex:
    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.source = source
        self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where the registry's cache folder goes: the caller's io_error
            raise sqlite3.OperationalError(f"{self.path.parent}: {exc.strerror}") from None
        _remove_strangers(self.path)
        for attempt in (1, 2):
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # a cache (module docstring)
                db.executescript(_SCHEMA)
                self.fts = _fts_available(db)
                row = db.execute("SELECT version, source FROM state WHERE id = 1").fetchone()
                if row is not None and (row[0] != SCHEMA_VERSION or row[1] != self.source):
                    raise sqlite3.DatabaseError("another schema or source")
                return db
            except sqlite3.DatabaseError:
                db.close()
                if attempt == 2:
                    raise
                try:
                    _remove(self.path)  # damaged or foreign: rebuilt from scratch
                except OSError:  # not a file (a directory): the caller's io_error says what to do
                    raise sqlite3.OperationalError(f"{self.path} is not a database file") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.db.close()

    @property
    def serial(self) -> int | None:
        row = self.db.execute("SELECT serial FROM state WHERE id = 1").fetchone()
        if row is not None and type(row[0]) is not int:  # SQLite keeps any type in any column
            raise Damaged(f"the recorded serial {row[0]!r:.40} is not one pkgmgr wrote")
        return None if row is None else row[0]

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM ext").fetchone()[0])

    def shard_digests(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT shard, sha256 FROM shards").fetchall())

    # -- writing ---------------------------------------------------------------------------------

    def _set_serial(self, serial: int) -> None:
        self.db.execute("INSERT INTO state (id, version, source, serial) VALUES (1, ?, ?, ?) "
                        "ON CONFLICT (id) DO UPDATE SET serial = excluded.serial", (SCHEMA_VERSION, self.source, serial))

    def _upsert(self, ext: IndexExtension, record: dict[str, Any]) -> None:
        self.db.execute("INSERT INTO ext (name, shard, hay, record) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET hay = excluded.hay, record = excluded.record",
                        (ext.name, shard_of(ext.name), _hay(ext), json.dumps(record, separators=(",", ":"))))

    def apply(self, changes: Iterable[Change], serial: int) -> int:
        """Apply change records (in serial order) and record `serial`, in one transaction.
        The shards they touch are forgotten (their sha256 no longer describes the rows)."""
        count = 0
        with _transaction(self.db):
            for change in changes:
                assert change.name is not None
                if change.extension is None:
                    self.db.execute("DELETE FROM ext WHERE name = ?", (change.name,))
                else:
                    self._upsert(change.extension, record_json(change.extension))
                self.db.execute("DELETE FROM shards WHERE shard = ?", (shard_of(change.name),))
                count += 1
            self._set_serial(serial)
        return count

    def loading(self) -> "_Loading":
        """One transaction for a resynchronisation; into an empty index, a bulk load (the
        full-text index built once at the end, not row by row: ~3x faster)."""
        return _Loading(self, bulk=self.fts and self.count() == 0)

    def load_shard(self, shard: str, sha256: str, extensions: Iterable[IndexExtension]) -> None:
        """Replace every row of `shard` (inside `loading()`)."""
        self.db.execute("DELETE FROM ext WHERE shard = ?", (shard,))
        self.db.executemany("INSERT INTO ext (name, shard, hay, record) VALUES (?, ?, ?, ?)",
                            [(ext.name, shard, _hay(ext), json.dumps(record_json(ext), separators=(",", ":")))
                             for ext in extensions])
        self.db.execute("INSERT OR REPLACE INTO shards (shard, sha256) VALUES (?, ?)", (shard, sha256))

    def drop_shards(self, keep: Iterable[str]) -> None:
        """Forget every shard but `keep` (inside `loading()`)."""
        kept = set(keep)
        for (shard,) in self.db.execute("SELECT DISTINCT shard FROM ext").fetchall():
            if shard not in kept:
                self.db.execute("DELETE FROM ext WHERE shard = ?", (shard,))
        for (shard,) in self.db.execute("SELECT shard FROM shards").fetchall():
            if shard not in kept:
                self.db.execute("DELETE FROM shards WHERE shard = ?", (shard,))

    def set_serial(self, serial: int) -> None:
        with _transaction(self.db):
            self._set_serial(serial)

    # -- reading ---------------------------------------------------------------------------------

    def search(self, term: str) -> list[IndexExtension]:
        """`_search`; raises `Damaged` when the database or a row is not what pkgmgr wrote, and
        sqlite3.OperationalError when it cannot be read now (locked, I/O)."""
        try:
            return self._search(term)
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:  # "database disk image is malformed", and the like
            raise Damaged(str(exc)) from None

    def _search(self, term: str) -> list[IndexExtension]:
        """Extensions whose name or lower-cased description contains `term` (lower-case), by
        name; every one with an empty term. Through the trigram index for a term of three or
        more characters, then checked exactly."""
        if not term:
            rows = self.db.execute("SELECT name, record FROM ext ORDER BY name").fetchall()
        elif self.fts and len(term) >= 3 and "\n" not in term:
            rows = self.db.execute("SELECT e.name, e.record FROM ext_fts f JOIN ext e ON e.id = f.rowid "
                                   "WHERE f.hay GLOB ? ORDER BY e.name", (f"*{term.translate(_GLOB_SPECIAL)}*",)).fetchall()
        else:
            rows = self.db.execute("SELECT name, record FROM ext WHERE instr(hay, ?) > 0 ORDER BY name",
                                   (term,)).fetchall()
        found = extensions_from_rows(rows)
        return [e for e in found if not term or term in e.name or term in e.description.lower()]

    def names_near(self, word: str, limit: int = NEAR_LIMIT) -> list[str]:
        """The names that may be a misspelling of `word` away from it, for "did you mean" to rank:
        of a length difflib's 0.7 cutoff allows (half to twice `word`'s), the `limit` sharing the
        most of its three-letter pieces. One pass over the name index; raises as `search`."""
        grams = sorted({word[i:i + 3] for i in range(len(word) - 2)} or {word})[:NEAR_GRAMS]
        shared = " + ".join("(instr(name, ?) > 0)" for _ in grams)
        try:
            rows = self.db.execute(f"SELECT name FROM (SELECT name, {shared} AS shared FROM ext "
                                   "WHERE length(name) BETWEEN ? AND ?) WHERE shared > 0 "
                                   "ORDER BY shared DESC, name LIMIT ?",
                                   (*grams, (len(word) + 1) // 2, 2 * len(word), limit)).fetchall()
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:
            raise Damaged(str(exc)) from None
        return [name for (name,) in rows]


class Damaged(sqlite3.DatabaseError):
    """The local index holds what pkgmgr did not write (a damaged page, a changed row)."""


class _Loading:
    """`SearchIndex.loading()`: one transaction (DDL included: SQLite's is transactional)."""

    def __init__(self, index: SearchIndex, *, bulk: bool) -> None:
        self.index = index
        self.bulk = bulk

    def __enter__(self) -> None:
        db = self.index.db
        db.execute("BEGIN IMMEDIATE")
        if self.bulk:
            for name in ("ext_ai", "ext_ad", "ext_au"):
                db.execute(f"DROP TRIGGER IF EXISTS {name}")

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        db = self.index.db
        if kind is not None:
            db.execute("ROLLBACK")
            return
        if self.bulk:
            db.execute("INSERT INTO ext_fts(ext_fts) VALUES ('rebuild')")
            for statement in _TRIGGERS:
                db.execute(statement)
        db.execute("COMMIT")


class _transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _fts_available(db: sqlite3.Connection) -> bool:
    try:
        db.execute(_FTS_TABLE)
        for statement in _TRIGGERS:
            db.execute(statement)
    except sqlite3.OperationalError:  # no FTS5, or no trigram tokenizer (SQLite < 3.34): a scan
        return False
    return True


# --- catching up with the registry ----------------------------------------------------------------


def index_path(registry: "Registry") -> Path:
    return registry.cache.root / DB_FILE


def sync(registry: "Registry") -> tuple[SearchIndex, SyncReport]:
    """The registry's local search index, brought to its serial (module docstring). Raises the
    errors of reading the registry (its name in the message)."""
    meta = registry.meta()
    path = index_path(registry)
    for attempt in (1, 2):
        try:
            index = SearchIndex(path, registry.source)
        except sqlite3.Error as exc:
            raise _db_error(registry, path, exc) from None
        try:
            return index, _catch_up(registry, index, meta.serial)
        except sqlite3.Error as exc:
            index.close()
            _rebuilt_or_raise(registry, path, exc, attempt)
        except BaseException:
            index.close()
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def search(registry: "Registry", term: str) -> list[IndexExtension]:
    """`SearchIndex.search` of the registry's local index, brought up to date first. An index
    found damaged (by `sync` or while searching) is a cache lost: it is removed and rebuilt from
    the registry once, with a warning; any other failure of it is an `io_error` (or `locked`)."""
    return _query(registry, lambda index: index.search(term))


def names_near(registry: "Registry", word: str) -> list[str]:
    """`SearchIndex.names_near` of the registry's local index, brought up to date first (as `search`)."""
    return _query(registry, lambda index: index.names_near(word))


def _query(registry: "Registry", ask: Callable[[SearchIndex], T]) -> T:
    for attempt in (1, 2):
        index, _ = sync(registry)
        try:
            return ask(index)
        except sqlite3.Error as exc:
            error = exc
        finally:
            index.close()  # before a damaged index is removed
        _rebuilt_or_raise(registry, index.path, error, attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _rebuilt_or_raise(registry: "Registry", path: Path, exc: sqlite3.Error, attempt: int) -> None:
    """Remove a damaged index (a database error but one of operation: locked, I/O, full disk)
    for the caller to rebuild it, once; raise `_db_error` for any other failure."""
    damaged = isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)
    if attempt == 2 or not damaged:
        raise _db_error(registry, path, exc) from None
    try:
        _remove(path)
    except OSError:
        raise _db_error(registry, path, exc) from None
    registry.session.warn(f"registry {registry.name}: its local search index {path} was damaged ({exc}): "
                          "rebuilding it from the registry")


def _remove_strangers(path: Path) -> None:
    """Remove what pkgmgr never writes at the database's paths — a symbolic link (SQLite would
    follow it and write into whatever file it names), a FIFO, a socket, a device — for the
    index to be rebuilt as a regular file. A directory is left for the caller's io_error."""
    for suffix in ("", "-wal", "-shm"):
        name = Path(f"{path}{suffix}")
        try:
            mode = name.lstat().st_mode
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                name.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise sqlite3.OperationalError(f"{name} is not a database file ({exc.strerror})") from None


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _db_error(registry: "Registry", path: Path, exc: sqlite3.Error) -> PkgmgrError:
    """A failure of the local index itself (disk full, another process holding it): its own
    code, never a traceback."""
    busy = "locked" in str(exc) or "busy" in str(exc)
    return PkgmgrError(f"registry {registry.name}: its local search index {path}: {exc}",
                       code=Code.LOCKED if busy else Code.IO_ERROR, details={"registry": registry.name},
                       hint="try again; 'pkgmgr cache clean' removes the local index, which is rebuilt from the "
                            "registry" if not busy else "another pkgmgr is updating it: try again")


def _catch_up(registry: "Registry", index: SearchIndex, serial: int) -> SyncReport:
    known = index.serial
    if known == serial:
        return SyncReport(serial, "current", 0, 0, index.count())
    counter = _Counter()
    if known is not None and 0 <= known < serial and chunk_of(serial) - chunk_of(known + 1) < INCREMENTAL_CHUNKS:
        changes = _changes_since(registry, known, serial, counter)
        if changes is not None:
            index.apply(changes, serial)
            _drop_read_chunks(registry, serial)
            return SyncReport(serial, "changes", counter.files, counter.bytes, index.count())
    listed = _read(registry, SHARDS_FILE, SHARDS_MAX_BYTES, parse_shards, counter)
    if listed is None:
        raise PkgmgrError(f"registry {registry.name} ({registry.source}) has no {SHARDS_FILE}: its summary is "
                          "missing", code=Code.INVALID_INDEX, details={"registry": registry.name, "file": SHARDS_FILE},
                          hint="its maintainers rebuild it with 'pkgmgr registry build DIR'")
    exact = _load_shards(registry, index, listed, counter)
    # a shard that is not the one listed (a publish between the two reads, a cache serving an older
    # shard): its rows answer now, but the index claims no serial, so the next sync resynchronises
    index.set_serial(min(listed.serial, serial) if exact else UNKNOWN_SERIAL)
    registry.reader.keep(SHARDS_FILE)
    _drop_read_chunks(registry, index.serial)
    return SyncReport(serial, "shards", counter.files, counter.bytes, index.count())


def _drop_read_chunks(registry: "Registry", serial: int | None) -> None:
    """Drop the cached changes chunks the index is past: the next catch-up reads from the chunk of
    `serial + 1` (the serial the index holds) on, so the ones before it are never read again
    (without this they accumulate, one per CHUNK_SERIALS serials of the registry). An index that
    holds no serial drops none."""
    if serial is None or serial < 0:
        return
    first_needed = chunk_of(serial + 1)

    def stale(name: str) -> bool:
        number = name.removesuffix(".json")
        return number != name and number.isdigit() and number.isascii() and int(number) < first_needed

    registry.reader.prune(CHANGES_DIR, stale)


@dataclass
class _Counter:
    files: int = 0
    bytes: int = 0


def _read(registry: "Registry", rel: str, cap: int, parse: Callable[[bytes], Any], counter: _Counter) -> Any:
    def counted(raw: bytes) -> Any:
        counter.files += 1
        counter.bytes += len(raw)
        return parse(raw)

    return registry.read_file(rel, cap, counted)


def _parse_chunk(raw: bytes, *, rel: str, chunk: int) -> list[Change]:
    return parse_chunk(raw, rel, chunk)


def _parse_shard(raw: bytes, *, rel: str, shard: str) -> tuple[str, int, tuple[IndexExtension, ...]]:
    return hashlib.sha256(raw).hexdigest(), len(raw), parse_shard(raw, rel, shard)


def _changes_since(registry: "Registry", known: int, serial: int, counter: _Counter) -> list[Change] | None:
    """The changes of serials known+1 … serial, or None when the log cannot say (a chunk
    missing, a serial without a record, a `reset`): then the shards decide."""
    found: list[Change] = []
    for chunk in range(chunk_of(known + 1), chunk_of(serial) + 1):
        rel = chunk_path(chunk)
        changes = _read(registry, rel, CHANGES_MAX_BYTES, functools.partial(_parse_chunk, rel=rel, chunk=chunk),
                        counter)
        if changes is None:
            return None
        registry.reader.keep(rel)
        found += [c for c in changes if known < c.serial <= serial]
    if any(c.op == "reset" for c in found) or {c.serial for c in found} != set(range(known + 1, serial + 1)):
        return None
    return found


def _load_shards(registry: "Registry", index: SearchIndex, listed: ShardList, counter: _Counter) -> bool:
    """Load the shards whose sha256 the index does not hold; False when one read was not the one
    `listed` names."""
    held = index.shard_digests()
    with index.loading():
        return _load_changed_shards(registry, index, listed, counter, held)


def _load_changed_shards(registry: "Registry", index: SearchIndex, listed: ShardList, counter: _Counter,
                         held: dict[str, str]) -> bool:
    exact = True
    for shard, info in sorted(listed.shards.items()):
        if held.get(shard) == info.sha256:
            continue
        rel = summary_path(shard)
        read = _read(registry, rel, SUMMARY_MAX_BYTES, functools.partial(_parse_shard, rel=rel, shard=shard), counter)
        if read is None:
            raise ValidationFailed([Problem(Code.INVALID_INDEX, rel, "", f"missing, though {SHARDS_FILE} lists it")],
                                   summary=f"registry {registry.name} ({registry.source}):")
        digest, size, records = read
        if digest == info.sha256 and (size, len(records)) != (info.size, info.extensions):
            raise ValidationFailed([Problem(Code.INVALID_INDEX, SHARDS_FILE, f"shards.{shard}",
                                            f"says {info.size} bytes and {info.extensions} extensions, but the shard "
                                            f"of its sha256 has {size} bytes and {len(records)} extensions")],
                                   summary=f"registry {registry.name} ({registry.source}):")
        # the digest of what was read (a shard newer than the list is fetched again next time); shards
        # are not kept in the file cache: the rows are
        index.load_shard(shard, digest, records)
        exact = exact and digest == info.sha256
    index.drop_shards(listed.shards)
    return exact
