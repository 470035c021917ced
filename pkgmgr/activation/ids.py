"""Stable identifiers (SPEC 9.1): prefix + "_" + the first 16 hex of sha256 over the parts."""

from __future__ import annotations

import hashlib
from typing import Iterable

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
    joined = "\n".join(part.strip() for part in parts)
    return f"{prefix}_{hashlib.sha256(joined.encode('utf-8')).hexdigest()[:16]}"


def activation_id(extension: str, bundle: str, profile: str, scope: str, workspace_path: str) -> str:
    return stable_id("act", [extension.lower(), bundle.lower(), profile.lower(), scope, workspace_path])


def resource_id(kind: str, activation: str, name: str) -> str:
    return stable_id(RESOURCE_PREFIXES[kind], [activation, name])
