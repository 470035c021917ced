"""Command templates and environment names (SPEC 2).

`{{config_dir}}` and `{{env:NAME}}` stay verbatim in a manifest; they are expanded only for
display, where an environment reference shows as `<NAME:set>`/`<NAME:unset>` and never as
its value.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Mapping

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_REFERENCE = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
# vault.vaultRefPattern; the namespace must be the one of the declaring section (ValidateRefNamespace)
VAULT_REFERENCE = re.compile(r"vault:(providers|bridges|automation|mcp|hooks|extensions|sandbox|sessions)/"
                             r"[a-z0-9][a-z0-9_.-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)*")
_ENV_TEMPLATE = re.compile(r"\{\{env:([A-Za-z_][A-Za-z0-9_]*)\}\}")
_OPEN = "{{env:"

_SECRET_MARKERS = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "PRIVATE_KEY",
                   "PRIVATEKEY", "AUTHORIZATION", "BEARER", "CREDENTIAL")
_NOT_SECRET_SUFFIXES = ("_URL", "_URI", "_PATH", "_FILE", "_DIR")


def is_env_name(text: str) -> bool:
    return ENV_NAME.fullmatch(text) is not None


def looks_secret(key: str) -> bool:
    """An env key that names a secret (`GITHUB_TOKEN`), unless it names where one lives
    (`TOKEN_FILE`, `AUTH_TOKEN_URL`)."""
    upper = key.upper()
    return any(marker in upper for marker in _SECRET_MARKERS) and not upper.endswith(_NOT_SECRET_SUFFIXES)


def template_problems(text: str) -> list[str]:
    """Problems of the `{{env:NAME}}` references in `text` (unterminated, not an env name)."""
    problems = []
    start = text.find(_OPEN)
    while start != -1:
        end = text.find("}}", start + len(_OPEN))
        if end == -1:
            problems.append(f"unterminated {_OPEN} template (close it with }}}})")
            break
        name = text[start + len(_OPEN):end]
        if not is_env_name(name):
            quoted = json.dumps(name, ensure_ascii=False)
            problems.append(f"{{{{env:{name}}}}}: {quoted} is not an environment variable name")
        start = text.find(_OPEN, end + 2)
    return problems


def resolve_template(text: str, config_dir: Path | str, environ: Mapping[str, str]) -> str:
    """`{{config_dir}}` expanded; each `{{env:NAME}}` shown as `<NAME:set>` or `<NAME:unset>`."""
    shown = _ENV_TEMPLATE.sub(lambda m: env_state(m.group(1), environ), text)
    return shown.replace("{{config_dir}}", str(config_dir))


def env_state(name: str, environ: Mapping[str, str]) -> str:
    """How a referenced variable is shown: whether it is set, never its value."""
    return f"<{name}:{'set' if name in environ else 'unset'}>"
