"""The registry index format (SPEC 5.1): `registry.toml`, sharded entry files and `index.json`.

Pure: bytes in, frozen values or every problem of the file out (`invalid_index`, naming the
file and the key). A hostile or broken file never raises anything but `ValidationFailed`.
The writer side, `build_index`, renders `index.json` deterministically for `registry build`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlsplit

from pkgmgr import __version__
from pkgmgr.errors import Code, Problem, ProblemSink, ValidationFailed
from pkgmgr.hosts import DEFAULT
from pkgmgr.hosts import others as other_hosts
from pkgmgr.jsonutil import join_key
from pkgmgr.patterns import EXTENSION_NAME
from pkgmgr.registry.layout import (  # noqa: F401 - the caps and paths, re-exported for the registry modules
    ENTRY_MAX_BYTES,
    INDEX_FILE,
    INDEX_MAX_BYTES,
    MIB,
    REGISTRY_FILE,
    REGISTRY_MAX_BYTES,
    entry_path,
)
from pkgmgr.versions import SEMVER, parse_semver

INVALID = Code.INVALID_INDEX
TIERS = ("official", "community", "unverified")
VERIFIED_TIERS = frozenset({"official", "community"})
_NAME_RE = EXTENSION_NAME
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f]")


def is_extension_name(name: Any) -> bool:
    return isinstance(name, str) and bool(_NAME_RE.fullmatch(name))


# --- values -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegistryMeta:
    """The `[registry]` table of `registry.toml`."""

    name: str
    description: str
    format: int
    serial: int
    expires: datetime | None = None

    def expired(self, now: datetime | None = None) -> bool:
        return self.expires is not None and self.expires <= (now or datetime.now(UTC))


@dataclass(frozen=True)
class VersionEntry:
    """One released version of an entry."""

    version: str
    url: str
    sha256: str
    size: int
    min_compozy_version: str
    network_digest: str = ""
    permissions: tuple[str, ...] = ()
    published: datetime | None = None
    yanked: bool = False

    @property
    def parsed(self) -> Any:
        return parse_semver(self.version)

    @property
    def prerelease(self) -> bool:
        return bool(self.parsed.is_prerelease)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "url": self.url,
            "sha256": self.sha256,
            "size": self.size,
            "min_compozy_version": self.min_compozy_version,
            "network_digest": self.network_digest,
            "permissions": list(self.permissions),
            "published": format_datetime(self.published),
            "yanked": self.yanked,
            "prerelease": self.prerelease,
        }


@dataclass(frozen=True)
class Entry:
    """`extensions/<shard>/<name>.toml`: one extension and its versions, ascending."""

    name: str
    description: str
    repository: str | None
    tier: str
    versions: tuple[VersionEntry, ...]
    host: str = "compozy"  # SPEC 13: whose rules judge its archives (the entry's `host`, default compozy)

    @property
    def verified(self) -> bool:
        return self.tier in VERIFIED_TIERS

    @property
    def latest(self) -> str | None:
        return latest_version([(v.version, v.yanked) for v in self.versions])

    def find(self, version: str) -> VersionEntry | None:
        wanted = parse_semver(version)
        return next((v for v in self.versions if v.parsed == wanted), None)


@dataclass(frozen=True)
class IndexVersion:
    version: str
    yanked: bool
    min_compozy_version: str


@dataclass(frozen=True)
class IndexExtension:
    name: str
    description: str
    tier: str
    latest: str | None
    versions: tuple[IndexVersion, ...]
    host: str = "compozy"


@dataclass(frozen=True)
class Index:
    """`index.json`: every extension of a registry, sorted by name (for search)."""

    format: int
    serial: int
    extensions: tuple[IndexExtension, ...]


def latest_version(versions: Iterable[tuple[str, bool]]) -> str | None:
    """SPEC 5.1: the highest version neither yanked nor a prerelease, else the highest."""
    parsed = [(parse_semver(v), v, yanked) for v, yanked in versions]
    if not parsed:
        return None
    stable = [p for p in parsed if not p[2] and not p[0].is_prerelease]
    return max(stable or parsed, key=lambda p: p[0])[1]


def format_datetime(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


# --- decoding ---------------------------------------------------------------------------------


def _fail(file: str, message: str, line: int | None = None) -> ValidationFailed:
    return ValidationFailed([Problem(INVALID, file, "", message, line)])


def _text(raw: bytes, file: str, cap: int) -> str:
    if len(raw) > cap:
        raise _fail(file, f"is larger than {cap // MIB} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(file, f"not valid UTF-8: {exc.reason} at byte {exc.start}") from None
    return text.removeprefix("\ufeff")  # a byte order mark: pkgmgr's own formats accept one


def decode_toml(raw: bytes, file: str, *, cap: int = ENTRY_MAX_BYTES) -> dict[str, Any]:
    """TOML bytes to a document, through the shared bounded decoder (`documents.decode_toml`).
    Raises `ValidationFailed(invalid_index)` naming the file."""
    from pkgmgr.documents import DocumentError
    from pkgmgr.documents import decode_toml as decode

    if len(raw) > cap:
        raise _fail(file, f"is larger than {cap // MIB} MiB")
    fast = canonical_toml(raw)
    if fast is not None:
        return fast
    try:
        return decode(raw, max_bytes=cap)
    except DocumentError as exc:
        raise _fail(file, exc.message, exc.line) from None


# The canonical form of an entry (what `registry publish` writes: `key = value` lines, blank
# lines, `[[versions]]` headers; basic strings without escapes, decimal integers, booleans,
# UTC or offset date-times, one-line arrays of such strings) read without tomllib, ~10x faster
# (a million entries are read by `registry build`). Anything else — a comment, an escape, a
# table, a second `[[versions]]` form, a duplicate key — returns None and tomllib decides.
# `tests/registry/test_canonical_toml.py` holds it to tomllib's result on generated documents.
_KEY_VALUE = re.compile(r'([A-Za-z0-9_-]+) = (.*)')
_BASIC_STRING = re.compile(r'"([^"\\\x00-\x1f\x7f]*)"')
_DECIMAL = re.compile(r'0|[1-9][0-9]{0,17}')
_DATETIME = re.compile(r'[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:Z|[+-][0-9]{2}:[0-9]{2})')
_STRING_ARRAY = re.compile(r'\[(?:"[^"\\\x00-\x1f\x7f]*"(?:, "[^"\\\x00-\x1f\x7f]*")*)?\]')
_ARRAY_ITEM = re.compile(r'"([^"\\\x00-\x1f\x7f]*)"')


def canonical_toml(raw: bytes, stamps: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The document of an entry in canonical form (above), or None for any other text. With
    `stamps`, date-times come back as the RFC 3339 strings the schema sees, their values kept
    in `stamps` by key path (as `_jsonable` does)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text or text.startswith("\ufeff"):
        return None
    doc: dict[str, Any] = {}
    table = doc
    versions: list[dict[str, Any]] | None = None
    for line in text.split("\n"):
        if not line:
            continue
        if line == "[[versions]]":
            if versions is None:
                if "versions" in doc:
                    return None
                versions = doc["versions"] = []
            table = {}
            versions.append(table)
            continue
        match = _KEY_VALUE.fullmatch(line)
        if match is None:
            return None
        key, text_value = match.groups()
        if key in table or (table is doc and key == "versions"):
            return None
        value = _canonical_value(text_value)
        if value is None:
            return None
        if stamps is not None and type(value) is datetime:
            path = (key,) if table is doc else ("versions", len(versions or ()) - 1, key)
            stamps[join_key("", *path)] = value
            value = value.isoformat()
        table[key] = value
    return doc


def _canonical_value(text: str) -> Any:
    first = text[:1]
    if first == '"':
        match = _BASIC_STRING.fullmatch(text)
        return None if match is None else match.group(1)
    if first == "[":
        if _STRING_ARRAY.fullmatch(text) is None:
            return None
        return _ARRAY_ITEM.findall(text)
    if text == "true":
        return True
    if text == "false":
        return False
    if _DECIMAL.fullmatch(text):
        return int(text)
    if _DATETIME.fullmatch(text):
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            return None
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (built in C; the duplicate named only on failure)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {json.dumps(key, ensure_ascii=True)[:80]}")
            seen.add(key)
    return obj


def decode_json(raw: bytes, file: str, *, cap: int = INDEX_MAX_BYTES, unique_keys: bool = False) -> Any:
    """JSON bytes (at most `cap`) to a value; NaN/Infinity refused, and with `unique_keys` an
    object naming a key twice (`index.json` and format 2's summary files: docs/registry-format.md)."""
    text = _text(raw, file, cap)
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys if unique_keys else None)
    except json.JSONDecodeError as exc:
        raise _fail(file, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise _fail(file, "nested too deeply") from None
    except ValueError as exc:
        raise _fail(file, f"not valid JSON: {exc}") from None


def _jsonable(value: Any, path: tuple[Any, ...], stamps: dict[str, Any]) -> Any:
    """TOML values as the JSON Schema sees them: date-times become RFC 3339 strings (their
    original objects are kept in `stamps`, by key path, for the code rules)."""
    if isinstance(value, dict):
        return {k: _jsonable(v, (*path, k), stamps) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v, (*path, i), stamps) for i, v in enumerate(value)]
    if isinstance(value, (datetime, date, time)):
        stamps[join_key("", *path)] = value
        return value.isoformat()
    return value


def _schema_checked(data: Any, schema: str, file: str) -> tuple[Any, dict[str, Any], ProblemSink]:
    from pkgmgr.schemas import schema_problems

    stamps: dict[str, Any] = {}
    try:
        doc = _jsonable(data, (), stamps)
    except RecursionError:
        raise _fail(file, "nested too deeply") from None
    sink = ProblemSink(file, INVALID)
    sink.extend(schema_problems(doc, schema, file=file, code=INVALID))
    return doc, stamps, sink


def _timestamp(sink: ProblemSink, stamps: dict[str, Any], key: str, present: bool) -> datetime | None:
    """An offset date-time written as a TOML date-time (not a string, not a local time)."""
    if not present:
        return None
    value = stamps.get(key)
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    sink.add(key, "must be a TOML offset date-time such as 2027-01-01T00:00:00Z")
    return None


# --- registry.toml ------------------------------------------------------------------------------


def parse_registry(raw: bytes, file: str = REGISTRY_FILE) -> RegistryMeta:
    """`registry.toml` bytes to `RegistryMeta`. Raises `ValidationFailed(invalid_index)`."""
    doc, stamps, sink = _schema_checked(decode_toml(raw, file, cap=REGISTRY_MAX_BYTES), "registry", file)
    sink.raise_if_any()
    table = doc["registry"]
    expires = _timestamp(sink, stamps, "registry.expires", "expires" in table)
    sink.raise_if_any()
    return RegistryMeta(
        name=table["name"],
        description=table.get("description", ""),
        format=table["format"],
        serial=table["serial"],
        expires=expires,
    )


# --- entries ------------------------------------------------------------------------------------


def url_problem(url: str) -> str | None:
    """Why a version `url` is unacceptable (SPEC 5.1), or None. Whether plain http is allowed
    depends on the registry and is decided when the url is used."""
    if _CONTROL_RE.search(url) or "\\" in url:
        return "must not contain whitespace, control characters or backslashes"
    if "#" in url:
        return "must not have a fragment"
    try:
        urlsplit(url).hostname  # noqa: B018 - validates the host
    except ValueError as exc:
        return f"is not a valid URL: {exc}"
    from pkgmgr.registry.stores import NO_STORE, store_for

    store = store_for(url)  # the store of its scheme decides (registry/stores.py)
    return store.url_problem(url) if store is not None else NO_STORE


def parse_entry(raw: bytes, file: str, *, expected_name: str | None = None) -> Entry:
    """An entry file's bytes to `Entry`. `expected_name` (the name the file was looked up by)
    must equal the entry's `name`. Raises `ValidationFailed(invalid_index)` with every problem."""
    stamps: dict[str, Any] = {}
    fast = canonical_toml(raw, stamps) if len(raw) <= ENTRY_MAX_BYTES else None
    if fast is not None:  # already as the schema sees it (a million entries are read by `registry build`)
        from pkgmgr.schemas import schema_problems

        doc, sink = fast, ProblemSink(file, INVALID)
        sink.extend(schema_problems(doc, "registry_entry", file=file, code=INVALID))
    else:
        doc, stamps, sink = _schema_checked(decode_toml(raw, file, cap=ENTRY_MAX_BYTES), "registry_entry", file)
    if not isinstance(doc, dict):  # pragma: no cover - TOML documents are tables
        raise _fail(file, "must be a table")
    name = doc.get("name")
    if expected_name is not None and isinstance(name, str) and name != expected_name:
        sink.add("name", f"is {name!r} but the file is the entry of {expected_name!r}")
    versions: list[VersionEntry] = []
    raw_versions = doc.get("versions")
    seen: dict[Any, str] = {}
    previous = None
    host = doc.get("host", DEFAULT)
    for index, item in enumerate(raw_versions if isinstance(raw_versions, list) else []):
        version = _version_entry(item, f"versions[{index}]", sink, stamps, compozy=host == DEFAULT)
        if version is not None:
            versions.append(version)
        text = item.get("version") if isinstance(item, dict) else None
        if not isinstance(text, str):
            continue
        try:  # order and uniqueness are checked even when another field of the version is broken
            parsed = parse_semver(text)
        except ValueError:
            continue
        key = f"versions[{index}].version"
        if parsed in seen:
            sink.add(key, f"{text} is listed twice (same version as {seen[parsed]})")
        elif previous is not None and parsed < previous:
            sink.add(key, f"{text} is out of order: versions must be sorted ascending")
        seen.setdefault(parsed, text)
        previous = parsed if previous is None else max(previous, parsed)
    sink.raise_if_any()
    return Entry(
        name=doc["name"],
        description=doc.get("description", ""),
        repository=doc.get("repository"),
        tier=doc["tier"],
        versions=tuple(versions),
        host=doc.get("host", "compozy"),
    )


NO_HOST_MINIMUM = "0.0.0"  # `min_compozy_version` as read for another host's entry that has none


def _version_entry(item: Any, key: str, sink: ProblemSink, stamps: dict[str, Any], *,
                   compozy: bool = True) -> VersionEntry | None:
    """One version table. `min_compozy_version` is Compozy's field: required in a Compozy
    entry, optional in another host's (read as 0.0.0: no minimum)."""
    if not isinstance(item, dict):
        return None
    before = len(sink.problems)
    if compozy and "min_compozy_version" not in item:
        sink.add(key, "min_compozy_version is required in a Compozy extension's versions (the manifest's "
                      "minimum Compozy version)")
    for field_name in ("version", "min_compozy_version"):
        value = item.get(field_name)
        if isinstance(value, str):
            try:
                parse_semver(value)
            except ValueError as exc:
                sink.add(f"{key}.{field_name}", str(exc))
            else:
                if value[:1] in ("v", "V"):
                    sink.add(f"{key}.{field_name}", f"{value!r}: write the version without a leading 'v'")
    url = item.get("url")
    if isinstance(url, str):
        problem = url_problem(url)
        if problem:
            sink.add(f"{key}.url", problem)
    published = _timestamp(sink, stamps, f"{key}.published", "published" in item)
    required = ("version", "url", "sha256", "size")
    if len(sink.problems) > before or any(k not in item for k in required):
        return None
    if any(p.key.startswith(key + ".") or p.key == key for p in sink.problems):
        return None  # the schema already found this version broken
    return VersionEntry(
        version=item["version"],
        url=item["url"],
        sha256=item["sha256"],
        size=item["size"],
        min_compozy_version=item.get("min_compozy_version", NO_HOST_MINIMUM),
        network_digest=item.get("network_digest", ""),
        permissions=tuple(item.get("permissions", ())),
        published=published,
        yanked=bool(item.get("yanked", False)),
    )


# --- validated parses kept beside cached bodies (registry/readers.py) ----------------------------
#
# A JSON form of `RegistryMeta` and `Entry`, read back strictly: anything but the exact shape
# `*_to_json` writes raises ValueError and the caller parses the body instead. The schema
# version goes into the cache key, so a change of these forms (or of the rules behind
# `parse_registry`/`parse_entry`: bump it then) never reads an older one.

PARSED_FORMAT = f"1/{__version__}"
_VERSION_KEYS = frozenset({"version", "url", "sha256", "size", "min_compozy_version", "network_digest",
                           "permissions", "published", "yanked"})
_ENTRY_KEYS = frozenset({"name", "description", "repository", "tier", "host", "versions"})
_META_KEYS = frozenset({"name", "description", "format", "serial", "expires"})


def _want(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:  # exact: a bool is no int here
        raise ValueError(f"{what}: expected {kind.__name__}")
    return value


def _keys(doc: Any, keys: frozenset[str], what: str) -> dict[str, Any]:
    if type(doc) is not dict or doc.keys() != keys:
        raise ValueError(f"{what}: not the expected table")
    return doc


def _stamp_from_json(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    stamp = datetime.fromisoformat(_want(value, str, what))
    if stamp.tzinfo is None:
        raise ValueError(f"{what}: no offset")
    return stamp


def meta_to_json(meta: RegistryMeta) -> dict[str, Any]:
    return {"name": meta.name, "description": meta.description, "format": meta.format, "serial": meta.serial,
            "expires": None if meta.expires is None else meta.expires.isoformat()}


def meta_from_json(doc: Any) -> RegistryMeta:
    table = _keys(doc, _META_KEYS, "registry")
    return RegistryMeta(name=_want(table["name"], str, "name"), description=_want(table["description"], str, "description"),
                        format=_want(table["format"], int, "format"), serial=_want(table["serial"], int, "serial"),
                        expires=_stamp_from_json(table["expires"], "expires"))


def entry_to_json(entry: Entry) -> dict[str, Any]:
    return {"name": entry.name, "description": entry.description, "repository": entry.repository,
            "tier": entry.tier, "host": entry.host,
            "versions": [{"version": v.version, "url": v.url, "sha256": v.sha256, "size": v.size,
                          "min_compozy_version": v.min_compozy_version, "network_digest": v.network_digest,
                          "permissions": list(v.permissions),
                          "published": None if v.published is None else v.published.isoformat(),
                          "yanked": v.yanked} for v in entry.versions]}


def entry_from_json(doc: Any, *, expected_name: str | None = None) -> Entry:
    table = _keys(doc, _ENTRY_KEYS, "entry")
    name = _want(table["name"], str, "name")
    if expected_name is not None and name != expected_name:
        raise ValueError(f"the parse of {name!r}, not of {expected_name!r}")
    repository = table["repository"]
    if repository is not None:
        _want(repository, str, "repository")
    if table["tier"] not in TIERS:
        raise ValueError("tier")
    versions = []
    for item in _want(table["versions"], list, "versions"):
        v = _keys(item, _VERSION_KEYS, "version")
        permissions = tuple(_want(p, str, "permissions") for p in _want(v["permissions"], list, "permissions"))
        versions.append(VersionEntry(
            version=_want(v["version"], str, "version"), url=_want(v["url"], str, "url"),
            sha256=_want(v["sha256"], str, "sha256"), size=_want(v["size"], int, "size"),
            min_compozy_version=_want(v["min_compozy_version"], str, "min_compozy_version"),
            network_digest=_want(v["network_digest"], str, "network_digest"), permissions=permissions,
            published=_stamp_from_json(v["published"], "published"), yanked=_want(v["yanked"], bool, "yanked")))
    return Entry(name=name, description=_want(table["description"], str, "description"), repository=repository,
                 tier=table["tier"], versions=tuple(versions), host=_want(table["host"], str, "host"))


# --- index.json ---------------------------------------------------------------------------------


def parse_index(raw: bytes, file: str = INDEX_FILE) -> Index:
    """`index.json` bytes to `Index`. Raises `ValidationFailed(invalid_index)`, for a key given
    twice too (as format 2's summary files: which one a reader takes is not the registry's say)."""
    doc = decode_json(raw, file, cap=INDEX_MAX_BYTES, unique_keys=True)
    index = _index_fast(doc)
    if index is not None:
        return index
    return _index_slow(doc, file)


def parse_records(items: Any, file: str) -> tuple[IndexExtension, ...]:
    """Summary records — objects of index.json's `extensions` — sorted by name, as a format-2
    summary shard or change holds them. Raises `ValidationFailed(invalid_index)`, keys named as
    in index.json (`extensions[3].name`)."""
    doc = {"format": 1, "serial": 0, "extensions": items}
    index = _index_fast(doc)
    return (index if index is not None else _index_slow(doc, file)).extensions


def valid_records(items: Any) -> tuple[IndexExtension, ...] | None:
    """`parse_records` without the messages, in one fast pass: the records when every one is a
    valid summary record and their names ascend (none twice), else None."""
    index = _index_fast({"format": 1, "serial": 0, "extensions": items})
    return None if index is None else index.extensions


def _index_slow(doc: Any, file: str) -> Index:
    from pkgmgr.schemas import schema_problems

    sink = ProblemSink(file, INVALID)
    if not _index_shape_ok(doc):  # the schema (slow on 10,000 entries) explains what is wrong
        sink.extend(schema_problems(doc, "index", file=file, code=INVALID))
        sink.raise_if_any()
    extensions = []
    previous = ""
    for index, item in enumerate(doc["extensions"]):
        if not is_extension_name(item["name"]):  # the schema's pattern lets a final newline through
            sink.add(f"extensions[{index}].name", f"{item['name']!r} is not an extension name")
        if item["name"] <= previous:
            sink.add(f"extensions[{index}].name", f"{item['name']!r} is out of order or listed twice")
        previous = max(previous, item["name"])
        versions = []
        for vindex, version in enumerate(item["versions"]):
            if not SEMVER.fullmatch(version["version"]):  # the regex only: 10,000 Version objects cost
                sink.add(f"extensions[{index}].versions[{vindex}].version",
                         f"{version['version']!r} is not a semantic version (X.Y.Z)")
                continue
            versions.append(IndexVersion(version["version"], version["yanked"], version["min_compozy_version"]))
        extensions.append(IndexExtension(item["name"], item["description"], item["tier"], item["latest"],
                                         tuple(versions), item.get("host", "compozy")))
    sink.raise_if_any()
    return Index(doc["format"], doc["serial"], tuple(extensions))


_INDEX_KEYS = frozenset({"format", "serial", "extensions"})
_INDEX_EXTENSION_KEYS = frozenset({"name", "description", "tier", "latest", "versions"})
_INDEX_HOSTS = frozenset(other_hosts())  # `host` is written only when not compozy (SPEC 5.1)
_INDEX_VERSION_KEYS = frozenset({"version", "yanked", "min_compozy_version"})
_MAX_SERIAL = 9223372036854775807


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _short_str(value: Any, limit: int = 128) -> bool:
    return isinstance(value, str) and len(value) <= limit


def _index_fast(doc: Any) -> Index | None:
    """The `Index` of a document with no problem at all, in one pass (10,000 entries are read
    for every search); None at the first doubt: `parse_index` then finds and names the
    problems the slow way. Accepts only what `_index_shape_ok` and the checks after it accept."""
    if type(doc) is not dict or doc.keys() != _INDEX_KEYS:
        return None
    serial, items = doc["serial"], doc["extensions"]
    if type(doc["format"]) is not int or doc["format"] != 1 or type(serial) is not int:
        return None
    if not 0 <= serial <= _MAX_SERIAL or type(items) is not list:
        return None
    name_ok, semver_ok = _NAME_RE.fullmatch, SEMVER.fullmatch
    ext_size, version_size = len(_INDEX_EXTENSION_KEYS), len(_INDEX_VERSION_KEYS)
    extensions = []
    previous = ""
    try:  # a missing key is a KeyError: with the sizes equal, the keys are exactly the schema's
        for item in items:
            if type(item) is not dict:
                return None
            host = "compozy"
            if len(item) != ext_size:
                named = item.get("host")
                if len(item) != ext_size + 1 or type(named) is not str or named not in _INDEX_HOSTS:
                    return None
                host = named
            name, description, tier, latest, versions = (item["name"], item["description"], item["tier"],
                                                          item["latest"], item["versions"])
            if type(name) is not str or not name_ok(name) or name <= previous:
                return None
            if type(description) is not str or len(description) > 4096 or type(tier) is not str or tier not in TIERS:
                return None
            if not (latest is None or (type(latest) is str and len(latest) <= 128)) or type(versions) is not list:
                return None
            parsed = []
            for version in versions:
                if type(version) is not dict or len(version) != version_size:
                    return None
                text, yanked, minimum = version["version"], version["yanked"], version["min_compozy_version"]
                if type(text) is not str or len(text) > 128 or not semver_ok(text) or type(yanked) is not bool:
                    return None
                if type(minimum) is not str or len(minimum) > 128:
                    return None
                parsed.append(IndexVersion(text, yanked, minimum))
            extensions.append(IndexExtension(name, description, tier, latest, tuple(parsed), host))
            previous = name
    except KeyError:
        return None
    return Index(1, serial, tuple(extensions))


def _index_shape_ok(doc: Any) -> bool:
    """A fast check equivalent to (or stricter than) schemas/index.schema.json; when it says
    no, the schema is run to name the problems."""
    if not isinstance(doc, dict) or doc.keys() != _INDEX_KEYS:
        return False
    if doc["format"] != 1 or not _is_int(doc["format"]) or not _is_int(doc["serial"]):
        return False
    if not 0 <= doc["serial"] <= _MAX_SERIAL or not isinstance(doc["extensions"], list):
        return False
    for item in doc["extensions"]:
        if not isinstance(item, dict) or item.keys() - {"host"} != _INDEX_EXTENSION_KEYS:
            return False
        if "host" in item and not (isinstance(item["host"], str) and item["host"] in _INDEX_HOSTS):
            return False
        if not is_extension_name(item["name"]) or not _short_str(item["description"], 4096):
            return False
        if item["tier"] not in TIERS or not isinstance(item["tier"], str):
            return False
        if not (item["latest"] is None or _short_str(item["latest"])) or not isinstance(item["versions"], list):
            return False
        for version in item["versions"]:
            if not isinstance(version, dict) or version.keys() != _INDEX_VERSION_KEYS:
                return False
            if not _short_str(version["version"]) or not _short_str(version["min_compozy_version"]):
                return False
            if not isinstance(version["yanked"], bool):
                return False
    return True


# --- writer: index.json -------------------------------------------------------------------------


def summary_record(entry: Entry) -> dict[str, Any]:
    """An extension's summary: its object in index.json (format 1) or in a summary shard (2)."""
    versions = sorted(entry.versions, key=lambda v: v.parsed)
    return {
        "name": entry.name,
        "description": entry.description,
        "tier": entry.tier,
        **({"host": entry.host} if entry.host != "compozy" else {}),
        "latest": latest_version([(v.version, v.yanked) for v in versions]),
        "versions": [{"version": v.version, "yanked": v.yanked, "min_compozy_version": v.min_compozy_version}
                     for v in versions],
    }


def index_document(meta: RegistryMeta, entries: Iterable[Entry]) -> dict[str, Any]:
    """The `index.json` document of a registry: extensions sorted by name, versions ascending."""
    extensions = [summary_record(entry) for entry in sorted(entries, key=lambda e: e.name)]
    return {"format": 1, "serial": meta.serial, "extensions": extensions}


def render_index(document: dict[str, Any]) -> bytes:
    """Deterministic bytes: same document, same bytes (key order as built, 2-space indent)."""
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def read_entries(root: Path) -> list[Entry]:
    """Every entry file of a registry directory, strictly parsed, each in its right shard.
    Raises `ValidationFailed(invalid_index)` with the problems of every file."""
    problems: list[Problem] = []
    entries: list[Entry] = []
    base = root / "extensions"
    files = sorted(base.rglob("*.toml")) if base.is_dir() else []
    for path in files:  # format 1 (format 2 is read a shard at a time: registry/summary.py)
        rel = path.relative_to(root).as_posix()
        name = path.stem
        if rel != entry_path(name):
            problems.append(Problem(INVALID, rel, "", f"an entry named {name!r} belongs at {entry_path(name)}"))
            continue
        try:
            entries.append(parse_entry(read_capped(path, ENTRY_MAX_BYTES, rel, root=root), rel, expected_name=name))
        except ValidationFailed as exc:
            problems.extend(exc.problems)
    if problems:
        raise ValidationFailed(problems)
    return entries


def read_capped(path: Path | str, cap: int, file: str, *, root: Path | None = None) -> bytes:
    """A registry file from disk, refusing more than `cap` bytes (never reads more than cap + 1).
    The file must be a regular file, opened without following a final symbolic link and without
    blocking (a FIFO, device or socket is refused unread: `invalid_index`). With `root` (the
    registry directory), a file that resolves outside it — through a symbolic link of a directory
    above it — is refused unread too."""
    from pkgmgr.fsutil import NotRegularFile, read_regular

    if root is not None and not _inside(Path(path), root):
        raise _fail(file, "resolves outside the registry directory (a symbolic link); registry files must "
                          "stay inside it")
    try:
        data = read_regular(path, limit=cap)
    except NotRegularFile as exc:
        raise _fail(file, f"is {exc.kind}, not a regular file; registry files must be regular files") from None
    except OSError as exc:
        raise _fail(file, f"cannot be read: {exc.strerror}") from None
    if len(data) > cap:
        raise _fail(file, f"is larger than {cap // MIB} MiB")
    return data


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def build_index(root: Path) -> bytes:
    """`index.json` of the registry directory `root`, deterministically (SPEC 5.5 `registry
    build`). Raises `ValidationFailed(invalid_index)` when any file is invalid."""
    root = Path(root)
    meta = parse_registry(read_capped(root / REGISTRY_FILE, REGISTRY_MAX_BYTES, REGISTRY_FILE, root=root))
    return render_index(index_document(meta, read_entries(root)))
