"""`registry validate`: every rule of SPEC 5.5 over a registry index directory, every problem
listed (file, line where known, key path), none hidden behind the first.

- The files: `registry.toml` and every entry against their schemas; each entry named after
  its file and in its shard (`extensions/<first two characters>/<name>.toml`); versions
  semver, unique under PEP 440 equality and sorted; sha256 format; URLs (absolute https://
  without credentials or fragment, or relative to the index; plain http:// only for a
  loopback host); `expires` not past; `index.json` equal to what `registry build` writes.
- With a base revision (`--base REV`, read with `git show`/`git ls-tree`): a version
  published at REV is still listed and unchanged — only `yanked` may change — and the
  serial did not go down, and went up when versions were added, removed or (un)yanked.
- With a fetcher (`--fetch`): every version new since REV (every version without a base) is
  downloaded, and its size, sha256, manifest (name, version, permissions, network digest,
  minimum host version) and bundles are checked against the entry.

Problems carry the code of what is wrong (`invalid_index` for the files, `checksum_mismatch`,
`metadata_mismatch`, `invalid_manifest`, ... for fetched archives); the command exits 3
(`invalid_index`) when there is any.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable
from urllib.parse import urlsplit

from pkgmgr.errors import Code, PkgmgrError, Problem, ValidationFailed
from pkgmgr.registry.index_format import (
    ENTRY_MAX_BYTES,
    INDEX_FILE,
    INDEX_MAX_BYTES,
    INVALID,
    REGISTRY_FILE,
    REGISTRY_MAX_BYTES,
    Entry,
    RegistryMeta,
    entry_path,
    index_document,
    is_extension_name,
    parse_entry,
    parse_index,
    parse_registry,
    read_capped,
    render_index,
    summary_record,
)
from pkgmgr.registry.layout import (
    CHANGES_DIR,
    CHANGES_MAX_BYTES,
    SHARDS,
    SHARDS_FILE,
    SHARDS_MAX_BYTES,
    SUMMARY_DIR,
    SUMMARY_MAX_BYTES,
    shard_of,
    summary_path,
)
from pkgmgr.registry.toml_lines import TomlLines
from pkgmgr.versions import parse_semver

if TYPE_CHECKING:
    from pkgmgr.config import Config

ENTRIES_DIR = "extensions"
Fetcher = Callable[[str, str], Path]  # (absolute url, label) -> a local file holding its bytes


@dataclass
class Report:
    """What `validate_index` found."""

    root: Path
    problems: list[Problem] = field(default_factory=list)
    entries: int = 0
    versions: int = 0
    fetched: int = 0
    base: str | None = None

    @property
    def valid(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "problems": [problem_json(p) for p in self.problems],
            "checked": {"entries": self.entries, "versions": self.versions, "fetched": self.fetched,
                        "base": self.base},
        }


def problem_json(problem: Problem) -> dict[str, Any]:
    return {"code": problem.code, "file": problem.file, "line": problem.line, "key": problem.key,
            "message": problem.message}


def problem_line(problem: Problem) -> str:
    return str(problem) if problem.code == INVALID else f"{problem} [{problem.code}]"


def validate_index(root: Path, *, base: str | None = None, fetcher: Fetcher | None = None,
                   config: "Config | None" = None, now: datetime | None = None,
                   changed_only: bool = False) -> Report:
    """Check the index directory `root` (module docstring). `changed_only` (with `base`:
    `--changed-since REV`) checks, in a format-2 index, only the entry files changed since
    `base` and their summary shards. Raises `not_found` when `root` is not a directory and
    `usage` for a `base` that is not a commit of its git repository; everything else is a
    problem in the report."""
    root = Path(root)
    if not root.is_dir():
        raise PkgmgrError(f"{root}: no such directory", code=Code.NOT_FOUND, path=str(root))
    if changed_only and base is None:
        raise PkgmgrError("--changed-since needs a git revision", code=Code.USAGE)
    report = Report(root, base=base)
    checker = _Checker(root, report)
    meta = checker.registry(now or datetime.now(UTC))
    if config is None and fetcher is not None:
        from pkgmgr.config import Config

        config = Config()
    if meta is not None and meta.format >= 2:
        checker.format2(meta, base=base, fetcher=fetcher, config=config, changed_only=changed_only)
    else:
        entries = checker.entries()
        checker.index(meta, entries)
        new_versions: set[tuple[str, Any]] | None = None
        if base is not None:
            new_versions = checker.against_base(base, meta, entries)
        if fetcher is not None:
            assert config is not None
            checker.fetch(entries, new_versions, fetcher, config)
    checker.pending_change()
    checker.signatures()
    report.problems.sort(key=lambda p: (p.file != REGISTRY_FILE, p.file, p.line or 0))
    return report


class _Checker:
    def __init__(self, root: Path, report: Report) -> None:
        self.root = root
        self.report = report
        self.lines: dict[str, TomlLines | bytes] = {}  # TOML file -> its lines (its bytes until asked)
        self.valid_files = True
        self.trusted_walk = False  # format 2: files come from a walk that follows no link (no resolve)

    def pending_change(self) -> None:
        """A change a killed command left staged (registry/switch.py)."""
        from pkgmgr.registry.switch import STAGING_DIR, pending

        for tx in pending(self.root):
            self.problem(f"{STAGING_DIR}/{tx.name}", "", "an interrupted change of the index is pending: run "
                                                         f"'pkgmgr registry doctor {self.root}' to settle it")

    # -- signatures (SPEC 5.4a) ----------------------------------------------------------------

    def signatures(self) -> None:
        """A signed index (metadata/1.root.json present): its metadata and every target
        verified by ngclient (`signing.signature_problems`); each failure is a problem of code
        `registry_signature_invalid`."""
        from pkgmgr.registry.trustroot import METADATA_DIR

        if not (self.root / METADATA_DIR / "1.root.json").is_file():
            return
        # imports tuf: only for a signed index
        from pkgmgr.registry.signing import signature_problems

        self.add(Problem(Code.REGISTRY_SIGNATURE_INVALID, file, "", message)
                 for file, message in signature_problems(self.root))

    # -- recording ---------------------------------------------------------------------------

    def add(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            line = problem.line
            if line is None and problem.key and problem.file in self.lines:
                lines = self.lines[problem.file]
                if isinstance(lines, bytes):
                    lines = self.lines[problem.file] = TomlLines(lines.decode("utf-8", "replace"))
                line = lines.line_of(problem.key)
            self.report.problems.append(Problem(problem.code, problem.file, problem.key, problem.message, line))

    def problem(self, file: str, key: str, message: str, *, code: str = INVALID, line: int | None = None) -> None:
        self.add([Problem(code, file, key, message, line)])

    def _read(self, rel: str, cap: int) -> bytes | None:
        try:  # a file of a walk that follows no link needs no resolve, nor a Path
            raw = (read_capped(f"{self.root}/{rel}", cap, rel) if self.trusted_walk
                   else read_capped(self.root / rel, cap, rel, root=self.root))
        except ValidationFailed as error:
            self.valid_files = False
            self.add(error.problems)
            return None
        if rel.endswith(".toml"):
            self.lines[rel] = raw
        return raw

    # -- files -------------------------------------------------------------------------------

    def registry(self, now: datetime) -> RegistryMeta | None:
        if not (self.root / REGISTRY_FILE).is_file():
            self.valid_files = False
            self.problem(REGISTRY_FILE, "", "missing: every registry index has one (see 'pkgmgr registry init')")
            return None
        raw = self._read(REGISTRY_FILE, REGISTRY_MAX_BYTES)
        if raw is None:
            return None
        try:
            meta = parse_registry(raw)
        except ValidationFailed as error:
            self.valid_files = False
            self.add(error.problems)
            return None
        if meta.expired(now):
            self.problem(REGISTRY_FILE, "registry.expires",
                         f"{meta.expires} has passed: clients refuse this registry (registry_expired) until it is "
                         "moved forward")
        return meta

    def entries(self) -> dict[str, Entry]:
        base = self.root / ENTRIES_DIR
        if not base.is_dir():
            self.valid_files = False
            self.problem(ENTRIES_DIR, "", "missing: entries live in extensions/<first two characters>/<name>.toml")
            return {}
        found: dict[str, Entry] = {}
        for path in sorted(p for p in base.rglob("*") if not p.is_dir()):
            rel = path.relative_to(self.root).as_posix()
            if any(part.startswith(".") for part in path.relative_to(base).parts):
                continue  # .gitkeep and the like
            entry = self.entry(rel, path)
            if entry is not None:
                found[entry.name] = entry
        self.report.entries = len(found)
        self.report.versions = sum(len(e.versions) for e in found.values())
        return found

    def entry(self, rel: str, path: Path, format: int = 1) -> Entry | None:
        name = path.stem
        if format >= 2:
            from pkgmgr.registry.shard_walk import misplaced

            problem = misplaced(self.root, path)
            if problem is not None:
                self.valid_files = False
                self.add([problem])
                return None
            return self._parsed_entry(rel, name)
        if path.suffix != ".toml":
            self.valid_files = False
            self.problem(rel, "", "is not an entry file: entries are extensions/<first two characters>/<name>.toml")
            return None
        if not is_extension_name(name):
            self.valid_files = False
            self.problem(rel, "", f"{name!r} is not an extension name (^[a-z][a-z0-9-]{{1,63}}$)")
            return None
        if rel != entry_path(name):
            self.valid_files = False
            self.problem(rel, "", f"the entry of {name!r} belongs at {entry_path(name)} (its shard is the first two "
                                  "characters of the name)")
            return None
        return self._parsed_entry(rel, name)

    def _parsed_entry(self, rel: str, name: str) -> Entry | None:
        raw = self._read(rel, ENTRY_MAX_BYTES)
        if raw is None:
            return None
        try:
            entry = parse_entry(raw, rel, expected_name=name)
        except ValidationFailed as error:
            self.urls(rel, _lenient(raw))
            self.valid_files = False
            self.add(error.problems)
            return None
        if any(v.url[:5].lower() == "http:" for v in entry.versions):  # else no url can be plain http
            self.urls(rel, _lenient(raw))
        return entry

    def urls(self, rel: str, doc: dict[str, Any] | None) -> None:
        """Plain http:// only for a loopback host (the parser leaves that to the client)."""
        from pkgmgr.net.http import is_loopback_host
        from pkgmgr.registry.index_format import url_problem

        items = doc.get("versions") if isinstance(doc, dict) else None
        for index, item in enumerate(items if isinstance(items, list) else []):
            url = item.get("url") if isinstance(item, dict) else None
            if not isinstance(url, str) or url_problem(url) is not None:
                continue
            parts = urlsplit(url)
            if parts.scheme == "http" and not is_loopback_host(parts.hostname):
                self.problem(rel, f"versions[{index}].url", "must be https:// (plain http:// only for a loopback host)")

    def index(self, meta: RegistryMeta | None, entries: dict[str, Entry]) -> None:
        path = self.root / INDEX_FILE
        if not path.is_file():
            self.problem(INDEX_FILE, "", f"missing: run 'pkgmgr registry build {self.root}'")
            return
        raw = self._read(INDEX_FILE, INDEX_MAX_BYTES)
        if raw is None:
            return
        try:
            parse_index(raw)
        except ValidationFailed as error:
            self.add(error.problems)
            return
        if meta is None or not self.valid_files:
            return  # what index.json should say is unknown until the other files are valid
        expected = render_index(index_document(meta, entries.values()))
        if raw != expected:
            self.problem(INDEX_FILE, "", "is not in sync with registry.toml and the entries (a publish interrupted, "
                                         f"or an edit by hand): run 'pkgmgr registry build {self.root}'")

    # -- format 2 (docs/registry-format.md) ----------------------------------------------------

    def format2(self, meta: RegistryMeta, *, base: str | None, fetcher: Fetcher | None, config: "Config | None",
                changed_only: bool) -> None:
        """Every entry (or, `changed_only`, those changed since `base`) one shard at a time,
        each checked shard against its entries, the shard list against the shards, the changes
        log's form; `base` and `fetcher` as for format 1, over the changed entries."""
        from pkgmgr.registry.layout import entry_path
        from pkgmgr.registry.shard_walk import check_entries_dir, map_shards, misplaced, shard_files, stray_files

        git = _Git(self.root, base) if base is not None else None
        changed = git.changed(self.root) if git is not None else None
        if changed_only:
            assert changed is not None
            names = {Path(rel).stem for rel in changed if rel.startswith(ENTRIES_DIR + "/")}
            shards = sorted({shard_of(n) for n in names if is_extension_name(n)}
                            | {Path(rel).stem for rel in changed if rel.startswith(SUMMARY_DIR + "/")} & set(SHARDS))
        else:
            shards = list(SHARDS)
            for path in stray_files(self.root):
                self.valid_files = False
                self.add([p for p in [misplaced(self.root, path)] if p is not None])
        if not (self.root / ENTRIES_DIR).is_dir():
            self.valid_files = False
            self.problem(ENTRIES_DIR, "", "missing: entries live in extensions/<h0h1>/<h2h3>/<name>.toml")
        current: dict[str, Entry] = {}  # the changed entries, for the base comparison and --fetch
        outside = check_entries_dir(self.root)
        if outside:
            self.valid_files = False
            self.add(outside)
            shards = []
        if git is None and fetcher is None:  # streaming, one shard per worker process for a large index
            for problems, entries, versions, valid in map_shards(self.root, _validate_shard, shards):
                self.add(problems)
                self.report.entries += entries
                self.report.versions += versions
                self.valid_files = self.valid_files and valid
            shards = []
        self.trusted_walk = True
        for shard in shards:
            entries = []
            for path in shard_files(self.root, shard):
                rel = path.relative_to(self.root).as_posix()
                entry = self.entry(rel, path, format=2)
                if entry is None:
                    continue
                entries.append(entry)
                self.report.entries += 1
                self.report.versions += len(entry.versions)
                if changed is None or entry_path(entry.name, 2) in changed:
                    if git is not None or fetcher is not None:
                        current[entry.name] = entry
            self.summary_shard(shard, entries)
            self.lines.clear()  # line numbers are looked up when a problem is added: one shard's at a time
        self.trusted_walk = False
        self.shard_list(meta)
        self.changes_log(meta)
        new_versions = None
        if git is not None and changed is not None:
            new_versions = self.against_base_changed(git, meta, current, changed)
        if fetcher is not None:
            assert config is not None
            self.fetch(current, new_versions, fetcher, config, format=2)

    def summary_shard(self, shard: str, entries: list[Entry]) -> None:
        from pkgmgr.registry.summary import parse_shard, render_shard

        rel = summary_path(shard)
        path = self.root / rel
        expected = render_shard(shard, [summary_record(e) for e in entries]) if entries else None
        if not os.path.lexists(path):
            if expected is not None and self.valid_files:
                self.problem(rel, "", f"missing: run 'pkgmgr registry build {self.root}'")
            return
        raw = self._read(rel, SUMMARY_MAX_BYTES)
        if raw is None:
            return
        try:
            parse_shard(raw, rel, shard)
        except ValidationFailed as error:
            self.add(error.problems)
            return
        if self.valid_files and raw != expected:
            self.problem(rel, "", "is not in sync with the entries of its shard (a publish interrupted, or an edit by "
                                  f"hand): run 'pkgmgr registry build {self.root}'")

    def shard_list(self, meta: RegistryMeta) -> None:
        from pkgmgr.registry.summary import parse_shards, render_shards, shard_info

        path = self.root / SHARDS_FILE
        if not os.path.lexists(path):
            self.problem(SHARDS_FILE, "", f"missing: run 'pkgmgr registry build {self.root}'")
            return
        raw = self._read(SHARDS_FILE, SHARDS_MAX_BYTES)
        if raw is None:
            return
        try:
            parse_shards(raw)
        except ValidationFailed as error:
            self.add(error.problems)
            return
        infos = {}
        folder = self.root / SUMMARY_DIR
        for item in sorted(os.scandir(folder), key=lambda e: e.name) if folder.is_dir() else []:
            shard = item.name.removesuffix(".json")
            if item.name.startswith(".") or not item.is_file(follow_symlinks=False) or shard not in SHARDS:
                continue
            data = self._read(f"{SUMMARY_DIR}/{item.name}", SUMMARY_MAX_BYTES)
            if data is not None:
                infos[shard] = shard_info(data, data.count(b"\n") - 2)  # render_shard: one line per record, plus 2
        if raw != render_shards(meta.serial, infos):
            self.problem(SHARDS_FILE, "", "is not in sync with registry.toml's serial and the summary shards: run "
                                          f"'pkgmgr registry build {self.root}'")

    def changes_log(self, meta: RegistryMeta) -> None:
        from pkgmgr.registry.layout import chunk_of
        from pkgmgr.registry.summary import parse_chunk

        folder = self.root / CHANGES_DIR
        last = chunk_of(meta.serial) if meta.serial > 0 else -1
        for item in sorted(os.scandir(folder), key=lambda e: e.name) if folder.is_dir() else []:
            if item.name.startswith("."):
                continue
            rel = f"{CHANGES_DIR}/{item.name}"
            number = item.name.removesuffix(".json")
            if not (item.name.endswith(".json") and number.isdigit() and str(int(number)) == number):
                self.problem(rel, "", "is not a changes chunk (index/changes/<k>.json, k a decimal number)")
                continue
            if int(number) > last:
                self.problem(rel, "", f"holds serials above registry.toml's serial {meta.serial}")
                continue
            raw = self._read(rel, CHANGES_MAX_BYTES)
            if raw is None:
                continue
            try:
                changes = parse_chunk(raw, rel, int(number))
            except ValidationFailed as error:
                self.add(error.problems)
                continue
            if any(c.serial > meta.serial for c in changes):
                self.problem(rel, "changes", f"holds serials above registry.toml's serial {meta.serial}")

    def against_base_changed(self, git: "_Git", meta: RegistryMeta | None, current: dict[str, Entry],
                             changed: set[str]) -> set[tuple[str, Any]]:
        """`against_base` over the changed entry files only (an unchanged file cannot have
        changed a published version)."""
        from pkgmgr.registry.layout import entry_path

        old_versions: dict[tuple[str, Any], bool] = {}
        now_versions: dict[tuple[str, Any], bool] = {}
        for rel in sorted(r for r in changed if r.startswith(ENTRIES_DIR + "/") and r.endswith(".toml")):
            name = Path(rel).stem
            old_doc = _lenient(git.show(rel))
            new_doc = _lenient(self._current(rel))
            new_by_version = {v: (i, item) for i, v, item in _versions(new_doc)}
            for _, version, item in _versions(new_doc):
                now_versions[(name, version)] = bool(item.get("yanked", False))
            for _, version, old in _versions(old_doc):
                old_versions[(name, version)] = bool(old.get("yanked", False))
                moved = new_doc is None and entry_path(name, 2) in changed and rel != entry_path(name, 2)
                if moved:  # a migration moved the file: compare with its new place
                    continue
                self._compare(rel, git.rev, old, new_by_version.get(version), new_doc is None)
        new_versions = {(e.name, v.parsed) for e in current.values() for v in e.versions} - set(old_versions)
        old_table = (_lenient(git.show(REGISTRY_FILE)) or {}).get("registry")
        old_serial = old_table.get("serial") if isinstance(old_table, dict) else None
        if meta is not None and isinstance(old_serial, int):
            if meta.serial < old_serial:
                self.problem(REGISTRY_FILE, "registry.serial",
                             f"went down from {old_serial} at {git.rev} to {meta.serial}: clients refuse a lower "
                             "serial (registry_rollback)")
            elif meta.serial == old_serial and self.valid_files and now_versions != old_versions:
                self.problem(REGISTRY_FILE, "registry.serial",
                             f"is still {meta.serial} although versions were added, removed, yanked or unyanked "
                             f"since {git.rev}: every such change raises it (pkgmgr registry publish/yank/unyank do)")
        return new_versions

    # -- against a base revision -------------------------------------------------------------

    def against_base(self, base: str, meta: RegistryMeta | None,
                     entries: dict[str, Entry]) -> set[tuple[str, Any]]:
        """Published versions unchanged since `base`; returns the (name, version) pairs that are new."""
        git = _Git(self.root, base)
        old_files = [rel for rel in git.files(ENTRIES_DIR) if rel.endswith(".toml")]
        old_versions: dict[tuple[str, Any], bool] = {}
        for rel in old_files:
            old_doc = _lenient(git.show(rel))
            name = Path(rel).stem
            new_doc = _lenient(self._current(rel))
            new_by_version = {v: (i, item) for i, v, item in _versions(new_doc)}
            for _, version, old in _versions(old_doc):
                old_versions[(name, version)] = bool(old.get("yanked", False))
                self._compare(rel, base, old, new_by_version.get(version), new_doc is None)
        new_versions = {(e.name, v.parsed) for e in entries.values() for v in e.versions} - set(old_versions)
        self._serial(git, base, meta, entries, old_versions, new_versions)
        return new_versions

    def _current(self, rel: str) -> bytes | None:
        """The entry file `rel` as it is now (None: none to read). Read through the bounded
        primitive: a FIFO, a link or a file over the entry cap is none (the entry checks name it)."""
        from pkgmgr.fsutil import read_regular
        from pkgmgr.registry.layout import ENTRY_MAX_BYTES

        try:
            data = read_regular(self.root / rel, limit=ENTRY_MAX_BYTES)
        except OSError:
            return None
        return data if len(data) <= ENTRY_MAX_BYTES else None

    def _compare(self, rel: str, base: str, old: dict[str, Any], new: tuple[int, dict[str, Any]] | None,
                 file_gone: bool) -> None:
        label = old.get("version")
        if new is None:
            why = "the entry file was removed" if file_gone else "it is no longer listed"
            self.problem(rel, "versions", f"version {label}, published at {base}, disappeared ({why}): a published "
                                          "version stays listed; yank it instead ('pkgmgr registry yank')")
            return
        index, item = new
        for key in sorted((set(old) | set(item)) - {"yanked"}, key=_field_rank):
            if old.get(key) != item.get(key):
                self.problem(rel, f"versions[{index}].{key}",
                             f"version {label} changed since {base}: {key} was {_show(old.get(key))}, now "
                             f"{_show(item.get(key))} (a published version never changes; only yanked may)")

    def _serial(self, git: "_Git", base: str, meta: RegistryMeta | None, entries: dict[str, Entry],
                old_versions: dict[tuple[str, Any], bool], new_versions: set[tuple[str, Any]]) -> None:
        old_table = (_lenient(git.show(REGISTRY_FILE)) or {}).get("registry")
        old_serial = old_table.get("serial") if isinstance(old_table, dict) else None
        if meta is None or not isinstance(old_serial, int):
            return
        if meta.serial < old_serial:
            self.problem(REGISTRY_FILE, "registry.serial",
                         f"went down from {old_serial} at {base} to {meta.serial}: clients refuse a lower serial "
                         "(registry_rollback)")
            return
        current = {(e.name, v.parsed): v.yanked for e in entries.values() for v in e.versions}
        if meta.serial == old_serial and self.valid_files and (new_versions or current != old_versions):
            self.problem(REGISTRY_FILE, "registry.serial",
                         f"is still {meta.serial} although versions were added, removed, yanked or unyanked since "
                         f"{base}: every such change raises it (pkgmgr registry publish/yank/unyank do)")

    # -- fetching ----------------------------------------------------------------------------

    def fetch(self, entries: dict[str, Entry], only: set[tuple[str, Any]] | None, fetcher: Fetcher,
              config: "Config", *, format: int = 1) -> None:
        for entry in entries.values():
            rel = entry_path(entry.name, format)
            for index, version in enumerate(entry.versions):
                if only is not None and (entry.name, version.parsed) not in only:
                    continue
                self.report.fetched += 1
                self._check_archive(rel, f"versions[{index}]", entry, version, fetcher, config)

    def _check_archive(self, rel: str, key: str, entry: Entry, version: Any, fetcher: Fetcher, config: "Config") -> None:
        from pkgmgr.registry.artifact import file_digest, inspect_archive, metadata_differences

        label = f"{entry.name} {version.version}"
        try:
            path = self._locate(version.url, label, fetcher)
        except PkgmgrError as error:
            self.problem(rel, f"{key}.url", f"{label}: {version.url}: {error.message.splitlines()[0]}",
                         code=error.code)
            return
        sha256, size = file_digest(path)
        if size != version.size:
            self.problem(rel, f"{key}.size", f"{label}: the archive is {size} bytes, the entry says {version.size}",
                         code=Code.CHECKSUM_MISMATCH)
        if sha256 != version.sha256:
            self.problem(rel, f"{key}.sha256", f"{label}: the archive's sha256 is {sha256}, the entry says "
                                               f"{version.sha256}", code=Code.CHECKSUM_MISMATCH)
        try:
            facts = inspect_archive(path, config=config, host=entry.host)
        except ValidationFailed as error:
            for problem in error.problems:
                self.problem(rel, key, f"{label}: the archive's {problem}", code=problem.code)
            return
        except PkgmgrError as error:
            self.problem(rel, key, f"{label}: {error.message.splitlines()[0]}", code=error.code)
            return
        for difference in metadata_differences(entry.name, version, facts, host=entry.host):
            field_name = difference.split(":", 1)[0]
            self.problem(rel, f"{key}.{field_name}" if field_name != "name" else key, f"{label}: {difference}",
                         code=Code.METADATA_MISMATCH)

    def _locate(self, url: str, label: str, fetcher: Fetcher) -> Path:
        if urlsplit(url).scheme:
            return fetcher(url, label)
        root = self.root.resolve()
        path = (root / url).resolve()
        if not path.is_relative_to(root):
            raise PkgmgrError("resolves outside the index directory", code=INVALID)
        if not path.is_file():
            raise PkgmgrError(f"no such file in the index ({path})", code=Code.NOT_FOUND)
        return path


def _validate_shard(root_text: str, shard: str) -> tuple[list[Problem], int, int, bool]:
    """One shard of a format-2 index checked (its entries, then its summary shard against them):
    (problems, entries, versions, whether its files were valid). Runs in a worker process for
    a large index."""
    from pkgmgr.registry.shard_walk import placed_entries

    root = Path(root_text)
    checker = _Checker(root, Report(root))
    checker.trusted_walk = True
    entries = []

    def refuse(problem: Problem) -> None:
        checker.valid_files = False
        checker.add([problem])

    for rel, name in placed_entries(root, shard, refuse):  # strings, not Paths: a million of them
        entry = checker._parsed_entry(rel, name)
        if entry is not None:
            entries.append(entry)
    checker.summary_shard(shard, entries)
    return (checker.report.problems, len(entries), sum(len(e.versions) for e in entries), checker.valid_files)


# --- base revision helpers ----------------------------------------------------------------------


class _Git:
    """Reads files of one revision of the git repository holding `root` (paths relative to root)."""

    def __init__(self, root: Path, rev: str) -> None:
        self.root = root
        if not rev or rev.startswith("-") or any(ch.isspace() for ch in rev):
            raise PkgmgrError(f"--base {rev!r} is not a git revision", code=Code.USAGE)
        out = self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if out is None:
            raise PkgmgrError(f"--base {rev}: not a commit of the git repository at {root}", code=Code.USAGE,
                              hint="in CI, check out the whole history (actions/checkout with fetch-depth: 0)")
        self.rev = out.decode().strip()

    def _run(self, *args: str, check: bool = True) -> bytes | None:
        try:
            proc = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, timeout=120)
        except FileNotFoundError:
            raise PkgmgrError("--base needs git, which is not installed", code=Code.USAGE) from None
        except subprocess.TimeoutExpired:
            raise PkgmgrError(f"git {args[0]} took too long in {self.root}", code=Code.INTERNAL) from None
        if proc.returncode != 0:
            if check:
                raise PkgmgrError(f"git {args[0]} failed in {self.root}: "
                                  f"{proc.stderr.decode('utf-8', 'replace').strip()}", code=Code.INTERNAL)
            return None
        return proc.stdout

    def files(self, under: str) -> list[str]:
        out = self._run("ls-tree", "-r", "-z", "--name-only", self.rev, "--", under) or b""
        return sorted(name.decode("utf-8", "replace") for name in out.split(b"\0") if name)

    def changed(self, root: Path) -> set[str]:
        """The files under `root` that differ from this revision (changed, added, removed, and
        untracked new files), relative to `root`."""
        out = self._run("diff", "--name-only", "--no-renames", "-z", "--relative", self.rev, "--") or b""
        untracked = self._run("ls-files", "--others", "--exclude-standard", "-z") or b""
        return {name.decode("utf-8", "replace") for name in (out + b"\0" + untracked).split(b"\0") if name}

    def show(self, rel: str) -> bytes | None:
        return self._run("show", f"{self.rev}:./{rel}", check=False)


def _lenient(raw: bytes | None) -> dict[str, Any] | None:
    """A TOML document however invalid its content (None when it is not TOML at all)."""
    from pkgmgr.documents import DocumentError, decode_toml

    if raw is None:
        return None
    from pkgmgr.registry.index_format import canonical_toml

    fast = canonical_toml(raw) if len(raw) <= ENTRY_MAX_BYTES else None  # what tomllib would read, faster
    if fast is not None:
        return fast
    try:
        return decode_toml(raw, max_bytes=ENTRY_MAX_BYTES)
    except DocumentError:
        return None


def _versions(doc: dict[str, Any] | None) -> list[tuple[int, Any, dict[str, Any]]]:
    """(position, parsed version, table) of every version of an entry document that has one."""
    found = []
    items = doc.get("versions") if isinstance(doc, dict) else None
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or not isinstance(item.get("version"), str):
            continue
        try:
            found.append((index, parse_semver(item["version"]), item))
        except ValueError:
            continue
    return found


_FIELD_ORDER = ("version", "url", "sha256", "size", "min_compozy_version", "network_digest", "permissions",
                "published", "yanked")


def _field_rank(key: str) -> tuple[int, str]:
    return (_FIELD_ORDER.index(key) if key in _FIELD_ORDER else len(_FIELD_ORDER), key)


def _show(value: Any) -> str:
    if value is None:
        return "absent"
    if isinstance(value, datetime):
        from pkgmgr.registry.index_format import format_datetime

        return str(format_datetime(value))
    return repr(value)


def http_fetcher(http: Any, limit: int) -> tuple[Fetcher, Callable[[], None]]:
    """A fetcher downloading through `http` (an `HttpClient`) into a private temporary cache,
    and the function that removes that cache."""
    from pkgmgr.net.cache import DownloadCache
    from pkgmgr.progress import Reporter
    from pkgmgr.registry.stores import NO_STORE, Channel, store_for

    tmp = tempfile.TemporaryDirectory(prefix="pkgmgr-validate-")
    cache = DownloadCache(Path(tmp.name))

    channel = Channel(http, cache, Reporter(), limit)

    def fetch(url: str, label: str) -> Path:
        store = store_for(url)
        if store is None:
            raise PkgmgrError(f"{label}: {url} {NO_STORE}", code=Code.INVALID_INDEX)
        return store.fetch(url, channel, sha256=None, size=None, key=url, label=label)

    return fetch, tmp.cleanup
