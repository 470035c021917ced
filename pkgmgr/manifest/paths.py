"""Path rules of a manifest: what must stay inside the extension root after symlinks resolve.

Each check returns `(code, message)` for a problem, or None, so a validator can collect every
problem of a file; nothing here raises on a hostile path (symlink loops, NUL bytes, huge names).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pkgmgr.errors import Code

ESCAPES = Code.PATH_ESCAPES_ROOT
INVALID = Code.INVALID_MANIFEST
CONFIG_DIR = "{{config_dir}}"


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _resolve(path: Path) -> Path:
    return path.resolve(strict=False)


def _inside(root: Path, candidate: Path) -> tuple[str, str] | None:
    """`candidate` (already resolved) must be `root` (resolved) or below it."""
    if candidate == root or candidate.is_relative_to(root):
        return None
    return ESCAPES, "resolves outside the extension root"


def relative_path_problem(root: Path, rel: str, *, must_exist: bool = True,
                          invalid_code: str = INVALID) -> tuple[str, str] | None:
    """A relative path of a manifest (or bundle) must resolve inside `root` after symlinks
    resolve (`path_escapes_root`) and, with `must_exist`, exist (`invalid_code`)."""
    if not rel:
        return invalid_code, "must not be empty"
    if os.path.isabs(rel) or rel.startswith(("/", "\\")):
        return ESCAPES, f"{_q(rel)} must be a relative path inside the extension root"
    try:
        base = _resolve(root)
        candidate = _resolve(root / rel)
        problem = _inside(base, candidate)
        if problem is not None:
            return problem[0], f"{_q(rel)} {problem[1]}"
        if must_exist and not candidate.exists():
            return invalid_code, f"{_q(rel)} does not exist"
    except (OSError, RuntimeError, ValueError) as exc:  # symlink loop, NUL byte, name too long
        return invalid_code, f"{_q(rel)} cannot be resolved: {_reason(exc)}"
    return None


def command_path_problem(root: Path, command: str) -> tuple[str, str] | None:
    """SPEC 2 commands: an absolute command is kept; one with a path separator or a leading `.`
    must resolve inside the root (`{{config_dir}}` standing for the root); a bare name is
    looked up on PATH at run time. A path built from `{{env:NAME}}` depends on the operator's
    environment and cannot be checked here."""
    if not command_is_path(command):
        return None
    if "{{env:" in command or (os.path.isabs(command) and CONFIG_DIR not in command):
        return None
    try:
        base = _resolve(root)
        expanded = command.replace(CONFIG_DIR, str(base))
        candidate = _resolve(Path(expanded) if os.path.isabs(expanded) else base / expanded)
    except (OSError, RuntimeError, ValueError) as exc:
        return INVALID, f"{_q(command)} cannot be resolved: {_reason(exc)}"
    problem = _inside(base, candidate)
    if problem is not None:
        return problem[0], f"command {_q(command)} {problem[1]}"
    return None


def command_is_path(command: str) -> bool:
    return "/" in command or "\\" in command or command.startswith(".")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
