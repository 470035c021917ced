"""The Compozy conformance corpus (`*_cases.toml`): reading the cases, materialising one in a
directory, judging it with pkgmgr, and the agreement figures of docs/compatibility.md."""

from __future__ import annotations

import base64
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pkgmgr.bundles import load_bundles
from pkgmgr.config import DEFAULT_RESERVED_AGENTS
from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.manifest import read_manifest
from pkgmgr.manifest.generations import GENERATIONS, V03, has_bundles

HERE = Path(__file__).parent
KINDS = ("manifest", "bundle", "agent", "layout", "job")
#: the manifest of a bundle or agent case that brings none: one bundle directory
BUNDLE_MANIFEST = """name = "bundle-case"
version = "0.1.0"
min_compozy_version = "0.5.0"
[resources]
bundles = ["bundles"]
"""


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    compozy: dict[str, str]
    pkgmgr: dict[str, str]
    stricter: str
    files: dict[str, str]
    dirs: tuple[str, ...]
    binary: tuple[tuple[str, bytes], ...] = ()  # files given as base64 (bytes that are not UTF-8 text)

    def build(self, root: Path) -> Path:
        root.mkdir(parents=True, exist_ok=True)
        for rel in self.dirs:
            (root / rel).mkdir(parents=True, exist_ok=True)
        for rel, text in self.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text.lstrip("\n"), encoding="utf-8")
        for rel, data in self.binary:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        return root


def _per_generation(table: dict[str, str], bundled: bool) -> dict[str, str]:
    """A verdict per generation; in bundle and agent cases `all` means every generation with
    bundles, and v0.3 (no bundles) refuses the manifest's resources.bundles unless told."""
    verdicts = {}
    for name in GENERATIONS:
        default = "refuses:resources.bundles" if bundled and name == V03 else table.get("all", "")
        verdicts[name] = table.get(name, default)
    return verdicts


def load_cases(kind: str | None = None) -> list[Case]:
    """The cases of one corpus file (`<kind>_cases.toml`), or of all of them."""
    cases = []
    for name in (kind,) if kind else KINDS:
        data = tomllib.loads((HERE / f"{name}_cases.toml").read_text(encoding="utf-8"))
        bundled = name != "manifest"
        for raw in data["case"]:
            files = dict(raw.get("files", {}))
            files.update({rel: spec["text"] * spec["repeat"] for rel, spec in raw.get("generated", {}).items()})
            if bundled:
                files.setdefault("extension.toml", BUNDLE_MANIFEST)
            binary = tuple((rel, base64.b64decode(data)) for rel, data in raw.get("base64", {}).items())
            cases.append(Case(f"{name}/{raw['id']}", raw["source"], _per_generation(raw["compozy"], bundled),
                              _per_generation(raw.get("pkgmgr", raw["compozy"]), bundled),
                              raw.get("stricter", ""), files, tuple(raw.get("dirs", ())), binary))
    return cases


def judge(root: Path, generation: str) -> str:
    """pkgmgr's verdict in the corpus's terms: "loads" or "refuses:<first problem's key>"."""
    try:
        manifest = read_manifest(root, generation=generation)
        if has_bundles(generation) and manifest.bundles:
            load_bundles(root, manifest.bundles, reserved_agent_names=DEFAULT_RESERVED_AGENTS, generation=generation,
                         provides=manifest.capabilities)
    except ValidationFailed as exc:
        return "refuses:" + ";".join(problem.key for problem in exc.problems)
    except PkgmgrError:
        return "refuses:"
    return "loads"


def agrees(expected: str, actual: str) -> bool:
    """Same verdict; for a refusal, pkgmgr names the field Compozy names (or one inside it)."""
    if expected == "loads" or actual == "loads":
        return expected == actual
    field = expected.removeprefix("refuses:")
    keys = actual.removeprefix("refuses:").split(";")
    return any(key == field or key.startswith((field + ".", field + "[")) for key in keys) or not field


def figures(tmp: Path, kind: str | None = None) -> dict[str, tuple[int, int, int]]:
    """Per generation: (cases where pkgmgr gives Compozy's verdict, cases, cases where pkgmgr
    refuses more on purpose)."""
    result = {}
    for generation in GENERATIONS:
        agreed = stricter = 0
        cases = load_cases(kind)
        for case in cases:
            actual = judge(case.build(tmp / generation / case.id.replace("/", "-")), generation)
            agreed += agrees(case.compozy[generation], actual)
            stricter += bool(case.stricter) and agrees(case.pkgmgr[generation], actual)
        result[generation] = (agreed, len(cases), stricter)
    return result


def table(tmp: Path) -> str:
    """The opening table of docs/compatibility.md and the line that counts the cases."""
    rows = ["| generation | agreement with Compozy | refused on purpose (pkgmgr's rules) |", "|---|---|---|"]
    rows += [f"| `{generation}` | {agreed} of {total} | {stricter} |"
             for generation, (agreed, total, stricter) in figures(tmp).items()]
    counts = ", ".join(f"{len(load_cases(kind))} {kind} cases" for kind in KINDS)
    return "\n".join(rows) + f"\n\nThe corpus: {counts}."


if __name__ == "__main__":  # python -m tests.hosts.compozy.corpus: what the doc's table should say
    import tempfile

    with tempfile.TemporaryDirectory(prefix="pkgmgr-corpus-") as scratch:
        print(table(Path(scratch)))
