"""`ext install --save` / `ext remove --save`: edit pkgmgr.toml with tomlkit, keeping the
user's comments and layout, and keeping its approval (pkgmgr wrote the change)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable

from pkgmgr.crash import crashpoint
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.refs import parse_ref
from pkgmgr.workspace import trust
from pkgmgr.workspace.declaration import (
    MANIFEST,
    manifest_file,
    parse_workspace_manifest,
    read_manifest_bytes,
    read_workspace_manifest,
)
from pkgmgr.workspace.lockfile import read_lock


def declaration_for(ref_text: str, installed: Any, workspace: Path) -> Any:
    """The pkgmgr.toml value that declares what `ref_text` installed, or None when the source
    cannot be declared (a URL or an archive file)."""
    import tomlkit

    ref = parse_ref(ref_text)
    kind = installed.source_kind
    if kind == "registry":
        if ref.kind == "name" and ref.spec:
            return ref.spec
        return f">={installed.version}"
    if kind == "path":
        try:
            rel = Path(installed.source).resolve().relative_to(workspace.resolve()).as_posix()
        except ValueError:
            raise PkgmgrError(f"{installed.source} is outside the workspace {workspace}; pkgmgr.toml can only "
                              "declare paths inside it", code=Code.USAGE) from None
        table = tomlkit.inline_table()
        table["path"] = rel
        return table
    if kind == "github":
        table = tomlkit.inline_table()
        table["github"] = f"{ref.owner}/{ref.repo}" + (f"@{ref.tag}" if ref.tag else "") if ref.kind == "github" \
            else installed.source
        return table
    return None


def check_saveable(workspace: Path, refs: Iterable[str] = ()) -> None:
    """Before `--save` changes anything: pkgmgr.toml (when it exists) must be valid, and a path
    ref must be inside the workspace. Raises invalid_config / usage."""
    if os.path.lexists(workspace / MANIFEST):  # a FIFO or a dangling link is refused, not skipped
        read_workspace_manifest(workspace)
    for text in refs:
        ref = parse_ref(text)
        if ref.kind == "path" and ref.path is not None and ref.path.is_dir():
            try:
                ref.path.resolve().relative_to(workspace.resolve())
            except ValueError:
                raise PkgmgrError(f"{text} is outside the workspace {workspace}; {MANIFEST} can only declare "
                                  "directories inside it", code=Code.USAGE) from None


def edit_manifest(workspace: Path, home: Path, change: Callable[[Any], None]) -> bool:
    """Apply `change` to the tomlkit document of pkgmgr.toml (created when missing) and write it
    back, validated, keeping the approval when the file was approved. Returns True if it changed."""
    import tomlkit

    try:
        old: bytes | None = read_manifest_bytes(workspace)
        path = manifest_file(workspace)  # a link's target is edited, the link kept (SPEC 10)
    except FileNotFoundError:
        old, path = None, workspace / MANIFEST
    doc = tomlkit.parse(old.decode("utf-8").removeprefix("\ufeff") if old is not None else "")  # tomlkit: no BOM
    change(doc)
    new = tomlkit.dumps(doc).encode("utf-8")
    if new == old:
        return False
    manifest = parse_workspace_manifest(new, workspace)  # never write an invalid declaration
    _, lock_raw = read_lock(workspace)
    paths = [(d.name, d.path or "") for d in manifest.extensions if d.kind == "path"]
    if old is None:
        # pkgmgr creates it from the user's own command; a lock it did not write is not approved with it
        was_trusted = lock_raw is None
    else:
        old_manifest = parse_workspace_manifest(old, workspace)
        old_paths = [(d.name, d.path or "") for d in old_manifest.extensions if d.kind == "path"]
        before = trust.compute(old, lock_raw, workspace, old_paths, registries=old_manifest.registries).digest
        was_trusted = before in trust.approved_digests(home, workspace)
    after = trust.compute(new, lock_raw, workspace, paths, registries=manifest.registries).digest
    trust.write_keeping_approval(home, workspace, path, new, trusted=was_trusted, digest_after=after,
                                 after_write=lambda: crashpoint("save.after_write"))
    return True


def save_installed(workspace: Path, home: Path, results: Iterable[Any], warn: Callable[[str], None]) -> list[str]:
    """Declare what an `ext install --save` installed; returns the names saved."""
    import tomlkit

    values: dict[str, Any] = {}
    for result in results:
        if result.outcome is None:
            continue
        installed = result.outcome.installed
        value = declaration_for(result.ref, installed, workspace)
        if value is None:
            warn(f"{installed.name}: a {installed.source_kind} source cannot be declared in {MANIFEST}; not saved")
            continue
        values[installed.name] = value

    def change(doc: Any) -> None:
        if "extensions" not in doc:
            doc["extensions"] = tomlkit.table()
        extensions = doc["extensions"]
        for name, value in values.items():
            current = extensions.get(name)
            if isinstance(value, str) and isinstance(current, dict) and "path" not in current \
                    and "github" not in current:
                current["version"] = value  # keep the table's other keys (its registry)
            else:
                extensions[name] = value

    if values:
        edit_manifest(workspace, home, change)
    return sorted(values)


def save_removed(workspace: Path, home: Path, names: Iterable[str]) -> list[str]:
    """Drop the declarations (and declared activations) of removed extensions."""
    names = set(names)
    if not os.path.lexists(workspace / MANIFEST) or not names:
        return []
    dropped: list[str] = []

    def change(doc: Any) -> None:
        extensions = doc.get("extensions")
        if extensions is not None:
            for name in sorted(names):
                if name in extensions:
                    del extensions[name]
                    dropped.append(name)
        activations = doc.get("activations")
        if activations is not None:
            for index in reversed(range(len(activations))):  # in place: the others keep their layout
                if activations[index].get("extension") in names:
                    del activations[index]
            if not len(activations):
                del doc["activations"]

    edit_manifest(workspace, home, change)
    return dropped
