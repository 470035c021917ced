"""Registry resolution (SPEC 5.3), the one place every caller (ext install, ext update, sync,
ext info) chooses a registry entry and a version of it.

`resolve(registries, name, request, registry=)` finds the registry that answers for the name
(the first by priority, or the one `--registry` / `registry = "..."` names) and the highest
allowed version in it. `select_version` is its pure core: an `Entry` and the request in, one
`VersionEntry` out, or `version_not_found` saying what exists and why each was skipped (yanks,
prereleases, host compatibility, vanished versions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Collection

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.registry.index_format import Entry, VersionEntry
from pkgmgr.versions import any_version, host_satisfies, parse_host_version, parse_semver, parse_specifier, version_key

if TYPE_CHECKING:
    from collections.abc import Callable

    from pkgmgr.registry.client import Registries, Registry


@dataclass(frozen=True)
class Request:
    """What is asked of an entry: a specifier set ("" = any), an exact version, --pre, the host."""

    spec: str = ""
    exact: str | None = None
    pre: bool = False
    host_version: str | None = None


@dataclass(frozen=True)
class Skipped:
    version: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"version": self.version, "reason": self.reason}


def skip_reason(version: VersionEntry, request: Request, *, vanished: bool = False) -> str | None:
    """Why `version` is not a candidate for `request`, or None when it is one."""
    parsed = version.parsed
    if request.exact is not None:
        if parsed != version_key(request.exact):  # PEP 440 equality: 0.2 is 0.2.0
            return f"not the requested version {request.exact}"
    else:
        names_prerelease = False
        if not any_version(request.spec):  # a bare name needs no specifier (nor packaging.specifiers)
            specifier = parse_specifier(request.spec)
            if not specifier.contains(parsed, prereleases=True):
                return f"does not match {request.spec}"
            names_prerelease = _names_prerelease(specifier)
        if parsed.is_prerelease and not request.pre and not names_prerelease:
            return "prerelease (name it or pass --pre)"
        if version.yanked:
            return "yanked (installable only when named exactly)"
    if vanished:
        return "vanished from the registry (treated as yanked)"
    if not host_compatible(version, request.host_version):
        return f"needs host {version.min_compozy_version} or newer (host is {request.host_version})"
    return None


def host_compatible(version: VersionEntry, host: str | None) -> bool:
    """Whether `version` runs on the configured host version (always, when none is configured).
    Raises invalid_config for a host version that does not parse."""
    parsed = host_version(host)
    return parsed is None or host_satisfies(parsed, version.min_compozy_version)


def _names_prerelease(specifier: Any) -> bool:
    """Whether a specifier set names a prerelease (`>=1.0.0-rc.1`), which admits prereleases."""
    from packaging.version import InvalidVersion, Version

    for item in specifier:
        try:
            if Version(item.version.rstrip(".*")).is_prerelease:
                return True
        except InvalidVersion:
            continue
    return False


def host_version(text: str | None) -> Any:
    """The configured host version, parsed; None when none is configured. Raises invalid_config."""
    return parse_host_version(text)


def candidates(entry: Entry, request: Request, *,
               vanished: Collection[str] = ()) -> tuple[list[VersionEntry], list[Skipped]]:
    """The versions allowed by `request` (ascending) and why the others are not."""
    gone = {parse_semver(v) for v in vanished}
    allowed: list[VersionEntry] = []
    skipped: list[Skipped] = []
    for version in entry.versions:
        reason = skip_reason(version, request, vanished=version.parsed in gone)
        if reason is None:
            allowed.append(version)
        else:
            skipped.append(Skipped(version.version, reason))
    allowed.sort(key=lambda v: v.parsed)
    return allowed, skipped


def select_version(entry: Entry, request: Request, *, registry: str = "",
                   vanished: Collection[str] = ()) -> VersionEntry:
    """The highest allowed version. Raises `version_not_found` listing every version and why
    it was skipped (a vanished exact version is named as such)."""
    allowed, skipped = candidates(entry, request, vanished=vanished)
    if allowed:
        return allowed[-1]
    wanted = request.exact or request.spec or "any version"
    where = f" in registry {registry}" if registry else ""
    if request.exact is not None and request.exact in vanished and entry.find(request.exact) is None:
        skipped.append(Skipped(request.exact, "vanished from the registry (treated as yanked)"))
    if skipped:
        lines = [f"{s.version}: {s.reason}" for s in skipped]
        message = f"{entry.name}: no version matches {wanted}{where}:\n" + "\n".join(lines)
    else:
        message = f"{entry.name}: the registry{where and ' ' + registry} lists no versions"
    raise VersionNotFound(
        message,
        entry=entry,
        skipped=skipped,
        details={"name": entry.name, "requested": wanted, "registry": registry,
                 "versions": [s.to_json() for s in skipped]},
        hint=None if request.pre or request.exact else "name a version exactly, or pass --pre for prereleases",
    )


class VersionNotFound(PkgmgrError):
    """No version of `entry` is allowed; `skipped` says why of each, and `registry` is the
    registry that answered (set by `resolve`)."""

    code = Code.VERSION_NOT_FOUND

    def __init__(self, message: str, *, entry: Entry, skipped: list[Skipped], details: dict[str, Any],
                 hint: str | None) -> None:
        super().__init__(message, details=details, hint=hint)
        self.entry = entry
        self.skipped = tuple(skipped)
        self.registry: Registry | None = None


@dataclass(frozen=True)
class Resolved:
    """The registry that answers for a name, its entry, and the version chosen."""

    registry: Registry
    entry: Entry
    version: VersionEntry


def find_entry(registries: Registries, name: str, *, registry: str | None = None, key: str | None = None,
               listed_before: bool = False) -> tuple[Registry, Entry]:
    """The registry answering for `name` and its entry: the one named `registry` (a name it does
    not list is `not_found`, with `key` naming the setting that chose it), else the first by
    priority that lists it (`Registries.lookup`). `listed_before`: the name was installed from
    that registry, so the message says it no longer lists it."""
    if registry is None:
        return registries.lookup(name)
    chosen = registries.get(registry)
    entry = chosen.entry(name)
    if entry is None:
        verb = "no longer lists" if listed_before else "does not list"
        raise PkgmgrError(f"{name}: registry {chosen.name} {verb} it", code=Code.NOT_FOUND, key=key,
                          details={"name": name, "registry": chosen.name})
    return chosen, entry


def resolve(registries: Registries, name: str, request: Request, *, registry: str | None = None,
            key: str | None = None, listed_before: bool = False,
            record: Callable[[Registry], None] | None = None) -> Resolved:
    """The highest version of `name` that `request` allows, in the registry answering for it
    (`find_entry`). Once the entry is read, the registry's rollback memory records what was
    read (`Registry.remember`, or `record(registry)` for a batch that records once), whether
    or not a version is allowed. Raises not_found, version_not_found and the registry's read
    errors."""
    chosen, entry = find_entry(registries, name, registry=registry, key=key, listed_before=listed_before)
    try:
        version = select_version(entry, request, registry=chosen.name, vanished=chosen.vanished(entry.name))
    except VersionNotFound as error:
        error.registry = chosen
        raise
    finally:
        if record is None:
            chosen.remember()
        else:
            record(chosen)
    return Resolved(chosen, entry, version)
