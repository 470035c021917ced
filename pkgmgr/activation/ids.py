"""Stable identifiers (SPEC 9.1): prefix + "_" + the first 16 hex of sha256 over the parts.

Byte-compatible with Compozy's `stableID` (internal/bundles/ids.go): each part trimmed with
Go's `strings.TrimSpace`, joined with "\n"; activation ids hash the names as the bundle file
writes them, case kept (`ActivationResourceID`)."""

from __future__ import annotations

import hashlib
from typing import Iterable

from pkgmgr.manifest.network import go_trim_space

RESOURCE_PREFIXES = {
    "agent": "agt",
    "agent.soul": "sol",
    "agent.heartbeat": "hbt",
    "channel": "chn",
    "job": "job",
    "trigger": "trg",
    "window_layout": "lay",
}


def stable_id(prefix: str, parts: Iterable[str]) -> str:
    joined = "\n".join(go_trim_space(part) for part in parts)
    return f"{prefix}_{hashlib.sha256(joined.encode('utf-8')).hexdigest()[:16]}"


def activation_id(extension: str, bundle: str, profile: str, scope: str, workspace_path: str) -> str:
    return stable_id("act", [extension, bundle, profile, scope, workspace_path])


def resource_id(kind: str, activation: str, name: str) -> str:
    return stable_id(RESOURCE_PREFIXES[kind], [activation, name])
