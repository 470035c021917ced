"""The real Gemini CLI and Claude Code, run as pkgmgr's conformance oracles.

Both come from npm (`@google/gemini-cli`, `@anthropic-ai/claude-code`), installed into a cache
folder that `PKGMGR_TEST_NPM_PREFIX` names (`.ci/run` installs the versions pinned in `PINNED`
there: `npm install --prefix DIR ...`). Each run gets a fresh home of its own (`HOME`, and for
Claude `CLAUDE_CONFIG_DIR`), no network and no account: the commands used here never need one.

The verdicts are kept as pkgmgr's own categories (`classify_gemini`, the error paths of
`claude plugin validate --json`): no host text is stored in the corpora.

`python -m tests.hosts.gemini.record` and `python -m tests.hosts.claude.record` re-record the
corpora's verdicts from these CLIs; `tests/hosts/test_real_clis.py` re-runs a sample to catch
drift.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREFIX_VARIABLE = "PKGMGR_TEST_NPM_PREFIX"
PINNED = {"gemini": ("@google/gemini-cli", "0.61.0"), "claude": ("@anthropic-ai/claude-code", "2.1.332")}
TIMEOUT = 90  # seconds: a CLI that waits for an answer on its closed stdin is stopped (never expected)
# the environment a CLI sees: nothing of the caller's beyond the basics (no account, no proxy)
_KEEP = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")


@dataclass(frozen=True)
class Run:
    code: int  # the exit status; -1 when stopped by the timeout
    out: str  # stdout and stderr together (the CLIs print errors on either)


def prefix() -> Path | None:
    value = os.environ.get(PREFIX_VARIABLE, "")
    return Path(value) if value else None


def executable(host: str) -> Path | None:
    """The installed CLI of `host` ("gemini" | "claude"), None when it is not installed."""
    base = prefix()
    if base is None:
        return None
    path = base / "node_modules" / ".bin" / host
    return path if path.exists() else None


def installed_version(host: str) -> str | None:
    """The version in the installed package.json (no CLI start)."""
    base = prefix()
    if base is None:
        return None
    package = base / "node_modules" / Path(PINNED[host][0]) / "package.json"
    try:
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def run(cli: Path, args: list[str], *, home: Path, cwd: Path, env: dict[str, str] | None = None) -> Run:
    """`cli args...` with `home` as HOME (created), stdin closed, output captured."""
    home.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    environment = {k: os.environ[k] for k in _KEEP if k in os.environ}
    environment.update({"HOME": str(home), "NO_COLOR": "1", "FORCE_COLOR": "0", "CI": "1",
                        "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                        "DISABLE_AUTOUPDATER": "1", "GEMINI_CLI_TRUST_WORKSPACE": "true",
                        "GEMINI_TELEMETRY_ENABLED": "false",
                        # Gemini CLI starts a second node process of itself only to raise the heap
                        # limit, and sets this in that child: the same CLI, ~1.4 s less per run
                        "GEMINI_CLI_NO_RELAUNCH": "true"})
    environment.update(env or {})
    try:
        done = subprocess.run([str(cli), *args], cwd=cwd, env=environment, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") + (exc.stderr or b"")
        return Run(-1, out.decode("utf-8", "replace"))
    return Run(done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace"))


# --- Gemini CLI -----------------------------------------------------------------------------------

# What a failed `gemini extensions validate|install` said, as pkgmgr's category (first match wins).
_GEMINI_CATEGORIES = (
    ("config-not-found", "Configuration file not found"),
    ("missing-name", 'missing "name"'),
    ("missing-version", 'missing "version"'),
    ("invalid-name", "Invalid extension name"),
    ("context-invalid", "Invalid context file path"),
    ("context-missing", "context files referenced in gemini-extension.json are missing"),
    ("not-loaded", "Extension not found"),
    ("already-installed", "already installed"),
    ("directory-exists", "a directory with that name already exists"),
    ("parse", r"JSON|Unexpected token|Unexpected end|Unexpected non-whitespace|Bad control|Bad escaped|"
              r"Unterminated string|Expected property name|Expected ',' or|Expected double-quoted|"
              r"No number after|Exponent part|Unexpected character|is not valid JSON"),
    ("type-error", r"is not a function|Cannot read propert|Cannot destructure|must be of type string|"
                   r"Cannot convert|is not iterable|is not a constructor|Invalid string length"),
    ("name-too-long", "ENAMETOOLONG"),
    ("stack-overflow", "Maximum call stack"),
    ("unreadable", "EISDIR|EACCES"),
)


def classify_gemini(result: Run) -> str:
    """"ok", or "refuse:<category>" for a failed command, "timeout" for a stopped one."""
    if result.code == -1:
        return "timeout"
    if result.code == 0:
        return "ok"
    for category, pattern in _GEMINI_CATEGORIES:
        if re.search(pattern, result.out):
            return f"refuse:{category}"
    return "refuse:other"


def gemini_warnings(result: Run) -> list[str]:
    """The warnings of a passing `gemini extensions validate`, as categories."""
    return ["version-not-semver"] if "does not appear to be standard semver" in result.out else []


def gemini_verdict(cli: Path, source: Path, scratch: Path) -> dict[str, Any]:
    """`validate` of `source`, then `install --consent --skip-settings` into a fresh home and,
    when it installed, `list -o json` in a new process: what each said, and whether a failed
    install left a folder behind in the extensions folder."""
    validated = run(cli, ["extensions", "validate", str(source)], home=scratch / "home-v", cwd=scratch / "work")
    home = scratch / "home-i"
    installed = run(cli, ["extensions", "install", str(source), "--consent", "--skip-settings"], home=home,
                    cwd=scratch / "work")
    folder = home / ".gemini" / "extensions"
    left = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    verdict: dict[str, Any] = {"validate": classify_gemini(validated), "warnings": gemini_warnings(validated),
                               "install": classify_gemini(installed)}
    if verdict["install"] == "ok":
        listed = run(cli, ["extensions", "list", "-o", "json"], home=home, cwd=scratch / "work")
        verdict["listed"] = classify_gemini(listed) == "ok" and _listed_names(listed.out) == left
    else:
        verdict["left_behind"] = bool(left)
    return verdict


def _listed_names(out: str) -> list[str]:
    value = _json_array(out)
    return sorted(str(e.get("name")) for e in value if isinstance(e, dict)) if value is not None else []


def _json_array(out: str) -> list[Any] | None:
    """The JSON array a CLI printed among its log lines (it starts a line: `[` then a newline or `]`)."""
    match = re.search(r"^\[(?:\n|\])", out, re.MULTILINE)
    if match is None:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(out[match.start():])
    except ValueError:
        return None
    return value if isinstance(value, list) else None


# --- Claude Code ----------------------------------------------------------------------------------


def claude_env(config: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(config)}


def claude_validate(cli: Path, target: Path, scratch: Path, *, strict: bool) -> dict[str, Any]:
    """`claude plugin validate --json [--strict] target`: passed or not, and the error and warning
    paths of the manifest (field names) and of the component files it read (`file:path`, the
    file relative to `target`); pkgmgr keeps no host text."""
    args = ["plugin", "validate", "--json", *(["--strict"] if strict else []), str(target)]
    result = run(cli, args, home=scratch / "home", cwd=scratch / "work", env=claude_env(scratch / "config"))
    if result.code == -1:
        return {"passed": False, "errors": ["<timeout>"], "warnings": []}
    report = _json_object(result.out)
    if report is None:
        return {"passed": result.code == 0, "errors": ["<no report>"], "warnings": []}
    errors: set[str] = set()
    warnings: set[str] = set()
    for report_of in [report.get("manifest") or {}, *(report.get("contents") or [])]:
        file = str(report_of.get("file") or "")
        where = "" if file.endswith("plugin.json") or not file else os.path.relpath(file, target) + ":"
        errors.update(where + str(e.get("path", "")) for e in report_of.get("errors") or [] if isinstance(e, dict))
        warnings.update(where + str(w.get("path", "")) for w in report_of.get("warnings") or [] if isinstance(w, dict))
    return {"passed": result.code == 0, "errors": sorted(errors), "warnings": sorted(warnings)}


def _json_object(out: str) -> dict[str, Any] | None:
    start = out.find("{")
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(out[start:])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def write_marketplace(root: Path, name: str, plugins: dict[str, str]) -> Path:
    """A directory marketplace `root/.claude-plugin/marketplace.json` listing `plugins`
    (entry name -> source path relative to `root`, `./` first)."""
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    document = {"name": name, "owner": {"name": "pkgmgr tests"},
                "plugins": [{"name": entry, "source": source} for entry, source in plugins.items()]}
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return root


def claude_list(cli: Path, scratch: Path, *, cwd: Path | None = None) -> list[dict[str, Any]]:
    """`claude plugin list --json`, the built-in plugins left out."""
    result = run(cli, ["plugin", "list", "--json"], home=scratch / "home", cwd=cwd or scratch / "work",
                 env=claude_env(scratch / "config"))
    value = _json_array(result.out) or []
    return [p for p in value if isinstance(p, dict) and not str(p.get("id", "")).endswith("@builtin")]


def claude_install_verdict(cli: Path, plugin: Path, entry: str, scratch: Path) -> dict[str, Any]:
    """The plugin at `plugin` listed as `entry` in a directory marketplace, `marketplace add`,
    `install entry@M`, then `list --json`: installed, enabled, and the load errors it shows."""
    market = scratch / "market"
    write_marketplace(market, "corpus", {entry: "./" + os.path.relpath(plugin, market)})
    env = claude_env(scratch / "config")
    added = run(cli, ["plugin", "marketplace", "add", str(market)], home=scratch / "home", cwd=scratch / "work",
                env=env)
    if added.code != 0:
        return {"installed": False, "stage": "marketplace"}
    done = run(cli, ["plugin", "install", f"{entry}@corpus"], home=scratch / "home", cwd=scratch / "work", env=env)
    if done.code != 0:
        return {"installed": False, "stage": "install"}
    [listed] = [p for p in claude_list(cli, scratch) if p.get("id") == f"{entry}@corpus"] or [{}]
    return {"installed": True, "enabled": bool(listed.get("enabled")), "load_error": bool(listed.get("errors"))}
