"""Walking a format-2 index one shard at a time, and `registry build` for format 2
(docs/registry-format.md): the entries of `extensions/<h0h1>/` make summary shard `h0h1`, so
build and validate hold one shard's entries at a time, never the whole index.

`build_format2` parses every entry (strictly), renders each shard and returns the bytes of
the shards that change (and the extensions whose summary changed); nothing in the index is
written here. Only one shard's entries are held at a time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pkgmgr.errors import Code, Problem, ValidationFailed
from pkgmgr.registry.index_format import Entry, is_extension_name, parse_entry, summary_record
from pkgmgr.registry.layout import (
    ENTRIES_DIR,
    ENTRY_MAX_BYTES,
    RESET_ABOVE,
    SHARDS,
    SHARDS_FILE,
    chunk_of,
    chunk_path,
    entry_path,
    shard_of,
    summary_path,
)
from pkgmgr.registry.summary import (
    Change,
    ShardInfo,
    chunk_bytes,
    read_chunk,
    read_shard,
    record_json,
    render_shard,
    render_shards,
    shard_info,
)

INVALID = Code.INVALID_INDEX
_SHARD_SET = frozenset(SHARDS)


def _files(folder: Path) -> Iterator[Path]:
    """Every non-directory under `folder`, sorted, dot-files skipped (.gitkeep)."""
    try:
        items = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for item in items:
        if item.name.startswith("."):
            continue
        if item.is_dir(follow_symlinks=False):
            yield from _files(Path(item.path))
        else:
            yield Path(item.path)


def misplaced(root: Path, path: Path) -> Problem | None:
    """Why a file under `extensions/` of a format-2 index is not an entry where it lies, or None."""
    rel = path.relative_to(root).as_posix()
    name = path.stem
    if path.suffix != ".toml":
        return Problem(INVALID, rel, "", "is not an entry file: entries are extensions/<h0h1>/<h2h3>/<name>.toml "
                                         "(h: sha256 of the name)")
    if not is_extension_name(name):
        return Problem(INVALID, rel, "", f"{name!r} is not an extension name (^[a-z][a-z0-9-]{{1,63}}$)")
    if rel != entry_path(name, 2):
        return Problem(INVALID, rel, "", f"the entry of {name!r} belongs at {entry_path(name, 2)} (format 2 shards "
                                         "entries by the sha256 of the name): move it there, then run "
                                         f"'pkgmgr registry build {root}'")
    return None


def stray_files(root: Path) -> Iterator[Path]:
    """Files under `extensions/` outside every shard directory (a format-1 leftover, a typo)."""
    base = root / ENTRIES_DIR
    try:
        items = sorted(os.scandir(base), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for item in items:
        if item.name.startswith(".") or (item.name in _SHARD_SET and item.is_dir(follow_symlinks=False)):
            continue
        if item.is_dir(follow_symlinks=False):
            yield from _files(Path(item.path))
        else:
            yield Path(item.path)


def shard_files(root: Path, shard: str) -> Iterator[Path]:
    return _files(root / ENTRIES_DIR / shard)


def entry_rels(root: Path, shard: str) -> Iterator[str]:
    """The relative paths of every file under `extensions/<shard>/`, sorted (dot-files skipped),
    walked without following a symbolic link to a directory — a million of them: strings, not
    Paths."""
    base = str(root) + "/"
    stack = [f"{ENTRIES_DIR}/{shard}"]
    while stack:
        folder = stack.pop()
        try:
            items = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in os.scandir(base + folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name, is_dir in reversed(items):  # depth first, in name order
            if name.startswith("."):
                continue
            if is_dir:
                stack.append(f"{folder}/{name}")
        yield from (f"{folder}/{name}" for name, is_dir in items if not is_dir and not name.startswith("."))


def placed_entries(root: Path, shard: str, refuse: Callable[[Problem], None]) -> Iterator[tuple[str, str]]:
    """(relative path, name) of each entry file under `extensions/<shard>/` (`entry_rels`: strings,
    a million of them) where format 2 places it; each other file is passed to `refuse` with the
    problem `misplaced` finds in it instead."""
    for rel in entry_rels(root, shard):
        name = rel.rsplit("/", 1)[1].removesuffix(".toml")
        if not rel.endswith(".toml") or rel != entry_path(name, 2):
            problem = misplaced(root, root / rel)
            if problem is not None:
                refuse(problem)
                continue
        yield rel, name


def read_shard_entries(root: Path, shard: str, problems: list[Problem]) -> list[Entry]:
    """The entries of one shard, strictly parsed; problems appended to `problems`. The walk
    follows no directory link and each file is opened without following a final one, so no
    per-file resolve is needed (`extensions/` itself is checked once)."""
    from pkgmgr.fsutil import NotRegularFile, read_regular

    entries = []
    base = str(root) + "/"
    for rel, name in placed_entries(root, shard, problems.append):
        try:
            raw = read_regular(base + rel, limit=ENTRY_MAX_BYTES)
        except NotRegularFile as exc:
            problems.append(Problem(INVALID, rel, "", f"is {exc.kind}, not a regular file; registry files must be "
                                                     "regular files"))
            continue
        except OSError as exc:
            problems.append(Problem(INVALID, rel, "", f"cannot be read: {exc.strerror}"))
            continue
        try:
            entries.append(parse_entry(raw, rel, expected_name=name))
        except ValidationFailed as error:
            problems.extend(error.problems)
    return entries


def check_entries_dir(root: Path) -> list[Problem]:
    """`extensions/` must be a directory inside the index (not a link out of it)."""
    base = root / ENTRIES_DIR
    if base.is_symlink() or (base.exists() and not base.resolve().is_relative_to(root.resolve())):
        return [Problem(INVALID, ENTRIES_DIR, "", "resolves outside the registry directory (a symbolic link); "
                                                  "registry files must stay inside it")]
    return []


@dataclass
class Build2:
    """What a format-2 build would switch in: staged (path, bytes), and what it found."""

    files: list[tuple[str, bytes]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)  # (name, record | None)
    extensions: int = 0
    shards: dict[str, ShardInfo] = field(default_factory=dict)


def _build_shard(root_text: str, shard: str) -> tuple[str, bytes | None, bytes | None, int,
                                                    list[tuple[str, dict[str, Any] | None]], list[Problem]]:
    """One shard rebuilt: (shard, its new bytes or None when empty, its bytes now, how many
    extensions, the changed (name, record), problems). Runs in a worker process for a large index."""
    root = Path(root_text)
    problems: list[Problem] = []
    entries = read_shard_entries(root, shard, problems)
    if problems:
        return shard, None, None, 0, [], problems
    records = {e.name: summary_record(e) for e in entries}
    try:
        old_raw, old = read_shard(root, shard)
    except ValidationFailed:  # a broken shard is rewritten whole
        old_raw, old = (root / summary_path(shard)).read_bytes(), ()
    old_records = {r.name: record_json(r) for r in old}
    data = render_shard(shard, list(records.values())) if records else None
    changed = [(name, records.get(name)) for name in sorted(set(records) | set(old_records))
               if records.get(name) != old_records.get(name)]
    return shard, data, old_raw, len(records), changed, []


PARALLEL_ABOVE = 20_000  # extensions (the shard list's count) above which shards are read by worker processes


def map_shards(root: Path, func: Any, shards: Iterable[str] = SHARDS) -> Iterator[Any]:
    """`func(str(root), shard)` for every shard, in order: in worker processes (one per core)
    for an index the shard list says is large, else here."""
    shards = list(shards)
    workers = min(os.cpu_count() or 1, 4)
    if workers > 1 and len(shards) > 1 and _listed_extensions(root) > PARALLEL_ABOVE:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield from pool.map(func, [str(root)] * len(shards), shards, chunksize=4)
        return
    for shard in shards:
        yield func(str(root), shard)


def _listed_extensions(root: Path) -> int:
    from pkgmgr.registry.summary import read_shards

    try:
        listed = read_shards(root)
    except ValidationFailed:
        return 0
    return 0 if listed is None else listed.extensions


def build_format2(root: Path, serial: int) -> Build2:
    """Every shard rebuilt from its entries (`_build_shard`, streaming: one shard's entries at a
    time in each process). Raises `ValidationFailed` with every problem of every file."""
    problems = check_entries_dir(root)
    if problems:
        raise ValidationFailed(problems)
    problems = [p for p in (misplaced(root, path) for path in stray_files(root)) if p is not None]
    result = Build2()
    for shard, data, old_raw, count, changed, found in map_shards(root, _build_shard):
        problems += found
        if problems:
            continue  # keep listing problems; nothing will be written
        if data is not None:
            result.shards[shard] = shard_info(data, count)
        result.extensions += count
        if data != old_raw:
            if data is None:
                result.removed.append(summary_path(shard))
            else:
                result.files.append((summary_path(shard), data))
        result.changed += changed
    if problems:
        raise ValidationFailed(problems)
    return result


def summary_from_entries(entries: Iterable[Entry]) -> Build2:
    """Every shard of a new format-2 summary, from entries held in memory (a migration)."""
    by_shard: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in entries:
        by_shard.setdefault(shard_of(entry.name), {})[entry.name] = summary_record(entry)
    result = Build2()
    for shard, records in sorted(by_shard.items()):
        data = render_shard(shard, list(records.values()))
        result.files.append((summary_path(shard), data))
        result.shards[shard] = shard_info(data, len(records))
        result.extensions += len(records)
        result.changed += [(name, record) for name, record in sorted(records.items())]
    return result


def finish_build(root: Path, build: Build2, serial: int, *, force: bool = False) -> int:
    """Add the changes log and the shard list to `build`: when anything changed (or `force`, a
    migration) under serial + 1, with one record per changed extension (one `reset` past
    RESET_ABOVE or when forced); the shard list also when it is merely out of date. Returns
    the serial the index will have."""
    from pkgmgr.registry.summary import read_shards

    changed = bool(build.changed or build.files or build.removed or force)
    new_serial = serial + 1 if changed else serial
    if changed:
        chunk = chunk_of(new_serial)
        changes = [c for c in read_chunk(root, chunk) if c.serial < new_serial]
        if force or len(build.changed) > RESET_ABOVE:
            changes.append(Change(new_serial, "reset", None, None))
        else:
            changes += [Change(new_serial, "build", name, None, record) for name, record in build.changed]
        build.files.append((chunk_path(chunk), chunk_bytes(chunk, changes, new_serial)))
    listed = render_shards(new_serial, build.shards)
    path = root / SHARDS_FILE
    try:
        current = read_shards(root) if path.is_file() else None
    except ValidationFailed:
        current = None
    if changed or current is None or path.read_bytes() != listed:
        build.files.append((SHARDS_FILE, listed))
    return new_serial
