"""Bundle, profile, agent-folder and window-layout codecs and validators (SPEC 8). Pure: they
read an extension tree and never write.

- `load_bundles(root, manifest.bundles, reserved_agent_names=...)`: every scope-independent
  rule, all problems of all files in one `ValidationFailed`.
- `parse_layout(data, file=...)`: the strict window_layout codec (schema + topology).
- `layout_scope_problems(layout, scope, workspace_path)`: the scope binding, for activation.
- `parse_agent_md(text, file=...)`: AGENT.md front matter and prompt.

Importing this package imports none of its modules (each name loads on first use, `pkgmgr.lazy`),
nor jsonschema, PyYAML or croniter.

Where SPEC 8 is silent, the codecs decide (the safer reading):

- Documents are UTF-8 without BOM and hold only JSON values (no TOML dates, NaN, infinities,
  lone surrogates), nested at most 64 levels. Limits: bundle file and layout 4 MiB, AGENT.md,
  mcp.json and capabilities documents 1 MiB, SOUL.md/HEARTBEAT.md 64 KiB.
Compozy's loader decides (docs/compatibility.md names each function); in short:

- Root-level `name`/`description` and a `[bundle]` table merge unless their values differ;
  profiles in both places conflict. Unknown keys are ignored, as Compozy's decoders ignore them.
- Names (bundle, profile, channel, job, trigger, agent) are trimmed with Go's TrimSpace and
  must not be blank (control characters are refused: pkgmgr's rule). Bundles, profiles,
  agents and layout ids are unique case-insensitively; jobs, triggers and channels
  case-sensitively, as Compozy compares them. `channels.primary` must equal an item's name.
- AGENT.md: YAML through a safe loader that rejects duplicate keys and anchors/aliases; the
  body is stripped; `tools`/`deny_tools` are canonical tool ids (`namespace__name`, or a
  `namespace__*` prefix), `toolsets` toolset ids, `skills` a `{disabled: [...]}` table,
  `category_path` a list of segments, `mcp_servers` a list of server tables, `hooks` a list.
  mcp.json holds exactly one of `mcpServers`/`mcp_servers` (a map of objects)
  and nothing else. `capabilities/` holds only `.toml`/`.json` files; `AgentSpec.capabilities`
  maps each capabilities file (relative to the agent folder) to its document.
- Jobs and triggers: `retry` (strategy none: no max_retries or base_delay; backoff:
  max_retries > 0 and a positive base_delay) and `fire_limit` (`max` > 0, positive `window`)
  are required. RFC 3339 times need upper-case `T`/`Z` and no leap second (as Go parses them).
  Cron expressions follow robfig/cron v3's standard grammar (optional `CRON_TZ=` prefix,
  day-of-week 0-6, no descriptors). A trigger's `event` "webhook" is refused (a bundle
  cannot carry the webhook secret reference Compozy requires).
- Layouts: rect bounds and frame overlap tolerate 1e-9 of float error; group ids and node ids
  are two namespaces; `version`, `document.version` and `order` must be JSON integers (not 1.0).
- Paths keep `..` and resolve it after symlinks, as the host does; a path reached twice (two
  profiles sharing an agent folder) is loaded once and its file problems are reported once.
"""

from typing import TYPE_CHECKING

from pkgmgr.lazy import lazy_exports

if TYPE_CHECKING:
    from pkgmgr.bundles.agent import parse_agent_md
    from pkgmgr.bundles.bundle import AgentSpec, Bundle, Channel, Channels, JobSpec, LayoutSpec, Profile, TriggerSpec
    from pkgmgr.bundles.layout import MAX_LAYOUT_BYTES, layout_scope_problems, parse_layout
    from pkgmgr.bundles.loader import load_bundles

__getattr__ = lazy_exports(__name__, globals(), {
    "agent": ("parse_agent_md",),
    "bundle": ("AgentSpec", "Bundle", "Channel", "Channels", "JobSpec", "LayoutSpec", "Profile", "TriggerSpec"),
    "layout": ("MAX_LAYOUT_BYTES", "layout_scope_problems", "parse_layout"),
    "loader": ("load_bundles",),
})

__all__ = [
    "MAX_LAYOUT_BYTES",
    "AgentSpec",
    "Bundle",
    "Channel",
    "Channels",
    "JobSpec",
    "LayoutSpec",
    "Profile",
    "TriggerSpec",
    "layout_scope_problems",
    "load_bundles",
    "parse_agent_md",
    "parse_layout",
]
