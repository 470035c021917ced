"""Name rules shared by bundles, profiles, agents, channels, jobs, triggers and layouts.

Names identify resources case-insensitively (SPEC 9.1 lower-cases them and strips them before
hashing), so a name must be non-empty, carry no surrounding whitespace (` x` and `x` would be
the same identity) and no control characters.
"""

from __future__ import annotations

import unicodedata
from typing import Collection


def name_problem(value: str, what: str) -> str | None:
    """Why `value` cannot name a `what`, or None."""
    if not value.strip():
        return f"{what} must not be empty"
    if value != value.strip():
        return f"{what} {value!r} has leading or trailing whitespace"
    if any(unicodedata.category(char) == "Cc" for char in value):
        return f"{what} {value!r} contains a control character (pkgmgr's rule)"
    return None


def agent_name_problem(value: str, reserved: Collection[str]) -> str | None:
    """SPEC 8 agent names: a valid name, no `/` or `\\`, not `.`/`..`, not reserved.

    `reserved` holds lower-cased names.
    """
    problem = name_problem(value, "agent name")
    if problem:
        return problem
    if "/" in value or "\\" in value:
        return f"agent name {value!r} must not contain '/' or '\\'"
    if value in (".", ".."):
        return f"agent name {value!r} is not allowed"
    if value.lower() in reserved:
        return f"agent name {value!r} is reserved by the host (config host.reserved_agent_names)"
    return None


class UniqueNames:
    """First-seen registry: `claim` returns where a name was first seen. Case-insensitive by
    default (bundles, profiles, agents, layout ids: Compozy's `bundleLookupKey`); jobs, triggers
    and channels are unique case-sensitively in Compozy (`validateJobs`, `validateTriggers`,
    `validateChannels`), hence `case_sensitive`."""

    def __init__(self, *, case_sensitive: bool = False) -> None:
        self._seen: dict[str, str] = {}
        self._case_sensitive = case_sensitive

    def claim(self, name: str, where: str) -> str | None:
        folded = name if self._case_sensitive else name.lower()
        first = self._seen.get(folded)
        if first is None:
            self._seen[folded] = where
        return first
