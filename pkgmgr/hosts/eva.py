"""Eva (aayushmau5/eva): scripts `<name>.exs` and directories `<name>/extension.exs` in
`~/.eva/extensions/` or `<project>/.eva/extensions/`, judged as Eva's loader judges them.

Sources (docs/hosts.md names the commit): `lib/eva/extension/loader.ex` (`candidates_in_dir`,
`dedup_by_name`, `extension_module`, `validate`), `core/lib/eva/core/extension.ex`
(`namespace/1`, the `__using__` namespace check), `lib/eva/extension/trust.ex`
(`content_hash/1`, `trust/2`, the trust.json layout), `lib/eva/coding/resources.ex`
(`extensions_dir/1`: the two folders), and their tests.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError, ProblemSink
from pkgmgr.hosts import elixir, jsonfmt
from pkgmgr.hosts.base import FolderHost, Found, Judged
from pkgmgr.hosts.mechanics import DISABLED
from pkgmgr.hosts.port import FALLBACK, Claim

if TYPE_CHECKING:
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

DIRECTORY_ENTRY = "extension.exs"
SOURCE_MAX_BYTES = 4 * 1024 * 1024  # pkgmgr's bound
TRUST_FILE = "trust.json"
TRUST_KEY = "extension_dirs"


def eva_root() -> Path:
    """`Resources.root`: `Path.expand("~")/.eva` (HOME)."""
    return Path(os.path.expanduser("~")) / ".eva"


def name_problem(name: str) -> str | None:
    """Names pkgmgr installs under: a plain file name whose namespace is an Elixir alias (any
    other name can never be matched by a module, so Eva could never load it)."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
        return f"{name!r} is not a plain name (pkgmgr's rule)"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return f"{name!r} holds control characters (pkgmgr's rule)"
    namespace = elixir.namespace(name)
    parts = namespace.split(".")
    if not all(p[:1].isupper() and p.isascii() and p.replace("_", "").isalnum() for p in parts):
        return (f"{name!r} gives the module namespace {namespace}, which no Elixir module can have, so Eva "
                "could never load it (pkgmgr's rule)")
    return None


class Eva(FolderHost):
    name = "eva"
    title = "Eva"
    manifest_files = (DIRECTORY_ENTRY, "*.exs")
    names_itself = False  # a script's name is its file's or its directory's (loader.ex candidate_from_path)
    versions_itself = False  # no version in the format: the registry's is recorded
    entry_label = "module"
    templates = ("script", "directory")

    def home(self) -> Path:
        return eva_root()

    def claim(self, level: Path, files: frozenset[str]) -> Claim | None:
        """`extension.exs`; else a lone `<name>.exs` where no other host claims the level (a
        script beside another host's manifest is that extension's file)."""
        if DIRECTORY_ENTRY in files:
            return Claim(DIRECTORY_ENTRY)
        scripts = sorted(name for name in files if name.endswith(".exs"))
        return Claim(scripts[0], FALLBACK) if len(scripts) == 1 else None

    def locate(self, level: Path) -> tuple[Path, str]:
        """A directory holding one script and no extension.exs is that script."""
        if not (level / DIRECTORY_ENTRY).is_file():
            try:
                scripts = sorted(e.name for e in os.scandir(level)
                                 if e.name.endswith(".exs") and not e.is_dir(follow_symlinks=False))
            except (FileNotFoundError, NotADirectoryError):
                scripts = []
            if len(scripts) == 1:
                return level / scripts[0], "script"
        return level, "directory"

    def is_script(self, path: Path) -> bool:
        """A `.exs` file given as an install ref (loader.ex candidate_from_path), not an archive."""
        if not str(path).endswith(".exs"):
            return False
        try:
            with open(path, "rb") as handle:
                magic = handle.read(4)
        except OSError:
            return False
        return not magic.startswith((b"\x1f\x8b", b"PK"))

    def kind_of(self, record: Installed) -> str:
        return record.layout

    def trust_step(self, scope: Scope, folder: Path, *, approve: bool) -> tuple[list[str], dict[str, Any] | None]:
        """A project folder's content hash changed: Eva's approval shown, updated when asked."""
        if scope.kind != "workspace":
            return [], None
        report = trust_report(folder, old=approved_hash(folder), approve_it=approve)
        return trust_lines(report), report

    def trust_status(self, record: Installed) -> dict[str, Any] | None:
        if record.scope != "workspace":
            return None
        folder = record.place.parent
        return {"folder": str(folder), "approved_hash": approved_hash(folder), "content_hash": content_hash(folder)}

    def scaffold(self, name: str, template: str) -> dict[str, str]:
        """A script `<name>.exs`, or a directory holding `extension.exs`, defining the module Eva's
        loader expects of the name."""
        why = name_problem(name)
        if why:
            raise PkgmgrError(f"{name!r} cannot name an Eva extension: {why}", code=Code.USAGE)
        module = (f"defmodule {elixir.namespace(name)} do\n  use Eva.Core.Extension\n\n"
                  f"  def setup(_ctx), do: {{:ok, %Eva.Core.Extension.Spec{{guidelines: [\"{name}\"]}}}}\nend\n")
        files = {"README.md": f"# {name}\n\nAn Eva extension: 'pkgmgr ext pack . --release 0.1.0' makes its archive.\n"}
        files[DIRECTORY_ENTRY if template == "directory" else f"{name}.exs"] = module
        return files

    def project_root(self, project: Path) -> Path:
        return project / ".eva"

    def target(self, folder: Path, name: str, layout: str) -> Path:
        return folder / (f"{name}.exs" if layout == "script" else name)

    def occupants(self, folder: Path, name: str) -> list[Path]:
        """Eva gives a name to `<name>.exs` and to `<name>/extension.exs` alike."""
        return [p for p in (folder / f"{name}.exs", folder / name) if os.path.lexists(p)]

    def disabled_place(self, folder: Path, name: str, layout: str) -> Path:
        """Where a disabled extension waits: beside the scanned folder, never in it."""
        return folder.parent / DISABLED / (f"{name}.exs" if layout == "script" else name)

    def scan(self, folder: Path) -> list[Found]:
        """loader.ex candidates_in_dir + dedup_by_name: entries sorted; a directory counts when
        its extension.exs is a regular file, a `.exs` entry by its base name; the later of two
        entries of one name wins (`foo.exs` after `foo/`)."""
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return []
        found: dict[str, Found] = {}
        for entry in names:
            path = folder / entry
            if path.is_dir():
                if (path / DIRECTORY_ENTRY).is_file():
                    found.pop(entry, None)
                    found[entry] = Found(entry, path, "directory")
            elif entry.endswith(".exs"):
                name = entry[: -len(".exs")]
                found.pop(name, None)
                found[name] = Found(name, path, "script")
        return sorted(found.values(), key=lambda f: f.name)

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        if layout == "script":
            script = root
            name = name_hint or root.name[: -len(".exs")] if root.name.endswith(".exs") else (name_hint or root.name)
            file = root.name
        else:
            script = root / DIRECTORY_ENTRY
            name = name_hint or root.name
            file = DIRECTORY_ENTRY
        problems = ProblemSink(file, Code.INVALID_MANIFEST)
        why = name_problem(name)
        if why:
            problems.add("name", why)
            problems.raise_if_any()
        source = _read_source(script, file)
        try:
            defined = elixir.modules(source)
        except elixir.SourceError as exc:
            problems.add("", f"{exc} (Eva would fail to compile it)")
            problems.raise_if_any()
        except RecursionError:
            problems.add("", "nests interpolations too deeply for pkgmgr to read (pkgmgr's bound)")
            problems.raise_if_any()
        expected = elixir.namespace(name)
        marked = [m for m in defined if m.uses_extension]
        module = ""
        if not marked:
            problems.add("", "defines no module that uses Eva.Core.Extension (loader.ex extension_module)")
        elif len(marked) > 1:
            problems.add("", f"defines {len(marked)} extension modules ({', '.join(m.name for m in marked)}); "
                             "expected one (loader.ex extension_module)")
        else:
            extension = marked[0]
            module = extension.name
            if not extension.name.startswith("Eva.Extension."):
                problems.add(extension.name, "extension modules must be namespaced under Eva.Extension.*, got "
                                             f"{extension.name} (Eva.Core.Extension __using__)")
            elif not extension.exports_setup1:
                problems.add(extension.name, f"{extension.name} does not export setup/1 (loader.ex validate)")
            else:
                actual, prefix = extension.name.lower(), expected.lower()
                if actual != prefix and not actual.startswith(prefix + "."):
                    problems.add(extension.name, f"extension {name} must define {expected}, got {extension.name} "
                                                 "(loader.ex validate)")
        problems.raise_if_any()
        warnings = [("pkgmgr reads the script without compiling it: a module built by a macro or an alias, or "
                     "code that does not compile, is found only when Eva loads it")]
        return Judged(host=self.name, name=name, version="", layout=layout,
                      kind="script" if layout == "script" else "directory", entry=module,
                      warnings=tuple(warnings), document={"module": module, "modules": [m.name for m in defined]},
                      details={"namespace": expected, "file": file})

    def notes(self, scope: str, project: Path | None, folder: Path) -> list[str]:
        return []


def _read_source(path: Path, file: str) -> str:
    from pkgmgr.errors import Problem, ValidationFailed
    from pkgmgr.fsutil import NotRegularFile, read_regular

    def fail(message: str) -> ValidationFailed:
        return ValidationFailed([Problem(Code.INVALID_MANIFEST, file, "", message)])

    try:
        raw = read_regular(path, limit=SOURCE_MAX_BYTES, follow_symlinks=True)
    except FileNotFoundError:
        raise fail(f"{file} is missing") from None
    except NotRegularFile as exc:
        raise fail(f"is {exc.kind}, not a regular file") from None
    if len(raw) > SOURCE_MAX_BYTES:
        raise fail("is larger than 4 MiB (pkgmgr's bound)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"is not UTF-8 (byte {exc.start}): Elixir would not compile it") from None


# --- trust (project extensions) ------------------------------------------------------------------


def content_hash(folder: Path) -> str:
    """trust.ex content_hash/1: sha256 over `relative path <> contents` of every `**/*.exs`
    under the folder (Path.wildcard: dot files and dot directories skipped), sorted by path; a
    path that cannot be read contributes its error's name instead of contents."""
    folder = Path(os.path.abspath(folder))
    digest = hashlib.sha256()
    for path in sorted(_wildcard_exs(folder), key=os.fsencode):
        rel = os.path.relpath(path, folder)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except IsADirectoryError:
            data = b"eisdir"
        except FileNotFoundError:
            data = b"enoent"
        except PermissionError:
            data = b"eacces"
        digest.update(os.fsencode(rel) + data)
    return digest.hexdigest()


def _wildcard_exs(folder: Path) -> list[str]:
    out: list[str] = []
    stack = [str(folder)]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.name.endswith(".exs"):
                out.append(entry.path)
            if entry.is_dir():  # a link to a directory is followed, as :filelib.wildcard does
                stack.append(entry.path)
    return out


def trust_path() -> Path:
    return eva_root() / TRUST_FILE


def read_trust() -> dict[str, Any]:
    """trust.ex read/1: the document, or an empty one when the file is missing or not a JSON
    object (Eva treats both alike)."""
    try:
        raw = trust_path().read_bytes()
        document = jsonfmt.plain(jsonfmt.decode(raw))
    except (OSError, jsonfmt.JsonError):
        return {TRUST_KEY: {}}
    if not isinstance(document, dict):
        return {TRUST_KEY: {}}
    document.setdefault(TRUST_KEY, {})
    return document


def approved_hash(folder: Path) -> str | None:
    entry = read_trust().get(TRUST_KEY, {})
    if not isinstance(entry, dict):
        return None
    record = entry.get(os.path.abspath(folder))
    return record.get("content_hash") if isinstance(record, dict) else None


def approve(folder: Path) -> str:
    """trust.ex trust/2: record the folder's content hash as approved now, keeping every other
    entry; written to trust.json.tmp and renamed (as Eva does)."""
    folder = Path(os.path.abspath(folder))
    document = read_trust()
    if not isinstance(document.get(TRUST_KEY), dict):
        document[TRUST_KEY] = {}
    value = content_hash(folder)
    now = datetime.now(UTC)
    document[TRUST_KEY][str(folder)] = {"content_hash": value,
                                        "approved_at": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    path = trust_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(jsonfmt.erlang_format(document), encoding="utf-8")
    os.replace(tmp, path)
    return value


def trust_report(folder: Path, *, old: str | None, approve_it: bool) -> dict[str, Any]:
    """What a change in a project folder did to Eva's approval of it: the hash Eva approved, the
    hash now, and whether pkgmgr updated the approval (only when asked)."""
    new = content_hash(folder)
    report: dict[str, Any] = {"folder": str(folder), "approved_hash": old, "content_hash": new,
                              "approved": old == new, "updated": False}
    if approve_it and old != new:
        approve(folder)
        report.update(approved=True, updated=True)
    return report


def trust_lines(report: dict[str, Any]) -> list[str]:
    folder, old, new = report["folder"], report["approved_hash"], report["content_hash"]
    lines = [f"Eva's approval of {folder}: approved hash {old or '(none)'}, content hash now {new}"]
    if report["updated"]:
        lines.append(f"updated Eva's approval in {trust_path()} (--approve-host-trust)")
    elif not report["approved"]:
        lines.append("Eva will ask again before loading this folder (/trust-extensions); pass "
                     "--approve-host-trust to record the new hash in ~/.eva/trust.json")
    return lines


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
