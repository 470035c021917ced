"""Helpers of the CLI and end-to-end tests: run `pkgmgr` in JSON mode and assert the contract."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Mapping

from tests.support.cli import Result, run_cli

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
FIXTURE_NAMES = ("review-pack", "prompt-enhancer", "marketing-linear", "release-crew")
UNVERIFIED = ("--allow-unverified", "--yes")
ERROR_KEYS = {"code", "message", "exit_code", "details"}


def one_document(result: Result) -> dict[str, Any]:
    """stdout holds exactly one JSON document (json.loads refuses anything after it)."""
    assert result.stdout.strip(), result
    document = json.loads(result.stdout)
    assert isinstance(document, dict), result
    return document


def ok(*args: Any, env: Mapping[str, str | None] | None = None, cwd: Path | None = None) -> dict[str, Any]:
    """Run in JSON mode; exit 0 and one JSON document without an `error`."""
    result = run_cli([*args, "-o", "json"], env=env, cwd=cwd)
    assert result.code == 0, result
    document = one_document(result)
    assert "error" not in document, result
    return document


def fail(code: str, *args: Any, env: Mapping[str, str | None] | None = None,
         cwd: Path | None = None) -> dict[str, Any]:
    """Run in JSON mode; the error object has exactly the SPEC 11 keys and its exit status."""
    result = run_cli([*args, "-o", "json"], env=env, cwd=cwd)
    document = one_document(result)
    assert "error" in document, result
    error = document["error"]
    assert set(error) == ERROR_KEYS, error
    assert error["code"] == code, result
    assert result.code == error["exit_code"] != 0, result
    assert f"error[{code}]" in result.stderr, result  # the message goes to stderr in every mode
    return document


def human(*args: Any, code: int = 0, env: Mapping[str, str | None] | None = None,
          cwd: Path | None = None) -> Result:
    result = run_cli(list(args), env=env, cwd=cwd)
    assert result.code == code, result
    return result


def install(*refs: Any, extra: tuple[str, ...] = (), env: Mapping[str, str | None] | None = None,
            cwd: Path | None = None) -> dict[str, Any]:
    """`ext install REF... --allow-unverified --yes` that must succeed."""
    return ok("ext", "install", *refs, *UNVERIFIED, *extra, env=env, cwd=cwd)


def copy_fixture(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(FIXTURES / name, target, symlinks=True)
    return target


def tree(path: Path) -> list[str]:
    """Every path under `path` (relative, sorted), for asserting that nothing changed. SQLite's
    WAL side files come and go with open connections and are left out."""
    if not path.exists():
        return []
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*")
                  if not p.name.endswith(("-wal", "-shm")))
