"""An agent folder's capability catalog, as Compozy's `LoadAgentCapabilities` reads it
(internal/config capabilities.go, capabilities_decode.go, capabilities_validation.go; the same
at v0.2 and v0.3-beta.3).

The catalog is `capabilities.toml` or `capabilities.json` — `{capabilities = [...]}`, a list of
capability definitions — or a `capabilities/` directory holding one definition a file, all
`.toml` or all `.json`, each file named after its `id`. Exactly one layout, never a symlink.
Decoding is strict (unknown keys refused; keys matched to fields as Go's decoders match them).
A definition needs `id`, `summary` and `outcome` (trimmed, non-blank); `version`, when given, is
not blank; `requirements` are non-blank and unique; ids are unique across the catalog. In the
directory, hidden entries, subdirectories and files of other kinds are passed over, and an empty
directory is an empty catalog.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from pkgmgr.bundles.files import PackageTree, TreeError, child
from pkgmgr.errors import Code, Problem, ProblemSink
from pkgmgr.gokeys import field_for
from pkgmgr.manifest.network import go_trim_space

CODE = Code.INVALID_BUNDLE
FILE_NAMES = ("capabilities.toml", "capabilities.json")
DIRECTORY = "capabilities"
TEXT_FIELDS = ("id", "summary", "outcome", "version")
LIST_FIELDS = ("context_needed", "artifacts_expected", "execution_outline", "constraints", "examples", "requirements")
FIELDS = TEXT_FIELDS + LIST_FIELDS


def load_capabilities(tree: PackageTree, folder: str, present: frozenset[str], limit: int,
                      problems: list[Problem]) -> dict[str, Any] | None:
    """The catalog of agent folder `folder` as {file relative to the folder: its document}
    ({} for an empty capabilities/ directory), or None when there is none or it has problems
    (appended to `problems`, each filed under its file)."""
    declared = [name for name in (*FILE_NAMES, DIRECTORY) if name in present]
    if not declared:
        return None
    before = len(problems)
    for name in declared:
        if problem := _layout_problem(tree, folder, name):
            problems.append(Problem(CODE, child(folder, name), "", problem))
    if len(problems) > before:
        return None
    if len(declared) > 1:
        what = "mixed capability catalog layouts" if DIRECTORY in declared else "two capability catalog files"
        found = ", ".join(name + ("/" if name == DIRECTORY else "") for name in declared)
        problems.append(Problem(CODE, folder, "", f"{what} ({found}); keep exactly one"))
        return None
    if declared[0] != DIRECTORY:
        rel = child(folder, declared[0])
        document = _read(tree, rel, limit, problems)
        if document is None:
            return None
        sink = ProblemSink(rel, CODE)
        _catalog(sink, document)
        problems.extend(sink.problems)
        return None if sink else {declared[0]: document}
    return _directory(tree, folder, limit, problems)


def _layout_problem(tree: PackageTree, folder: str, name: str) -> str | None:
    """`existingCapabilityCatalogFile` / `existingCapabilityCatalogDir`: no symlink, the right kind."""
    directory = name == DIRECTORY
    try:
        mode = os.lstat(tree.resolve(folder) / name).st_mode
    except (OSError, TreeError) as exc:
        return f"cannot be read: {exc}"
    what = "a directory" if directory else "a file"
    if stat.S_ISLNK(mode):
        return f"must be {what}, not a symlink"
    if directory and not stat.S_ISDIR(mode):
        return "must be a directory of capability files"
    if not directory and not stat.S_ISREG(mode):
        return "must be a regular file"
    return None


def _read(tree: PackageTree, rel: str, limit: int, problems: list[Problem]) -> Any:
    value, read_problems = tree.read_document(rel, kind=rel.rsplit(".", 1)[1], limit=limit, code=CODE)
    problems.extend(read_problems)
    if read_problems:
        return None
    if not isinstance(value, dict):
        problems.append(Problem(CODE, rel, "", "a capabilities document must be an object"))
        return None
    return value


def _fields(sink: ProblemSink, table: dict[str, Any], known: tuple[str, ...], prefix: str) -> dict[str, Any]:
    """`table` keyed by the fields Go's decoders fill (exact name first, else case-folded);
    a key that fills none is refused (`DisallowUnknownFields`, `meta.Undecoded`)."""
    read: dict[str, Any] = {}
    for key, value in table.items():
        field = field_for(key, known)
        if field is None:
            sink.add(f"{prefix}{key}", "unknown field; it holds " + ", ".join(known))
        elif field not in read or field == key:
            read[field] = value
    return read


def _definition(sink: ProblemSink, table: dict[str, Any], prefix: str) -> str | None:
    """`normalizeCapabilityDef` + `validateCapabilityDef`: the definition's trimmed id, or None."""
    fields = _fields(sink, table, FIELDS, prefix)
    for name in TEXT_FIELDS:
        value = fields.get(name)
        if value is not None and not isinstance(value, str):
            sink.add(prefix + name, "must be a string")
        elif name != "version" and not go_trim_space(value or ""):
            sink.add(prefix + name, "is required")
        elif name == "version" and value and not go_trim_space(value):
            sink.add(prefix + name, "must not be blank when given")
    for name in LIST_FIELDS:
        value = fields.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            sink.add(prefix + name, "must be a list of strings")
    requirements = fields.get("requirements")
    seen: set[str] = set()
    for index, item in enumerate(requirements if isinstance(requirements, list) else []):
        text = go_trim_space(item) if isinstance(item, str) else item
        if text == "":
            sink.add(f"{prefix}requirements[{index}]", "is required (not blank)")
        elif text in seen:
            sink.add(f"{prefix}requirements[{index}]", f"duplicate requirement {text!r}")
        seen.add(text)
    ident = fields.get("id")
    return go_trim_space(ident) if isinstance(ident, str) and go_trim_space(ident) else None


def _catalog(sink: ProblemSink, document: dict[str, Any]) -> None:
    """`parseCapabilityCatalogTOML`/`JSON` + `normalizeCapabilityCatalog`."""
    entries = _fields(sink, document, ("capabilities",), "").get("capabilities")
    if entries is None:
        return
    if not isinstance(entries, list) or not all(isinstance(item, dict) for item in entries):
        sink.add("capabilities", "must be a list of capability tables (id, summary, outcome, ...)")
        return
    ids: dict[str, int] = {}
    for index, entry in enumerate(entries):
        ident = _definition(sink, entry, f"capabilities[{index}].")
        if ident is not None and ident in ids:
            sink.add(f"capabilities[{index}].id", f"duplicate capability id {ident!r} (first at capabilities[{ids[ident]}])")
        elif ident is not None:
            ids[ident] = index


def _directory(tree: PackageTree, folder: str, limit: int, problems: list[Problem]) -> dict[str, Any] | None:
    """`loadCapabilityCatalogDirectory` + `normalizeCapabilityCatalogRecords`."""
    rel_dir = child(folder, DIRECTORY)
    try:
        entries = sorted(os.scandir(tree.resolve(rel_dir)), key=lambda entry: entry.name)
    except (OSError, TreeError) as exc:
        problems.append(Problem(CODE, rel_dir, "", f"cannot be listed: {exc}"))
        return None
    chosen = {suffix: [entry.name for entry in entries if entry.name.endswith(suffix) and not entry.name.startswith(".")
                       and entry.is_file(follow_symlinks=False)] for suffix in (".toml", ".json")}
    if chosen[".toml"] and chosen[".json"]:
        problems.append(Problem(CODE, rel_dir, "", "mixed capability file formats (.toml and .json); keep one"))
        return None
    result: dict[str, Any] = {}
    ids: dict[str, str] = {}
    failed = False
    for name in chosen[".toml"] or chosen[".json"]:
        rel = child(rel_dir, name)
        document = _read(tree, rel, limit, problems)
        if document is None:
            failed = True
            continue
        sink = ProblemSink(rel, CODE)
        ident = _definition(sink, document, "")
        basename = go_trim_space(name.rsplit(".", 1)[0])
        if ident is not None and ident != basename:
            sink.add("id", f"{ident!r} must match the file's name {basename!r}")
        elif ident is not None and ident in ids:
            sink.add("id", f"duplicate capability id {ident!r}, also in {ids[ident]}")
        elif ident is not None:
            ids[ident] = rel
        problems.extend(sink.problems)
        failed = failed or bool(sink)
        result[f"{DIRECTORY}/{name}"] = document
    return None if failed else result
