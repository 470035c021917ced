"""The hosts pkgmgr installs extensions for (SPEC 13): one module each, behind one port.

`HOSTS` is the only list of hosts. The command line's `--host` choices, the lock file's and the
index's `host` checks, the manifest files an archive is searched for, the order in which a tree's
host is detected and (held to it by `tests/test_host_registry.py`) the JSON Schemas' `host` enums
all derive from it. Adding a host is one entry here and one module (docs/architecture.md,
"Adding a host").

Importing this package costs nothing: a host's module is imported only when `get` is asked for
it, so an install of Compozy trees never loads another host's code (SPEC 12).

- `port.py`: the `Host` port and what it hands around (`Prepared`, `Destination`, `Changed`).
- `compozy.py` (with `scope_store.py`, `compozy_templates.py`): Compozy, whose destination is
  pkgmgr's own scope store (SPEC 4).
- `base.py`: `FolderHost`, what every host that loads extensions from a folder of its own shares
  (staging beside the scanned folder, the atomic switch, pending rows and their recovery), and
  `folder.py`, that install pipeline half; `terva.py`, `eva.py` (`elixir.py`: reading a script
  without compiling it; `elixir_quoted.py`: Elixir's parser reading it, when elixir is installed),
  `vera.py` (`collation.py`: the order Vera's digest takes): each such host's rules and hooks,
  read from its own code.
- `detect.py`: the host of a tree, from the manifest files each host claims.
- `facts.py`: what a release archive says about itself, for a registry entry.
- `gemini.py`, `claude.py` (with `jsdoc.py`, what they share): the rules of Gemini CLI and Claude
  Code, judge-only (`base.HostRules`): not in `HOSTS` yet, so nothing installs for them.
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False  # not typing's: this package is imported on every install's path
if TYPE_CHECKING:
    from pkgmgr.hosts.port import Host

DEFAULT = "compozy"  # the host of an extension nothing else names (a registry entry, a lock entry)


class Entry:
    """A host as the registry knows it before its module is imported."""

    __slots__ = ("module", "cls", "manifests", "scripts")

    def __init__(self, module: str, cls: str, manifests: tuple[str, ...], scripts: tuple[str, ...] = ()) -> None:
        self.module = module  # where its `Host` lives
        self.cls = cls
        self.manifests = manifests  # files (a name, or `*.suffix`) that make it a candidate at a level
        self.scripts = scripts  # suffixes of a file that is one of its extensions by itself


# The order is the detection order and the order `pkgmgr hosts` lists them in.
HOSTS: dict[str, Entry] = {
    "compozy": Entry("pkgmgr.hosts.compozy", "Compozy", ("extension.toml", "extension.json")),
    "terva": Entry("pkgmgr.hosts.terva", "Terva", ("extension.json",)),
    "eva": Entry("pkgmgr.hosts.eva", "Eva", ("extension.exs", "*.exs"), (".exs",)),
    "vera": Entry("pkgmgr.hosts.vera", "Vera", ("vera.extension.json",)),
    "gemini": Entry("pkgmgr.hosts.gemini", "Gemini", ("gemini-extension.json",)),
    "claude": Entry("pkgmgr.hosts.claude", "Claude", (".claude-plugin/plugin.json",)),
}

_made: dict[str, Host] = {}


def names() -> tuple[str, ...]:
    """Every host, in detection order."""
    return tuple(HOSTS)


def others() -> tuple[str, ...]:
    """The hosts an entry, a lock or a declaration must name (every host but the default)."""
    return tuple(name for name in HOSTS if name != DEFAULT)


def spoken(items: tuple[str, ...] | list[str], last: str = "or") -> str:
    """`a, b or c`: how messages list hosts (or their files)."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def get(name: str) -> Host:
    """The host called `name` (its module imported on first use). Raises `usage` for a name that
    is no host."""
    host = _made.get(name)
    if host is None:
        if name not in HOSTS:
            from pkgmgr.errors import Code, PkgmgrError

            raise PkgmgrError(f"unknown host {name!r}; hosts are {', '.join(HOSTS)}", code=Code.USAGE)
        import importlib

        entry = HOSTS[name]
        host = _made[name] = getattr(importlib.import_module(entry.module), entry.cls)()
    return host


def manifest_patterns() -> tuple[str, ...]:
    """Every host's manifest files (`*.suffix` for a glob), each once, in detection order: what
    marks a level of an archive as an extension's root."""
    return tuple(dict.fromkeys(pattern for entry in HOSTS.values() for pattern in entry.manifests))


def matches(pattern: str, file: str) -> bool:
    """A file name matched by a manifest pattern (`name`, or `*.suffix`)."""
    return file.endswith(pattern[1:]) if pattern.startswith("*") else file == pattern


def script_host(path: Path) -> str | None:
    """The host whose extension the single file `path` is by itself (an archive is none), or None."""
    text = str(path)
    for name, entry in HOSTS.items():
        if entry.scripts and text.endswith(entry.scripts) and get(name).is_script(path):
            return name
    return None
