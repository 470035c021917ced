"""The protections of SPEC 5.4 that judge registry metadata (python-tuf's trusted-set idea).

Pure: parsed metadata and what the client remembers go in; a typed `PkgmgrError` comes out
for an attack or a broken registry. Nothing here reads the network or writes state.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Mapping

from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.registry.index_format import Entry, RegistryMeta, format_datetime
from pkgmgr.versions import parse_semver


def check_meta(meta: RegistryMeta, *, label: str, remembered_serial: int | None, allow_expired: bool,
               now: datetime | None = None) -> None:
    """registry_expired (unless allowed) and registry_rollback (`remembered_serial` None: never
    seen, or exempt)."""
    now = now or datetime.now(UTC)
    if meta.expired(now) and not allow_expired:
        raise PkgmgrError(
            f"registry {label} expired at {format_datetime(meta.expires)}; its metadata may be frozen by an attacker",
            code=Code.REGISTRY_EXPIRED,
            details={"registry": label, "expires": format_datetime(meta.expires)},
            hint="ask its maintainers to publish a fresh registry.toml, or pass --allow-expired",
        )
    if remembered_serial is not None and meta.serial < remembered_serial:
        raise PkgmgrError(
            f"registry {label} went back to serial {meta.serial}; serial {remembered_serial} was seen before "
            "(a rollback attack or a broken mirror)",
            code=Code.REGISTRY_ROLLBACK,
            details={"registry": label, "serial": meta.serial, "remembered_serial": remembered_serial},
            hint=_reset_hint(label),
        )


def check_serial(serial: int, *, label: str, file: str, remembered_serial: int | None) -> None:
    """registry_rollback for a file that carries its own serial (index.json)."""
    if remembered_serial is not None and serial < remembered_serial:
        raise PkgmgrError(
            f"registry {label}: {file} has serial {serial}; serial {remembered_serial} was seen before",
            code=Code.REGISTRY_ROLLBACK,
            details={"registry": label, "file": file, "serial": serial, "remembered_serial": remembered_serial},
            hint=_reset_hint(label),
        )


def _reset_hint(label: str) -> str:
    return f"if the registry was really reset, 'pkgmgr registry remove {label}' and add it again"


def check_entry(entry: Entry, *, label: str, known: Mapping[Any, tuple[str, str]]) -> tuple[str, ...]:
    """registry_checksum_changed for a known version whose sha256 changed; returns the
    versions that vanished (remembered, no longer listed) for the caller to treat as yanked.
    `known` maps each remembered parsed version to (version as written, sha256)."""
    listed = {v.parsed: v for v in entry.versions}
    changed = []
    for parsed, (_version, sha256) in known.items():
        current = listed.get(parsed)
        if current is not None and current.sha256 != sha256:
            changed.append({"version": current.version, "remembered": sha256, "now": current.sha256})
    if changed:
        versions = ", ".join(c["version"] for c in changed)
        raise PkgmgrError(
            f"registry {label}: the sha256 of {entry.name} {versions} changed since it was first seen; "
            "a published version's archive must never change",
            code=Code.REGISTRY_CHECKSUM_CHANGED,
            details={"registry": label, "name": entry.name, "changed": changed},
        )
    vanished = [version for parsed, (version, _) in sorted(known.items()) if parsed not in listed]
    return tuple(vanished)


def sticky_yanks(entry: Entry, yanked: Set[str]) -> tuple[Entry, tuple[str, ...]]:
    """`entry` with every version in `yanked` (remembered as seen yanked) yanked again, and the
    versions it served unyanked. An unsigned registry cannot prove an unyank is not a stale
    entry replayed (mix-and-match), so a yank is sticky for resolution; an exact
    `NAME@VERSION` still installs it, as any yanked version."""
    if not yanked:
        return entry, ()
    remembered = {parse_semver(version) for version in yanked}
    unyanked = tuple(v.version for v in entry.versions if not v.yanked and v.parsed in remembered)
    if not unyanked:
        return entry, ()
    versions = tuple(replace(v, yanked=True) if v.parsed in remembered else v for v in entry.versions)
    return replace(entry, versions=versions), unyanked


def known_versions(rows: list[tuple[str, str]]) -> dict[Any, tuple[str, str]]:
    """(version, sha256) rows keyed by parsed version; unparsable versions are skipped."""
    out: dict[Any, tuple[str, str]] = {}
    for version, sha256 in rows:
        try:
            out[parse_semver(version)] = (version, sha256)
        except ValueError:
            continue
    return out
