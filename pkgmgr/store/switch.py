"""Switch and remove extensions in one scope, atomically.

The store's end of SPEC 4's sequence (staging and verification are `pkgmgr.install.verify`'s):
rename a verified tree into `extensions/<name>/<version>/` -> one SQLite transaction switches the
current version, records provenance and runs the caller's `on_switch` hook (the activation
refresh, composed by `pkgmgr.hosts.scope_store`) -> the old version directory is removed.
A crash anywhere leaves the old or the new state; each tree it moves is recorded in
`pending_trees` first (`store.pending`), so what it leaves on disk is a pending tree the next
writer removes, and nothing else. Against power loss the order is dpkg's: the tree is flushed before the
rename, its directory after it, and the commit is durable (synchronous = FULL) before the old
tree is deleted. Nothing here imports a layer above the store.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pkgmgr.store.pending as pending
from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import durable_tree, fsync_dirs, remove_tree
from pkgmgr.store.checks import STORE_HOST
from pkgmgr.store.db import transaction
from pkgmgr.store.installed import Installed

if TYPE_CHECKING:
    from pkgmgr.store.scope import Scope


# What the store needs of the layer above, as ports (`pkgmgr.install` satisfies them with
# `Fetched`, `Verified` and `InstallOptions`); the store imports none of it.


class Source(Protocol):
    """Where a tree came from, as the `extensions` row records it."""

    @property
    def kind(self) -> str: ...
    @property
    def locator(self) -> str: ...
    @property
    def registry(self) -> str | None: ...
    @property
    def source_url(self) -> str | None: ...
    @property
    def sha256(self) -> str | None: ...
    @property
    def verified(self) -> bool: ...
    @property
    def tier(self) -> str | None: ...


class Staged(Protocol):
    """A verified tree in a staging directory, ready to be switched to."""

    @property
    def fetched(self) -> Source: ...
    @property
    def root(self) -> Path: ...
    @property
    def staging(self) -> Path: ...
    @property
    def document(self) -> Mapping[str, Any]: ...  # the manifest as the row records it
    @property
    def network_digest(self) -> str: ...
    @property
    def tree_sha256(self) -> str: ...
    @property
    def listing(self) -> dict[str, str]: ...
    @property
    def grants(self) -> tuple[str, ...]: ...
    @property
    def max_scope(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def durable(self) -> bool: ...  # its files are on disk already (`make_durable`): `commit` need not flush
    @property
    def linked(self) -> str | None: ...  # a development link: `root` is the link to this folder (`ext link`)
    def summary(self) -> dict[str, Any]: ...


class Flushable(Protocol):
    """A staged tree `make_durable` marks as flushed."""

    durable: bool


class SwitchOptions(Protocol):
    """The options a switch reads."""

    @property
    def force(self) -> bool: ...
    @property
    def pin(self) -> bool: ...
    @property
    def allow_unverified(self) -> bool: ...

# hooks run inside the store's transactions by the layer above (the activation refresh):
OnSwitch = Callable[[sqlite3.Connection, Installed], list[dict[str, Any]]]
BeforeDelete = Callable[[sqlite3.Connection, Installed], list[dict[str, Any]]]


@dataclass
class Outcome:
    action: str  # installed | switched | unchanged | reinstalled
    installed: Installed
    previous_version: str | None = None
    activations: list[dict[str, Any]] = field(default_factory=list)


def get_installed(scope: Scope, name: str) -> Installed | None:
    """The scope store's own install `name` (the store host's, `STORE_HOST`), or None."""
    conn = scope.reader()
    if conn is None:
        return None
    row = conn.execute("SELECT * FROM extensions WHERE host = ? AND name = ?", (STORE_HOST, name)).fetchone()
    return Installed.from_row(row, scope.kind, scope.root) if row else None


def list_installed(scope: Scope) -> list[Installed]:
    """The scope store's own installs, by name."""
    conn = scope.reader()
    if conn is None:
        return []
    return [Installed.from_row(r, scope.kind, scope.root)
            for r in conn.execute("SELECT * FROM extensions WHERE host = ? ORDER BY name", (STORE_HOST,))]


class Provenance(Protocol):
    """Where an install came from, as its row records it."""

    @property
    def source_kind(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def registry(self) -> str | None: ...


def same_source(current: Provenance, fetched: Source) -> bool:
    if current.source_kind != fetched.kind:
        return False
    if fetched.kind == "registry":
        return current.registry == fetched.registry
    return current.source == fetched.locator


def check_source(current: Provenance, fetched: Source, name: str, *, force: bool) -> bool:
    """Whether `fetched` comes from the source `current` was installed from. Raises
    source_conflict when it does not, unless `force` (the one rule of every host's switch)."""
    if same_source(current, fetched):
        return True
    if not force:
        raise PkgmgrError(
            f"{name} is installed from another source ({current.source_kind} {current.source}); "
            f"refusing to replace it with {fetched.kind} {fetched.locator}",
            code=Code.SOURCE_CONFLICT,
            hint="pass --force to replace it",
        )
    return False


def check_replace(current: Installed, prepared: Staged, options: SwitchOptions) -> bool:
    """Whether `prepared` is exactly the `current` install (committing it changes nothing).
    Raises the `source_conflict` that replacing `current` with it would be, reading only."""
    from pkgmgr.versions import same_version  # here: `ext list` imports this module, not packaging

    fetched = prepared.fetched
    name, version = prepared.name, prepared.version
    if prepared.linked is not None:
        return False  # a link replaces whatever is installed; `ext unlink` restores it
    if current.linked is not None and not options.force:
        raise linked_error(current, "replace it")
    from_same_source = check_source(current, fetched, name, force=options.force)
    if not same_version(current.version, version):
        return False
    # --force always replaces: it records another source's provenance even when the content is
    # identical, and it repairs an installed tree that was modified since; the same content over a
    # tree that is gone or damaged repairs it too (SPEC 4)
    same_content = from_same_source and current.tree_sha256 == prepared.tree_sha256
    if same_content and not options.force:
        return tree_is_intact(current)
    if not (options.force or same_content):
        raise PkgmgrError(
            f"{name} {version} is already installed with different content "
            f"(tree {current.tree_sha256[:21]} vs {prepared.tree_sha256[:21]})",
            code=Code.SOURCE_CONFLICT,
            hint="pass --force to replace it",
        )
    return False


def linked_error(current: Installed, what: str) -> PkgmgrError:
    """The refusal to change an install that is a development link (`ext link`) otherwise than by
    `ext unlink` (or `--force`, which replaces the link)."""
    kept = current.kept()
    restores = f" and restores {kept.version or 'the version it replaced'}" if kept is not None else ""
    return PkgmgrError(f"{current.name} is linked to {current.linked} (a development link): refusing to {what}",
                       code=Code.SOURCE_CONFLICT, details={"linked": current.linked},
                       hint=f"'pkgmgr ext unlink {current.name}' removes the link{restores}")


def make_durable(scope: Scope, prepared: Sequence[Flushable]) -> None:
    """Flush the trees prepared for one command once, before the first is renamed in (one
    `syncfs` rather than one per ref: SPEC 4 "Durability")."""
    waiting = [item for item in prepared if not item.durable]
    if waiting:
        durable_tree(scope.staging_dir)
        for item in waiting:
            item.durable = True


def commit(scope: Scope, prepared: Staged, options: SwitchOptions,
           announce: Callable[[dict[str, Any]], None] | None = None, *,
           on_switch: OnSwitch | None = None) -> Outcome:
    """Move a verified tree into place and switch to it in one transaction (writer lock held).
    `announce` sees the summary once the commit is certain to change something, before it does
    (SPEC 7: what an install grants, runs and needs, shown before it acts). `on_switch` runs in
    the transaction with the new row and returns the activations it changed; what it raises rolls
    the switch back."""
    try:
        return commit_all(scope, [Switch(prepared, announce, on_switch)], options)[0]
    except BatchRefused as refused:
        raise refused.error from None


@dataclass
class Switch:
    """One ref of a batch `commit_all` switches to (`index`: its place in the command's batch, for
    `BatchRefused`; by default its place among the switches)."""

    prepared: Staged
    announce: Callable[[dict[str, Any]], None] | None = None
    on_switch: OnSwitch | None = None
    index: int | None = None


class Part(Protocol):
    """A change of another host's install that commits in the scope's one transaction beside the
    scope store's trees (a folder host's switch: `hosts.folder.FolderSwitch`), in the one protocol
    (`store.pending`): its `intents` recorded with the batch's before anything moves, its host's
    lock taken (`hold`) before the first tree of the batch moves and kept until its host's records
    are written (`finish`), its tree moved in (`move_in`, returning the directories whose entries
    must be durable before the commit), its row written in the transaction (`write`); what the
    batch raises before the commit is undone (`undo`: the old install stands); once the commit is
    durable, `finish` and then, locks released, `cleanup`. `index` is its place in the command's
    batch (`BatchRefused` names it)."""

    @property
    def index(self) -> int: ...
    def intents(self) -> list[pending.Intent]: ...
    def hold(self) -> AbstractContextManager[object]: ...
    def move_in(self) -> list[Path]: ...
    def write(self, conn: sqlite3.Connection) -> None: ...
    def undo(self) -> None: ...
    def finish(self) -> None: ...
    def cleanup(self) -> None: ...


class BatchRefused(Exception):  # noqa: N818 - carries the PkgmgrError of the ref that refused
    """`commit_all` committed nothing: the ref at `index` was refused with `error`."""

    def __init__(self, index: int, error: PkgmgrError) -> None:
        super().__init__(error.message)
        self.index, self.error = index, error


@dataclass
class _Move:
    switch: Switch
    current: Installed | None
    rel: str = ""
    target: Path | None = None
    previous: dict[str, Any] | None = None  # the install the new row keeps for a rollback (`store.previous`)
    dropped: list[Installed] = field(default_factory=list)  # kept installs whose trees the switch stops naming
    set_aside: Path | None = None  # where the kept tree at `rel` waits until the commit (recorded in the intent)


def commit_all(scope: Scope, switches: Sequence[Switch], options: SwitchOptions, parts: Sequence[Part] = (),
               ) -> list[Outcome]:
    """Switch to every tree of a batch at once (writer lock held; names distinct), with the `parts`
    other hosts' destinations hand in (the one protocol: `store.pending`): every change is recorded
    as pending, every host lock taken, each tree renamed in (after the batch's flush), then ONE
    transaction writes every row, runs every `on_switch` and flips every intent; then, the commit
    durable, each part's host records are written and the old trees go. What one ref raises
    (before the first rename, or in the transaction) puts every moved tree back: the old state
    stands for every ref, and `BatchRefused` names the ref. Returns the switches' outcomes (the
    parts keep theirs)."""
    from pkgmgr.versions import same_version  # here: `ext list` imports this module, not packaging

    moves: list[_Move] = []
    unchanged: dict[int, Installed] = {}
    for index, switch in enumerate(switches):
        current = get_installed(scope, switch.prepared.name)
        try:
            if current is not None and check_replace(current, switch.prepared, options):
                unchanged[index] = current
        except PkgmgrError as error:
            _undo_quietly(scope, [], list(parts))  # nothing moved yet: the parts' staging goes
            raise BatchRefused(_ref(switches, index), error) from None
        moves.append(_Move(switch, current))
    for index, move in enumerate(moves):
        if index not in unchanged and move.switch.announce is not None:
            move.switch.announce(move.switch.prepared.summary())
    renamed: list[Path] = []
    set_aside: list[tuple[Path, Path]] = []  # (kept tree moved out of a new tree's way, where it was)
    touched: dict[Path, None] = {}  # the directories the renames changed, fsynced once each after them
    conn = scope.db
    failed = -1
    moving = [index for index in range(len(moves)) if index not in unchanged]
    moved: list[Part] = []  # the parts whose trees moved: undone when the batch fails before its commit
    held = ExitStack()
    try:
        for index in moving:
            failed = _ref(switches, index)
            _keep_previous(moves[index])
            moves[index].rel = _free_place(scope, moves[index].switch.prepared, moves[index].current,
                                           {gone.path for gone in moves[index].dropped})
            if os.path.lexists(scope.root / moves[index].rel):  # a kept tree this switch drops, where the new one goes
                from pkgmgr.fsutil import private_dir

                moves[index].set_aside = private_dir(scope.ensure_dir(".staging"), "dropped-") / \
                    moves[index].rel.rpartition("/")[2]
        failed = -1
        # SPEC 4: each change is recorded as pending before anything moves, so that only what this
        # command moved is ever taken for its leftover, and a kill is undone or finished as a whole;
        # a kept tree set aside for the new one is recorded with it (`tx`), put back when it is undone
        batch = new_batch()
        intents = [pending.Intent(moves[i].rel, moves[i].switch.prepared.name, moves[i].switch.prepared.version,
                                  batch=batch, tx=_relative(scope, moves[i].set_aside)) for i in moving]
        for part in parts:
            intents.extend(replace(intent, batch=batch) for intent in part.intents())
        pending.begin(scope, intents, now_utc())
        crashpoint("install.after_pending")
        for part in parts:  # every host's own lock before the first tree moves (SPEC 13: never while the host holds it)
            failed = part.index
            held.enter_context(part.hold())
        for index in moving:
            failed = _ref(switches, index)
            move = moves[index]
            prepared, rel = move.switch.prepared, move.rel
            parent, _, leaf = rel.rpartition("/")
            first_of_name = not (scope.root / parent).is_dir()
            target = scope.ensure_dir(parent) / leaf  # no link, no other user's directory on the way
            if move.set_aside is not None and os.path.lexists(target):
                # the kept tree this switch drops: out of the way, deleted after the commit
                os.rename(target, move.set_aside)
                set_aside.append((move.set_aside, target))
                crashpoint("install.after_set_aside")
            if not prepared.durable and prepared.linked is None:
                durable_tree(prepared.root)  # the tree's data on disk before any name points at it
            os.rename(prepared.root, target)
            renamed.append(target)
            move.target = target
            touched[target.parent] = None
            if first_of_name:  # and the directories made for it
                touched.update({target.parent.parent: None, scope.root: None})
            crashpoint("install.after_rename")
        for part in parts:
            failed = part.index
            moved.append(part)
            touched.update(dict.fromkeys(part.move_in()))
        # every rename on disk before the commit that names it: one journal commit for the batch
        # (the first fsync), not one a rename
        fsync_dirs(*touched)
        activations: dict[int, list[dict[str, Any]]] = {}
        installed: dict[int, Installed] = {}
        if not parts and len(unchanged) == len(moves) and all(c.pinned == options.pin for c in unchanged.values()):
            return [Outcome("unchanged", c, c.version) for c in _drop_staging(moves, unchanged)]
        with transaction(conn):
            for index, move in enumerate(moves):
                failed = _ref(switches, index)
                name = move.switch.prepared.name
                if index in unchanged:
                    current = unchanged[index]
                    if current.pinned != options.pin:
                        conn.execute("UPDATE extensions SET pinned = ? WHERE host = ? AND name = ?",
                                     (int(options.pin), STORE_HOST, name))
                    continue
                row = _row(move.switch.prepared, move.rel, options, move.current, move.previous)
                columns = ", ".join(row)
                placeholders = ", ".join("?" for _ in row)
                conn.execute(f"INSERT OR REPLACE INTO extensions ({columns}) VALUES ({placeholders})",
                             tuple(row.values()))
                new = get_installed(scope, name)
                assert new is not None
                installed[index] = new
                on_switch = move.switch.on_switch
                activations[index] = on_switch(conn, new) if on_switch is not None else []
            for part in parts:
                failed = part.index
                part.write(conn)
            failed = -1
            pending.drop(conn, [moves[i].rel for i in moving])
            pending.record(conn, _replaced(moves, moving), pending.OUT, now_utc(), batch)
            pending.commit(conn, [intent.path for part in parts for intent in part.intents()])
            crashpoint("install.before_commit")
    except BaseException as exc:
        # rolled back (e.g. extension_has_active_bundles): the old state stands, so the renamed
        # trees are leftovers; remove them now rather than leave them to the next writer (which
        # removes them, recorded as pending, when the disk refuses now: the first error is the one
        # the command reports), and every other host's tree goes back
        _remove_quietly(scope, [], renamed)
        for away, target in set_aside:  # the kept trees the old rows still name go back
            if not os.path.lexists(target):
                try:
                    os.rename(away, target)
                except OSError:
                    pass  # left in .staging/, recorded with its intent: the next writer puts it back
        for move in moves:  # the directories made to set kept trees aside, empty now
            if move.set_aside is not None and not os.path.lexists(move.set_aside):
                try:
                    remove_tree(move.set_aside.parent)
                except OSError:
                    pass
        # their intents go, but one whose kept tree is still set aside (the next writer puts it back)
        _remove_quietly(scope, [moves[i].rel for i in moving if moves[i].rel and not _waits(moves[i].set_aside)], [])
        _undo_quietly(scope, reversed(moved), [p for p in parts if p not in moved])
        held.close()
        if isinstance(exc, PkgmgrError):
            raise BatchRefused(max(failed, 0), exc) from None
        raise
    crashpoint("install.after_commit")
    with held:  # the commit is durable: each host's own records follow it, under its lock
        for part in parts:
            part.finish()
    for part in parts:
        part.cleanup()
    # the commit is durable here (synchronous = FULL, store/db.py): only now may the old trees go
    outcomes: list[Outcome] = []
    for index, move in enumerate(moves):
        prepared, current = move.switch.prepared, move.current
        if index in unchanged:
            remove_tree(prepared.staging)
            now = get_installed(scope, prepared.name)
            assert now is not None
            outcomes.append(Outcome("unchanged", now, now.version))
            continue
        for path, _, _ in _replaced(moves, [index]):
            remove_tree(scope.root / path)
        if current is not None:  # the trees it stops naming are gone (none when it keeps the one it replaced)
            crashpoint("install.after_old_removed")
        remove_tree(prepared.staging)
        if current is None:
            action = "installed"
        elif same_version(current.version, prepared.version):
            action = "reinstalled"
        else:
            action = "switched"
        outcomes.append(Outcome(action, installed[index], current.version if current else None, activations[index]))
    for away, _ in set_aside:
        remove_tree(away.parent)
    replaced = _replaced(moves, moving)
    if replaced:
        fsync_dirs(*{(scope.root / path).parent for path, _, _ in replaced})  # gone on disk before their rows go
        pending.settle(scope, [path for path, _, _ in replaced])
    return outcomes


def _waits(set_aside: Path | None) -> bool:
    """A kept tree is still set aside there (its intent stays for the next writer to put it back)."""
    return set_aside is not None and os.path.lexists(set_aside)


def _relative(scope: Scope, path: Path | None) -> str | None:
    return None if path is None else path.relative_to(scope.root).as_posix()


def _free_place(scope: Scope, prepared: Staged, current: Installed | None, dropped: Collection[str] = ()) -> str:
    """Where a tree is renamed to: `extensions/<name>/<version>`, or that with `~<tree prefix>`
    when the first is the current install's directory (a forced reinstall of the same version)
    or is taken by a tree state.db does not name, which is never replaced (SPEC 4); a kept tree
    the switch drops (`dropped`) makes way (a rollback lands where the kept version was). Raises
    `state_inconsistent` when both are taken."""
    from pkgmgr.archive.checksum import checksum_hex

    rel = f"extensions/{prepared.name}/{prepared.version}"
    candidates = (rel, f"{rel}~{checksum_hex(prepared.tree_sha256)[:12]}")
    for candidate in candidates:
        if (current is None or current.path != candidate) and (
                candidate in dropped or not os.path.lexists(scope.root / candidate)):
            return candidate
    raise PkgmgrError(
        f"{prepared.name} {prepared.version}: {' and '.join(str(scope.root / c) for c in candidates)} are taken by "
        "trees state.db does not name; refusing to replace them",
        code=Code.STATE_INCONSISTENT, details={"paths": [str(scope.root / c) for c in candidates]},
        hint="run 'pkgmgr doctor --check' to list them; 'pkgmgr doctor --rebuild' records one, or remove them by hand")


def _tree(path: str, item: Staged | Installed) -> tuple[str, str, str]:
    return path, item.name, item.version


def _keep_previous(move: _Move) -> None:
    """What the new row keeps for a rollback, and the kept trees it stops naming (`store.previous`);
    a kept install of the scope store stays where it is, at `extensions/<name>/<version>`."""
    from pkgmgr.store import previous

    prepared, current = move.switch.prepared, move.current
    if current is not None and previous.keeps(current, prepared.version, prepared.linked):
        move.previous = current.as_previous()
    else:
        move.previous = previous.carried(current, prepared.version, prepared.tree_sha256, prepared.linked)
    move.dropped = previous.replaced_trees(current, move.previous)


def _replaced(moves: Sequence[_Move], moving: Sequence[int]) -> list[tuple[str, str, str]]:
    """The trees (path, name, version) the switch stops naming: each current install's that is
    not kept, and each kept install's that is kept no more."""
    trees = []
    for index in moving:
        move = moves[index]
        old = move.current
        kept = move.previous.get("path") if move.previous is not None else None
        if old is not None and old.path not in (move.rel, kept):
            trees.append(_tree(old.path, old))
        trees.extend(_tree(gone.path, gone) for gone in move.dropped if gone.path != move.rel)
    return trees


def _remove_quietly(scope: Scope, paths: list[str], renamed: list[Path]) -> None:
    """Remove a refused batch's renamed trees and forget their pending rows; a disk that fails
    here leaves trees and rows to the next writer."""
    try:
        for target in renamed:
            remove_tree(target)
        fsync_dirs(*{path.parent for path in renamed})
        pending.settle(scope, paths)
    except (PkgmgrError, sqlite3.Error, OSError):
        pass


def _undo_quietly(scope: Scope, moved: Iterable[Part], untouched: list[Part]) -> None:
    """Put back what the parts of a refused batch moved and forget the intents of all of them; a
    disk that fails here leaves them to the next writer's recovery (recorded as pending)."""
    done: list[str] = []
    for part in [*moved, *untouched]:
        try:
            part.undo()
            done.extend(intent.path for intent in part.intents())
        except (PkgmgrError, sqlite3.Error, OSError):
            pass
    try:
        pending.settle(scope, done)
    except (PkgmgrError, sqlite3.Error, OSError):
        pass


def _ref(switches: Sequence[Switch], index: int) -> int:
    """The place in the command's batch of the switch at `index`."""
    own = switches[index].index
    return own if own is not None else index


def new_batch() -> str:
    """A name for one command's batch of changes (every intent of one commit carries it)."""
    return f"b-{os.urandom(8).hex()}"  # what secrets.token_hex(8) returns, without importing secrets (~1 ms)


def _drop_staging(moves: list[_Move], unchanged: dict[int, Installed]) -> list[Installed]:
    for move in moves:
        remove_tree(move.switch.prepared.staging)
    return [unchanged[index] for index in range(len(moves))]


def tree_is_intact(installed: Installed) -> bool:
    """The installed directory exists and still has the tree checksum its row records."""
    from pkgmgr.archive import tree_checksum

    return installed.directory.is_dir() and tree_checksum(installed.directory) == installed.tree_sha256


def _row(prepared: Staged, rel: str, options: SwitchOptions, current: Installed | None,
         previous: dict[str, Any] | None = None) -> dict[str, Any]:
    fetched = prepared.fetched
    linked = prepared.linked
    return {
        "host": STORE_HOST,
        "name": prepared.name,
        "version": prepared.version,
        "path": rel,
        "enabled": int(current.enabled) if current is not None and linked is None else 1,
        "pinned": int(options.pin),
        "source_kind": fetched.kind,
        "source": fetched.locator,
        "registry": fetched.registry,
        "source_url": fetched.source_url,
        "sha256": fetched.sha256,
        "verified": int(fetched.verified),
        "allow_unverified": int(options.allow_unverified and not fetched.verified),
        "tier": fetched.tier,
        "tree_sha256": prepared.tree_sha256,
        "tree_listing": json.dumps(prepared.listing, sort_keys=True, separators=(",", ":")),
        "manifest": json.dumps(prepared.document, sort_keys=True, default=str),
        "network_digest": prepared.network_digest,
        "grants": json.dumps(list(prepared.grants)),
        "max_scope": prepared.max_scope,
        "installed_at": now_utc(),
        "installed_by": login_user(),
        "previous": json.dumps(previous, sort_keys=True) if previous is not None else None,
        "linked": linked,
    }


def now_utc() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


_LOGIN_VARIABLES = ("LOGNAME", "USER", "LNAME", "USERNAME")  # what getpass.getuser reads first
_login_users: dict[tuple[str | None, ...], str] = {}


def login_user() -> str:
    """`getpass.getuser()`, looked up once per process for the same environment (without a
    login variable it reads the password database: once per row of a 20-extension batch)."""
    key = tuple(os.environ.get(name) for name in _LOGIN_VARIABLES)
    found = _login_users.get(key)
    if found is None:
        import getpass

        try:
            found = getpass.getuser()
        except (KeyError, OSError):
            found = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
        _login_users[key] = found
    return found


def remove(scope: Scope, name: str, *, before_delete: BeforeDelete | None = None,
           ) -> tuple[Installed, list[dict[str, Any]]]:
    """Remove an installed extension (writer lock held). Raises not_found; `before_delete` runs in
    the transaction (the activation guard: extension_has_active_bundles) and returns what it
    deactivated."""
    current = get_installed(scope, name)
    if current is None:
        raise PkgmgrError(f"{name} is not installed in the {scope.kind} scope", code=Code.NOT_FOUND)
    conn = scope.db
    kept = current.kept()
    trees = [_tree(item.path, item) for item in (current, kept) if item is not None]
    with transaction(conn):
        deactivated = before_delete(conn, current) if before_delete is not None else []
        conn.execute("DELETE FROM extensions WHERE host = ? AND name = ?", (STORE_HOST, name))
        pending.record(conn, trees, pending.OUT, now_utc())
        crashpoint("remove.before_commit")
    crashpoint("remove.after_commit")
    for path, _, _ in trees:
        remove_tree(scope.root / path)  # a development link's own link, never the folder it names
        crashpoint("remove.after_tree_removed")
    name_dir = scope.extensions_dir / name
    if name_dir.is_dir() and not any(name_dir.iterdir()):
        name_dir.rmdir()
    fsync_dirs(scope.extensions_dir if not name_dir.is_dir() else name_dir)
    pending.settle(scope, [path for path, _, _ in trees])
    return current, deactivated


def forget_previous(scope: Scope, names: Sequence[str]) -> list[Installed]:
    """Stop keeping the previous install of each of `names` (the scope store's own; writer lock
    held): one transaction clears their `previous` and records their trees as pending, then the
    trees go (a crash leaves them to the next writer, as any pending tree). Returns what went."""
    gone: list[Installed] = []
    for name in names:
        current = get_installed(scope, name)
        kept = current.kept() if current is not None else None
        if kept is not None:
            gone.append(kept)
    if not gone:
        return []
    with transaction(scope.db) as conn:
        conn.executemany("UPDATE extensions SET previous = NULL WHERE host = ? AND name = ?",
                         [(STORE_HOST, item.name) for item in gone])
        pending.record(conn, [_tree(item.path, item) for item in gone], pending.OUT, now_utc())
    for item in gone:
        remove_tree(scope.root / item.path)
    fsync_dirs(*{(scope.root / item.path).parent for item in gone})
    pending.settle(scope, [item.path for item in gone])
    return gone


def set_enabled(scope: Scope, name: str, enabled: bool, *, before_disable: BeforeDelete | None = None,
                ) -> tuple[Installed, list[dict[str, Any]]]:
    """Enable or disable an installed extension; `before_disable` runs in the transaction of a
    disable (the activation guard) and returns what it deactivated. Raises not_found."""
    current = get_installed(scope, name)
    if current is None:
        raise PkgmgrError(f"{name} is not installed in the {scope.kind} scope", code=Code.NOT_FOUND)
    conn = scope.db
    changed: list[dict[str, Any]] = []
    with transaction(conn):
        if not enabled and before_disable is not None:
            changed = before_disable(conn, current)
        conn.execute("UPDATE extensions SET enabled = ? WHERE host = ? AND name = ?", (int(enabled), STORE_HOST, name))
    updated = get_installed(scope, name)
    assert updated is not None
    return updated, changed
