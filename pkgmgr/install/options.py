"""The options of one install batch (`ext install`, `ext update`, `sync`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstallOptions:
    force: bool = False
    allow_grants: bool = False
    allow_unverified: bool = False
    pin: bool = False
    pre: bool = False
    yes: bool = False
    dry_run: bool = False
    deactivate_missing: bool = False
    confirm_always: bool = False  # config policy.confirm = "always"
    allow_expired: bool = False
