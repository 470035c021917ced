"""`pkgmgr ext new NAME`: scaffold an extension that `ext validate`, `ext pack` and `ext install`
accept as it is, from one of three templates (resource, subprocess, bundle)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pkgmgr.cli.context import Context
from pkgmgr.cli.output import Output, Printer
from pkgmgr.errors import Code, PkgmgrError
from pkgmgr.fsutil import user_path

TEMPLATES = ("resource", "subprocess", "bundle")
HOSTS = ("compozy",)

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


def cmd_new(ctx: Context, args: argparse.Namespace) -> Output:
    from pkgmgr.refs import NAME_RE

    name = args.name
    if not NAME_RE.fullmatch(name):
        raise PkgmgrError(f"{name!r} is not an extension name (lower-case letters, digits and '-', "
                          "starting with a letter)", code=Code.USAGE)
    target = user_path(args.path) if args.path else Path.cwd() / name
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise PkgmgrError(f"{target} exists and is not empty; nothing was written", code=Code.USAGE,
                          hint="choose another NAME or --path DIR")
    files = files_for(args.template, name)
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if rel.endswith(".sh"):
            os.chmod(path, 0o755)
    data = {"name": name, "template": args.template, "host": args.host, "path": str(target),
            "files": sorted(files)}

    def human(p: Printer) -> None:
        p.line(f"created {args.template} extension {name} in {target}")
        p.lines(f"  {rel}" for rel in sorted(files))
        p.line(f"next: pkgmgr ext validate {target}")

    return Output(data, human)
