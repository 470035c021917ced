"""Reading a manifest from an extension root: which file, bytes to document, document to
`Manifest`. Only reads; every failure is a `PkgmgrError`, never a traceback."""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from pkgmgr.errors import PkgmgrError, Problem, ValidationFailed
from pkgmgr.manifest.model import Manifest
from pkgmgr.manifest.paths import relative_path_problem
from pkgmgr.manifest.validate import INVALID, parse_manifest

TOML_FILE = "extension.toml"
JSON_FILE = "extension.json"
MANIFEST_FILES = (TOML_FILE, JSON_FILE)
MAX_MANIFEST_BYTES = 1024 * 1024
JSON_IGNORED = f"{JSON_FILE} ignored: {TOML_FILE} takes precedence"
_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def find_manifest(root: Path) -> tuple[Path, tuple[str, ...]] | None:
    """The manifest file of `root` (extension.toml before extension.json) and the warnings
    about a file that was ignored; None when there is neither."""
    present = [root / name for name in MANIFEST_FILES if os.path.lexists(root / name)]
    if not present:
        return None
    return present[0], (JSON_IGNORED,) if len(present) == 2 else ()


def read_manifest(root: Path) -> Manifest:
    """Read, decode and validate the manifest of the extension at `root`.

    Raises `PkgmgrError(invalid_manifest)` when there is no manifest, and `ValidationFailed`
    (`invalid_manifest`, `path_escapes_root`) listing every problem of the file.
    """
    root = Path(root)
    found = find_manifest(root)
    if found is None:
        raise PkgmgrError(f"no {TOML_FILE} or {JSON_FILE} in {root}", code=INVALID, details={"path": str(root)},
                          hint="an extension's root holds extension.toml (or extension.json)")
    path, warnings = found
    data = decode_manifest(_read(root, path), file=path.name)
    manifest = parse_manifest(data, file=path.name, root=root)
    return replace(manifest, warnings=warnings + manifest.warnings) if warnings else manifest


def load_manifest_bytes(raw: bytes, *, file: str = TOML_FILE, root: Path | None = None) -> Manifest:
    """Decode and validate manifest bytes (e.g. read from an archive member)."""
    return parse_manifest(decode_manifest(raw, file=file), file=file, root=root)


def _read(root: Path, path: Path) -> bytes:
    file = path.name
    problem = relative_path_problem(root, file)
    if problem is not None:
        raise ValidationFailed([Problem(problem[0], file, "", problem[1])])
    try:
        if not path.is_file():
            raise ValidationFailed([Problem(INVALID, file, "", "is not a regular file")])
        with open(path, "rb") as handle:
            return handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise ValidationFailed([Problem(INVALID, file, "", f"cannot be read: {exc.strerror or exc}")]) from exc


class _DuplicateKey(ValueError):
    pass


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"duplicate key {json.dumps(key, ensure_ascii=False)}")
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise _DuplicateKey(f"{name} is not a JSON number")


def decode_manifest(raw: bytes, *, file: str) -> dict[str, Any]:
    """Bytes of `extension.toml` (TOML) or `extension.json` (JSON, by the name's suffix) to the
    document. Raises `ValidationFailed(invalid_manifest)` with the parser's message."""
    def fail(message: str, line: int | None = None) -> ValidationFailed:
        return ValidationFailed([Problem(INVALID, file, "", message, line)])

    if len(raw) > MAX_MANIFEST_BYTES:
        raise fail(f"is larger than {MAX_MANIFEST_BYTES // (1024 * 1024)} MiB")
    is_json = file.endswith(".json")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not valid UTF-8: {exc.reason} at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        raise fail("starts with a byte order mark; save it as UTF-8 without BOM")
    try:
        if is_json:
            data = json.loads(text, object_pairs_hook=_object_without_duplicates, parse_constant=_no_constants)
        else:
            data = tomllib.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno) from None
    except _DuplicateKey as exc:
        raise fail(f"not valid JSON: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE.search(str(exc))
        raise fail(f"not valid TOML: {exc}", int(match.group(1)) if match else None) from None
    except RecursionError:
        raise fail("nested too deeply") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise fail(f"not valid {'JSON' if is_json else 'TOML'}: {exc}") from None
    if not isinstance(data, dict):
        raise fail("the manifest must be a JSON object")
    return data
