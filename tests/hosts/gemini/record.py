"""Record Gemini CLI's verdict on every corpus case into verdicts.json.

    PKGMGR_TEST_NPM_PREFIX=DIR python -m tests.hosts.gemini.record [CASE_ID...]

DIR holds `@google/gemini-cli` (`npm install --prefix DIR @google/gemini-cli@VERSION`). Each case
is built in a scratch folder and given to `gemini extensions validate` and to `gemini extensions
install --consent --skip-settings` in a fresh home (then `list -o json` when it installed). Naming
cases re-records only those; the others keep their recorded verdicts.
"""

from __future__ import annotations

import datetime
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.hosts import realcli
from tests.hosts.corpus_files import build
from tests.hosts.gemini.cases import CASES

VERDICTS = Path(__file__).with_name("verdicts.json")


def load() -> dict[str, Any]:
    return json.loads(VERDICTS.read_text(encoding="utf-8"))


def record(cli: Path, case: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pkgmgr-gemini-corpus-") as tmp:
        scratch = Path(tmp)
        source = build(scratch / "src" / "ext", case["files"])
        return realcli.gemini_verdict(cli, source, scratch)


def main(argv: list[str]) -> int:
    cli = realcli.executable("gemini")
    if cli is None:
        print(f"no Gemini CLI: set {realcli.PREFIX_VARIABLE} to an npm prefix holding @google/gemini-cli",
              file=sys.stderr)
        return 2
    wanted = set(argv)
    previous = load()["cases"] if VERDICTS.exists() and wanted else {}
    verdicts = dict(previous)
    for case in CASES:
        if wanted and case["id"] not in wanted:
            continue
        verdicts[case["id"]] = record(cli, case)
        print(case["id"], json.dumps(verdicts[case["id"]]), flush=True)
    document = {"cli": realcli.PINNED["gemini"][0], "version": realcli.installed_version("gemini"),
                "recorded": datetime.date.today().isoformat(),
                "cases": {c["id"]: verdicts[c["id"]] for c in CASES if c["id"] in verdicts}}
    VERDICTS.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
