"""Writing a registry index directory (SPEC 5.5): publish, yank/unyank and build.

Every operation holds the index's lock file (`.pkgmgr-registry.lock`, so two publishes never
interleave), reads and strictly validates the whole index first, computes every new file in
memory, and only then writes — each file atomically (temporary file + `os.replace`) in this
order: the copied archive (if any), `registry.toml` (serial + 1), the entry, `index.json`.

- A refusal (`version_exists`, `invalid_index`, ...) happens before the first write: the
  index is unchanged.
- An I/O error midway puts back the files already replaced (best effort) and re-raises.
- A crash midway leaves at worst an unreferenced archive or an `index.json` out of date —
  never an entry change under the old serial. `registry validate` reports the stale
  `index.json`; `registry build` (or re-running the same publish, a no-op that repairs
  `index.json`) fixes it.

Entry files are edited with tomlkit so a maintainer's comments and layout survive; versions
stay sorted ascending, and version identity is PEP 440 equality (`1.0.0-rc.1` = `1.0.0-rc1`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence
from urllib.parse import urlsplit

from pkgmgr.errors import Code, PkgmgrError, ValidationFailed
from pkgmgr.fsutil import atomic_write_bytes
from pkgmgr.hosts import DEFAULT as DEFAULT_HOST
from pkgmgr.registry.artifact import ArchiveFacts
from pkgmgr.registry.index_format import (
    ENTRY_MAX_BYTES,
    INDEX_FILE,
    INDEX_MAX_BYTES,
    MIB,
    REGISTRY_FILE,
    REGISTRY_MAX_BYTES,
    TIERS,
    Entry,
    RegistryMeta,
    entry_path,
    format_datetime,
    index_document,
    is_extension_name,
    parse_entry,
    parse_registry,
    read_capped,
    read_entries,
    render_index,
    summary_record,
    url_problem,
)
from pkgmgr.registry.layout import FORMATS, SHARDS_FILE, shard_of
from pkgmgr.versions import parse_semver

if TYPE_CHECKING:
    from pkgmgr.progress import Reporter
    from pkgmgr.registry.session import Session
    from pkgmgr.registry.signing import Signing, SignResult

LOCK_FILE = ".pkgmgr-registry.lock"
ARCHIVES_DIR = "archives"
DEFAULT_TIER = "community"


# --- reading the index under its lock -----------------------------------------------------------


@dataclass(frozen=True)
class IndexState:
    """A registry directory as read (and validated) at the start of an operation."""

    root: Path
    registry_raw: bytes
    meta: RegistryMeta
    entries: dict[str, Entry]  # format 2: only the entry the operation changes (when it exists)

    def entry_rel(self, name: str) -> str:
        return entry_path(name, self.meta.format)

    def entry_file(self, name: str) -> Path:
        return self.root / self.entry_rel(name)


@contextmanager
def index_lock(root: Path, timeout: float, *, settle: bool = True) -> Iterator[None]:
    """Hold the lock file of the index directory `root`, after settling any change a killed
    command left (registry/switch.py). Raises `locked` after `timeout` s."""
    from pkgmgr.store.lock import ExclusiveLock, LockTimeout

    require_index(root)
    lock = ExclusiveLock(root / LOCK_FILE, timeout, code=Code.INVALID_INDEX)  # a committed link is refused
    try:
        lock.acquire()
    except LockTimeout:
        raise PkgmgrError(
            f"another pkgmgr process is changing the registry index {root}; gave up after waiting {timeout:g} s",
            code=Code.LOCKED, hint="wait for it to finish, or raise --lock-timeout",
        ) from None
    try:
        if settle:
            from pkgmgr.registry.switch import recover

            recover(root)
        yield
    finally:
        lock.release()


def require_index(root: Path) -> None:
    """Raise `not_found` unless `root` holds a `registry.toml`."""
    if not (root / REGISTRY_FILE).is_file():
        what = "does not exist" if not root.exists() else "is not a registry index (no registry.toml)"
        raise PkgmgrError(f"{root} {what}", code=Code.NOT_FOUND, path=str(root),
                          hint=f"create one with 'pkgmgr registry init {root}'")


def read_index(root: Path) -> IndexState:
    """`registry.toml` and every entry, strictly validated. Raises `not_found` or
    `ValidationFailed(invalid_index)` listing every problem."""
    require_index(root)
    raw = read_capped(root / REGISTRY_FILE, REGISTRY_MAX_BYTES, REGISTRY_FILE, root=root)
    try:
        meta = parse_registry(raw)
        entries = read_entries(root)
    except ValidationFailed as error:
        raise _fix_first(root, error) from None
    return IndexState(root, raw, meta, {e.name: e for e in entries})


def _fix_first(root: Path, error: ValidationFailed) -> ValidationFailed:
    return ValidationFailed(error.problems, summary=f"{root}: the index has problems; fix them first "
                                                    f"('pkgmgr registry validate {root}' lists them)")


def read_head(root: Path) -> tuple[bytes, RegistryMeta]:
    """`registry.toml`'s bytes and value. Raises `not_found` or `ValidationFailed(invalid_index)`."""
    require_index(root)
    raw = read_capped(root / REGISTRY_FILE, REGISTRY_MAX_BYTES, REGISTRY_FILE, root=root)
    try:
        return raw, parse_registry(raw)
    except ValidationFailed as error:
        raise _fix_first(root, error) from None


def read_for_change(root: Path, name: str) -> IndexState:
    """What publish, yank and unyank read: a format-1 index whole (its index.json is rewritten
    from every entry); a format-2 index only `registry.toml` and the entry of `name` (its
    summary files are read by `summary.change_writes`)."""
    raw, meta = read_head(root)
    if meta.format < 2:
        return read_index(root)
    rel = entry_path(name, meta.format)
    path = root / rel
    entries = {}
    if os.path.lexists(path):
        try:
            entries[name] = parse_entry(read_capped(path, ENTRY_MAX_BYTES, rel, root=root), rel, expected_name=name)
        except ValidationFailed as error:
            raise _fix_first(root, error) from None
    return IndexState(root, raw, meta, entries)


# --- writing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    path: Path
    data: bytes


def apply_writes(writes: Sequence[Write]) -> None:
    """Write each file atomically, in order. On an error, the files already replaced get their
    previous content back (best effort; a file that did not exist is removed) and it re-raises."""
    done: list[tuple[Path, bytes | None]] = []
    try:
        for write in writes:
            previous = write.path.read_bytes() if write.path.is_file() else None
            if previous == write.data:
                continue
            write.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(write.path, write.data)
            done.append((write.path, previous))
    except BaseException:
        for path, previous in reversed(done):
            try:
                if previous is None:
                    path.unlink(missing_ok=True)
                else:
                    atomic_write_bytes(path, previous)
            except OSError:
                pass
        raise


def _dumps(doc: Any) -> bytes:
    import tomlkit

    return tomlkit.dumps(doc).encode("utf-8")


def bump_serial(registry_raw: bytes) -> bytes:
    """`registry.toml` with `serial` + 1, its comments and layout kept."""
    import tomlkit

    doc = tomlkit.parse(registry_raw.decode("utf-8").removeprefix("\ufeff"))  # a BOM is accepted; tomlkit refuses it
    table = doc["registry"]
    table["serial"] = int(table["serial"]) + 1
    return _dumps(doc)


def commit_writes(root: Path, writes: Sequence[Write], signing: Signing | None = None,
                  removals: Sequence[str] = ()) -> SignResult | None:
    """The one way a command changes an index: `writes` (in order) and `removals`, then — for a
    signed index (`signing`) — the signed metadata covering exactly the target files that
    change, all staged and switched in together (registry/switch.py); the signing's result."""
    from pkgmgr.registry.switch import FileChange, differs, switch

    changes = [FileChange(w.path.relative_to(root).as_posix(), w.data) for w in writes]
    changes += [FileChange(rel, None) for rel in removals]
    changes = [c for c in changes if differs(root, c)]
    result = None
    if signing is not None and changes:
        from pkgmgr.registry.signing import signed_changes  # imports tuf: only for a signed index

        changes, result = signed_changes(root, signing, changes)
    switch(root, changes)
    return result


def _commit(state: IndexState, name: str, entry_doc: Any, op: str, *, before: Iterable[Write] = (),
            signing: Signing | None = None) -> tuple[int, SignResult | None]:
    """Write `entry_doc` as the entry of `name`, serial + 1, the summary updated (format 1:
    index.json regenerated; format 2: the entry's shard, the shard list and the changes log).
    Returns the new serial and the signing's result. The new entry is parsed strictly before
    anything is written."""
    rel = state.entry_rel(name)
    entry_raw = _dumps(entry_doc)
    registry_raw = bump_serial(state.registry_raw)
    try:
        entry = parse_entry(entry_raw, rel, expected_name=name)
        meta = parse_registry(registry_raw)
    except ValidationFailed as error:  # pragma: no cover - a bug in the editing code
        raise ValidationFailed(error.problems, summary="internal: the edited file would be invalid") from None
    writes = [*before, Write(state.root / REGISTRY_FILE, registry_raw), Write(state.entry_file(name), entry_raw)]
    if meta.format >= 2:
        from pkgmgr.registry.summary import change_writes

        writes += [Write(state.root / path, data)
                   for path, data in change_writes(state.root, meta.serial, name, summary_record(entry), op)]
    else:
        index = render_index(index_document(meta, {**state.entries, name: entry}.values()))
        _check_index_cap(state.root, index)
        writes.append(Write(state.root / INDEX_FILE, index))
    return meta.serial, commit_writes(state.root, writes, signing)


def _check_index_cap(root: Path, data: bytes) -> None:
    """One set of caps: never write the index.json that validate and every client refuse."""
    if len(data) > INDEX_MAX_BYTES:
        raise ValidationFailed([_problem(INDEX_FILE, "", f"would be {len(data) / MIB:.1f} MiB, over its "
                                         f"{INDEX_MAX_BYTES // MIB} MiB cap, which clients and 'registry validate' "
                                         f"refuse; move the index to format 2: 'pkgmgr registry build {root} "
                                         "--format 2'")])


def _summary_repairs(state: IndexState, entry: Entry) -> list[Write]:
    """The writes that bring the summary in line with `entry` (an interrupted change), or []."""
    if state.meta.format < 2:
        index = _rendered_index(state)
        index_path = state.root / INDEX_FILE
        stale = not index_path.is_file() or index_path.read_bytes() != index
        return [Write(index_path, index)] if stale else []
    from pkgmgr.registry.summary import change_writes, read_shard, read_shards, record_json, shard_info

    record = summary_record(entry)
    shard = shard_of(entry.name)
    try:
        raw, records = read_shard(state.root, shard)
        listed = read_shards(state.root)
    except ValidationFailed:
        raw, records, listed = None, (), None
    current = next((record_json(r) for r in records if r.name == entry.name), None)
    if (current == record and raw is not None and listed is not None
            and listed.shards.get(shard) == shard_info(raw, len(records))):
        return []
    return [Write(state.root / path, data)
            for path, data in change_writes(state.root, state.meta.serial, entry.name, record, "publish")]


def _rendered_index(state: IndexState) -> bytes:
    return render_index(index_document(state.meta, state.entries.values()))


# --- publish ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublishResult:
    name: str
    version: str
    url: str
    sha256: str
    size: int
    tier: str
    min_compozy_version: str
    network_digest: str
    permissions: tuple[str, ...]
    published: datetime | None
    entry: str
    archive: str | None
    serial: int
    changed: bool
    repaired_index: bool = False
    warnings: tuple[str, ...] = ()
    host: str = "compozy"
    signed: Any = None  # the signing's SignResult, for a signed index

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "version": self.version, "url": self.url, "sha256": self.sha256, "size": self.size,
            "tier": self.tier, "min_compozy_version": self.min_compozy_version,
            "network_digest": self.network_digest, "permissions": list(self.permissions),
            "published": format_datetime(self.published), "entry": self.entry, "archive": self.archive,
            **({"host": self.host} if self.host != "compozy" else {}),
        }


def check_publish_url(url: str) -> None:
    """A `--url` must be absolute https:// (http:// only for a loopback host), without
    credentials or a fragment. Raises `usage`."""
    from pkgmgr.net.http import is_loopback_host

    problem = url_problem(url)
    if problem is None and not urlsplit(url).scheme:
        problem = ("must be absolute; without --url the archive is copied into archives/ and recorded "
                   "by a relative url")
    if problem is None and urlsplit(url).scheme == "http" and not is_loopback_host(urlsplit(url).hostname):
        problem = "must be https:// (plain http:// only for a loopback host)"
    if problem:
        raise PkgmgrError(f"--url {url!r} {problem}", code=Code.USAGE)


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def parse_published(text: str) -> datetime:
    """`--published`: an RFC 3339 date-time with an offset, e.g. 2026-01-01T00:00:00Z. Raises usage."""
    try:
        value = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        value = None
    if value is None or value.tzinfo is None:
        raise PkgmgrError(f"--published {text!r} is not a date-time with an offset, such as 2026-01-01T00:00:00Z",
                          code=Code.USAGE)
    return value.astimezone(UTC).replace(microsecond=0)


def publish(root: Path, archive: Path | None, facts: ArchiveFacts, *, url: str | None, tier: str | None = None,
            published: datetime | None = None, repository: str | None = None, timeout: float = 30.0,
            description: str | None = None, signing: Signing | None = None) -> PublishResult:
    """Add the version `facts` describes to the index at `root` (SPEC 5.5).

    Without `url`, `archive` is copied to `archives/<name>-<version><suffix>` and recorded by
    relative url. Same version (PEP 440) with the same sha256 -> a no-op (`changed` False;
    a stale index.json is rewritten); another sha256 -> `version_exists`. The entry's
    `repository`, when it names another GitHub repository than `repository` ->
    `invalid_index`. Also raises `not_found`, `locked`, `usage` and `ValidationFailed`."""
    root = Path(root)
    if not is_extension_name(facts.name):  # a host's own name (a dotted id) no index can list
        raise PkgmgrError(f"{facts.name}: a registry index lists extensions by a name of lower-case letters, digits "
                          "and dashes (at most 64); nothing was published. Install this one from its archive, folder "
                          "or GitHub release", code=Code.INVALID_INDEX, details={"name": facts.name, "host": facts.host})
    if tier is not None and tier not in TIERS:
        raise PkgmgrError(f"--tier {tier!r}: expected one of {', '.join(TIERS)}", code=Code.USAGE)
    if url is not None:
        check_publish_url(url)
    elif archive is None:
        raise PkgmgrError("an archive to copy, or --url, is required", code=Code.USAGE)
    when = published or utc_now()
    with index_lock(root, timeout):
        state = read_for_change(root, facts.name)
        rel = state.entry_rel(facts.name)
        existing = state.entries.get(facts.name)
        if existing is not None:
            _check_repository(existing, repository, rel)
            if existing.host != facts.host:
                raise ValidationFailed([_problem(rel, "host", f"the entry {existing.name} is a {existing.host} "
                                                              f"extension; this archive is {facts.host}'s")])
            found = existing.find(facts.version)
            if found is not None:
                return _republish(state, existing, found, facts, tier, signing)
        chosen_tier = tier or (existing.tier if existing is not None else DEFAULT_TIER)
        before: list[Write] = []
        stored = None
        if url is None:
            assert archive is not None
            stored = f"{ARCHIVES_DIR}/{facts.name}-{facts.version}{facts.suffix}"
            before.append(Write(root / stored, Path(archive).read_bytes()))
        version_url = url or stored
        assert version_url is not None
        doc = _load_entry_doc(state, facts, chosen_tier, repository, description)
        if doc.get("tier") != chosen_tier:
            doc["tier"] = chosen_tier
        _insert_version(doc, _version_table(facts, version_url, when), existing)
        serial, signed = _commit(state, facts.name, doc, "publish", before=before, signing=signing)
    return PublishResult(facts.name, facts.version, version_url, facts.sha256, facts.size, chosen_tier,
                         facts.min_compozy_version, facts.network_digest, facts.permissions, when, rel, stored,
                         serial, True, warnings=_tier_warnings(facts, chosen_tier), host=facts.host, signed=signed)


def _check_repository(entry: Entry, repository: str | None, rel: str) -> None:
    if repository and entry.repository and entry.repository.lower() != repository.lower():
        raise ValidationFailed([_problem(rel, "repository",
                                         f"the entry {entry.name} belongs to GitHub repository {entry.repository}, "
                                         f"not {repository}")])


def _problem(file: str, key: str, message: str) -> Any:
    from pkgmgr.errors import Problem

    return Problem(Code.INVALID_INDEX, file, key, message)


def _republish(state: IndexState, entry: Entry, found: Any, facts: ArchiveFacts, tier: str | None,
               signing: Signing | None) -> PublishResult:
    if found.sha256 != facts.sha256:
        raise PkgmgrError(
            f"{entry.name} {found.version} is already published with sha256 {found.sha256}; this archive's is "
            f"{facts.sha256}. A published version never changes: release a new version",
            code=Code.VERSION_EXISTS,
            details={"name": entry.name, "version": found.version, "published_sha256": found.sha256,
                     "sha256": facts.sha256, "entry": state.entry_rel(entry.name)},
        )
    warnings = []
    if tier is not None and tier != entry.tier:
        warnings.append(f"--tier {tier} ignored: nothing was published (edit {state.entry_rel(entry.name)} to "
                        "change the tier)")
    repairs = _summary_repairs(state, entry)
    signed = commit_writes(state.root, repairs, signing) if repairs else None
    return PublishResult(entry.name, found.version, found.url, found.sha256, found.size, entry.tier,
                         found.min_compozy_version, found.network_digest, found.permissions, found.published,
                         state.entry_rel(entry.name), None, state.meta.serial, False, repaired_index=bool(repairs),
                         warnings=tuple(warnings), signed=signed)


def _tier_warnings(facts: ArchiveFacts, tier: str) -> tuple[str, ...]:
    from pkgmgr.hosts import get

    ceiling = get(facts.host).read_only_grants  # None: the host's permissions are no grants (capabilities)
    extra = [g for g in facts.permissions if ceiling is not None and g not in ceiling]
    if extra and tier != "official":
        return (f"{facts.name} {facts.version} asks for {', '.join(extra)}: beyond the read-only grants, installs "
                f"from a {tier} entry need --allow-grants",)
    return ()


# --- tomlkit editing ----------------------------------------------------------------------------


def _load_entry_doc(state: IndexState, facts: ArchiveFacts, tier: str, repository: str | None,
                    description: str | None = None) -> Any:
    import tomlkit

    path = state.entry_file(facts.name)
    if facts.name in state.entries:
        return tomlkit.parse(read_capped(path, ENTRY_MAX_BYTES, state.entry_rel(facts.name))
                             .decode("utf-8").removeprefix("\ufeff"))
    doc = tomlkit.document()
    doc["name"] = facts.name
    doc["description"] = description if description is not None else facts.description
    if repository:
        doc["repository"] = repository
    doc["tier"] = tier
    if facts.host != DEFAULT_HOST:  # SPEC 13: the entry names its host
        doc["host"] = facts.host
    doc.add(tomlkit.nl())
    return doc


def _version_table(facts: ArchiveFacts, url: str, published: datetime) -> Any:
    import tomlkit

    table = tomlkit.table()
    table["version"] = facts.version
    table["url"] = url
    table["sha256"] = facts.sha256
    table["size"] = facts.size
    if facts.host == DEFAULT_HOST:  # Compozy's field; another host's entry does not carry it (SPEC 13)
        table["min_compozy_version"] = facts.min_compozy_version
    table["network_digest"] = facts.network_digest
    table["permissions"] = list(facts.permissions)
    table["published"] = tomlkit.value(published.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    table["yanked"] = False
    return table


def _insert_version(doc: Any, table: Any, entry: Entry | None) -> None:
    """Insert `table` among the entry's versions at its sorted position, keeping the blank
    line between version tables."""
    import tomlkit
    from tomlkit.items import AoT

    new = parse_semver(str(table["version"]))
    position = sum(1 for v in (entry.versions if entry else ()) if v.parsed < new)
    versions = doc.get("versions")
    if versions is None:
        versions = tomlkit.aot()
        doc.append("versions", versions)
    if not isinstance(versions, AoT):  # `versions = [{...}, ...]`: an array of inline tables
        inline = tomlkit.inline_table()
        inline.update(table)
        versions.insert(position, inline)
        return
    if position < len(versions):
        table.add(tomlkit.nl())
    elif len(versions) and not versions[-1].as_string().endswith("\n\n"):
        versions[-1].add(tomlkit.nl())
    versions.insert(position, table)


def _version_item(doc: Any, wanted: str) -> Any:
    target = parse_semver(wanted)
    for item in doc.get("versions") or ():
        if parse_semver(str(item["version"])) == target:
            return item
    raise RuntimeError(f"version {wanted} vanished from the entry")  # read_index just listed it


# --- yank / unyank ------------------------------------------------------------------------------


@dataclass(frozen=True)
class YankResult:
    name: str
    version: str
    yanked: bool
    changed: bool
    serial: int
    entry: str
    signed: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "yanked": self.yanked, "changed": self.changed,
                "serial": self.serial, "entry": self.entry}


def set_yanked(root: Path, name: str, version: str, yanked: bool, *, timeout: float = 30.0,
               signing: Signing | None = None) -> YankResult:
    """Flip `yanked` of one version (serial + 1, index.json regenerated); already in that state
    -> a no-op. Raises `not_found` (no such entry), `version_not_found`, `usage`, `locked`."""
    import tomlkit

    root = Path(root)
    try:
        parse_semver(version)
    except ValueError as exc:
        raise PkgmgrError(f"VERSION: {exc}", code=Code.USAGE) from None
    with index_lock(root, timeout):
        state = read_for_change(root, name)
        entry = state.entries.get(name)
        rel = state.entry_rel(name)
        if entry is None:
            raise PkgmgrError(f"{root} has no extension named {name!r} ({rel} does not exist)", code=Code.NOT_FOUND,
                              details={"name": name})
        found = entry.find(version)
        if found is None:
            listed = ", ".join(v.version for v in entry.versions) or "none"
            raise PkgmgrError(f"{name} has no version {version} (versions: {listed})", code=Code.VERSION_NOT_FOUND,
                              details={"name": name, "version": version,
                                       "versions": [v.version for v in entry.versions]})
        if found.yanked == yanked:
            return YankResult(name, found.version, yanked, False, state.meta.serial, rel)
        doc = tomlkit.parse(read_capped(state.entry_file(name), ENTRY_MAX_BYTES, rel).decode("utf-8").removeprefix("\ufeff"))
        _version_item(doc, found.version)["yanked"] = yanked
        serial, signed = _commit(state, name, doc, "yank" if yanked else "unyank", signing=signing)
    return YankResult(name, found.version, yanked, True, serial, rel, signed)


# --- build --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildResult:
    path: Path
    serial: int
    extensions: int
    changed: bool
    format: int = 1
    migrated: bool = False
    changed_extensions: int = 0
    signed: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"index": str(self.path), "serial": self.serial, "extensions": self.extensions,
                "changed": self.changed, "format": self.format, "migrated": self.migrated,
                "changed_extensions": self.changed_extensions}


def build(root: Path, *, timeout: float = 30.0, format: int | None = None,
          signing: Signing | None = None) -> BuildResult:
    """Regenerate the summary deterministically (same files, same bytes); files are written only
    when they differ. Format 1: `index.json` (refused past its cap: `--format 2` migrates);
    format 2: every summary shard, streaming one shard at a time, with the changes log and a
    serial + 1 when any extension's summary changed. `format=2` on a format-1 index migrates it
    (docs/registry-format.md). Raises `not_found`, `locked`, `usage` and
    `ValidationFailed(invalid_index)`."""
    root = Path(root)
    if format is not None and format not in FORMATS:
        raise PkgmgrError(f"--format {format}: expected one of {', '.join(map(str, FORMATS))}", code=Code.USAGE)
    with index_lock(root, timeout):
        raw, meta = read_head(root)
        if format is not None and format < meta.format:
            raise PkgmgrError(f"{root} is a format-{meta.format} index; it cannot go back to format {format}",
                              code=Code.USAGE)
        if meta.format >= 2:
            return _build_format2(root, raw, meta, signing)
        if format == 2:
            return _migrate(root, raw, signing)
        state = read_index(root)
        data = _rendered_index(state)
        _check_index_cap(root, data)
        path = root / INDEX_FILE
        changed = not path.is_file() or path.read_bytes() != data
        signed = _full_signing(root, signing, [Write(path, data)] if changed else [])
    return BuildResult(path, state.meta.serial, len(state.entries), changed, signed=signed)


def _full_signing(root: Path, signing: Signing | None, writes: Sequence[Write],
                  removals: Sequence[str] = ()) -> SignResult | None:
    """`registry build` of a signed index re-signs it whole (every target hashed again into
    hashed bins: the migration of an index signed the old way), with its writes, in one switch."""
    if signing is None:
        commit_writes(root, writes, None, removals)
        return None
    from pkgmgr.registry.signing import sign_with_writes

    return sign_with_writes(root, signing, [(w.path.relative_to(root).as_posix(), w.data) for w in writes],
                            removals)


def _build_format2(root: Path, raw: bytes, meta: RegistryMeta, signing: Signing | None) -> BuildResult:
    from pkgmgr.registry.shard_walk import build_format2, finish_build

    try:
        result = build_format2(root, meta.serial)
    except ValidationFailed as error:
        raise _fix_first(root, error) from None
    serial = finish_build(root, result, meta.serial)
    writes = []
    if serial != meta.serial:
        writes.append(Write(root / REGISTRY_FILE, set_registry(raw, serial=serial)))
    writes += [Write(root / path, data) for path, data in result.files]
    signed = _full_signing(root, signing, writes, result.removed)
    changed = bool(writes or result.removed)
    return BuildResult(root / SHARDS_FILE, serial, result.extensions, changed, 2, False, len(result.changed),
                       signed=signed)


def _migrate(root: Path, raw: bytes, signing: Signing | None) -> BuildResult:
    """Format 1 to 2 in one switch: every entry (validated first) written at its hashed path
    and removed from its old one, the format-2 summary (a `reset` in the changes log under
    serial + 1), format = 2, index.json removed."""
    from pkgmgr.registry.shard_walk import finish_build, summary_from_entries

    state = read_index(root)
    result = summary_from_entries(state.entries.values())
    serial = finish_build(root, result, state.meta.serial, force=True)
    writes = [Write(root / REGISTRY_FILE, set_registry(raw, serial=serial, format=2))]
    removals = [INDEX_FILE]
    for name in sorted(state.entries):
        old = entry_path(name, 1)
        writes.append(Write(root / entry_path(name, 2), read_capped(root / old, ENTRY_MAX_BYTES, old, root=root)))
        removals.append(old)
    writes += [Write(root / path, data) for path, data in result.files]
    signed = _full_signing(root, signing, writes, removals)
    for old in removals[1:]:
        try:
            (root / old).parent.rmdir()  # the emptied format-1 shard directories
        except OSError:
            pass
    return BuildResult(root / SHARDS_FILE, serial, result.extensions, True, 2, True, len(result.changed),
                       signed=signed)


def set_registry(registry_raw: bytes, *, serial: int | None = None, format: int | None = None) -> bytes:
    """`registry.toml` with `serial` and/or `format` set, its comments and layout kept."""
    import tomlkit

    doc = tomlkit.parse(registry_raw.decode("utf-8").removeprefix("\ufeff"))
    table = doc["registry"]
    if serial is not None:
        table["serial"] = serial
    if format is not None:
        table["format"] = format
    return _dumps(doc)


# --- staging a downloaded or local archive ------------------------------------------------------


@contextmanager
def private_copy(source: Path) -> Iterator[Path]:
    """A private copy of `source` for the duration of the block, so the bytes that are
    validated are the bytes that are published even if `source` changes meanwhile."""
    with tempfile.TemporaryDirectory(prefix="pkgmgr-publish-src-") as tmp:
        target = Path(tmp) / "archive"
        try:
            shutil.copyfile(source, target)
        except FileNotFoundError:
            raise PkgmgrError(f"{source}: no such archive", code=Code.NOT_FOUND, path=str(source)) from None
        except IsADirectoryError:
            raise PkgmgrError(f"{source}: is a directory; pack it first with 'pkgmgr ext pack {source}'",
                              code=Code.INVALID_ARCHIVE, path=str(source)) from None
        except shutil.SpecialFileError:  # a FIFO, socket or device: never opened (was exit 70)
            raise PkgmgrError(f"{source}: not a .tar.gz or .zip archive (not a regular file)",
                              code=Code.INVALID_ARCHIVE, path=str(source)) from None
        os.chmod(target, 0o600)
        yield target


@dataclass(frozen=True)
class ReleaseArchive:
    """A GitHub release's archive asset, downloaded for `registry publish github:OWNER/REPO@TAG`."""

    path: Path
    url: str  # the asset's download URL: what the entry records unless --url says otherwise
    repository: str  # OWNER/REPO
    tag: str


def download_release(session: Session, text: str, asset_name: str | None, *, reporter: Reporter,
                     max_bytes: int) -> ReleaseArchive:
    """Download the archive asset of the GitHub release `text` names (github:OWNER/REPO@TAG),
    checked against the release's published checksum when it has one. Raises `usage` when `text`
    names no release, `not_found` when the release has no archive asset (GitHub's generated
    source tarball is never published)."""
    from pkgmgr.refs import parse_ref

    ref = parse_ref(text)
    if ref.kind != "github" or not ref.owner or not ref.repo or not ref.tag:
        raise PkgmgrError(f"{text!r}: name the release to publish, github:OWNER/REPO@TAG", code=Code.USAGE)
    github = session.github
    release = github.release(ref.owner, ref.repo, ref.tag, pre=True)
    asset = github.select_asset(release, asset_name)
    if asset.pseudo:
        raise PkgmgrError(
            f"{ref.owner}/{ref.repo}@{release.tag} has no .tar.gz, .tgz or .zip asset; GitHub's generated source "
            "tarball is not published (its bytes are not guaranteed stable)",
            code=Code.NOT_FOUND, hint="attach the archive built by 'pkgmgr ext pack' to the release",
        )
    checksum = github.asset_checksum(release, asset)
    downloaded = github.download_asset(release, asset, cache=session.downloads, reporter=reporter,
                                       expected_sha256=checksum, max_bytes=max_bytes)
    return ReleaseArchive(downloaded.path, asset.url, f"{ref.owner}/{ref.repo}", release.tag)


def tag_warning(tag: str, version: str) -> str | None:
    """The warning when a release tag names another version than the archive's manifest (the
    manifest's is published), or None."""
    from pkgmgr.registry.github_plan import tag_version
    from pkgmgr.versions import same_version

    named = tag_version(tag)
    if named is not None and not same_version(named, version):
        return (f"release tag {tag} names version {named}, but the archive's manifest says {version}; "
                f"{version} is what gets published")
    return None
