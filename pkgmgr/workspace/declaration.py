"""`pkgmgr.toml`: the declared state of a workspace (registries, extensions, activations).

Read with tomllib and validated by `schemas/workspace.schema.json` plus the rules a schema
cannot say; every problem names the key. The file comes from a repository, so nothing in it is
used before `pkgmgr trust` approved it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from pkgmgr.config import RegistryConfig
from pkgmgr.errors import Code, PkgmgrError, Problem, ProblemSink, ValidationFailed
from pkgmgr.fsutil import NotRegularFile, read_regular
from pkgmgr.patterns import DOTTED_ID, GITHUB_OWNER, GITHUB_REPO, HEX64, REGISTRY_NAME
from pkgmgr.patterns import EXTENSION_NAME as NAME_RE

MANIFEST = "pkgmgr.toml"
MAX_BYTES = 1024 * 1024
# GitHub's rules, as `refs.parse_ref` applies them to github:OWNER/REPO[@TAG]
_GITHUB = re.compile(rf"^({GITHUB_OWNER})/({GITHUB_REPO})(?:@(\S+))?$")
_HEX64 = HEX64
_REGISTRY_NAME = REGISTRY_NAME


@dataclass(frozen=True)
class Declared:
    """One `[extensions]` entry."""

    name: str
    kind: str  # registry | path | github
    spec: str = ""  # PEP 440 specifier set ("" = any) for registry entries
    registry: str | None = None
    path: str | None = None  # relative to the workspace, POSIX
    github: str | None = None  # OWNER/REPO
    tag: str | None = None
    host: str | None = None  # `host = "..."` (SPEC 13): the host it installs for, None: from its manifest

    @property
    def exact(self) -> str | None:
        """The version an `==X.Y.Z` requirement names (installable even when yanked)."""
        match = re.fullmatch(r"==\s*v?(\d+(?:\.\d+)*[^\s,*]*)", self.spec.strip())
        return match.group(1) if match else None


@dataclass(frozen=True)
class DeclaredActivation:
    extension: str
    bundle: str | None
    profile: str
    confirm: str | None  # confirm_network_requirement

    @property
    def label(self) -> str:
        return f"{self.extension}:{self.bundle or '*'}/{self.profile}"


@dataclass(frozen=True)
class WorkspaceManifest:
    root: Path
    registries: tuple[RegistryConfig, ...]  # local directories made absolute (relative to the workspace)
    extensions: tuple[Declared, ...]
    activations: tuple[DeclaredActivation, ...]
    raw: bytes
    # registry name -> its source as pkgmgr.toml spells it when that is machine-independent
    # (a directory inside the workspace, relative): what pkgmgr.lock records
    lock_sources: dict[str, str] = field(default_factory=dict)

    def extension(self, name: str) -> Declared | None:
        return next((e for e in self.extensions if e.name == name), None)


def manifest_file(root: Path) -> Path:
    """Where the content of `<root>/pkgmgr.toml` is: the file, or the target of its symbolic link,
    which must lie inside the workspace (SPEC 10; `--save` edits that target and keeps the link).
    Raises FileNotFoundError when there is none, invalid_config for a link leading outside."""
    path = root / MANIFEST
    if not path.is_symlink():
        if not os.path.lexists(path):
            raise FileNotFoundError(str(path))
        return path
    try:
        target = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        raise FileNotFoundError(str(path)) from None
    except OSError as exc:  # a loop of links
        raise PkgmgrError(f"{path}: cannot read: {exc.strerror}", code=Code.INVALID_CONFIG,
                          path=str(path)) from None
    if not target.is_relative_to(Path(os.path.realpath(root))):
        raise PkgmgrError(f"{path} is a symbolic link to {target}, outside the workspace: pkgmgr.toml comes with "
                          "the repository", code=Code.INVALID_CONFIG, path=str(path),
                          hint="make it a file, or a link to a file inside the workspace")
    return target


def read_manifest_bytes(root: Path) -> bytes:
    """The bytes of `<root>/pkgmgr.toml`: a regular file (through a link inside the workspace),
    read without blocking. Raises FileNotFoundError, and invalid_config for a FIFO, a device, a
    socket, a directory or an unreadable file."""
    path = root / MANIFEST
    target = manifest_file(root)
    try:
        return read_regular(target, limit=MAX_BYTES)
    except NotRegularFile as exc:
        raise PkgmgrError(f"{path} is {exc.kind}, not a regular file", code=Code.INVALID_CONFIG,
                          path=str(path)) from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise PkgmgrError(f"{path}: cannot read: {exc.strerror}", code=Code.INVALID_CONFIG,
                          path=str(path)) from None


def read_workspace_manifest(root: Path) -> WorkspaceManifest:
    """Parse `<root>/pkgmgr.toml`. Raises not_found when it does not exist, invalid_config
    (with every problem) when it is not valid."""
    path = root / MANIFEST
    try:
        raw = read_manifest_bytes(root)
    except FileNotFoundError:
        raise PkgmgrError(f"{path} does not exist: this workspace declares nothing", code=Code.NOT_FOUND,
                          path=str(path),
                          hint="start one with 'pkgmgr ext install NAME --save' (or write [extensions] NAME = \"SPEC\"); "
                               "--workspace DIR names another workspace") from None
    return parse_workspace_manifest(raw, root)


def parse_workspace_manifest(raw: bytes, root: Path) -> WorkspaceManifest:
    from pkgmgr.documents import DocumentError, load_document
    from pkgmgr.schemas import schema_problems

    sink = ProblemSink(MANIFEST, Code.INVALID_CONFIG)
    try:
        data, _ = load_document(raw, kind="toml", max_bytes=MAX_BYTES)
    except DocumentError as exc:
        raise ValidationFailed([Problem(Code.INVALID_CONFIG, MANIFEST, exc.key, exc.message, exc.line)]) from None

    try:
        problems = schema_problems(data, "workspace", file=MANIFEST, code=Code.INVALID_CONFIG)
    except RecursionError:
        problems = [Problem(Code.INVALID_CONFIG, MANIFEST, "", "nested too deeply")]
    if problems:
        raise ValidationFailed(problems)
    registries, lock_sources = _registries(data.get("registries", {}), root, sink)
    extensions = _extensions(data.get("extensions", {}), root, sink)
    activations = _activations(data.get("activations", []), {e.name for e in extensions}, sink)
    sink.raise_if_any()
    return WorkspaceManifest(root, registries, extensions, activations, raw, lock_sources)


def _named(table: dict, section: str, valid: Callable[[str], bool], rule: str,
           sink: ProblemSink) -> Iterator[tuple[str, str, Any]]:
    """(name, key path, value) of each entry of `table` whose name is valid; the others are problems."""
    for name, value in table.items():
        key = f"{section}.{name}"
        if valid(name):
            yield name, key, value
        else:
            sink.add(key, rule)


def _registries(table: dict, root: Path, sink: ProblemSink) -> tuple[tuple[RegistryConfig, ...], dict[str, str]]:
    """The declared registries; a relative directory is relative to the workspace (not to the
    current directory), and is locked as written so that the lock is the same on every machine."""
    out, lock_sources = [], {}
    names = _named(table, "registries", lambda name: bool(_REGISTRY_NAME.fullmatch(name)) and name != "default",
                   "a registry name is lower-case letters, digits, '-' and '_' (and not 'default')", sink)
    for name, key, value in names:
        spec: dict[str, Any] = {"source": value} if isinstance(value, str) else value
        source = spec["source"].strip()
        if not source:  # "" or spaces would name the workspace directory itself
            sink.add(key, "a registry source is a directory, an https:// URL or github:OWNER/REPO[@REF], not empty")
            continue
        if not source.startswith("github:") and "://" not in source and not source.startswith("~"):
            candidate = Path(source)
            if not candidate.is_absolute():
                if "\\" in source:
                    sink.add(key, "a relative registry directory uses '/' separators")
                    continue
                lock_sources[name] = candidate.as_posix()
                source = str(root.absolute() / candidate)
        out.append(RegistryConfig(name=name, source=source, priority=spec.get("priority", 100),
                                  insecure=spec.get("insecure", False), root_sha256=spec.get("root_sha256")))
    return tuple(out), lock_sources


def _extensions(table: dict, root: Path, sink: ProblemSink) -> tuple[Declared, ...]:
    from pkgmgr.versions import bare_version, parse_specifier

    out = []
    names = _named(table, "extensions", lambda name: name != "marketplace" and (
                   bool(NAME_RE.fullmatch(name)) or (len(name) <= 201 and DOTTED_ID.fullmatch(name) is not None)),
                   "not an extension name (^[a-z][a-z0-9-]{1,63}$, or a dotted id such as acme.word)", sink)
    for name, key, value in names:
        spec = {"version": value} if isinstance(value, str) else value
        host = spec.get("host")
        if not NAME_RE.fullmatch(name) and not ("path" in spec or "github" in spec):
            sink.add(key, f"{name!r} is a dotted id (a host's own), which no registry lists: declare it with a path or github source "
                          f"({name!r} = {{ path = \"...\" }})")
            continue
        kinds = [k for k in ("path", "github") if k in spec]
        if len(kinds) > 1 or (kinds and ("version" in spec or "registry" in spec)):
            sink.add(key, "use one source: a version (with an optional registry), a path, or a github repository")
            continue
        if "path" in spec:
            rel = spec["path"]
            problem = _path_problem(root, rel)
            if problem:
                sink.add(f"{key}.path", problem)
                continue
            out.append(Declared(name, "path", path=Path(rel).as_posix(), host=host))
        elif "github" in spec:
            match = _GITHUB.fullmatch(spec["github"])
            if not match:
                sink.add(f"{key}.github", "expected OWNER/REPO or OWNER/REPO@TAG")
                continue
            owner, repo, tag = match.groups()
            out.append(Declared(name, "github", github=f"{owner}/{repo}", tag=tag, host=host))
        else:
            text = spec.get("version", "")
            if isinstance(text, str) and bare_version(text) is not None:
                text = f"=={bare_version(text)}"  # "0.1" means exactly 0.1, as NAME@0.1 does
            try:
                parse_specifier(text)
            except ValueError as exc:
                sink.add(f"{key}.version" if not isinstance(value, str) else key, str(exc))
                continue
            registry = spec.get("registry")
            if registry is not None and not _REGISTRY_NAME.fullmatch(registry):
                sink.add(f"{key}.registry", "not a registry name")
                continue
            out.append(Declared(name, "registry", spec=text.strip(), registry=registry, host=host))
    return tuple(out)


def _path_problem(root: Path, rel: str) -> str | None:
    candidate = Path(rel)
    if candidate.is_absolute() or "\\" in rel:
        return "must be a path relative to the workspace, with '/' separators"
    try:
        resolved = (root / candidate).resolve()
        resolved.relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return "must stay inside the workspace"
    return None


def _activations(items: list, declared: set[str], sink: ProblemSink) -> tuple[DeclaredActivation, ...]:
    out: list[DeclaredActivation] = []
    seen: set[tuple[str, str, str]] = set()
    for index, item in enumerate(items):
        key = f"activations[{index}]"
        extension = item["extension"]
        if extension not in declared:
            sink.add(f"{key}.extension", f"{extension!r} is not declared in [extensions]")
            continue
        confirm = item.get("confirm_network_requirement")
        if confirm is not None and not _HEX64.fullmatch(confirm):
            sink.add(f"{key}.confirm_network_requirement", "must be a network requirement digest (64 lower-case hex)")
            continue
        activation = DeclaredActivation(extension, item.get("bundle"), item.get("profile", "default"), confirm)
        marker = (extension, (activation.bundle or "").lower(), activation.profile.lower())
        if marker in seen:
            sink.add(key, "declared twice")
            continue
        seen.add(marker)
        out.append(activation)
    return tuple(out)
