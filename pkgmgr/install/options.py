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
    host: str | None = None  # --host: the host whose rules judge the tree (SPEC 13)
    approve_host_trust: bool = False  # --approve-host-trust: record the host's new approval of a project folder
    approve_host_trust_all: bool = False  # --approve-host-trust=all: ... naming every file its hash covers
    lock_timeout: float = 30.0  # how long a lock the host itself holds is waited for
    link: bool = False  # `ext link`: the host loads the source folder itself, through a link (`Host.make_link`)
