"""Extension manifest codec: `extension.toml`/`extension.json` bytes in, a frozen `Manifest`
or every problem of the file out (SPEC 2). Pure: reads the extension root, never writes.

Where SPEC 2 is silent, the codec decides (the safer reading):

- Problems about a core field are keyed `extension.<field>` wherever it was written.
- Identifier rules (names, capabilities, actions, grants, env names) are checked in code with
  full-string matches, not as schema patterns (a JSON Schema `$` would accept a trailing
  newline in Python's `re`).
- Hooks: `name` and `event` are required, hook names are unique (case-insensitively), `mode`
  defaults to `sync`; `timeout`, `health_check_interval` and `shutdown_timeout` are positive Go
  durations. A hook, an MCP server and its executor need a `command`.
- An absolute resource path is `path_escapes_root`. A command built from `{{env:NAME}}`
  depends on the operator's environment and is not checked against the root.
- Declaring `capabilities.provides`/`actions.requires` without `subprocess.command` is a
  warning, not an error.
- Documents are UTF-8 without a byte order mark, at most 1 MiB, nested at most 64 levels, and
  hold only JSON values (no TOML dates, NaN or infinities, even in free-form tables).
"""

from typing import TYPE_CHECKING

from pkgmgr.lazy import lazy_exports

if TYPE_CHECKING:
    from pkgmgr.manifest.codec import (
        MANIFEST_FILES,
        MAX_MANIFEST_BYTES,
        decode_manifest,
        find_manifest,
        load_manifest_bytes,
        read_manifest,
    )
    from pkgmgr.manifest.durations import parse_go_duration, parse_go_duration_ns
    from pkgmgr.manifest.host import check_host
    from pkgmgr.manifest.network import network_digest, network_json, normalize_network
    from pkgmgr.manifest.parsed import Bridge, Command, Hook, Manifest, Subprocess
    from pkgmgr.manifest.paths import command_path_problem, relative_path_problem
    from pkgmgr.manifest.templates import is_env_name, looks_secret, resolve_template
    from pkgmgr.manifest.validate import parse_manifest

# each name imported on first use (`pkgmgr.lazy`): a command that reads only
# `pkgmgr.manifest.generations` (the configuration does) loads no codec
__getattr__ = lazy_exports(__name__, globals(), {
    "codec": ("MANIFEST_FILES", "MAX_MANIFEST_BYTES", "decode_manifest", "find_manifest", "load_manifest_bytes",
              "read_manifest"),
    "durations": ("parse_go_duration", "parse_go_duration_ns"),
    "host": ("check_host",),
    "network": ("network_digest", "network_json", "normalize_network"),
    "parsed": ("Bridge", "Command", "Hook", "Manifest", "Subprocess"),
    "paths": ("command_path_problem", "relative_path_problem"),
    "templates": ("is_env_name", "looks_secret", "resolve_template"),
    "validate": ("parse_manifest",),
})

__all__ = [
    "MANIFEST_FILES",
    "MAX_MANIFEST_BYTES",
    "Bridge",
    "Command",
    "Hook",
    "Manifest",
    "Subprocess",
    "check_host",
    "command_path_problem",
    "decode_manifest",
    "find_manifest",
    "is_env_name",
    "load_manifest_bytes",
    "looks_secret",
    "network_digest",
    "network_json",
    "normalize_network",
    "parse_go_duration",
    "parse_go_duration_ns",
    "parse_manifest",
    "read_manifest",
    "relative_path_problem",
    "resolve_template",
]
