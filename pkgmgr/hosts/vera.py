"""Vera (nashaad/vera): `vera.extension.json` folders in `$VERA_HOME/extensions/<id>/`, judged
as `manifest.ts` judges them, with Vera's own records written as `manager.ts` writes them.

Sources (docs/hosts.md names the commits): `src/extensions/manifest.ts`
(`parseExtensionManifest`, `loadExtensionManifest`, `realEntrypoint`),
`src/extensions/contributions.ts` (`parseExtensionContributions`, the newest: with `skills`),
`src/extensions/manager.ts` (`installExtension`, `setExtensionEnabled`, `removeExtension`,
`digestExtensionDirectory`, `writeExtensionRegistry`, `writeManagedMarker`, `withRegistryLock`,
`parseManagedRecord`), `src/extensions/discovery.ts` (`discoverExtensionConfigs`),
`src/profile-paths.ts` (`veraHomeDirectory`), and `test/extensions/*.test.ts`.

Vera's strings are JavaScript's: `js_trim` is `String.prototype.trim` (it removes U+FEFF and keeps
U+0085 and U+001C-U+001F, unlike `str.strip`), `locale_key` is `localeCompare`
(`pkgmgr.hosts.collation`), and a path Vera opens goes through Node's conversion (a NUL makes it
unavailable, an unpaired surrogate becomes U+FFFD). `tests/hosts/vera/` holds the cases and the
verdicts of Vera's own code run on them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError, ProblemSink
from pkgmgr.hosts import jsonfmt
from pkgmgr.hosts.base import FolderHost, Found, Judged
from pkgmgr.hosts.port import Claim
from pkgmgr.patterns import DOTTED_ID

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from pkgmgr.fsutil import NotRegularFile
    from pkgmgr.store.installed import Installed

MANIFEST = "vera.extension.json"
MANIFEST_MAX_BYTES = 1024 * 1024  # pkgmgr's bound
RECORDS_MAX_BYTES = 16 * 1024 * 1024  # pkgmgr's bound on extensions.json (and 1 MiB for a marker)
# pkgmgr's bound on the entries of `.managed/` it lists (one marker per record: extensions.json's
# 16 MiB holds fewer records than that, each being more than 100 bytes)
MARKERS_MAX_ENTRIES = 200_000
LOCK_MAX_BYTES = 4096  # extensions.json.lock holds {"pid":N}
DIGEST_FILE_MAX_BYTES = 500 * 1024 * 1024  # pkgmgr's bound on one file it digests (SPEC 3: what an archive unpacks to)
SDK = "1"
REGISTRY = "extensions.json"
MANAGED = ".managed"
SCHEMA_VERSION = 1
_ID = DOTTED_ID
_SOURCE_FAMILY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# contributions.ts as of its newest commit (docs/hosts.md): `skills` joined watches and sidecars
CONTRIBUTION_KINDS = ("watches", "sidecars", "skills")
FLOOD_POLICIES = ("shed", "quarantine")
_ABSENT = object()
# what `String.prototype.trim` removes: ECMAScript's WhiteSpace and LineTerminator
JS_WHITESPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                 "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Vera's installer names `.staging-<id>-<pid>-<uuid>` and `.managed/<id>.json.<pid>.<uuid>.tmp`:
# with any pid (at most 7 digits) these fit a 255-byte file name only for ids of at most 201 bytes
MAX_INSTALL_ID_BYTES = 255 - len(".json..") - 7 - 36 - len(".tmp")


def js_trim(text: str) -> str:
    """`String.prototype.trim`."""
    return text.strip(JS_WHITESPACE)


def shown(text: str) -> str:
    """`text` with each unpaired surrogate (JSON's `"\\ud800"`, which UTF-8 cannot carry) as U+FFFD:
    what pkgmgr prints and records of a Vera string; Vera's own records keep the string as it is."""
    return _SURROGATE.sub("\ufffd", text)


def node_path(text: str) -> str | None:
    """A path as Node hands it to the system: None when it holds a NUL (Node refuses it), else
    with each unpaired surrogate as U+FFFD (Node encodes strings to UTF-8 that way)."""
    return None if "\x00" in text else shown(text)


def vera_home() -> Path:
    """profile-paths.ts veraHomeDirectory: $VERA_HOME trimmed when not empty, else ~/.vera."""
    value = js_trim(os.environ.get("VERA_HOME", ""))
    if value:
        return Path(os.path.abspath(value))
    return Path(os.path.expanduser("~")) / ".vera"


def locale_key(name: str) -> tuple[Any, ...]:
    """A sort key ordering as JavaScript's `a.localeCompare(b)` does (ICU's root collation: `é`
    with `e`, punctuation before digits before letters, `a` before `A`); see
    `pkgmgr.hosts.collation`."""
    from pkgmgr.hosts.collation import sort_key

    return sort_key(name)


def digest(directory: Path) -> str:
    """manager.ts digestExtensionDirectory: sha256 over, per directory in localeCompare order,
    `dir:<rel>\\n` then its contents, or `file:<rel>\\n` + the bytes + `\\n`; links and special
    files are refused (as Vera refuses them)."""
    sha = hashlib.sha256()
    _hash_directory(sha, directory, "")
    return "sha256:" + sha.hexdigest()


def _hash_directory(sha: Any, directory: Path, rel: str) -> None:
    # names that collate equal (canonically equivalent, or differing in ignorable characters) are
    # hashed by code point: Vera takes them in the order its filesystem lists them
    entries = sorted(os.scandir(directory), key=lambda e: (locale_key(e.name), e.name))
    for entry in entries:
        path = f"{rel}/{entry.name}" if rel else entry.name
        _check_name(path)
        if entry.is_dir(follow_symlinks=False):
            sha.update(f"dir:{path}\n".encode())
            _hash_directory(sha, Path(entry.path), path)
        elif entry.is_file(follow_symlinks=False):
            sha.update(f"file:{path}\n".encode())
            _hash_file(sha, entry.path, path)
            sha.update(b"\n")
        elif entry.is_symlink():
            raise _link_refused(path)
        else:
            raise _special_refused(path)


def _hash_file(sha: Any, file: str, rel: str) -> None:
    """The bytes of one file of the digest, through the bounded primitive: swapped for a link or a
    FIFO since it was listed, it is refused as one (never followed, never waited on); over
    DIGEST_FILE_MAX_BYTES, or unreadable, it is refused with the code of a tree Vera cannot take."""
    from pkgmgr.fsutil import NotRegularFile, TooLarge, regular_chunks

    try:
        for chunk in regular_chunks(file, limit=DIGEST_FILE_MAX_BYTES):
            sha.update(chunk)
    except NotRegularFile as exc:
        raise (_link_refused(rel) if exc.kind == "a symbolic link" else _special_refused(rel)) from None
    except TooLarge:
        raise PkgmgrError(f"{rel!r} is larger than {DIGEST_FILE_MAX_BYTES} bytes (pkgmgr's bound on a file "
                          "of a Vera extension)", code=Code.INVALID_ARCHIVE, details={"path": rel},
                          hint="remove it from the extension's directory") from None
    except OSError as exc:
        if exc.errno in (errno.EIO, errno.ENOSPC):
            raise  # the device fails, not the tree: io_error
        raise PkgmgrError(f"{rel!r} cannot be read ({exc.strerror}): Vera's installer cannot digest the "
                          "extension", code=Code.INVALID_ARCHIVE, details={"path": rel},
                          hint="make it readable, or remove it from the extension's directory") from None


def _check_name(rel: str) -> None:
    """Vera reads names as UTF-8 (an undecodable byte becomes U+FFFD, so it cannot open the file):
    such a tree is refused, as Vera's installer fails on it."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown_name = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise PkgmgrError(f"{shown_name!r}: a file name that is not UTF-8: Vera reads names as UTF-8 and cannot "
                          "open it, so its installer refuses the extension", code=Code.INVALID_ARCHIVE,
                          details={"path": shown_name}, hint="rename the file to a UTF-8 name") from None


def _link_refused(rel: str) -> PkgmgrError:
    return PkgmgrError(f"{rel!r} is a symbolic link: Vera's installer refuses links in an extension source "
                       "(\"Symlinks are not supported in extension sources\")", code=Code.INVALID_ARCHIVE,
                       details={"path": rel}, hint="replace the link with a copy of what it points to")


def _special_refused(rel: str) -> PkgmgrError:
    return PkgmgrError(f"{rel!r} is not a regular file or a directory (a FIFO, a socket or a device): Vera's "
                       "installer refuses it", code=Code.INVALID_ARCHIVE, details={"path": rel},
                       hint="remove it from the extension's directory")


def copy_source(source: Path, dest: Path) -> Path:
    """manager.ts installExtension's copy of a source directory (`cpSync` of the whole tree, after
    `prepareSource` refused a source that is itself a link and `digestExtensionDirectory` one
    holding a link, a FIFO or another special file anywhere): every file and directory, `.git/`,
    empty directories and dot files included (nothing is left out, unlike pkgmgr's own copy).
    Files get pkgmgr's modes (0644, or 0755 when the owner may execute), as every install.
    Every directory is opened without following a link and every file as a regular file only,
    so nothing outside `source` is read and a FIFO never blocks. Returns `dest`."""
    from pkgmgr.archive.files import TreeWriter, empty_directory, file_mode, open_regular, read_chunks

    if os.path.islink(source):
        raise PkgmgrError(f"{source} is a symbolic link: Vera's installer refuses a source directory that is a "
                          "link", code=Code.INVALID_ARCHIVE, path=str(source),
                          hint=f"install from the directory it points to: {os.path.realpath(source)}")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    Path(dest).mkdir(mode=0o700, exist_ok=True)
    writer = TreeWriter(dest)

    def walk(fd: int, rel: str) -> None:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            path = f"{rel}/{entry.name}" if rel else entry.name
            _check_name(path)
            if entry.is_symlink():
                raise _link_refused(path)
            if entry.is_dir(follow_symlinks=False):
                writer.mkdir(path)
                try:
                    child = os.open(entry.name, flags, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _link_refused(path) from None
                    raise
                try:
                    walk(child, path)
                finally:
                    os.close(child)
            elif entry.is_file(follow_symlinks=False):
                handle = open_regular(entry.name, display=path, dir_fd=fd)
                try:
                    writer.write(path, read_chunks(handle), file_mode(os.fstat(handle).st_mode))
                finally:
                    os.close(handle)
            else:
                raise _special_refused(path)

    try:
        root = os.open(os.path.realpath(source), flags)
        try:
            walk(root, "")
        finally:
            os.close(root)
        writer.finish()
        os.chmod(dest, 0o755)
    except BaseException:
        empty_directory(dest)
        raise
    return Path(dest)


def _is_object(value: Any) -> bool:
    return isinstance(value, dict)


def _json_value_ok(value: Any) -> bool:
    """contributions.ts asJsonValue: inert JSON, finite numbers, no `__proto__` key."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if "__proto__" in item:
                return False
            stack.extend(item.values())
    return True


def _contributions(problems: ProblemSink, value: Any, ext_id: str) -> dict[str, Any]:
    """contributions.ts parseExtensionContributions (every problem listed, not only the first)."""
    result: dict[str, Any] = {"watches": [], "sidecars": [], "skills": []}
    if value is _ABSENT:  # `undefined`: no contributions (null is an error below)
        return result
    if not _is_object(value):
        problems.add("contributes", "contributes must be an object keyed by contribution kind")
        return result
    for kind in value:
        if kind not in CONTRIBUTION_KINDS:
            problems.add(f"contributes.{kind}", f'unknown contribution kind "{kind}"')
    for kind in CONTRIBUTION_KINDS:
        items = value.get(kind)
        if kind not in value:
            continue
        if not isinstance(items, list):
            problems.add(f"contributes.{kind}", f"contributes.{kind} must be an array")
            continue
        if kind == "skills":
            result["skills"] = _skills(problems, items)
            continue
        seen: set[str] = set()
        for index, item in enumerate(items):
            key = f"contributes.{kind}[{index}]"
            single = {"watches": "watch", "sidecars": "sidecar"}[kind]
            if not _is_object(item):
                problems.add(key, f"a {single} contribution must be an object")
                continue
            local = item.get("id")
            if not isinstance(local, str) or not _ID.fullmatch(local):
                problems.add(f"{key}.id", f"a {single} id must match {_ID.pattern}")
                continue
            if local in seen:
                problems.add(f"{key}.id", f'duplicate {single} id "{local}"')
            seen.add(local)
            (_watch if kind == "watches" else _sidecar)(problems, item, key, local)
            result[kind].append(local)
    return result


def _skills(problems: ProblemSink, items: list[Any]) -> list[str]:
    """contributions.ts parseSkillContributions (the newest commit): relative directories inside
    the extension, checked before trimming (`startsWith("/")`, a `..` between `/` or `\\`),
    unique after it. Whether the directory exists is not Vera's concern when it loads."""
    directories: list[str] = []
    for index, entry in enumerate(items):
        key = f"contributes.skills[{index}]"
        if not isinstance(entry, str) or not js_trim(entry) or entry.startswith("/") \
                or ".." in re.split(r"[\\/]", entry):
            problems.add(key, "a skills contribution must be a relative directory inside the extension")
            continue
        directory = js_trim(entry)
        if directory in directories:
            problems.add(key, f'duplicate skills directory "{shown(directory)}"')
            continue
        directories.append(directory)
    return [shown(d) for d in directories]


def _watch(problems: ProblemSink, item: dict[str, Any], key: str, local: str) -> None:
    family = item.get("source_family")
    if not isinstance(family, str) or not _SOURCE_FAMILY.fullmatch(family):
        problems.add(f"{key}.source_family", f'watch "{local}" must declare a source_family matching '
                                             f"{_SOURCE_FAMILY.pattern}")
    if "config" in item and not (_is_object(item["config"]) and _json_value_ok(item["config"])):
        problems.add(f"{key}.config", f'watch "{local}" config must be an object of inert JSON values')
    address = item.get("address")
    if "address" in item and not (isinstance(address, str) and js_trim(address)):
        problems.add(f"{key}.address", f'watch "{local}" address must be a non-empty string')
    flood = item.get("flood", "shed")
    if flood is None:
        flood = "shed"  # `value.flood ?? "shed"`
    if not isinstance(flood, str) or flood not in FLOOD_POLICIES:
        problems.add(f"{key}.flood", f'watch "{local}" flood must be one of {", ".join(FLOOD_POLICIES)}')


def _sidecar(problems: ProblemSink, item: dict[str, Any], key: str, local: str) -> None:
    command = item.get("command")
    if not (isinstance(command, list) and command and all(isinstance(p, str) and js_trim(p) for p in command)):
        problems.add(f"{key}.command", f'sidecar "{local}" command must be a non-empty array of non-empty strings')
    if "env" in item:
        env = item["env"]
        if not (_is_object(env) and "__proto__" not in env and all(isinstance(v, str) for v in env.values())):
            problems.add(f"{key}.env", f'sidecar "{local}" env must be an object of string values')
    cwd = item.get("cwd")
    if "cwd" in item and not (isinstance(cwd, str) and js_trim(cwd)):
        problems.add(f"{key}.cwd", f'sidecar "{local}" cwd must be a non-empty string')
    restart = item.get("restart", True)
    if restart is not None and not isinstance(restart, bool):
        problems.add(f"{key}.restart", f'sidecar "{local}" restart must be a boolean')


def _entrypoint(problems: ProblemSink, directory: str, entrypoint: str) -> None:
    """manifest.ts realEntrypoint: inside the directory by its path, then a regular file inside it
    after links (`realpathSync`, which fails on a NUL, a missing file or a loop)."""
    named = shown(entrypoint)
    candidate = os.path.normpath(os.path.join(directory, entrypoint))
    if not _inside(directory, candidate):
        problems.add("entrypoint", f"Vera extension entrypoint leaves its directory: {named!r}",
                     code=Code.PATH_ESCAPES_ROOT)
        return
    path = node_path(candidate)
    try:
        target = os.path.realpath(path, strict=True) if path is not None else None
    except OSError:
        target = None
    if target is None:
        problems.add("entrypoint", f"Vera extension entrypoint is unavailable at {named!r}")
    elif not _inside(directory, target) or not os.path.isfile(target):
        problems.add("entrypoint", "Vera extension entrypoint must be a file inside the extension directory",
                     code=Code.PATH_ESCAPES_ROOT)


def _inside(directory: str, candidate: str) -> bool:
    """manifest.ts isWithin."""
    rel = os.path.relpath(candidate, directory)
    return rel == "." or (rel != ".." and not rel.startswith(".." + os.sep) and not os.path.isabs(rel))


class Vera(FolderHost):
    name = "vera"
    title = "Vera"
    manifest_files = (MANIFEST,)
    capabilities_are_permissions = True  # a registry entry's permissions are the manifest's capabilities
    entry_label = "entrypoint"
    templates = ("extension",)
    folder_mode = 0o700  # manager.ts: mkdirSync(directory, { recursive: true, mode: 0o700 })

    def home(self) -> Path:
        return vera_home()

    def claim(self, level: Path, files: frozenset[str]) -> Claim | None:
        return Claim(MANIFEST) if MANIFEST in files else None

    def scaffold(self, name: str, template: str) -> dict[str, str]:
        """A manifest, its entrypoint and no capabilities (Vera's ids are `name` as it is)."""
        if not _ID.fullmatch(name):
            raise PkgmgrError(f"{name!r} cannot be a Vera extension id (it must match {_ID.pattern})", code=Code.USAGE)
        manifest = {"id": name, "version": "0.1.0", "sdk": SDK, "entrypoint": "./extension.ts", "capabilities": []}
        return {MANIFEST: json.dumps(manifest, indent=2) + "\n",
                "extension.ts": "export default function activate(): void {}\n",
                "README.md": f"# {name}\n\nA Vera extension: 'vera ext list' shows it once installed.\n"}

    def target(self, folder: Path, name: str, layout: str) -> Path:
        """`extensions/<id>`; an id Vera's installer could not stage (see MAX_INSTALL_ID_BYTES) is
        refused before anything moves."""
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > MAX_INSTALL_ID_BYTES:
            raise PkgmgrError(f"the Vera id {name[:40]}... is {size} bytes long: Vera's installer names files "
                              f"'.staging-<id>-<pid>-<uuid>' and '.managed/<id>.json.<pid>.<uuid>.tmp', which fit "
                              f"the system's 255-byte limit only for ids of at most {MAX_INSTALL_ID_BYTES} bytes",
                              code=Code.INVALID_MANIFEST, details={"key": "id", "bytes": size},
                              hint="shorten the id in vera.extension.json")
        return folder / name

    # --- Vera's own records (manager.ts), kept as Vera keeps them ------------------------------------

    def host_lock(self, timeout: float) -> AbstractContextManager[object]:
        return registry_lock(timeout)

    def claimed_by_records(self, folder: Path, name: str) -> Path | None:
        return folder.parent / REGISTRY if any(r["id"] == name for r in read_records(folder)) else None

    def records_of(self, folder: Path, judged: Judged, source: str, staged: Path, *, enabled: bool,
                   current: Installed | None) -> dict[str, Any] | None:
        """installExtension's record of the staged tree (the version as Vera records it); an update
        keeps `installedAt`. Raises `invalid_config` when Vera's records are ones it would refuse."""
        name = judged.name
        installed_at = None
        if current is not None:
            old = next((r for r in read_records(folder) if r["id"] == name), None)
            installed_at = old["installedAt"] if old else None
        return record(name, recorded_version(judged.document, judged.version), source, digest(staged),
                      enabled=enabled, installed_at=installed_at)

    def check_records(self, folder: Path) -> None:
        read_records(folder)

    def settle(self, folder: Path, item: Installed | None, name: str, records: dict[str, Any] | None = None) -> None:
        """Vera's records made to say what `item` says (Vera's lock held): `records` (computed
        before the switch), else the record kept with `item`'s version, enabled state and digest;
        nothing is written when they say it already."""
        path = folder / name
        now = {r["id"]: r for r in read_records(folder, repair=True)}
        if item is None or not os.path.isdir(path):
            if name in now:
                drop_record(folder, name)
            return
        old = now.get(name)
        wanted = records if records is not None and records.get("id") == name else record(
            name, recorded_version(item.manifest, item.version),
            (old or {}).get("source", {}).get("path") or str(path), digest(path), enabled=item.enabled,
            installed_at=(old or {}).get("installedAt"))
        if old != wanted:
            put_record(folder, wanted, list(now.values()))

    def lock_problem(self) -> str | None:
        path = lock_path()
        why = stale_lock(path)
        return f"{path} is a stale lock of Vera's records ({why}): 'pkgmgr doctor' removes it" if why else None

    def reclaim_lock(self) -> str | None:
        path = lock_path()
        why = stale_lock(path)
        if why is None:
            return None
        path.unlink(missing_ok=True)
        return f"removed {path}, a stale lock of Vera's records ({why})"

    def record_problems(self, folder: Path, rows: list[Installed]) -> list[str]:
        """Vera's records as Vera parses them, and whether they name each install pkgmgr recorded
        with its tree's digest (else Vera lists it as not managed, or with another version)."""
        try:
            found = {r["id"]: r for r in read_records(folder)}
        except PkgmgrError as error:
            return [error.message]
        problems = []
        for row in rows:
            mine = found.get(row.name)
            if mine is None:
                problems.append(f"Vera's records ({registry_path()}) do not name {row.label}: Vera lists it as not "
                                "managed by its extension manager")
            elif os.path.isdir(row.place) and mine["digest"] != digest(row.place):
                problems.append(f"Vera's record of {row.label} names digest {mine['digest']}, not its tree's")
            elif mine["enabled"] != row.enabled:
                problems.append(f"Vera's record of {row.label} says {'enabled' if mine['enabled'] else 'disabled'}, "
                                f"pkgmgr's says {'enabled' if row.enabled else 'disabled'}")
        return problems

    def check_adoptable(self, found: Found, *, force: bool) -> None:
        """An extension Vera recorded must still have the digest Vera recorded."""
        recorded = next((r for r in read_records(found.path.parent) if r["id"] == found.name), None)
        if recorded is not None and recorded["digest"] != digest(found.path) and not force:
            raise PkgmgrError(f"{found.path} changed since Vera recorded it (digest {recorded['digest']})",
                              code=Code.TREE_MODIFIED, hint="reinstall it, or pass --force to adopt it as it is")

    def scan(self, folder: Path) -> list[Found]:
        """discovery.ts discoverExtensionConfigs: directories (and links) holding the manifest,
        in localeCompare order."""
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in sorted(entries, key=lambda e: locale_key(e.name)):
            if (entry.is_dir(follow_symlinks=False) or entry.is_symlink()) and os.path.exists(
                    os.path.join(entry.path, MANIFEST)):
                found.append(Found(entry.name, Path(entry.path), "directory"))
        return found

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
        directory = os.path.realpath(root)
        manifest_path = os.path.join(directory, MANIFEST)
        real = os.path.realpath(manifest_path)
        if not os.path.lexists(manifest_path):
            problems.add("", f"Vera extension manifest is unavailable at {MANIFEST}")
            problems.raise_if_any()
        if not _inside(directory, real) or not os.path.isfile(real):
            problems.add("", "Vera extension manifest must be a file inside the extension directory",
                         code=Code.PATH_ESCAPES_ROOT)
            problems.raise_if_any()
        from pkgmgr.fsutil import read_regular

        raw = read_regular(real, limit=MANIFEST_MAX_BYTES, follow_symlinks=True)  # never blocks on a FIFO
        if len(raw) > MANIFEST_MAX_BYTES:
            problems.add("", "is larger than 1 MiB (pkgmgr's bound)")
            problems.raise_if_any()
        try:
            value = jsonfmt.plain(jsonfmt.decode(raw))
        except jsonfmt.JsonError as exc:
            problems.add("", f"Invalid JSON in Vera extension manifest: {exc}")
            problems.raise_if_any()
        if jsonfmt.depth(value) > jsonfmt.MAX_DEPTH:
            problems.add("", "is nested too deeply (pkgmgr's bound)")
            problems.raise_if_any()
        if not _is_object(value):
            problems.add("", "must be a JSON object")
            problems.raise_if_any()
        ext_id = value.get("id")
        if not isinstance(ext_id, str) or not _ID.fullmatch(ext_id):
            problems.add("id", f"must be a string matching {_ID.pattern} (lower-case, dotted or dashed)")
        version = value.get("version")
        if not isinstance(version, str) or not js_trim(version):
            problems.add("version", "must be a non-empty string")
        if value.get("sdk") != SDK:
            problems.add("sdk", f'must be the string "{SDK}"')
        entrypoint = value.get("entrypoint")
        if not isinstance(entrypoint, str) or not js_trim(entrypoint):
            problems.add("entrypoint", "must be a non-empty string")
        elif entrypoint.startswith("/"):  # node:path isAbsolute (POSIX)
            problems.add("entrypoint", "must be relative to the extension directory")
        capabilities = value.get("capabilities")
        caps: list[str] = []
        if not isinstance(capabilities, list):
            problems.add("capabilities", "must be an array of strings")
        else:
            caps = [js_trim(c) if isinstance(c, str) else "" for c in capabilities]
            if any(not c for c in caps):
                problems.add("capabilities", "every capability must be a non-empty string")
            if len(set(caps)) != len(caps):
                problems.add("capabilities", "capabilities must be unique")
        manifest_ok = not problems.problems
        contributes = _contributions(problems, value.get("contributes", _ABSENT), ext_id if isinstance(ext_id, str) else "")
        if manifest_ok and isinstance(entrypoint, str):
            _entrypoint(problems, directory, entrypoint)
        problems.raise_if_any()
        assert isinstance(ext_id, str) and isinstance(version, str) and isinstance(entrypoint, str)
        return Judged(host=self.name, name=ext_id, version=shown(js_trim(version)), layout="directory",
                      kind="extension", entry=shown(entrypoint), capabilities=tuple(shown(c) for c in caps),
                      document=value, details={"contributes": contributes, "sdk": SDK})

    def copy_source(self, source: Path, dest: Path) -> Path:
        return copy_source(source, dest)



# --- Vera's records ------------------------------------------------------------------------------


def registry_path() -> Path:
    return vera_home() / REGISTRY


def lock_path() -> Path:
    return vera_home() / (REGISTRY + ".lock")


def iso_now() -> str:
    """`new Date().toISOString()`: milliseconds and a Z."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def recorded_version(document: dict[str, Any], shown_version: str) -> str:
    """The version Vera records for a manifest: its `version` trimmed, exactly (`shown_version`,
    pkgmgr's, has U+FFFD for an unpaired surrogate)."""
    value = document.get("version")
    return js_trim(value) if isinstance(value, str) else shown_version


def record(ext_id: str, version: str, source: str, tree_digest: str, *, enabled: bool,
           installed_at: str | None = None) -> dict[str, Any]:
    """A ManagedExtensionRecord, keys in the order manager.ts builds it."""
    return {"id": ext_id, "version": version, "source": {"kind": "local", "path": source}, "digest": tree_digest,
            "directory": f"extensions/{ext_id}", "enabled": enabled, "installedAt": installed_at or iso_now()}


def record_problem(value: Any) -> str | None:
    """manager.ts parseManagedRecord, as a reason (None when the record is one Vera accepts)."""
    if not isinstance(value, dict):
        return "not an object"
    source = value.get("source")
    checks = [
        (isinstance(value.get("id"), str) and _ID.fullmatch(value["id"]) is not None, "id"),
        (isinstance(value.get("version"), str) and bool(js_trim(value["version"])), "version"),
        (isinstance(value.get("digest"), str) and _DIGEST.fullmatch(value["digest"]) is not None, "digest"),
        (value.get("directory") == f"extensions/{value.get('id')}", "directory"),
        (isinstance(value.get("enabled"), bool), "enabled"),
        (isinstance(value.get("installedAt"), str) and _date_ok(value["installedAt"]), "installedAt"),
        (isinstance(source, dict) and source.get("kind") == "local" and isinstance(source.get("path"), str)
         and os.path.isabs(source["path"]), "source"),
    ]
    bad = [name for ok, name in checks if not ok]
    return f"bad {', '.join(bad)}" if bad else None


def _date_ok(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _records_error(path: Path, why: str, *,
                   hint: str = "repair or move the file (Vera's own 'vera ext' commands refuse it too)") -> PkgmgrError:
    return PkgmgrError(f"{path}: Vera's extension records {why}; pkgmgr does not write over records it cannot "
                       "read", code=Code.INVALID_CONFIG, path=str(path), hint=hint)


def _not_regular(path: Path, exc: "NotRegularFile") -> PkgmgrError:
    """The error for records that are no regular file; a link refused on the way to them (a loop of
    links above the file, where no final link is) is said as such, not as a link in their place."""
    if exc.kind == "a symbolic link" and not os.path.islink(path):
        return _records_error(path, "cannot be reached: the symbolic links on the way to them loop",
                              hint="check VERA_HOME and the links that lead to it")
    return _records_error(path, f"file is {exc.kind}")


def read_central() -> list[dict[str, Any]] | None:
    """manager.ts readExtensionRegistry: the records of extensions.json (None when there is none)."""
    path = registry_path()
    if os.path.islink(path):
        raise _records_error(path, "file is a symbolic link")
    from pkgmgr.fsutil import NotRegularFile, read_regular

    try:
        raw = read_regular(path, limit=RECORDS_MAX_BYTES)  # never blocks on a FIFO, bounded
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        raise _not_regular(path, exc) from None
    if len(raw) > RECORDS_MAX_BYTES:
        raise _records_error(path, f"file is larger than {RECORDS_MAX_BYTES // (1024 * 1024)} MiB (pkgmgr's bound)")
    try:
        value = jsonfmt.plain(jsonfmt.decode(raw))
    except jsonfmt.JsonError as exc:
        raise _records_error(path, f"are not valid JSON ({exc})") from None
    if not isinstance(value, dict) or value.get("schema_version") != SCHEMA_VERSION or not isinstance(
            value.get("extensions"), list):
        raise _records_error(path, "have an invalid shape")
    ids: set[str] = set()
    for item in value["extensions"]:
        why = record_problem(item)
        if why is not None or item["id"] in ids:
            raise _records_error(path, f"have an invalid record ({why or 'duplicate id'})")
        ids.add(item["id"])
    return value["extensions"]


def read_markers(folder: Path, *, repair: bool = False) -> dict[str, dict[str, Any]]:
    """manager.ts readManagedMarkers. A `.tmp` file is another writer's work in flight (Vera's,
    or one that died): never read, and removed only by a writer holding Vera's lock (`repair`)
    when the process its name carries (`<id>.json.<pid>.<uuid>.tmp`) is gone."""
    state = folder / MANAGED
    if os.path.islink(state):
        raise _records_error(state, "directory is a symbolic link")
    try:
        names = sorted(_bounded_listing(state, MARKERS_MAX_ENTRIES))
    except FileNotFoundError:
        return {}
    markers: dict[str, dict[str, Any]] = {}
    for child in names:
        path = state / child
        if child.endswith(".tmp"):
            if os.path.isdir(path) and not os.path.islink(path):  # Vera's rm fails on it too: never removed
                raise _records_error(path, "directory holds an unexpected directory")
            if repair and _temp_of_dead_process(child):
                path.unlink(missing_ok=True)
            continue
        if not child.endswith(".json") or os.path.islink(path):
            raise _records_error(path, "directory holds an unexpected file")
        try:
            from pkgmgr.fsutil import read_regular

            raw = read_regular(path, limit=MANIFEST_MAX_BYTES)  # never blocks on a FIFO, bounded
            if len(raw) > MANIFEST_MAX_BYTES:
                raise jsonfmt.JsonError("larger than 1 MiB (pkgmgr's bound)")
            value = jsonfmt.plain(jsonfmt.decode(raw))
        except (OSError, jsonfmt.JsonError) as exc:
            raise _records_error(path, f"marker is invalid ({exc})") from None
        if record_problem(value) is not None or child != f"{value['id']}.json":
            raise _records_error(path, "marker has an invalid shape")
        markers[value["id"]] = value
    return markers


def _bounded_listing(directory: Path, limit: int) -> list[str]:
    """The names in `directory`, refused (`invalid_config`) past `limit` entries: read one by
    one, never more than `limit` + 1 of them."""
    names: list[str] = []
    with os.scandir(directory) as listing:
        for entry in listing:
            if len(names) == limit:
                raise _records_error(directory, f"directory holds more than {limit} entries (pkgmgr's bound)")
            names.append(entry.name)
    return names


def _temp_of_dead_process(name: str) -> bool:
    """Whether a temporary file named `<file>.<pid>.<uuid>.tmp` belongs to a process that is gone."""
    parts = name.split(".")
    if len(parts) < 4 or not parts[-3].isdigit():
        return False
    return not _pid_alive(int(parts[-3]))


def read_records(folder: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """manager.ts readManagedExtensionRecords: the central records, each with its marker's
    `enabled`, plus markers without a central record; sorted by id in localeCompare order. A
    missing marker is backfilled as Vera does only by a writer holding Vera's lock (`repair`): a
    read never writes."""
    central = read_central() or []
    markers = read_markers(folder, repair=repair)
    records = []
    missing = []
    for item in central:
        marker = markers.pop(item["id"], None)
        if marker is None:
            if repair:
                missing.append(item)  # written as one batch below
            records.append(item)
            continue
        if marker["directory"] != item["directory"] or marker["source"]["path"] != item["source"]["path"]:
            raise _records_error(registry_path(), f"disagree with the marker of {item['id']}")
        records.append({**item, "enabled": marker["enabled"]})
    if missing:
        write_markers(folder, missing)
    records.extend(markers.values())
    return sorted(records, key=lambda r: locale_key(r["id"]))


def _write_json(path: Path, value: Any) -> None:
    """Vera's write: `<path>.<pid>.<uuid>.tmp` with mode 0600 (never following a link planted at
    that name: created exclusively), fsynced, then a rename and its directory fsynced."""
    from pkgmgr.fsutil import write_through

    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4()}.tmp")
    write_through(path, (jsonfmt.js_stringify(value) + "\n").encode("utf-8"), tmp, mode=0o600)


def write_marker(folder: Path, item: dict[str, Any]) -> None:
    """manager.ts writeManagedMarker: `.managed/<id>.json`."""
    state = folder / MANAGED
    if os.path.islink(state):
        raise _records_error(state, "directory is a symbolic link")
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = state / f"{item['id']}.json"
    if os.path.islink(path):
        raise _records_error(path, "marker is a symbolic link")
    _write_json(path, item)


def write_markers(folder: Path, items: list[dict[str, Any]]) -> None:
    """The markers Vera backfills for records that have none, written as one batch: each file
    written beside its place, one flush of the filesystem for all of them (`syncfs`; an fsync
    each where there is none), then each renamed in and the folder flushed once. 20,000 records
    without markers cost 20,000 fsyncs, one by one, before (issue 29)."""
    if len(items) < 2:
        for item in items:
            write_marker(folder, item)
        return
    from pkgmgr.fsutil import DURABLE, fsync_dir, syncfs

    state = folder / MANAGED
    if os.path.islink(state):
        raise _records_error(state, "directory is a symbolic link")
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    written: list[tuple[Path, Path]] = []
    try:
        for item in items:
            path = state / f"{item['id']}.json"
            if os.path.islink(path):
                raise _records_error(path, "marker is a symbolic link")
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            written.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(jsonfmt.js_stringify(item) + "\n")
        if DURABLE and not syncfs(state):
            for tmp, _ in written:
                fd = os.open(tmp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        for tmp, path in written:
            os.rename(tmp, path)
    except BaseException:
        for tmp, _ in written:
            tmp.unlink(missing_ok=True)
        raise
    fsync_dir(state)


def remove_marker(folder: Path, ext_id: str) -> None:
    from pkgmgr.fsutil import fsync_dir

    path = folder / MANAGED / f"{ext_id}.json"
    if os.path.islink(path):
        raise _records_error(path, "marker is a symbolic link")
    if os.path.lexists(path):
        path.unlink()
        fsync_dir(path.parent)


def write_central(records: list[dict[str, Any]]) -> None:
    """manager.ts writeExtensionRegistry: records sorted by id (localeCompare), two-space JSON."""
    path = registry_path()
    if os.path.islink(path):
        raise _records_error(path, "file is a symbolic link")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    ordered = sorted(records, key=lambda r: locale_key(r["id"]))
    _write_json(path, {"schema_version": SCHEMA_VERSION, "extensions": ordered})


def put_record(folder: Path, item: dict[str, Any], records: list[dict[str, Any]] | None = None) -> None:
    """Add or replace one record (Vera's lock held), in an order after which Vera never reads
    records it refuses: Vera refuses a marker and a central record of one id that disagree on
    `directory` or `source.path`, and reads a marker alone as the record. So when they would
    disagree (an update from another source), the central record goes first (Vera reads the old
    marker alone), then the new marker (the new record alone), then the central record; else, as
    installExtension does, the marker first, then the registry."""
    records = read_records(folder, repair=True) if records is None else records
    others = [r for r in records if r["id"] != item["id"]]
    old = next((r for r in records if r["id"] == item["id"]), None)
    central = {r["id"] for r in read_central() or []}
    if old is not None and item["id"] in central and (
            old["directory"], old["source"]["path"]) != (item["directory"], item["source"]["path"]):
        write_central(others)
    write_marker(folder, item)
    write_central([*others, item])


def drop_record(folder: Path, ext_id: str) -> None:
    """manager.ts removeManagedRecord: the registry rewritten without it (when there is one, or
    others remain), then its marker removed (Vera's lock held)."""
    remaining = [r for r in read_records(folder, repair=True) if r["id"] != ext_id]
    if registry_path().is_file() or remaining:
        write_central(remaining)
    remove_marker(folder, ext_id)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _lock_owner(path: Path) -> Any:
    """The lock file's JSON, read through the bounded primitive and decoder (a FIFO planted as the
    lock is refused at once, so `--lock-timeout` holds). Raises OSError and ValueError."""
    from pkgmgr.documents import read_json_file

    return read_json_file(path, max_bytes=LOCK_MAX_BYTES)


def boot_time() -> float | None:
    """When the system booted (Linux `/proc/stat` btime), None where it cannot be known."""
    try:
        with open("/proc/stat", "rb") as handle:  # the kernel's, not a file of a host
            for line in handle.read(1 << 16).splitlines():
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def stale_lock(path: Path) -> str | None:
    """Why the lock file `path` is provably stale — its `{"pid": N}` names no live process, or it
    was written before the system booted (a power cut left it, empty or not: no process of that
    boot lives) — or None: no lock, or one that may belong to a live process (a FIFO or a link
    planted there is never taken for a stale lock)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    import stat as stat_module

    if not stat_module.S_ISREG(info.st_mode):
        return None
    booted = boot_time()
    if booted is not None and info.st_mtime < booted:
        return "written before the system booted"
    try:
        value = _lock_owner(path)
    except (OSError, ValueError):
        return None  # being written by a live owner, or not Vera's
    pid = value.get("pid") if isinstance(value, dict) else None
    if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and not _pid_alive(pid):
        return f"its process {pid} is gone"
    return None


def _reclaim_dead(path: Path) -> bool:
    """manager.ts reclaimDeadLock, and a lock a power cut left (`stale_lock`): removed."""
    if stale_lock(path) is None:
        return False
    path.unlink(missing_ok=True)
    return True


def _take(path: Path) -> bool:
    """Create the lock `path` holding `{"pid":N}` — whole, even after a power cut: the pid is
    written and fsynced in a file of its own, which is then linked to the lock's name (created
    only when it does not exist, as Vera's exclusive open). False when it exists."""
    owner = (json.dumps({"pid": os.getpid()}, separators=(",", ":")) + "\n").encode()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            os.write(fd, owner)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK):
                raise
        try:  # a filesystem without hard links: Vera's own exclusive create
            lock = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        try:
            os.write(lock, owner)
            os.fsync(lock)
        finally:
            os.close(lock)
        return True
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def registry_lock(timeout: float) -> Iterator[None]:
    """manager.ts withRegistryLock: `extensions.json.lock` created exclusively (mode 0600) with
    `{"pid":N}` (`_take`); a stale lock is reclaimed (`stale_lock`). A live owner is waited for up
    to `timeout` seconds (Vera itself gives up at once), then `locked`."""
    path = lock_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    while not _take(path):
        if _reclaim_dead(path):
            continue
        if time.monotonic() >= deadline:
            owner = ""
            try:
                owner = f" (pid {_lock_owner(path).get('pid')})"
            except (OSError, ValueError, AttributeError):
                pass
            raise PkgmgrError(f"Vera holds its extension lock {path}{owner}; gave up after waiting {timeout:g} s",
                              code=Code.LOCKED, path=str(path),
                              hint="wait for the 'vera ext' command to finish, or raise --lock-timeout") from None
        time.sleep(0.05)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
