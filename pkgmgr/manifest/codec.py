"""Reading a manifest from an extension root: which file, bytes to document, document to
`Manifest`. Only reads; every failure is a `PkgmgrError`, never a traceback."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from pkgmgr.errors import PkgmgrError, Problem, ValidationFailed, io_error
from pkgmgr.manifest.generations import AUTO
from pkgmgr.manifest.parsed import Manifest
from pkgmgr.manifest.paths import relative_path_problem
from pkgmgr.manifest.validate import INVALID, parse_manifest

TOML_FILE = "extension.toml"
JSON_FILE = "extension.json"
MANIFEST_FILES = (TOML_FILE, JSON_FILE)
MAX_MANIFEST_BYTES = 1024 * 1024
JSON_IGNORED = f"{JSON_FILE} ignored: {TOML_FILE} takes precedence"


def find_manifest(root: Path) -> tuple[Path, tuple[str, ...]] | None:
    """The manifest file of `root` (extension.toml before extension.json) and the warnings
    about a file that was ignored; None when there is neither."""
    present = [root / name for name in MANIFEST_FILES if os.path.lexists(root / name)]
    if not present:
        return None
    return present[0], (JSON_IGNORED,) if len(present) == 2 else ()


def read_manifest(root: Path, *, generation: str = AUTO) -> Manifest:
    """Read, decode and validate the manifest of the extension at `root`, judged by the
    Compozy `generation` (SPEC 2.1): a command passes its configuration's
    (`Config.compozy_generation`, see `pkgmgr.bundles.extension`); `auto` is every generation.

    Raises `PkgmgrError(invalid_manifest)` when there is no manifest, and `ValidationFailed`
    (`invalid_manifest`, `path_escapes_root`) listing every problem of the file.
    """
    root = Path(root)
    found = find_manifest(root)
    if found is None:
        raise PkgmgrError(f"no {TOML_FILE} or {JSON_FILE} in {root}", code=INVALID, path=str(root),
                          hint="an extension's root holds extension.toml (or extension.json)")
    path, warnings = found
    data = decode_manifest(_read(root, path), file=path.name)
    manifest = parse_manifest(data, file=path.name, root=root, generation=generation)
    return replace(manifest, warnings=warnings + manifest.warnings) if warnings else manifest


def load_manifest_bytes(raw: bytes, *, file: str = TOML_FILE, root: Path | None = None,
                        generation: str = AUTO) -> Manifest:
    """Decode and validate manifest bytes (e.g. read from an archive member)."""
    return parse_manifest(decode_manifest(raw, file=file), file=file, root=root, generation=generation)


def _read(root: Path, path: Path) -> bytes:
    file = path.name
    problem = relative_path_problem(root, file)
    if problem is not None:
        raise ValidationFailed([Problem(problem[0], file, "", problem[1])])
    try:
        if not path.is_file():
            raise ValidationFailed([Problem(INVALID, file, "", "is not a regular file")])
        from pkgmgr.fsutil import read_regular

        # swapped for a FIFO since is_file(): refused, never waited on
        return read_regular(path, limit=MAX_MANIFEST_BYTES, follow_symlinks=True)
    except OSError as exc:
        if io_error(exc) is not None:
            # permission denied, the device failing: not the manifest's fault but io_error (SPEC 11), with
            # the path where it is caught (a writer names its scope, not a staging path)
            raise
        raise ValidationFailed([Problem(INVALID, file, "", f"cannot be read: {exc.strerror or exc}")]) from exc


def decode_manifest(raw: bytes, *, file: str) -> dict[str, Any]:
    """Bytes of `extension.toml` (TOML) or `extension.json` (JSON, by the name's suffix) to the
    document, as Compozy's Go decoders read it (`pkgmgr.manifest.godoc`), through the strict
    decoder every extension document shares (pkgmgr.documents).
    Raises `ValidationFailed(invalid_manifest)` with the parser's message."""
    from pkgmgr.documents import DocumentError
    from pkgmgr.manifest.godoc import int64_issues, load_go_document

    kind = "json" if file.endswith(".json") else "toml"
    try:
        data, _ = load_go_document(raw, kind=kind, max_bytes=MAX_MANIFEST_BYTES)
    except DocumentError as exc:
        raise ValidationFailed([Problem(INVALID, file, exc.key, exc.message, exc.line)]) from None
    if kind == "toml" and (wide := int64_issues(data)):
        raise ValidationFailed([Problem(INVALID, file, key, message) for key, message in wide])
    if not isinstance(data, dict):
        raise ValidationFailed([Problem(INVALID, file, "", "the manifest must be a JSON object")])
    return data
