"""Choosing a version of an entry (SPEC 5.3). Pure: an `Entry` and the request in, one
`VersionEntry` out, or `version_not_found` saying what exists and why each was skipped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection

from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.index_format import Entry, VersionEntry
from pkgmgr.versions import host_satisfies, parse_host_version, parse_semver, parse_specifier, version_key


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
        specifier = parse_specifier(request.spec)
        if not specifier.contains(parsed, prereleases=True):
            return f"does not match {request.spec}"
        if parsed.is_prerelease and not request.pre and not _names_prerelease(specifier):
            return "prerelease (name it or pass --pre)"
        if version.yanked:
            return "yanked (installable only when named exactly)"
    if vanished:
        return "vanished from the registry (treated as yanked)"
    host = host_version(request.host_version)
    if host is not None and not host_satisfies(host, version.min_compozy_version):
        return f"needs host {version.min_compozy_version} or newer (host is {request.host_version})"
    return None


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
    raise PkgmgrError(
        message,
        code="version_not_found",
        details={"name": entry.name, "requested": wanted, "registry": registry,
                 "versions": [s.to_json() for s in skipped]},
        hint=None if request.pre or request.exact else "name a version exactly, or pass --pre for prereleases",
    )
