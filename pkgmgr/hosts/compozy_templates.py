"""The templates of `pkgmgr ext new` for Compozy (resource, subprocess, bundle): extensions that
`ext validate`, `ext pack` and `ext install` accept as they are. Imported only by `ext new`."""

from __future__ import annotations

TEMPLATES = ("resource", "subprocess", "bundle")

_HEADER = '''[extension]
name = "{name}"
version = "0.1.0"
description = "{description}"
min_compozy_version = "0.5.0"
'''

_RESOURCE = _HEADER + '''
# Skills are folders holding a SKILL.md; hooks run a command on a host event.
[resources]
skills = ["skills"]

[[resources.hooks]]
name = "{name}-session-ready"
event = "session.post_create"
mode = "async"
command = "/bin/sh"
args = ["{{{{config_dir}}}}/hooks/session-ready.sh"]
'''

_SUBPROCESS = _HEADER + '''
# A subprocess extension: the host starts the command and talks to it over stdio.
[security]
capabilities = ["session.read"]

[subprocess]
command = "python3"
args = ["{{{{config_dir}}}}/server.py"]
shutdown_timeout = "10s"
'''

_BUNDLE = _HEADER + '''
# Bundles are activated with 'pkgmgr bundle activate {name}'.
[resources]
bundles = ["bundles"]
'''

_SKILL = '''---
name: {name}
description: What this skill helps with, in one sentence.
---

# {name}

Steps the agent follows when this skill applies.
'''

_HOOK = '''#!/bin/sh
# Runs when a session is created (event session.post_create).
exit 0
'''

_SERVER = '''"""The extension's subprocess: the host speaks to it on stdin/stdout."""

import sys


def main() -> int:
    for line in sys.stdin:
        sys.stdout.write(line)  # replace with the protocol your host speaks
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
'''

_BUNDLE_FILE = '''name = "{name}"
description = "{description}"

[[profiles]]
name = "default"
description = "One agent, one channel and a daily job"

[profiles.channels]
primary = "general"

[[profiles.channels.items]]
name = "general"
description = "Where the agent reports"

[[profiles.agents]]
path = "agents/assistant"

[[profiles.jobs]]
name = "daily-summary"
agent = "assistant"
prompt = "Summarize what happened today."

[profiles.jobs.schedule]
mode = "every"
interval = "24h"

[profiles.jobs.retry]
strategy = "backoff"
max_retries = 3
base_delay = "30s"

[profiles.jobs.fire_limit]
max = 1
window = "24h"
'''

_AGENT = '''---
name: assistant
model: sonnet
permissions: deny-all
---

You are the assistant of this bundle. Say what you do, and what you never do.
'''

_SOUL = '''# Soul

Calm and brief. Names what it is unsure of.
'''

_README = '''# {name}

{description}

    pkgmgr ext validate .
    pkgmgr ext pack . --output dist/
    pkgmgr ext install ./dist/{name}-0.1.0.tar.gz --allow-unverified

See docs/authoring.md of pkgmgr for every field.
'''


def files_for(template: str, name: str) -> dict[str, str]:
    """The files (relative path -> text) of a new extension `name` from `template`."""
    description = f"The {name} extension"
    fields = {"name": name, "description": description}
    files = {"README.md": _README.format(**fields)}
    if template == "resource":
        files["extension.toml"] = _RESOURCE.format(**fields)
        files[f"skills/{name}/SKILL.md"] = _SKILL.format(**fields)
        files["hooks/session-ready.sh"] = _HOOK
    elif template == "subprocess":
        files["extension.toml"] = _SUBPROCESS.format(**fields)
        files["server.py"] = _SERVER
    else:
        files["extension.toml"] = _BUNDLE.format(**fields)
        files[f"bundles/{name}.toml"] = _BUNDLE_FILE.format(**fields)
        files["agents/assistant/AGENT.md"] = _AGENT
        files["agents/assistant/SOUL.md"] = _SOUL
    return files
