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
                   config: "Config | None" = None, now: datetime | None = None) -> Report:
    """Check the index directory `root` (module docstring). Raises `not_found` when `root` is
    not a directory and `usage` for a `base` that is not a commit of its git repository;
    everything else is a problem in the report."""
    root = Path(root)
    if not root.is_dir():
        raise PkgmgrError(f"{root}: no such directory", code=Code.NOT_FOUND, path=str(root))
    report = Report(root, base=base)
    checker = _Checker(root, report)
    meta = checker.registry(now or datetime.now(UTC))
    entries = checker.entries()
    checker.index(meta, entries)
    new_versions: set[tuple[str, Any]] | None = None
    if base is not None:
        new_versions = checker.against_base(base, meta, entries)
    if fetcher is not None:
        from pkgmgr.config import Config

        checker.fetch(entries, new_versions, fetcher, config or Config())
    checker.signatures()
    report.problems.sort(key=lambda p: (p.file != REGISTRY_FILE, p.file, p.line or 0))
    return report


class _Checker:
    def __init__(self, root: Path, report: Report) -> None:
        self.root = root
        self.report = report
        self.lines: dict[str, TomlLines] = {}  # TOML file -> its lines, for line numbers
        self.valid_files = True

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
                line = self.lines[problem.file].line_of(problem.key)
            self.report.problems.append(Problem(problem.code, problem.file, problem.key, problem.message, line))

    def problem(self, file: str, key: str, message: str, *, code: str = INVALID, line: int | None = None) -> None:
        self.add([Problem(code, file, key, message, line)])

    def _read(self, rel: str, cap: int) -> bytes | None:
        try:
            raw = read_capped(self.root / rel, cap, rel, root=self.root)
        except ValidationFailed as error:
            self.valid_files = False
            self.add(error.problems)
            return None
        if rel.endswith(".toml"):
            self.lines[rel] = TomlLines(raw.decode("utf-8", "replace"))
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

    def entry(self, rel: str, path: Path) -> Entry | None:
        name = path.stem
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
        raw = self._read(rel, ENTRY_MAX_BYTES)
        if raw is None:
            return None
        self.urls(rel, _lenient(raw))
        try:
            entry = parse_entry(raw, rel, expected_name=name)
        except ValidationFailed as error:
            self.valid_files = False
            self.add(error.problems)
            return None
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
        path = self.root / rel
        return path.read_bytes() if path.is_file() else None

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
              config: "Config") -> None:
        for entry in entries.values():
            rel = entry_path(entry.name)
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

    def show(self, rel: str) -> bytes | None:
        return self._run("show", f"{self.rev}:./{rel}", check=False)


def _lenient(raw: bytes | None) -> dict[str, Any] | None:
    """A TOML document however invalid its content (None when it is not TOML at all)."""
    from pkgmgr.documents import DocumentError, decode_toml

    if raw is None:
        return None
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
