"""terva (terva-sh/terva): `extension.json` in a folder of `$TERVA_HOME/extensions/` or
`<project>/.terva/extensions/`, judged as terva's loader judges it.

Sources (read at the commits named in docs/hosts.md): `packages/agent/extensions/manager.go`
(`loadOne`, `isPlainExtensionName`, `reservedExtensionName`, `hasExtensionTheme`, `searchDirs`),
`packages/agent/extdriver/extension.go` (`Manifest`, `ConfigField`), `extdriver/driver.go`
(`spawn`: how `exec` is resolved), `packages/envcompat/envcompat.go` (`Home`,
`ProjectDirNames`), and the `ext enable/disable` rewrite (`extToggle`,
`config.SetManifestEnabled`).
"""

from __future__ import annotations

import math
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pkgmgr.errors import Code, PkgmgrError, ProblemSink, io_error
from pkgmgr.gokeys import go_fold, go_json_text, go_utf8
from pkgmgr.hosts import jsonfmt
from pkgmgr.hosts.base import FolderHost, Found, Judged
from pkgmgr.hosts.mechanics import tree_checksum
from pkgmgr.hosts.port import Claim

if TYPE_CHECKING:
    from pkgmgr.store.installed import Installed

MANIFEST = "extension.json"
MANIFEST_MAX_BYTES = 1024 * 1024  # pkgmgr's bound: terva reads any size
THEME_FILES = ("theme.json", "themes/theme.json")
# driver.go spawn opens $TERVA_HOME/logs/ext-<name>.log before it starts the extension: a file
# name (at most 255 bytes) of 8 bytes more than the extension's name
LOG_NAME_MAX_BYTES = 255 - len("ext-.log")
ARG_MAX_BYTES = 128 * 1024 - 1  # Linux's MAX_ARG_STRLEN (with its NUL): one argument longer fails (E2BIG)
# the executable formats a system runs: ELF, Mach-O (thin, both byte orders; universal), PE
BINARY_MAGICS = (b"\x7fELF", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe",
                 b"\xca\xfe\xba\xbe", b"MZ")

# extdriver.Manifest: JSON name -> Go type ("string", "bool", "strings", "config", "pbool")
FIELDS = {
    "name": "string", "version": "string", "exec": "string", "args": "strings", "language": "string",
    "enabled": "pbool", "description": "string", "config": "config", "connector": "bool",
    "data_secrets": "pbool",
}
CONFIG_FIELDS = {
    "key": "string", "label": "string", "type": "string", "default": "any", "required": "bool",
    "secret": "bool", "description": "string", "options": "strings",
}
_FOLDED = {go_fold(k): k for k in FIELDS}
_CONFIG_FOLDED = {go_fold(k): k for k in CONFIG_FIELDS}
_JSON_KIND = {type(None): "null", bool: "bool", str: "string", float: "number", list: "array"}


def terva_home() -> Path:
    """envcompat.Home: $TERVA_HOME (else $ZOT_HOME) when set and not empty; else the OS default
    terva directory when it exists; else the legacy zot one when it exists and `terva migrate`
    has not disabled it; else the OS default terva directory."""
    for variable in ("TERVA_HOME", "ZOT_HOME"):
        if variable in os.environ:  # Lookup: the first spelling set decides, even when empty
            value = os.environ[variable]
            if value:
                return Path(os.path.abspath(value))
            break
    new = _os_default("terva")
    if new.is_dir():
        return new
    if not _zot_fallback_disabled():
        old = _os_default("zot")
        if old.is_dir():
            return old
    return new


def _os_default(name: str) -> Path:
    """envcompat.osDefaultDir on Linux and macOS."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / name
    state = os.environ.get("XDG_STATE_HOME")
    if state:
        return Path(state) / name
    return Path.home() / ".local" / "state" / name


def _zot_fallback_disabled() -> bool:
    base = os.environ.get("TERVA_HOME") or str(_os_default("terva"))
    return os.path.exists(os.path.join(base, ".zot-fallback-disabled"))


def plain_name_problem(name: str) -> str | None:
    """manager.go `isPlainExtensionName` and `reservedExtensionName`, plus pkgmgr's own rule
    that a folder name holds no control characters."""
    if name in ("", ".", ".."):
        return f"{name!r} must be a plain identifier (no path separators, '.', '..' or absolute paths)"
    if os.path.isabs(name) or "/" in name or "\\" in name:
        return f"{name!r} must be a plain identifier (no path separators, '.', '..' or absolute paths)"
    if name == "core":
        return "'core' is reserved: it names the always-visible built-in tool group"
    if name.startswith("mcp:"):
        return f"{name!r} is reserved: the 'mcp:' prefix names MCP server tool groups"
    if "\0" in name:
        return f"{name!r} holds a NUL byte: terva cannot open its log file (ext-<name>.log) to start it"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return f"{name!r} holds control characters (pkgmgr's rule: it names a folder)"
    if len(os.fsencode(name)) > 255:
        return "is longer than a file name may be (pkgmgr's rule: it names a folder)"
    return None


def _go_kind(value: Any) -> str:
    if jsonfmt.is_object(value):
        return "object"
    return _JSON_KIND.get(type(value), "value")


def _check(problems: ProblemSink, key: str, kind: str, value: Any) -> Any:
    """Go's json.Unmarshal of `value` into a field of Go type `kind`: the value (None for
    null), or a problem as Go's UnmarshalTypeError would report it."""
    go_type = {"string": "string", "bool": "bool", "pbool": "bool", "strings": "[]string",
               "config": "[]extdriver.ConfigField", "any": "interface {}"}[kind]
    if value is None:
        return None
    if kind == "any":
        if isinstance(value, float) and math.isinf(value):
            problems.add(key, "cannot unmarshal a number out of float64's range")
        for item in _walk(value):
            if isinstance(item, float) and math.isinf(item):
                problems.add(key, "cannot unmarshal a number out of float64's range")
                break
        return jsonfmt.plain(value)
    if kind in ("string",) and isinstance(value, str):
        return value
    if kind in ("bool", "pbool") and isinstance(value, bool):
        return value
    if jsonfmt.is_object(value) and kind != "any":  # a decoded object is a list of pairs: not a JSON array
        problems.add(key, f"cannot unmarshal object into Go value of type {go_type}")
        return None
    if kind == "strings" and isinstance(value, list):
        out = []
        for index, item in enumerate(value):
            if item is not None and not isinstance(item, str):
                problems.add(f"{key}[{index}]", f"cannot unmarshal {_go_kind(item)} into Go value of type string")
            out.append(item if isinstance(item, str) else "")
        return out
    if kind == "config" and isinstance(value, list):
        fields: list[dict[str, Any]] = []
        for index, item in enumerate(value):
            if item is None:
                fields.append({})
                continue
            if not jsonfmt.is_object(item):
                problems.add(f"{key}[{index}]", f"cannot unmarshal {_go_kind(item)} into Go struct "
                                                "extdriver.ConfigField")
                continue
            fields.append(_struct(problems, item, _CONFIG_FOLDED, CONFIG_FIELDS, f"{key}[{index}]"))
        return fields
    problems.add(key, f"cannot unmarshal {_go_kind(value)} into Go value of type {go_type}")
    return None


def _walk(value: Any) -> Any:
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, list):
            stack.extend(v for v in item if not isinstance(v, tuple))
        if jsonfmt.is_object(item):
            stack.extend(jsonfmt.last_values(item).values())


def _struct(problems: ProblemSink, obj: Any, folded: dict[str, str], fields: dict[str, str], prefix: str) -> dict[str, Any]:
    """An object decoded into a Go struct: each key goes to the field it names exactly, else
    case-insensitively (Go's folding); the last key for a field wins; unknown keys are ignored."""
    found: dict[str, Any] = {}
    exact = set(fields)
    for key, value in (obj if isinstance(obj, list) else obj.items()):
        name = key if key in exact else folded.get(go_fold(key))
        if name is None:
            continue
        path = f"{prefix}.{name}" if prefix else name
        found[name] = _check(problems, path, fields[name], value)
    return found


class Terva(FolderHost):
    name = "terva"
    title = "terva"
    manifest_files = (MANIFEST,)
    templates = ("subprocess", "theme")

    def claim(self, level: Path, files: frozenset[str]) -> Claim | None:
        """An extension.json with `exec` (any key Go folds to it), or beside a theme file."""
        if MANIFEST not in files:
            return None
        if any(os.path.exists(level / rel) for rel in THEME_FILES):
            return Claim(MANIFEST)
        from pkgmgr.fsutil import NotRegularFile, read_regular

        try:
            raw = read_regular(level / MANIFEST, limit=MANIFEST_MAX_BYTES, follow_symlinks=True)
        except (OSError, NotRegularFile):
            return None
        return Claim(MANIFEST) if is_terva_manifest(raw) else None

    def home(self) -> Path:
        return terva_home()

    def project_root(self, project: Path) -> Path:
        return project / ".terva"  # envcompat.ProjectDirNames()[0]: where writers write

    def scan(self, folder: Path) -> list[Found]:
        """Discover: every directory entry (a link to one is skipped, as os.ReadDir's IsDir
        says) holding extension.json."""
        found = []
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and os.path.exists(os.path.join(entry.path, MANIFEST)):
                found.append(Found(entry.name, Path(entry.path), "directory"))
        return found

    def judge(self, root: Path, *, name_hint: str | None = None, layout: str = "directory") -> Judged:
        problems = ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
        raw = _read_manifest(root)
        try:
            decoded = decode(raw)
        except jsonfmt.JsonError as exc:
            problems.add("", f"parse manifest: {exc}")
            problems.raise_if_any()
        if jsonfmt.depth(decoded) > jsonfmt.MAX_DEPTH:
            problems.add("", "is nested too deeply (pkgmgr's bound)")
            problems.raise_if_any()
        if decoded is None:
            fields: dict[str, Any] = {}
        elif not jsonfmt.is_object(decoded):
            problems.add("", f"parse manifest: cannot unmarshal {_go_kind(decoded)} into Go value of type "
                             "extdriver.Manifest")
            problems.raise_if_any()
            fields = {}
        else:
            fields = _struct(problems, decoded, _FOLDED, FIELDS, "")
        problems.raise_if_any()  # terva stops at a parse error: nothing below is reached
        name = fields.get("name") or ""
        if not name:
            problems.add("name", "name is required")
        else:
            why = plain_name_problem(name)
            if why:
                problems.add("name", why)
        theme = _has_theme(root)
        exec_ = fields.get("exec") or ""
        if not exec_ and not theme:
            problems.add("exec", "exec is required (or ship theme.json or themes/theme.json: a theme-only "
                                 "extension)")
        enabled = fields.get("enabled")
        details: dict[str, Any] = {"args": fields.get("args") or [], "language": fields.get("language") or "",
                                   "theme": theme, "connector": bool(fields.get("connector")),
                                   "data_secrets": fields.get("data_secrets"),
                                   "config": [c.get("key", "") for c in fields.get("config") or []],
                                   "enabled": enabled is None or bool(enabled)}
        warnings: list[str] = []
        if exec_:
            # a disabled extension is not started (terva loads it quietly), but pkgmgr installs it
            # to be enabled: what would fail then is refused now, as pkgmgr's rule
            start = problems if details["enabled"] else ProblemSink(MANIFEST, Code.INVALID_MANIFEST)
            _check_start(name, exec_, details["args"], start, warnings)
            details["exec_resolution"] = _check_exec(exec_, root, start, warnings)
            for problem in start.problems if start is not problems else ():
                later = "" if "pkgmgr's rule" in problem.message else \
                    " (pkgmgr's rule: it is disabled, and terva would fail to start it once enabled)"
                problems.add(problem.key, problem.message + later, code=problem.code)
        problems.raise_if_any()
        capabilities = tuple(c for c, on in (("connector", details["connector"]),
                                             ("data-secrets", details["data_secrets"] is True)) if on)
        return Judged(
            host=self.name, name=name, version=(fields.get("version") or "").strip(), layout="directory",
            kind="subprocess" if exec_ else "theme", entry=" ".join([exec_, *details["args"]]).strip(),
            capabilities=capabilities, description=fields.get("description") or "", warnings=tuple(warnings),
            document=jsonfmt.last_values(jsonfmt.plain(decoded)) if decoded is not None else {}, details=details,
        )

    def checksum(self, path: Path) -> tuple[str, dict[str, str]]:
        """The tree checksum with `enabled` left out of extension.json: the manifest counts as its
        canonical JSON without that field, so `ext enable/disable` (which rewrites it exactly as
        terva does) changes neither the checksum nor `ext verify`'s listing."""
        overrides = {}
        manifest = path / MANIFEST
        try:
            raw = _read_manifest(path)
        except PkgmgrError:
            raw = None
        if raw is not None and manifest.is_file() and not manifest.is_symlink():
            overrides[MANIFEST] = canonical_without_enabled(raw)
        return tree_checksum(path, overrides)

    def make_link(self, source: Path, dest: Path) -> None:
        """terva's discovery skips a link to a folder (`os.ReadDir`'s `IsDir` is false for a link),
        and its development mechanism (`terva --ext PATH`) lasts one run: a development link is a
        folder of links, one to each top-level entry of the working folder. terva reads the
        manifest and starts `exec` in that folder (`cmd.Dir`), where every relative path reaches the
        working folder's file through its link; an entry added at the top later needs `ext link`
        again."""
        if source.is_file():
            super().make_link(source, dest)
            return
        os.mkdir(dest, 0o755)
        for entry in sorted(os.listdir(source)):
            os.symlink(source / entry, dest / entry)

    def link_source(self, place: Path) -> str | None:
        if os.path.islink(place) or not os.path.isdir(place):
            return super().link_source(place)
        manifest = place / MANIFEST
        return os.path.dirname(os.readlink(manifest)) if os.path.islink(manifest) else None

    def prepare_staged(self, staged: Path, judged: Judged, *, enabled: bool) -> None:
        if judged.details.get("enabled", True) != enabled:
            set_enabled(staged, enabled, temp_dir=staged.parent)

    def settle(self, folder: Path, item: Installed | None, name: str, records: dict[str, Any] | None = None) -> None:
        """terva keeps no records of its own but the manifest's `enabled`: rewritten as `terva ext
        enable/disable` rewrites it (`set_enabled`) when it says otherwise than `item`."""
        if item is None or manifest_enabled(item.place) in (None, item.enabled):
            return
        from pkgmgr.hosts.mechanics import STAGING, ensure_dirs

        set_enabled(item.place, item.enabled, temp_dir=ensure_dirs(folder.parent, STAGING))

    def saved_state(self, item: Installed) -> dict[Path, bytes]:
        """The manifest as it is, before `ext enable/disable` rewrites its `enabled` (not for a
        development link, whose manifest is the author's file behind a link)."""
        manifest = item.place / MANIFEST
        if item.linked is not None or os.path.islink(manifest):
            return {}
        try:
            return {manifest: _read_manifest(item.place)}
        except PkgmgrError:
            return {}  # unreadable: the rewrite refuses it before anything changes (the disk's OSError goes up)

    def observed(self, record: Installed) -> Installed:
        """`terva ext enable/disable` rewrites the manifest's `enabled`: what it says now wins."""
        enabled = manifest_enabled(record.place)
        return record if enabled is None or enabled == record.enabled else record.with_changes(enabled=enabled)

    def kind_of(self, record: Installed) -> str:
        return "theme" if not record.manifest.get("exec") else "subprocess"

    def scaffold(self, name: str, template: str) -> dict[str, str]:
        """A subprocess extension (`exec` a script that answers on stdout), or a theme-only one."""
        import json

        why = plain_name_problem(name)
        if why:
            raise PkgmgrError(f"{name!r} cannot name a terva extension: {why}", code=Code.USAGE)
        manifest: dict[str, Any] = {"name": name, "version": "0.1.0", "description": f"The {name} extension"}
        files = {"README.md": f"# {name}\n\nA terva extension. 'terva ext list' shows it once installed.\n"}
        if template == "theme":
            files["theme.json"] = json.dumps({"name": name}, indent=2) + "\n"
        else:
            manifest.update({"exec": "./run.sh", "language": "sh"})
            files["run.sh"] = "#!/bin/sh\n# terva starts this and speaks to it on stdin/stdout.\ncat\n"
        files[MANIFEST] = json.dumps(manifest, indent=2) + "\n"
        return files

    def notes(self, scope: str, project: Path | None, folder: Path) -> list[str]:
        if scope == "workspace" and project is not None:
            return [(f"terva loads project extensions only in a trusted workspace: run 'terva trust' in {project} "
                     "(pkgmgr never writes terva's trust)")]
        return []


def decode(raw: bytes) -> Any:
    """extension.json as Go's encoding/json reads it (objects as pairs, in file order): invalid
    UTF-8 and lone surrogate escapes become U+FFFD. Raises jsonfmt.JsonError."""
    return jsonfmt.decode(go_json_text(go_utf8(raw)).encode("utf-8"), pairs=True)


def _check_start(name: str, exec_: str, args: list[str], problems: ProblemSink, warnings: list[str]) -> None:
    """What driver.go `spawn` needs before the process starts: the log file
    `logs/ext-<name>.log` (a name longer than 247 bytes makes its file name too long), and an
    argv the system accepts (no NUL byte; no argument over Linux's 128 KiB)."""
    if len(name.encode("utf-8")) > LOG_NAME_MAX_BYTES:
        problems.add("name", f"is {len(name.encode('utf-8'))} bytes long: terva opens logs/ext-<name>.log before it "
                             f"starts an extension, and a file name holds at most 255 bytes, so a name of more than "
                             f"{LOG_NAME_MAX_BYTES} bytes never starts")
    for key, value in (("exec", exec_), *((f"args[{i}]", a) for i, a in enumerate(args))):
        if "\0" in value:
            problems.add(key, "holds a NUL byte: terva cannot start the process (invalid argument)")
        elif len(value.encode("utf-8")) > ARG_MAX_BYTES:
            problems.add(key, f"is longer than the {ARG_MAX_BYTES + 1} bytes the system allows one argument "
                              "(argument list too long)")


def _read_manifest(root: Path) -> bytes:
    from pkgmgr.fsutil import NotRegularFile, read_regular

    try:
        raw = read_regular(root / MANIFEST, limit=MANIFEST_MAX_BYTES, follow_symlinks=True)
    except FileNotFoundError:
        raise _invalid("read manifest: extension.json is missing") from None
    except NotRegularFile as exc:
        raise _invalid(f"read manifest: extension.json is {exc.kind}") from None
    except OSError as exc:  # a link loop, a directory on the way: terva's read fails too
        if io_error(exc) is not None:
            # permission denied, a failing device: io_error (SPEC 11) where it is caught (a writer names its
            # scope, not a staging path), never the manifest's fault
            raise
        raise _invalid(f"read manifest: extension.json cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MANIFEST_MAX_BYTES:
        raise _invalid("is larger than 1 MiB (pkgmgr's bound)")
    return raw


def _invalid(message: str) -> PkgmgrError:
    from pkgmgr.errors import Problem, ValidationFailed

    return ValidationFailed([Problem(Code.INVALID_MANIFEST, MANIFEST, "", message)])


def _has_theme(root: Path) -> bool:
    """manager.go hasExtensionTheme: os.Stat of theme.json or themes/theme.json succeeds."""
    return any(os.path.exists(root / rel) for rel in THEME_FILES)


def _check_exec(exec_: str, root: Path, problems: ProblemSink, warnings: list[str]) -> str:
    """driver.go spawn's resolution: absolute -> as is; `./`, `../`, `.`, `..` or any other
    path with a separator -> relative to the extension folder; a bare name -> looked up on PATH
    when terva starts it. pkgmgr's rules on top: a relative one must exist, stay inside the
    folder, be a regular file and keep its owner execute bit (terva finds out only at spawn)."""
    if "\0" in exec_:
        return "invalid"  # _check_start refused it
    if os.path.isabs(exec_):
        warnings.append(f"exec {exec_!r} is an absolute path outside the extension: it must exist where terva runs")
        return "absolute"
    if not (exec_ in (".", "..") or exec_.startswith(("./", "../")) or "/" in exec_):
        return "path"
    base = os.path.realpath(root)
    candidate = os.path.normpath(os.path.join(root, exec_))
    resolved = os.path.realpath(candidate)
    if resolved != base and not resolved.startswith(base + os.sep):
        problems.add("exec", f"{exec_!r} resolves outside the extension folder (pkgmgr's rule)",
                     code=Code.PATH_ESCAPES_ROOT)
        return "relative"
    try:
        info = os.stat(resolved)
    except OSError:
        problems.add("exec", f"{exec_!r} does not exist in the extension (pkgmgr's rule: terva would fail to "
                             "spawn it)")
        return "relative"
    if not stat.S_ISREG(info.st_mode):
        problems.add("exec", f"{exec_!r} is not a file (pkgmgr's rule)")
    elif not info.st_mode & stat.S_IXUSR:
        problems.add("exec", f"{exec_!r} is not executable (pkgmgr's rule: set its execute bit; archives keep it)")
    else:
        why = _format_problem(resolved, root, warnings, exec_)
        if why:
            problems.add("exec", f"{exec_!r} {why}: terva's start fails (exec format error)")
    return "relative"


def _format_problem(path: str, root: Path, warnings: list[str], exec_: str) -> str | None:
    """Why the system cannot run the file at `path` (None when it can): it must begin with a
    `#!` line naming an interpreter (Linux's binfmt_script: the line ends at a newline, the
    interpreter at a space or tab; a relative one is found from the extension folder, terva's
    working directory for it), or be an executable binary. What only the machine terva runs on
    decides is a warning: an absolute interpreter missing here, another system's binary."""
    from pkgmgr.fsutil import open_regular_fd

    try:
        fd = open_regular_fd(path, follow_symlinks=True)
    except OSError:
        return None  # unreadable here: its mode was judged above
    try:
        head = os.read(fd, 256)
    finally:
        os.close(fd)
    if not head:
        return "is empty"
    if head.startswith(b"\xef\xbb\xbf#!"):
        return "starts with a byte order mark before its #! line"
    if head.startswith(b"#!"):
        interpreter = head[2:].split(b"\n", 1)[0].strip(b" \t").replace(b"\t", b" ").split(b" ", 1)[0]
        shown = interpreter.decode("utf-8", "replace")
        if not interpreter:
            return "has a #! line naming no interpreter"
        if interpreter.endswith(b"\r"):
            return f"has a #! line ending in a carriage return (Windows line ends): its interpreter would be {shown!r}"
        if not interpreter.startswith(b"/"):
            if not os.path.isfile(os.path.join(root, os.fsdecode(interpreter))):
                return f"names the interpreter {shown!r} relative to the extension folder, where it is not"
        elif not os.path.exists(interpreter):
            warnings.append(f"exec {exec_!r} runs {shown!r} (its #! line), which is not on this machine: it must "
                            "exist where terva runs")
        return None
    if head.startswith(b"\x7fELF"):
        if len(head) < 20 or head[4] not in (1, 2) or head[5] not in (1, 2) or head[6] != 1 or \
                int.from_bytes(head[16:18], "little" if head[5] == 1 else "big") not in (2, 3):
            return "is not a valid ELF executable (its header is broken)"
        native = "ELF"
    elif head.startswith(BINARY_MAGICS):
        native = "PE" if head.startswith(b"MZ") else "Mach-O"
    else:
        return "starts with neither a #! line nor an executable format"
    system = {"linux": "ELF", "darwin": "Mach-O", "win32": "PE"}.get(sys.platform)
    if system is not None and native != system:
        warnings.append(f"exec {exec_!r} is a {native} binary, which this system ({sys.platform}) cannot run: it must "
                        "suit the system terva runs on")
    return None


def canonical_without_enabled(raw: bytes) -> bytes:
    """extension.json as the checksum counts it: its JSON (last duplicate key winning) without
    every key Go would decode into `enabled`, keys sorted, compact."""
    import json

    try:
        document = jsonfmt.plain(decode(raw))
    except jsonfmt.JsonError:
        return raw
    if isinstance(document, dict):
        document = {k: v for k, v in document.items() if go_fold(k) != "enabled"}
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def manifest_enabled(folder: Path) -> bool | None:
    """What the manifest in `folder` says of `enabled` as terva reads it (absent or null: enabled,
    `IsEnabled`); None when it is gone or unreadable (`ext verify` says so)."""
    try:
        raw = _read_manifest(folder)
        document = jsonfmt.plain(jsonfmt.decode(raw))
    except (PkgmgrError, jsonfmt.JsonError, OSError):
        return None
    if not isinstance(document, dict):
        return None
    values = [v for k, v in document.items() if go_fold(k) == "enabled"]
    return values[-1] is not False if values else True


def set_enabled(folder: Path, enabled: bool, *, temp_dir: Path) -> None:
    """`terva ext enable/disable`: extension.json decoded into map[string]any, `enabled` set,
    written back with json.MarshalIndent(v, "", "  ") and a final newline, mode 0644 (terva
    writes in place; pkgmgr writes the same bytes through a temporary file in `temp_dir` — outside
    the tree, on its filesystem — and a rename). Raises invalid_manifest where terva's rewrite fails
    ("parse manifest")."""
    from pkgmgr.fsutil import atomic_write_bytes

    raw = _read_manifest(folder)
    try:
        document = jsonfmt.plain(decode(raw))
    except jsonfmt.JsonError as exc:
        raise _invalid(f"parse manifest: {exc}") from None
    if not isinstance(document, dict):
        raise _invalid("parse manifest: not a JSON object, so terva cannot rewrite 'enabled'")
    if any(isinstance(v, float) and math.isinf(v) for v in _walk(document)):
        raise _invalid("parse manifest: a number is out of float64's range")
    document["enabled"] = enabled
    data = (jsonfmt.go_marshal_indent(document) + "\n").encode("utf-8")
    atomic_write_bytes(folder / MANIFEST, data, mode=0o644, temp_dir=temp_dir)


def is_terva_manifest(raw: bytes) -> bool:
    """Detection (SPEC 13): an extension.json with an `exec` (any key Go folds to it); the
    theme-file case is decided by the caller, who sees the folder."""
    try:
        document = decode(raw)
    except jsonfmt.JsonError:
        return False
    if not jsonfmt.is_object(document):
        return False
    return any(go_fold(key) == "exec" for key, _ in document)
