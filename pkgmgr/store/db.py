"""The SQLite state of one scope: connection setup and forward-only schema migrations.

Every write happens inside `transaction()` (BEGIN IMMEDIATE ... COMMIT), so a crash leaves
either the old or the new state. WAL mode lets readers proceed while a writer works.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError, io_error
from pkgmgr.fsutil import DURABLE
from pkgmgr.store.checks import ROW_RULES, decode_text, row_problem

FORMAT_1_MARK = "sha256-1:"  # a format-1 tree checksum kept by migration 5: it equals no tree's checksum


def _tree_checksums_format_2(conn: sqlite3.Connection, root: Path) -> None:
    """Tree checksums to format 2 (SPEC 3). A format-1 value is never taken for a format-2 one:
    each installed tree is hashed again, and the new value is recorded only when the tree still
    holds exactly the files its install listed (the listing's per-file sha256 and modes do not
    depend on the format). A tree that is missing or no longer matches keeps its old value
    marked `sha256-1:`, so `doctor --check` and `ext verify` go on reporting it."""
    from pkgmgr.archive.checksum import is_tree_checksum, tree_checksum_and_listing

    rows = conn.execute("SELECT name, path, tree_sha256, tree_listing FROM extensions").fetchall()  # before 9: all Compozy's
    for name, path, old, listing in rows:
        if is_tree_checksum(old) or old.startswith(FORMAT_1_MARK):
            continue
        new = FORMAT_1_MARK + old
        try:
            checksum, current = tree_checksum_and_listing(root / path)
            if current == json.loads(listing):
                new = checksum
        except (OSError, ValueError, PkgmgrError):
            pass  # unreadable: not a tree this install recorded
        conn.execute("UPDATE extensions SET tree_sha256 = ? WHERE name = ?", (new, name))


_PLACEHOLDER_TREE = "sha256-2:" + "0" * 64  # what schema 9's first install recorded before its tree was in
_EXTENSIONS_10 = """
    CREATE TABLE extensions_10 (
        host TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        path TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        pinned INTEGER NOT NULL DEFAULT 0,
        source_kind TEXT NOT NULL,
        source TEXT NOT NULL,
        registry TEXT,
        source_url TEXT,
        sha256 TEXT,
        verified INTEGER NOT NULL,
        allow_unverified INTEGER NOT NULL,
        tier TEXT,
        tree_sha256 TEXT NOT NULL,
        tree_listing TEXT NOT NULL,
        manifest TEXT NOT NULL,
        network_digest TEXT NOT NULL,
        grants TEXT NOT NULL,
        max_scope TEXT,
        installed_at TEXT NOT NULL,
        installed_by TEXT NOT NULL,
        layout TEXT NOT NULL DEFAULT 'directory',
        disabled_path TEXT,
        PRIMARY KEY (host, name)
    )
"""
_KEPT_10 = ("host, name, version, path, enabled, pinned, source_kind, source, registry, source_url, sha256, verified, "
            "allow_unverified, tier, tree_sha256, tree_listing, manifest, network_digest, grants, max_scope, "
            "installed_at, installed_by, layout, disabled_path")


def _one_pending_record(conn: sqlite3.Connection, root: Path) -> None:
    """Migration 10: `pending_trees` records every host's changes (host, action, transaction
    directory, batch, the record moved to); the `pending` column of a folder host's row moves there
    as an intent of phase `in` (its commit never happened: the next writer undoes it, as schema 9's
    recovery kept the old install when its tree was not in place), a first install's placeholder
    row goes, and `extensions` is rebuilt without the column. A pending record that does not parse
    is dropped: what it named stays where it is (its transaction directory is a leftover of the
    host's staging folder, removed by that host's next writer)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(pending_trees)")}
    for column, kind in (("host", "TEXT NOT NULL DEFAULT 'compozy'"), ("action", "TEXT NOT NULL DEFAULT 'tree'"),
                         ("tx", "TEXT"), ("batch", "TEXT"), ("row", "TEXT")):
        if column not in have:
            conn.execute(f"ALTER TABLE pending_trees ADD COLUMN {column} {kind}")
    if "pending" not in {row[1] for row in conn.execute("PRAGMA table_info(extensions)")}:
        return
    found = conn.execute("SELECT host, name, version, tree_sha256, pending FROM extensions WHERE pending IS NOT NULL")
    for host, name, version, tree_sha256, text in found.fetchall():
        try:
            record = json.loads(text)
            action, place = record["action"], record["place"]
            moving_to = record.get("row") if isinstance(record.get("row"), dict) else None
            new_version = (moving_to or {}).get("version", version)
            if action not in ("install", "remove", "move") or not isinstance(place, str) or not isinstance(
                    new_version, str):
                raise ValueError(action)
        except (TypeError, ValueError, KeyError, RecursionError):
            continue
        tx = record.get("tx") if isinstance(record.get("tx"), str) else None
        conn.execute("INSERT OR REPLACE INTO pending_trees (path, name, version, pending, recorded_at, host, action, "
                     "tx, batch, row) VALUES (?, ?, ?, 'in', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?, ?, ?, NULL, ?)",
                     (place, name, new_version, host, action, tx,
                      json.dumps({"row": moving_to}, sort_keys=True) if moving_to is not None else None))
        if tree_sha256 == _PLACEHOLDER_TREE:
            conn.execute("DELETE FROM extensions WHERE host = ? AND name = ?", (host, name))
    conn.execute(_EXTENSIONS_10)
    conn.execute(f"INSERT INTO extensions_10 ({_KEPT_10}) SELECT {_KEPT_10} FROM extensions")
    conn.execute("DROP TABLE extensions")
    conn.execute("ALTER TABLE extensions_10 RENAME TO extensions")


# Each entry migrates the schema from version i to i + 1: SQL statements, or a function of the
# connection and the scope root (the directory of state.db). Never edit a released step; append
# (and raise pkgmgr.store.checks.SCHEMA_VERSION with it).
MIGRATIONS: tuple[str | Callable[[sqlite3.Connection, Path], None], ...] = (
    # 1: installed extensions with their provenance
    """
    CREATE TABLE extensions (
        name TEXT PRIMARY KEY,
        version TEXT NOT NULL,
        path TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        pinned INTEGER NOT NULL DEFAULT 0,
        source_kind TEXT NOT NULL,
        source TEXT NOT NULL,
        registry TEXT,
        source_url TEXT,
        sha256 TEXT,
        verified INTEGER NOT NULL,
        allow_unverified INTEGER NOT NULL,
        tier TEXT,
        tree_sha256 TEXT NOT NULL,
        tree_listing TEXT NOT NULL,
        manifest TEXT NOT NULL,
        network_digest TEXT NOT NULL,
        grants TEXT NOT NULL,
        max_scope TEXT,
        installed_at TEXT NOT NULL,
        installed_by TEXT NOT NULL
    );
    """,
    # 2: what the client remembers of each registry source (SPEC 5.4; used in the global scope)
    """
    CREATE TABLE registry_serials (
        source TEXT PRIMARY KEY,
        serial INTEGER NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE registry_versions (
        source TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (source, name, version)
    );
    """,
    # 3: bundle activations and the resources they project (SPEC 9)
    """
    CREATE TABLE activations (
        id TEXT PRIMARY KEY,
        extension TEXT NOT NULL,
        extension_version TEXT NOT NULL,
        bundle TEXT NOT NULL,
        profile TEXT NOT NULL,
        scope TEXT NOT NULL,
        workspace TEXT NOT NULL,
        version INTEGER NOT NULL,
        status TEXT NOT NULL,
        network_digest TEXT NOT NULL,
        activation_digest TEXT NOT NULL,
        primary_channel TEXT,
        confirmed_version INTEGER,
        confirmed_digest TEXT,
        confirmed_at TEXT,
        confirmed_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX activations_extension ON activations (extension);
    CREATE TABLE resources (
        id TEXT PRIMARY KEY,
        activation_id TEXT NOT NULL REFERENCES activations (id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        source_path TEXT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX resources_activation ON resources (activation_id);
    CREATE INDEX resources_kind_name ON resources (kind, name);
    """,
    # 4: workspace stores created for this user, and approvals of workspace declarations (SPEC 10;
    # used in the global scope, which a repository cannot write)
    """
    CREATE TABLE workspace_stores (
        id TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE TABLE trust_approvals (
        workspace TEXT NOT NULL,
        digest TEXT NOT NULL,
        approved_at TEXT NOT NULL,
        approved_by TEXT NOT NULL,
        PRIMARY KEY (workspace, digest)
    );
    """,
    # 5: tree checksums recomputed in format 2 (SPEC 3)
    _tree_checksums_format_2,
    # 6: yanks are sticky (SPEC 5.4): a version once seen yanked in a registry stays yanked there
    """
    ALTER TABLE registry_versions ADD COLUMN yanked INTEGER NOT NULL DEFAULT 0;
    """,
    # 7: installs pkgmgr manages in folders of hosts that load extensions from their own (SPEC 13); merged
    # into `extensions` by migration 9
    """
    CREATE TABLE IF NOT EXISTS host_extensions (
        host TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        path TEXT NOT NULL,
        layout TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        disabled_path TEXT,
        pinned INTEGER NOT NULL DEFAULT 0,
        source_kind TEXT NOT NULL,
        source TEXT NOT NULL,
        registry TEXT,
        source_url TEXT,
        sha256 TEXT,
        verified INTEGER NOT NULL,
        tier TEXT,
        tree_sha256 TEXT NOT NULL,
        tree_listing TEXT NOT NULL,
        manifest TEXT NOT NULL,
        capabilities TEXT NOT NULL,
        pending TEXT,
        installed_at TEXT NOT NULL,
        installed_by TEXT NOT NULL,
        PRIMARY KEY (host, name)
    );
    """,
    # 8: the trees a writer is moving in or out of extensions/ (SPEC 4 `pending`): recorded before
    # the rename (`in`) or in the transaction that stops naming a tree (`out`), dropped once the
    # move is done; the next writer removes the trees a dead command left recorded here, and only those
    """
    CREATE TABLE IF NOT EXISTS pending_trees (
        path TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        pending TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    );
    """,
    # 9: one table of installs for every host (SPEC 13): `extensions` keyed by (host, name), since two
    # hosts may hold one name; the scope store's own rows are host 'compozy', the rows of migration 7's
    # `host_extensions` move in with their host, their capabilities as their grants
    """
    CREATE TABLE extensions_9 (
        host TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        path TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        pinned INTEGER NOT NULL DEFAULT 0,
        source_kind TEXT NOT NULL,
        source TEXT NOT NULL,
        registry TEXT,
        source_url TEXT,
        sha256 TEXT,
        verified INTEGER NOT NULL,
        allow_unverified INTEGER NOT NULL,
        tier TEXT,
        tree_sha256 TEXT NOT NULL,
        tree_listing TEXT NOT NULL,
        manifest TEXT NOT NULL,
        network_digest TEXT NOT NULL,
        grants TEXT NOT NULL,
        max_scope TEXT,
        installed_at TEXT NOT NULL,
        installed_by TEXT NOT NULL,
        layout TEXT NOT NULL DEFAULT 'directory',
        disabled_path TEXT,
        pending TEXT,
        PRIMARY KEY (host, name)
    );
    INSERT INTO extensions_9 (host, name, version, path, enabled, pinned, source_kind, source, registry, source_url,
                              sha256, verified, allow_unverified, tier, tree_sha256, tree_listing, manifest,
                              network_digest, grants, max_scope, installed_at, installed_by)
        SELECT 'compozy', name, version, path, enabled, pinned, source_kind, source, registry, source_url, sha256,
               verified, allow_unverified, tier, tree_sha256, tree_listing, manifest, network_digest, grants,
               max_scope, installed_at, installed_by
        FROM extensions;
    INSERT INTO extensions_9 (host, name, version, path, enabled, pinned, source_kind, source, registry, source_url,
                              sha256, verified, allow_unverified, tier, tree_sha256, tree_listing, manifest,
                              network_digest, grants, max_scope, installed_at, installed_by, layout, disabled_path,
                              pending)
        SELECT host, name, version, path, enabled, pinned, source_kind, source, registry, source_url, sha256,
               verified, 1 - verified, tier, tree_sha256, tree_listing, manifest, '', capabilities, NULL,
               installed_at, installed_by, layout, disabled_path, pending
        FROM host_extensions;
    DROP TABLE extensions;
    DROP TABLE host_extensions;
    ALTER TABLE extensions_9 RENAME TO extensions;
    """,
    # 10: one record of what a writer is changing, for every host (SPEC 4, 13: `store.pending`): a folder
    # host's switch recorded in `pending_trees` like the scope store's trees, no longer in a column of
    # its install's row; a first install no longer leaves a placeholder row
    _one_pending_record,
    # 11: an install keeps the one it replaced (`previous`: its row, as JSON, naming its kept tree) for
    # `ext rollback`, and a development link names the folder its host loads (`linked`); an activation
    # keeps the network requirement last confirmed (`confirmed_requirement`, JSON), which an update
    # that changes the requirement leaves, so that `bundle show` says what changed since
    lambda conn, root: _add_columns(conn, {"extensions": ("previous", "linked"),
                                           "activations": ("confirmed_requirement",)}),
)


def _add_columns(conn: sqlite3.Connection, columns: dict[str, tuple[str, ...]]) -> None:
    """Add each TEXT column its table lacks (a column already there is left as it is)."""
    for table, names in columns.items():
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}  # the names are ours
        for name in names:
            if name not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} TEXT")


# The connections `connect` and `connect_readonly` opened while the `pkgmgr` command runs, each with
# whether it is read-only: the command closes them itself before it exits (`close_connections`, from
# `pkgmgr.cli.console`). A caller of `pkgmgr.cli.main` in its own process keeps nothing here: main
# forgets them after each command (`forget_connections`), and they close as they always did.
_opened: list[tuple[sqlite3.Connection, bool]] = []


def close_connections() -> None:
    """Close every connection opened since the last `forget_connections`, read-only ones first:
    the last to close is then a writer, which checkpoints the WAL into `state.db` and removes it
    (SQLite does that when the last connection to a database closes; a read-only one cannot)."""
    for conn, _ in sorted(_opened, key=lambda opened: not opened[1]):
        try:
            conn.close()
        except sqlite3.Error:  # nothing is lost: every commit is durable already (synchronous = FULL)
            pass
    _opened.clear()


def forget_connections() -> None:
    _opened.clear()


def connect(path: Path, *, create: bool = True, must_hold_data: bool = False) -> sqlite3.Connection:
    """Open `state.db`, switch it to WAL and migrate it forward.

    Raises `state_inconsistent` when the file is not a database this version understands, and
    (with `must_hold_data`: installed trees exist) when it holds no schema at all.
    """
    if not create and not path.exists():
        raise FileNotFoundError(path)
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30.0, check_same_thread=False)
        _configure(conn)
        if must_hold_data and schema_version(conn) == 0:
            conn.close()
            raise lost_database(path, "is empty")
        _use_wal(conn)
        # FULL: every commit is on disk before COMMIT returns (the WAL is fsynced), so a tree
        # removed after a commit (a switch, a remove) is never needed by a state a power cut
        # brings back (SPEC 4 "Durability"); NORMAL may lose the last commits
        conn.execute(f"PRAGMA synchronous = {'FULL' if DURABLE else 'NORMAL'}")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn, path.parent)
        _check_tables(conn)
    except sqlite3.DatabaseError as exc:
        raise unusable(path, exc) from exc
    _opened.append((conn, False))
    return conn


# How long a connection retries switching a new database to WAL while other processes open it too.
WAL_SWITCH_SECONDS = 30.0


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the database to WAL (once: the mode is kept in the file). SQLite answers "database is
    locked" at once, without its busy handler, when another connection holds a lock meanwhile —
    as when several pkgmgr processes open a fresh home together (tests/reliability/test_concurrency.py's
    fresh-home round) — so the switch is retried, the mode read again first (another process may
    have switched it), until WAL_SWITCH_SECONDS pass."""
    import time

    deadline = time.monotonic() + WAL_SWITCH_SECONDS
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            # the extended code (SQLITE_BUSY_RECOVERY while another process recovers the WAL, ...)
            # on top of its primary one
            if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.005)


def connect_readonly(path: Path, *, must_hold_data: bool = False) -> sqlite3.Connection | None:
    """Open `state.db` for reading only: `mode=ro`, or `immutable=1` when its directory cannot be
    written (a read-only filesystem: SQLite could not create the -shm file a WAL reader needs) and
    no -wal and -shm were left there (with both, `mode=ro` reads the commits the -wal holds, which
    the database file alone may not: read immutable it can even look malformed). None when the
    schema is older than this pkgmgr's and the directory is writable (the caller migrates it with
    `connect`). Raises like `connect`."""
    from urllib.parse import quote

    writable = os.access(path.parent, os.W_OK)
    sides = all(os.path.exists(f"{path}{side}") for side in ("-wal", "-shm"))
    modes = ["mode=ro"] if writable else (["mode=ro", "immutable=1"] if sides else ["immutable=1"])
    try:
        for attempt, mode in enumerate(modes):
            conn = sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True, isolation_level=None, timeout=30.0,
                                   check_same_thread=False)
            _configure(conn)
            try:
                version = schema_version(conn)
                break
            except sqlite3.DatabaseError:
                conn.close()
                if attempt == len(modes) - 1:
                    raise
        if version == 0 and must_hold_data:
            conn.close()
            raise lost_database(path, "is empty")
        if version > len(MIGRATIONS):
            raise sqlite3.DatabaseError(f"schema version {version} is newer than this pkgmgr understands "
                                        f"({len(MIGRATIONS)})")
        if version < len(MIGRATIONS):
            conn.close()
            if writable:
                return None
            raise PkgmgrError(f"{path}: schema version {version} needs migrating to {len(MIGRATIONS)}, which a "
                              "directory that cannot be written does not allow", code=Code.IO_ERROR,
                              details={"errno": "EROFS", "os_message": "not writable"}, path=str(path),
                              hint="run any pkgmgr command once where the store can be written")
        _check_tables(conn)
    except sqlite3.DatabaseError as exc:
        raise unusable(path, exc) from exc
    _opened.append((conn, True))
    return conn


def _check_tables(conn: sqlite3.Connection) -> None:
    """A database of the current schema holds every table of it: one dropped by hand (or by a
    damaged file) is `state_inconsistent` where it is opened, never an error of the first query."""
    have = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [table for table in ROW_RULES if table not in have]
    if missing:
        conn.close()
        raise sqlite3.DatabaseError(f"table {', '.join(missing)} is missing")


def _configure(conn: sqlite3.Connection) -> None:
    conn.row_factory = sqlite3.Row
    conn.text_factory = decode_text
    conn.execute("PRAGMA busy_timeout = 30000")


def unusable(path: Path, exc: sqlite3.DatabaseError) -> PkgmgrError:
    """`io_error` when the disk is at fault (full, read-only, denied, failing), else
    `state_inconsistent`: the file is not a database this pkgmgr can use."""
    disk = io_error(exc, path)
    if disk is not None:
        return disk
    return PkgmgrError(
        f"{path}: the state database cannot be used: {exc}",
        code=Code.STATE_INCONSISTENT,
        hint="run 'pkgmgr doctor --check' to inspect the scope",
    )


def lost_database(path: Path, how: str) -> PkgmgrError:
    """`state_inconsistent` for a state.db that is missing or empty while installed trees exist."""
    return PkgmgrError(
        f"{path} {how}, but {path.parent / 'extensions'} holds installed trees: nothing can be "
        "trusted about them, and nothing was changed or deleted",
        code=Code.STATE_INCONSISTENT,
        path=str(path),
        hint="restore state.db from a backup, or run 'pkgmgr doctor --rebuild' to record the trees found "
             "(provenance unknown)",
    )


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _migrate(conn: sqlite3.Connection, root: Path) -> None:
    current = schema_version(conn)
    target = len(MIGRATIONS)
    if current > target:
        raise sqlite3.DatabaseError(f"schema version {current} is newer than this pkgmgr understands ({target})")
    if current == target:
        return
    with transaction(conn):
        current = schema_version(conn)  # another process may have migrated meanwhile
        for step in range(current, target):
            migration = MIGRATIONS[step]
            if callable(migration):
                migration(conn, root)
            else:
                for statement in _statements(migration):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {step + 1}")
        crashpoint("db.migrate.before_commit")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One atomic write: BEGIN IMMEDIATE, COMMIT on success, ROLLBACK on any exception."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # SQLite rolls back by itself on a full disk or an I/O error
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")
    except sqlite3.Error as exc:
        disk = io_error(exc, database_path(conn))
        if disk is not None:
            raise disk from exc
        raise


def database_path(conn: sqlite3.Connection) -> str | None:
    try:
        return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), None) or None
    except sqlite3.Error:
        return None


# --- reading rows: every decoded row is checked before it is believed (SPEC 4) ----------------------


def damaged_row(table: str, key: Any, column: str, why: str) -> PkgmgrError:
    """`state_inconsistent` for one damaged row, naming its table, row and column."""
    row = ascii(key) if isinstance(key, str) else str(key)
    return PkgmgrError(
        f"state.db: row {row} of table {table} is damaged: column {column}: {why}",
        code=Code.STATE_INCONSISTENT,
        details={"table": table, "row": key if isinstance(key, int) or (isinstance(key, str) and decodable(key)) else row,
                 "column": column},
        hint="run 'pkgmgr doctor --check' to list the damage; reinstalling the extension rewrites its row",
    )


def decodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_row(table: str, row: sqlite3.Row) -> sqlite3.Row:
    """Raise `state_inconsistent` (naming the table, the row and the column) when a column of
    `row` holds undecodable text or a value its column never holds; return the row."""
    problem = row_problem(table, row)
    if problem is not None:
        key_column = ROW_RULES[table][0]
        raise damaged_row(table, row[key_column] if key_column in row.keys() else "?", *problem)
    return row


def rows(conn: sqlite3.Connection, table: str, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
    """Every row `sql` selects from `table`, each checked by `check_row`."""
    return [check_row(table, row) for row in conn.execute(sql, tuple(params))]


def one_row(conn: sqlite3.Connection, table: str, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
    row = conn.execute(sql, tuple(params)).fetchone()
    return check_row(table, row) if row is not None else None
