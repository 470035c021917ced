"""Eva (aayushmau5/eva): scripts `<name>.exs` and directories `<name>/extension.exs` in
`~/.eva/extensions/` or `<project>/.eva/extensions/`, judged as Eva's loader judges them.

Sources (docs/hosts.md names the commit): `lib/eva/extension/loader.ex` (`candidates_in_dir`,
`dedup_by_name`, `load_into_acc`, `extension_module`, `validate`), `core/lib/eva/core/extension.ex`
(`namespace/1`, the `__using__` namespace check and what it injects),
`core/lib/eva/core/extension/spec.ex`, `core/lib/eva/core/agent/{tools,messages,events}.ex` (the
structs an extension builds), `lib/eva/extension/trust.ex` (`content_hash/1`, `trust/2`, the
trust.json layout), `lib/eva/coding/resources.ex` (`extensions_dir/1`: the two folders), and their
tests. Checked against Eva's loader running on generated scripts: tests/hosts/eva/running.py.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError, ProblemSink, io_error
from pkgmgr.fsutil import NotRegularFile, TooLarge, read_regular, regular_chunks
from pkgmgr.hosts import elixir, elixir_quoted, jsonfmt
from pkgmgr.hosts.base import FolderHost, Found, Judged
from pkgmgr.hosts.mechanics import DISABLED
from pkgmgr.hosts.port import FALLBACK, Claim
from pkgmgr.patterns import printable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pkgmgr.hosts.approval import Inventory
    from pkgmgr.store.installed import Installed
    from pkgmgr.store.scope import Scope

DIRECTORY_ENTRY = "extension.exs"
SOURCE_MAX_BYTES = 4 * 1024 * 1024  # pkgmgr's bound
REQUIRED_MAX = 64  # scripts one extension may require in turn (pkgmgr's bound)
TRUST_MAX_BYTES = 16 * 1024 * 1024  # pkgmgr's bound on Eva's trust.json
TRUST_SCRIPT_MAX_BYTES = 16 * 1024 * 1024  # pkgmgr's bound on one file the content hash reads
TRUST_ENTRIES_MAX = 10_000  # pkgmgr's bound on the entries the content hash's walk visits (links followed)
TRUST_FILE = "trust.json"
TRUST_KEY = "extension_dirs"

# What `use Eva.Core.Extension` brings into a module (extension.ex `__using__`), and the structs of
# Eva's modules with their keys and the keys that must be given (core/lib/eva/core/extension/spec.ex,
# agent/tools.ex, agent/messages.ex, agent/events.ex, extension.ex Context), as compiled at the commit
# docs/hosts.md names.
_STRUCTS: dict[str, tuple[list[str], list[str]]] = {
    "Elixir.Eva.Core.Agent.Events.AgentEnd": (["type", "messages"], []),
    "Elixir.Eva.Core.Agent.Events.AgentStart": (["type"], []),
    "Elixir.Eva.Core.Agent.Events.ExtensionEvent": (["extension", "payload"], []),
    "Elixir.Eva.Core.Agent.Events.ExtensionsChanged": (["type"], []),
    "Elixir.Eva.Core.Agent.Events.MessageEnd": (["type", "message"], []),
    "Elixir.Eva.Core.Agent.Events.MessageStart": (["type", "message"], []),
    "Elixir.Eva.Core.Agent.Events.MessageUpdate": (["type", "message", "assistant_message_event"], []),
    "Elixir.Eva.Core.Agent.Events.ToolExecutionEnd": (["type", "tool_call_id", "tool_name", "result", "is_error"], []),
    "Elixir.Eva.Core.Agent.Events.ToolExecutionStart": (["type", "tool_call_id", "tool_name", "args"], []),
    "Elixir.Eva.Core.Agent.Events.ToolExecutionUpdate": (["type", "tool_call_id", "tool_name", "args", "partial_result"], []),
    "Elixir.Eva.Core.Agent.Events.TurnEnd": (["type", "message", "tool_results"], []),
    "Elixir.Eva.Core.Agent.Events.TurnStart": (["type"], []),
    "Elixir.Eva.Core.Agent.Messages.AssistantDiagnosticError": (["name", "message", "stack", "code"], []),
    "Elixir.Eva.Core.Agent.Messages.AssistantMessage": (["role", "content", "api", "provider", "model", "response_model", "response_id", "diagnostics", "usage", "stop_reason", "error_message", "timestamp"], []),
    "Elixir.Eva.Core.Agent.Messages.AssistantMessageDiagnostic": (["type", "timestamp", "error", "details"], []),
    "Elixir.Eva.Core.Agent.Messages.BashExecutionMessage": (["role", "command", "output", "exit_code", "cancelled", "truncated", "full_output_path", "timestamp", "exclude_from_context"], []),
    "Elixir.Eva.Core.Agent.Messages.BranchSummaryMessage": (["role", "summary", "from_id", "timestamp"], []),
    "Elixir.Eva.Core.Agent.Messages.CompactionSummaryMessage": (["role", "summary", "tokens_before", "timestamp"], []),
    "Elixir.Eva.Core.Agent.Messages.CustomMessage": (["role", "custom_type", "content", "display", "details", "timestamp"], []),
    "Elixir.Eva.Core.Agent.Messages.ImageContent": (["type", "data", "mime_type"], ["data", "mime_type"]),
    "Elixir.Eva.Core.Agent.Messages.TextContent": (["type", "text", "text_signature"], ["text"]),
    "Elixir.Eva.Core.Agent.Messages.ThinkingContent": (["type", "thinking", "thinking_signature", "redacted"], ["thinking"]),
    "Elixir.Eva.Core.Agent.Messages.ToolCall": (["type", "id", "name", "arguments", "thought_signature"], ["id", "name"]),
    "Elixir.Eva.Core.Agent.Messages.ToolResultMessage": (["role", "tool_call_id", "tool_name", "content", "details", "added_tool_names", "is_error", "timestamp"], []),
    "Elixir.Eva.Core.Agent.Messages.Usage": (["input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning", "total_tokens", "cost"], []),
    "Elixir.Eva.Core.Agent.Messages.UsageCost": (["input", "output", "cache_read", "cache_write", "total"], []),
    "Elixir.Eva.Core.Agent.Messages.UserMessage": (["role", "content", "timestamp"], []),
    "Elixir.Eva.Core.Agent.Tools.AgentTool": (["name", "description", "input_schema", "executor", "prompt_snippet", "prompt_guidelines", "execution_mode"], []),
    "Elixir.Eva.Core.Agent.Tools.AgentToolResult": (["content", "details", "added_tool_names", "terminate"], []),
    "Elixir.Eva.Core.Agent.Tools.ExecContext": (["tool_call_id", "tool_name", "harness_pid"], []),
    "Elixir.Eva.Core.Extension.Context": (["name", "cwd", "model", "provider_config", "session_pid", "extension_dir", "entries", "machine", "capabilities"], []),
    "Elixir.Eva.Core.Extension.Spec": (["tools", "guidelines", "commands", "hooks", "event_classes"], []),
    "Elixir.Eva.Core.Extension.Spec.Command": (["name", "description", "arg_hint"], []),
}
PROFILE = elixir_quoted.Profile(
    injected_aliases={"Spec": "Elixir.Eva.Core.Extension.Spec", "API": "Elixir.Eva.Core.Extension.API",
                      "Agents": "Elixir.Eva.Core.Extension.Agents", "Messages": "Elixir.Eva.Core.Agent.Messages",
                      "Tools": "Elixir.Eva.Core.Agent.Tools"},
    injected_functions=frozenset({(elixir.MARKER, 0), ("init", 1), ("handle_event", 2), ("handle_info", 2),
                                  ("handle_hook", 3), ("handle_command", 3), ("handle_request", 2), ("terminate", 2)}),
    structs={atom: (frozenset(keys), frozenset(enforced)) for atom, (keys, enforced) in _STRUCTS.items()},
    struct_roots=("Elixir.Eva.Core.Extension.Spec", "Elixir.Eva.Core.Agent.Tools", "Elixir.Eva.Core.Agent.Messages",
                  "Elixir.Eva.Core.Agent.Events"),
)


def eva_root() -> Path:
    """`Resources.root`: `Path.expand("~")/.eva` (HOME)."""
    return Path(os.path.expanduser("~")) / ".eva"


def name_problem(name: str) -> str | None:
    """Names pkgmgr installs under. Eva loads a script of almost any name (a quoted atom can name
    any module: `notes.v2` -> `Eva.Extension.Notes.V2`, `1abc` -> `:"Elixir.Eva.Extension.1abc"`);
    pkgmgr refuses a name that is no plain file name, one starting with a dot (Eva loads it but
    leaves it out of a folder's content hash, trust.ex), one with control characters, and one
    whose module name would pass the BEAM's atom limit (Eva's loader stops with an error on it)."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
        return f"{name!r} is not a plain name (pkgmgr's rule: Eva leaves dot-named scripts out of its trust hash)"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return f"{name!r} holds control characters (pkgmgr's rule)"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        return f"{name!r} is not valid Unicode (a lone surrogate)"
    atom = elixir.namespace_atom(name)
    if len(atom) > elixir.ATOM_MAX:
        return (f"{name!r} is too long: its module name {atom[:40]}... has {len(atom)} characters, more than an Elixir "
                f"atom holds ({elixir.ATOM_MAX}), and Eva's loader stops with an error on it, loading no extension "
                "(pkgmgr's rule; loader.ex validate, Eva.Core.Extension.namespace)")
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
        from pkgmgr.fsutil import open_regular_fd

        try:
            fd = open_regular_fd(path, follow_symlinks=True)  # a FIFO is refused, never waited on
        except OSError:  # gone, or no regular file: not a script
            return False
        try:
            magic = os.read(fd, 4)
        except OSError:
            return False
        finally:
            os.close(fd)
        return not magic.startswith((b"\x1f\x8b", b"PK"))

    def kind_of(self, record: Installed) -> str:
        return record.layout

    # --- Eva's approval of a project folder (trust.ex), under pkgmgr's one rule (hosts.approval) ---

    unhashed_reason = "Eva's content hash skips dot-named scripts and directories, which its loader loads"

    def trust_inventory(self, folder: Path, overlay: Mapping[str, Path | None] | None = None) -> Inventory:
        return inventory(folder, overlay)

    def approved_hash(self, folder: Path) -> str | None:
        return approved_hash(folder)

    def record_approval(self, folder: Path, value: str) -> None:
        approve(folder, value)

    def trust_lines(self, report: dict[str, Any]) -> list[str]:
        return trust_lines(report)

    def check_trust(self, scope: Scope, folder: Path) -> None:
        """The trust step of a project folder runs after the switch: what makes it fail (Eva's
        trust.json unreadable: invalid_config) fails now, before anything moves. The hash walk
        cannot fail it: `inventory` reports a link loop or a fan-out past its bound as unreadable."""
        if scope.kind == "workspace":
            approved_hash(folder)

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
            name = name_hint or (root.name[: -len(".exs")] if root.name.endswith(".exs") else root.name)
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
        reading, checked, warnings = _read_extension(script, source, root if layout == "directory" else None)
        for line, message in reading.problems:
            problems.add("", message, line=line or None)
        problems.raise_if_any()
        module = _extension_module(reading, name, problems, warnings)
        problems.raise_if_any()
        warnings.extend(f"{what}: pkgmgr cannot read it without running the script; Eva decides when it loads it"
                        for what in reading.unknown)
        return Judged(host=self.name, name=name, version="", layout=layout,
                      kind="script" if layout == "script" else "directory", entry=module.name if module else "",
                      warnings=tuple(warnings),
                      document={"module": module.name if module else "",
                                "modules": [m.name for m in reading.modules]},
                      details={"namespace": elixir.namespace(name), "file": file, "syntax": checked,
                               "module_atom": module.atom if module else ""})

    def check_neighbours(self, folder: Path, judged: Judged, own: set[Path], scope: str) -> None:
        """loader.ex load_into_acc: Eva loads one extension per module and refuses every later one
        that defines it ("already claimed by another extension"), whatever their names. So an
        extension whose module is the module of another extension in `folder` (or, for a project
        folder, in the global one, which Eva loads with it) is refused (`source_conflict`); one of
        the same name is replaced (or, in the global folder, shadowed by the project's)."""
        atom = judged.details.get("module_atom")
        if not atom:
            return
        folders = [folder]
        if scope == "workspace":
            folders.insert(0, self.folder("global", None))
        for place in folders:
            for found in self.scan(place):
                if found.name == judged.name or found.path in own:
                    continue  # replaced, or (a global one under a project one's name) shadowed: dedup_by_name
                if _module_of(found) == atom:
                    raise PkgmgrError(
                        f"{found.path} (the Eva extension {found.name}) already defines {judged.entry}, the module of "
                        f"{judged.name}: Eva loads one extension per module and refuses the other ('already claimed "
                        "by another extension', loader.ex load_into_acc)", code=Code.SOURCE_CONFLICT,
                        details={"module": judged.entry, "path": str(found.path), "name": found.name},
                        hint="keep one of the two: remove the other, or rename one extension together with its module")

    def notes(self, scope: str, project: Path | None, folder: Path) -> list[str]:
        return []


def _extension_module(reading: elixir.Reading, name: str, problems: ProblemSink,
                      warnings: list[str]) -> elixir.Module | None:
    """loader.ex extension_module and validate, over what the script defines: exactly one extension
    module (marked by `use Eva.Core.Extension`, which also pins it under Eva.Extension.*, or by a
    `def __eva_extension__` of its own), exporting setup/1, named after the extension
    (case-insensitively, as String.downcase compares them) or below that name."""
    marked = [m for m in reading.modules if m.is_extension]
    if not marked:
        if reading.unknown:
            warnings.append("pkgmgr found no extension module it can read; the script builds a module or requires "
                            "a file only when it runs (see below), so Eva decides when it loads it")
            return None
        problems.add("", "defines no module that uses Eva.Core.Extension (loader.ex extension_module)")
        return None
    if len(marked) > 1:
        problems.add("", f"defines {len(marked)} extension modules ({', '.join(m.name for m in marked)}); "
                         "expected one (loader.ex extension_module)")
        return None
    module = marked[0]
    expected = elixir.namespace_atom(name)
    if module.uses_extension and not module.atom.startswith("Elixir.Eva.Extension."):
        problems.add(module.name, "extension modules must be namespaced under Eva.Extension.*, got "
                                  f"{module.name} (Eva.Core.Extension __using__)")
    elif not module.exports_setup1:
        if module.dynamic_defs:
            warnings.append(f"{module.name} defines functions whose names are computed; pkgmgr cannot tell whether "
                            "it exports setup/1 (loader.ex validate)")
        else:
            problems.add(module.name, f"{module.name} does not export setup/1 (loader.ex validate)")
    if not problems.problems:
        actual, prefix = elixir.downcase(module.atom), elixir.downcase(expected)
        if actual != prefix and not actual.startswith(prefix + "."):
            problems.add(module.name, f"extension {name} must define {elixir.display(expected)} or a module below it, "
                                      f"compared case-insensitively (for example {elixir.suggested_module(name)}), "
                                      f"got {module.name} (loader.ex validate)")
    return module


def _read_extension(script: Path, source: str, root: Path | None) -> tuple[elixir.Reading, str, list[str]]:
    """The script and the sibling scripts it requires when Eva loads it (`Code.require_file(..,
    __DIR__)` in a directory extension), read together: by Elixir's parser when `elixir` is on PATH,
    else by pkgmgr's own reader. Returns the merged reading, how the syntax was checked, and warnings."""
    warnings: list[str] = []
    toolchain = elixir_quoted.find()
    checked = "not checked: no elixir on PATH"
    if toolchain is None:
        warnings.append("the syntax was not checked: there is no elixir on PATH, so pkgmgr read the script without "
                        "Elixir's parser; a syntax error, an unknown struct key or an undefined function is found "
                        "only when Eva compiles it (install Elixir to have pkgmgr check them)")
    merged = elixir.Reading()
    base = script.parent
    batch: list[tuple[Path, str]] = [(script, source)]
    seen = {os.path.normpath(script)}
    while batch:
        readings: list[elixir.Reading] = []
        parsed: list[elixir_quoted.Parsed] = []
        if toolchain is not None:
            try:
                header, parsed = elixir_quoted.parse([text for _, text in batch], toolchain)
                checked = f"checked by Elixir {header.version}"
            except elixir_quoted.ToolchainError as exc:
                warnings.append(f"the syntax was not checked: {exc}; pkgmgr read the script without Elixir's parser")
                checked, toolchain = f"not checked: {exc}", None
        for index, (path, text) in enumerate(batch):
            if parsed:
                try:
                    readings.append(elixir_quoted.read(parsed[index], header, PROFILE))
                    continue
                except (elixir_quoted.ToolchainError, RecursionError) as exc:
                    reason = str(exc) if isinstance(exc, elixir_quoted.ToolchainError) else \
                        "its quoted form is nested too deeply for pkgmgr"
                    warnings.append(f"the syntax of {path.name} was not checked: {reason}; pkgmgr read it without "
                                    "Elixir's parser")
                    checked = f"not checked: {reason}"
            readings.append(_python_reading(text))
        following: list[tuple[Path, str]] = []
        for (path, _), reading in zip(batch, readings, strict=True):
            rel = os.path.relpath(path, base)
            label = "" if path == script else f"{rel}: "
            merged.modules.extend(reading.modules)
            merged.problems.extend((line, message) if not label else (0, f"{rel}:{line}: {message}" if line else label + message)
                                   for line, message in reading.problems)
            for what in reading.unknown:
                merged.note(label + what)
            for required in reading.requires:
                target = os.path.normpath(path.parent / required.path)
                where = f"{label}line {required.line}"
                if root is None:
                    merged.note(f"{where}: requires {required.path} beside the script, which pkgmgr does not install "
                                "with it")
                elif os.path.isabs(required.path) or os.path.relpath(target, root).startswith(".."):
                    merged.note(f"{where}: requires {required.path}, outside the extension")
                elif target not in seen:
                    seen.add(target)
                    if len(seen) > REQUIRED_MAX:
                        raise _fail(DIRECTORY_ENTRY, f"requires more than {REQUIRED_MAX} scripts (pkgmgr's bound)")
                    sibling = _read_required(Path(target), required.path, where, merged)
                    if sibling is not None:
                        following.append((Path(target), sibling))
        batch = following
    return merged, checked, warnings


def _python_reading(text: str) -> elixir.Reading:
    try:
        return elixir.read_source(text)
    except elixir.SourceError as exc:
        reading = elixir.Reading()
        reading.problems.append((exc.line, f"syntax error: {exc} (as pkgmgr reads it: Eva would fail to compile it)"))
        return reading
    except RecursionError:
        reading = elixir.Reading()
        reading.problems.append((0, "nests interpolations too deeply for pkgmgr to read (pkgmgr's bound)"))
        return reading


def _read_required(path: Path, written: str, where: str, reading: elixir.Reading) -> str | None:
    """A required sibling's text; a problem (Eva fails to load the script) when it is missing or
    unreadable."""
    from pkgmgr.fsutil import NotRegularFile, read_regular

    try:
        raw = read_regular(path, limit=SOURCE_MAX_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        reading.problems.append((0, f"{where}: requires {written}, which is not in the extension: Eva fails to load "
                                    "it (Code.require_file)"))
        return None
    except NotRegularFile as exc:
        reading.problems.append((0, f"{where}: requires {written}, which is {exc.kind}, not a regular file"))
        return None
    except OSError as exc:
        reading.problems.append((0, f"{where}: requires {written}, which cannot be read ({exc.strerror})"))
        return None
    if len(raw) > SOURCE_MAX_BYTES:
        reading.problems.append((0, f"{where}: requires {written}, which is larger than 4 MiB (pkgmgr's bound)"))
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        reading.problems.append((0, f"{where}: requires {written}, which is not UTF-8 (byte {exc.start}): Elixir "
                                    "would not compile it"))
        return None


def _module_of(found: Found) -> str | None:
    """The module atom of an extension already in a folder, read without Elixir (a neighbour that
    cannot be read claims nothing: Eva would not load it either)."""
    script = found.path if found.layout == "script" else found.path / DIRECTORY_ENTRY
    try:
        source = _read_source(script, script.name)
        reading = elixir.read_source(source)
    except (PkgmgrError, elixir.SourceError, RecursionError):
        return None
    marked = [m for m in reading.modules if m.is_extension]
    return marked[0].atom if len(marked) == 1 else None


def _fail(file: str, message: str) -> PkgmgrError:
    from pkgmgr.errors import Problem, ValidationFailed

    return ValidationFailed([Problem(Code.INVALID_MANIFEST, file, "", message)])


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


def inventory(folder: Path, overlay: Mapping[str, Path | None] | None = None) -> Inventory:
    """trust.ex content_hash/1, with what it covers: sha256 over `relative path <> contents` of
    every `**/*.exs` under the folder (Path.wildcard: dot files and dot directories skipped, a link
    to a directory followed, a directory named `*.exs` matched too), sorted by path; a path that
    cannot be read contributes its error's name (`eisdir`, `enoent`, `eloop`, ...) instead of
    contents. Every script is read through pkgmgr's bounded primitive: one that Eva could not read
    whole either (a FIFO, a device, a socket: Eva's File.read blocks or fails on it), a file over
    TRUST_SCRIPT_MAX_BYTES, a directory link that loops back (Eva walks it until the path is too
    long) and a walk over TRUST_ENTRIES_MAX entries make the hash `unreadable` instead of hanging.
    `unhashed`: the dot-named scripts and directories Eva's loader loads (candidates_in_dir lists
    them) but the hash leaves out. `overlay`: top-level entries replaced by the tree at a path,
    or taken out (None)."""
    from pkgmgr.hosts.approval import Covered, Inventory

    folder = Path(os.path.abspath(folder))
    found: list[tuple[str, str]] = []
    unhashed: list[str] = []
    unreadable: list[str] = []
    seen = 0
    stack: list[tuple[str, str, frozenset[tuple[int, int]]]] = [(str(folder), "", frozenset())]
    while stack:
        directory, prefix, ancestors = stack.pop()
        try:
            info = os.stat(directory)
            names = os.listdir(directory)
        except OSError:  # Path.wildcard: a directory it cannot list (or that is gone) contributes nothing
            names, info = [], None
        if info is not None and (info.st_dev, info.st_ino) in ancestors:
            unreadable.append(f"{printable(prefix.rstrip('/'))} is a link to a directory that holds it (a loop)")
            continue
        ancestors = ancestors | ({(info.st_dev, info.st_ino)} if info is not None else set())
        entries = {name: os.path.join(directory, name) for name in names}
        if not prefix and overlay:
            for name, source in overlay.items():
                if source is None:
                    entries.pop(name, None)
                else:
                    entries[name] = os.fspath(source)
        for name, path in entries.items():
            seen += 1
            if seen > TRUST_ENTRIES_MAX:
                unreadable.append(f"it holds more than {TRUST_ENTRIES_MAX} entries (pkgmgr's bound)")
                stack.clear()
                break
            rel = prefix + name
            is_dir = os.path.isdir(path)  # follows a link, as :file.list_dir does
            if name.startswith("."):
                if is_dir or name.endswith(".exs"):
                    unhashed.append(rel + ("/" if is_dir else ""))
                continue
            if name.endswith(".exs"):
                found.append((rel, path))
            if is_dir:
                stack.append((path, rel + "/", ancestors))
    digest = hashlib.sha256()
    covered = []
    for rel, path in sorted(found, key=lambda item: os.fsencode(item[0])):
        digest.update(os.fsencode(rel))
        content = hashlib.sha256()
        try:
            for chunk in regular_chunks(path, limit=TRUST_SCRIPT_MAX_BYTES, follow_symlinks=True):
                digest.update(chunk)
                content.update(chunk)
        except NotRegularFile as exc:
            if exc.kind == "a directory":
                digest.update(b"eisdir")
            else:
                unreadable.append(f"{printable(rel)} is {exc.kind} (Eva cannot read it as a script)")
            covered.append(Covered(rel, ""))
            continue
        except TooLarge:
            unreadable.append(f"{printable(rel)} is larger than {TRUST_SCRIPT_MAX_BYTES // (1024 * 1024)} MiB "
                              "(pkgmgr's bound)")
            covered.append(Covered(rel, ""))
            continue
        except OSError as exc:
            digest.update(errno.errorcode.get(exc.errno or 0, "error").lower().encode())
            covered.append(Covered(rel, ""))
            continue
        covered.append(Covered(rel, content.hexdigest()))
    return Inventory(folder, tuple(covered), tuple(sorted(unhashed, key=os.fsencode)), tuple(unreadable),
                     None if unreadable else digest.hexdigest())


def content_hash(folder: Path) -> str | None:
    """trust.ex content_hash/1 of the folder (None when pkgmgr cannot take it: `inventory`)."""
    return inventory(folder).value


def trust_path() -> Path:
    return eva_root() / TRUST_FILE


def read_trust() -> dict[str, Any]:
    """trust.ex read/1: the document, or an empty one when the file is missing or not a JSON
    object (Eva treats both alike). Raises `io_error` for one that cannot be read (permission
    denied, a failing device: SPEC 11), which pkgmgr never replaces by a document without the
    approvals it holds."""
    path = trust_path()
    try:
        raw = read_regular(path, limit=TRUST_MAX_BYTES, follow_symlinks=True)  # never blocks on a FIFO
    except NotRegularFile as exc:
        raise PkgmgrError(f"{path}: Eva's trust file is {exc.kind}, not a regular file; pkgmgr neither reads nor "
                          "replaces it", code=Code.INVALID_CONFIG, path=str(path)) from None
    except OSError as exc:
        disk = io_error(exc, path)
        if disk is not None:
            raise disk from None
        return {TRUST_KEY: {}}
    if len(raw) > TRUST_MAX_BYTES:
        raise PkgmgrError(f"{path}: Eva's trust file is larger than {TRUST_MAX_BYTES // (1024 * 1024)} MiB "
                          "(pkgmgr's bound); pkgmgr neither reads nor replaces it", code=Code.INVALID_CONFIG,
                          path=str(path))
    try:
        document = jsonfmt.plain(jsonfmt.decode(raw))
    except jsonfmt.JsonError:
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
    value = record.get("content_hash") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def approve(folder: Path, value: str) -> None:
    """trust.ex trust/2: record `value` (the folder's content hash, as pkgmgr read it) as approved
    now, keeping every other entry; written to a fresh temporary file (created exclusively, so a
    link planted at the name is never followed) and renamed over trust.json, as Eva renames its
    trust.json.tmp."""
    folder = Path(os.path.abspath(folder))
    document = read_trust()
    if not isinstance(document.get(TRUST_KEY), dict):
        document[TRUST_KEY] = {}
    now = datetime.now(UTC)
    document[TRUST_KEY][str(folder)] = {"content_hash": value,
                                        "approved_at": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    write_trust(jsonfmt.erlang_format(document).encode("utf-8"))


def write_trust(data: bytes) -> None:
    """trust.json written as Eva writes it (to `trust.json.tmp`, renamed), and durable before the
    command reports it (the data fsynced before the rename, the directory after it: a power cut
    leaves the old file or the new one, never an empty one). A link planted at the temporary name
    is removed, never followed."""
    from pkgmgr.fsutil import write_through

    path = trust_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    write_through(path, data, tmp, mode=0o644)


def trust_lines(report: dict[str, Any]) -> list[str]:
    """What a project change did to Eva's approval, for the operator: the hashes, and what was
    approved (every file listed), or why Eva will ask again."""
    from pkgmgr.hosts.approval import listed

    folder, old, new = report["folder"], report["approved_hash"], report["content_hash"]
    foreign = report["not_installed_by_pkgmgr"]
    lines = [f"Eva's approval of {folder}: approved hash {old or '(none)'}, content hash now "
             f"{new or '(pkgmgr cannot take it)'}"]
    if report["updated"]:
        lines.append(f"updated Eva's approval in {trust_path()} (--approve-host-trust), covering "
                     f"{listed(report['covers']) or 'no script'}")
        if foreign:
            lines.append(f"  approved as you named them (--approve-host-trust=all), not installed by pkgmgr: "
                         f"{listed(foreign)}")
    elif report["refused"]:
        lines.append(f"did not update Eva's approval: {report['refused']}; Eva will ask again before loading this "
                     "folder (/trust-extensions)")
    elif not report["approved"]:
        if report["unhashed"] or report["unreadable"]:
            lines.append("Eva will ask again before loading this folder (/trust-extensions); pkgmgr cannot approve it: "
                         f"{listed(report['unhashed'] or report['unreadable'])}")
        elif foreign:
            lines.append("Eva will ask again before loading this folder (/trust-extensions); it holds scripts pkgmgr "
                         f"did not install ({listed(foreign)}): review them, then run the command again with "
                         "--approve-host-trust=all to record the new hash in ~/.eva/trust.json")
        else:
            lines.append("Eva will ask again before loading this folder (/trust-extensions); pass "
                         "--approve-host-trust to record the new hash in ~/.eva/trust.json")
    return lines


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
