"""Record Claude Code's verdict on every corpus case into verdicts.json.

    PKGMGR_TEST_NPM_PREFIX=DIR python -m tests.hosts.claude.record [CASE_ID...]

DIR holds `@anthropic-ai/claude-code` (`npm install --prefix DIR @anthropic-ai/claude-code@VERSION`).
Each case is built in a scratch folder inside a directory marketplace and given to `claude plugin
validate --json`, to `claude plugin validate --json --strict`, and, in a fresh config directory,
to `claude plugin marketplace add`, `claude plugin install corpus-plugin@corpus` and `claude
plugin list --json`. Naming cases re-records only those; the others keep their recorded verdicts.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.hosts import realcli
from tests.hosts.claude.cases import CASES
from tests.hosts.conformance import build, record_main

VERDICTS = Path(__file__).with_name("verdicts.json")
ENTRY = "corpus-plugin"  # the marketplace entry every case is installed as


def load() -> dict[str, Any]:
    return json.loads(VERDICTS.read_text(encoding="utf-8"))


def record(cli: Path, case: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pkgmgr-claude-corpus-") as tmp:
        scratch = Path(tmp)
        plugin = build(scratch / "market" / "plugins" / "p", case["files"])
        return {"validate": realcli.claude_validate(cli, plugin, scratch / "v", strict=False),
                "strict": realcli.claude_validate(cli, plugin, scratch / "s", strict=True)["passed"],
                "install": realcli.claude_install_verdict(cli, plugin, ENTRY, scratch)}


if __name__ == "__main__":
    sys.exit(record_main("claude", sys.argv[1:], CASES, VERDICTS, record))
