"""`registry init`: a new, empty registry index directory (SPEC 5.1, 5.5).

It writes `registry.toml` (format 2 unless asked for 1, serial 0), `extensions/` (with a
`.gitkeep`, so git keeps the empty directory), the summary (format 2: the empty shard list
`index/shards.json`; format 1: `index.json`), the GitHub Actions workflow
`.github/workflows/validate.yml` that validates every pull request, and a `.gitignore`
naming the publish lock file. It refuses a directory that already holds any of the index
files (a registry is never re-initialised over itself); other files (README, LICENSE,
`.git`) are fine.

The workflow installs pkgmgr from a pinned pip requirement, never by bare name from PyPI:
the name `pkgmgr` on PyPI belongs to another project, so `pip install pkgmgr` would put
someone else's code in the index's CI. The default pins the git tag of the running
version; `--pkgmgr-requirement` chooses another (a commit sha, a private index).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pkgmgr import __version__
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.patterns import REGISTRY_NAME
from pkgmgr.registry.index_format import INDEX_FILE, REGISTRY_FILE, RegistryMeta, index_document, render_index
from pkgmgr.registry.layout import FORMATS, SHARDS_FILE
from pkgmgr.registry.publish import LOCK_FILE, Write, apply_writes
from pkgmgr.registry.summary import render_shards
from pkgmgr.registry.switch import STAGING_DIR

PKGMGR_REPOSITORY = "https://github.com/pkgmgr-dev/pkgmgr"
WORKFLOW_FILE = ".github/workflows/validate.yml"
GITIGNORE = ".gitignore"
_NAME_RE = REGISTRY_NAME
_REQUIREMENT_RE = re.compile(r"^[^\s'\"`$\\]+(?: @ [^\s'\"`$\\]+)?$")

WORKFLOW = """\
# Validates every pull request to this registry index: the schema of every file,
# entry names and shards, sorted and unique versions, URLs, index.json in sync; published
# versions unchanged since the pull request's base; every new version downloaded and
# checked (sha256, size, manifest name/version/metadata, bundles); and, for an index signed
# with TUF (metadata/), every signature and every signed file.
name: validate

on:
  pull_request:

permissions:
  contents: read

jobs:
  validate:
    runs-on: ubuntu-latest
    steps:
      - name: Check out the index
        uses: actions/checkout@v4
        with:
          fetch-depth: 0  # the base revision must be readable by `git show`

      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: "3.12"

      - name: Install pkgmgr
        run: python -m pip install '{requirement}'

      - name: Validate the index
        run: {validate}
"""
# the CI's check: a format-2 index (built for size) checks only what a pull request changed, a
# format-1 index everything against the pull request's base
VALIDATE = {
    1: 'pkgmgr registry validate . --base "${{ github.event.pull_request.base.sha }}" --fetch',
    2: 'pkgmgr registry validate . --changed-since "${{ github.event.pull_request.base.sha }}" --fetch',
}


def default_requirement() -> str:
    """The pip requirement of the running pkgmgr: its git tag, pinned."""
    return f"pkgmgr @ git+{PKGMGR_REPOSITORY}@v{__version__}"


def default_name(root: Path) -> str:
    """A registry name from the directory's name (lower-cased, other characters as '-')."""
    text = re.sub(r"[^a-z0-9_-]+", "-", root.absolute().name.lower()).strip("-_")[:64]
    return text if _NAME_RE.fullmatch(text) else "registry"


def workflow_text(requirement: str, format: int = 1) -> str:
    """The CI workflow; a format-2 index (built for size) checks only what a pull request
    changed (`--changed-since`), a format-1 index everything (`--base`)."""
    return WORKFLOW.format(requirement=requirement, validate=VALIDATE[2 if format >= 2 else 1])


@dataclass(frozen=True)
class InitResult:
    path: Path
    name: str
    files: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "name": self.name, "serial": 0, "files": list(self.files)}


def init_index(root: Path, *, name: str | None = None, description: str = "",
               requirement: str | None = None, format: int = 2) -> InitResult:
    """Create a registry index of `format` in `root` (created when missing). Raises `usage` for
    a bad name or requirement, or when `root` already holds index files (nothing is written)."""
    root = Path(root)
    name = name if name is not None else default_name(root)
    if not _NAME_RE.fullmatch(name):
        raise PkgmgrError(f"--name {name!r}: a registry name is lower-case letters, digits, '-' and '_' "
                          "(starting with a letter, at most 64 characters)", code=Code.USAGE)
    requirement = requirement or default_requirement()
    if not _REQUIREMENT_RE.fullmatch(requirement):
        raise PkgmgrError(f"--pkgmgr-requirement {requirement!r} is not a single pip requirement "
                          "(e.g. 'pkgmgr @ git+https://github.com/OWNER/pkgmgr@v1.2.0')", code=Code.USAGE)
    if root.exists() and not root.is_dir():
        raise PkgmgrError(f"{root} exists and is not a directory", code=Code.USAGE)
    present = _existing_index_files(root)
    if present:
        raise PkgmgrError(
            f"{root} already holds a registry index ({', '.join(present)}); nothing was written",
            code=Code.USAGE, details={"existing": present}, path=str(root),
            hint="publish into it with 'pkgmgr registry publish ARCHIVE --index DIR', or choose an empty directory",
        )
    if format not in FORMATS:
        raise PkgmgrError(f"--format {format}: expected one of {', '.join(map(str, FORMATS))}", code=Code.USAGE)
    registry = _registry_toml(name, description, format)
    if format >= 2:  # an empty shard list: no shard, no change yet (docs/registry-format.md)
        summary = Write(root / SHARDS_FILE, render_shards(0, {}))
    else:
        summary = Write(root / INDEX_FILE, render_index(index_document(RegistryMeta(name, description, 1, 0), [])))
    writes = [
        Write(root / "extensions" / ".gitkeep", b""),
        Write(root / WORKFLOW_FILE, workflow_text(requirement, format).encode("utf-8")),
        summary,
        Write(root / REGISTRY_FILE, registry),
    ]
    gitignore = _gitignore(root)
    if gitignore is not None:
        writes.insert(0, Write(root / GITIGNORE, gitignore))
    root.mkdir(parents=True, exist_ok=True)
    apply_writes(writes)
    return InitResult(root, name, tuple(w.path.relative_to(root).as_posix() for w in writes))


def _existing_index_files(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    found = [rel for rel in (REGISTRY_FILE, INDEX_FILE, WORKFLOW_FILE, "archives", "index") if (root / rel).exists()]
    extensions = root / "extensions"
    if extensions.is_dir() and any(p.name != ".gitkeep" for p in extensions.iterdir()):
        found.append("extensions/")
    elif extensions.exists() and not extensions.is_dir():
        found.append("extensions")
    return found


def _registry_toml(name: str, description: str, format: int = 1) -> bytes:
    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment("A pkgmgr registry index. Change it with `pkgmgr registry publish`,"))
    doc.add(tomlkit.comment("`registry yank` and `registry unyank`; check it with `pkgmgr registry validate .`."))
    table = tomlkit.table()
    table["format"] = format
    table["name"] = name
    table["description"] = description
    table["serial"] = 0
    doc["registry"] = table
    return tomlkit.dumps(doc).encode("utf-8")


def _gitignore(root: Path) -> bytes | None:
    """The `.gitignore` with the lock file named, or None when it already names it."""
    path = root / GITIGNORE
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if LOCK_FILE in current.splitlines():
        return None
    prefix = current if not current or current.endswith("\n") else current + "\n"
    return (prefix + f"# pkgmgr's lock while it publishes, yanks or builds, and its staging\n{LOCK_FILE}\n"
            f"{STAGING_DIR}/\n").encode("utf-8")
