"""Versions: semantic versions that are also PEP 440 versions (SPEC section 2).

The manifest speaks semver (`1.0.0-rc.1`); resolution compares with `packaging`, where
`1.0.0-rc.1` and `1.0.0-rc1` are the same version.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: `ext list`'s fast path imports this module
if TYPE_CHECKING:  # packaging is imported where a version is parsed: `ext search` and friends skip it
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


def strip_v(text: str) -> str:
    return text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text


class NotPep440(ValueError):
    """A semantic version that is no PEP 440 version: pkgmgr's own rule (SPEC 2.2), not semver's."""


def parse_semver(text: str) -> Version:
    """Parse a semantic version (a leading `v` stripped) that must also be a PEP 440 version.

    Raises ValueError with a message fit for a validation problem.
    """
    if not isinstance(text, str):  # checked before the cache, which cannot hash a list or a dict
        raise ValueError(f"{_quote(text)} is not a semantic version (X.Y.Z)")
    return _parse_semver(text)


@lru_cache(maxsize=4096)
def _parse_semver(text: str) -> Version:
    from packaging.version import InvalidVersion, Version

    candidate = strip_v(text.strip()) if text.strip() == text else text
    if not SEMVER.fullmatch(candidate):
        raise ValueError(f"{_quote(text)} is not a semantic version (X.Y.Z)")
    try:
        return Version(candidate)
    except InvalidVersion:
        raise NotPep440(
            f"{_quote(text)} is a semantic version but not a PEP 440 version "
            "(use prereleases such as -alpha.N, -beta.N or -rc.N)"
        ) from None


def _quote(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def normalize_semver(text: str) -> str:
    """The version as written, minus a leading `v` (after validating it)."""
    parse_semver(text)
    return strip_v(text)


def parse_specifier(text: str) -> SpecifierSet:
    """A PEP 440 specifier set; `""` and `"*"` mean any version. Raises ValueError."""
    if text is not None and not isinstance(text, str):
        raise ValueError(f"{_quote(text)} is not a version specifier (PEP 440, e.g. '>=0.2,<0.4')")
    return _parse_specifier(text or "")


def any_version(text: str | None) -> bool:
    """Whether specifier `text` admits every version (`None`, `""`, `"*"`), as `parse_specifier`
    reads it."""
    return text is None or (isinstance(text, str) and text.strip() in ("", "*"))


@lru_cache(maxsize=1024)
def _parse_specifier(text: str) -> SpecifierSet:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    text = text.strip()
    if any_version(text):
        return SpecifierSet("")
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ValueError(f"{_quote(text)} is not a version specifier (PEP 440, e.g. '>=0.2,<0.4')") from None


def bare_version(text: str) -> str | None:
    """`text` without its leading `v` when it is a bare PEP 440 version (`0.2`, `1.2.3`): a
    requirement that names exactly that version, `==0.2` (SPEC 10). None for anything else."""
    from packaging.version import InvalidVersion, Version

    candidate = strip_v(text.strip())
    if not candidate[:1].isdigit():
        return None
    try:
        Version(candidate)
    except InvalidVersion:
        return None
    return candidate


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality: `1.0.0-rc.1` equals `1.0.0-rc1`."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(strip_v(a)) == Version(strip_v(b))
    except InvalidVersion:
        return a == b


def version_key(text: str) -> Version:
    from packaging.version import Version

    return Version(strip_v(text))


# --- the one host-version check (SPEC 2: min_compozy_version) -------------------------------------


def parse_host_version(text: str | None) -> Version | None:
    """The configured host version, parsed; None when none is configured. Raises
    `PkgmgrError(invalid_config)` when it is not a semantic version."""
    from pkgmgr.errors import Code, PkgmgrError

    if text is None:
        return None
    try:
        return parse_semver(text)
    except ValueError as exc:
        raise PkgmgrError(f"host version: {exc}", code=Code.INVALID_CONFIG,
                          hint="set host.version in config.toml or PKGMGR_HOST_VERSION to X.Y.Z") from None


def host_satisfies(host: Version, minimum: str) -> bool:
    """Whether `host` is at least `minimum` in semver precedence, which ignores build metadata
    (`2.0.0` satisfies `2.0.0+build.7`). Raises ValueError for a `minimum` that is no semver."""
    return _precedence(host) >= _precedence(parse_semver(minimum))


def _precedence(version: Version) -> Version:
    """The version without its build metadata (a PEP 440 local part)."""
    from packaging.version import Version

    return Version(version.public) if version.local is not None else version
