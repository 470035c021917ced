"""Record Gemini CLI's verdict on every corpus case into verdicts.json.

    PKGMGR_TEST_NPM_PREFIX=DIR python -m tests.hosts.gemini.record [CASE_ID...]

DIR holds `@google/gemini-cli` (`npm install --prefix DIR @google/gemini-cli@VERSION`). Each case
is built in a scratch folder and given to `gemini extensions validate` and to `gemini extensions
install --consent --skip-settings` in a fresh home (then `list -o json` when it installed). Naming
cases re-records only those; the others keep their recorded verdicts.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.hosts import realcli
from tests.hosts.conformance import build, record_main
from tests.hosts.gemini.cases import CASES

VERDICTS = Path(__file__).with_name("verdicts.json")


def load() -> dict[str, Any]:
    return json.loads(VERDICTS.read_text(encoding="utf-8"))


def record(cli: Path, case: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pkgmgr-gemini-corpus-") as tmp:
        scratch = Path(tmp)
        source = build(scratch / "src" / "ext", case["files"])
        return realcli.gemini_verdict(cli, source, scratch)


if __name__ == "__main__":
    sys.exit(record_main("gemini", sys.argv[1:], CASES, VERDICTS, record))
