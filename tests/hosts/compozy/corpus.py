"""The Compozy conformance corpus (`*_cases.toml`): reading the cases, materialising one in a
directory, judging it with pkgmgr, and the agreement figures of docs/compatibility.md."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.manifest import read_manifest
from pkgmgr.manifest.generations import GENERATIONS

HERE = Path(__file__).parent


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    compozy: dict[str, str]
    pkgmgr: dict[str, str]
    stricter: str
    files: dict[str, str]
    dirs: tuple[str, ...]

    def build(self, root: Path) -> Path:
        root.mkdir(parents=True, exist_ok=True)
        for rel in self.dirs:
            (root / rel).mkdir(parents=True, exist_ok=True)
        for rel, text in self.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text.lstrip("\n"), encoding="utf-8")
        return root


def _per_generation(table: dict[str, str]) -> dict[str, str]:
    return {name: table.get(name, table.get("all", "")) for name in GENERATIONS}


def load_cases(kind: str = "manifest") -> list[Case]:
    data = tomllib.loads((HERE / f"{kind}_cases.toml").read_text(encoding="utf-8"))
    cases = []
    for raw in data["case"]:
        compozy = _per_generation(raw["compozy"])
        cases.append(Case(raw["id"], raw["source"], compozy, _per_generation(raw.get("pkgmgr", raw["compozy"])),
                          raw.get("stricter", ""), raw.get("files", {}), tuple(raw.get("dirs", ()))))
    return cases


def judge(root: Path, generation: str) -> str:
    """pkgmgr's verdict in the corpus's terms: "loads" or "refuses:<first problem's key>"."""
    try:
        read_manifest(root, generation=generation)
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


def figures(tmp: Path, kind: str = "manifest") -> dict[str, tuple[int, int, int]]:
    """Per generation: (cases where pkgmgr gives Compozy's verdict, cases, cases where pkgmgr
    refuses more on purpose)."""
    result = {}
    for generation in GENERATIONS:
        agreed = stricter = 0
        cases = load_cases(kind)
        for case in cases:
            actual = judge(case.build(tmp / generation / case.id), generation)
            agreed += agrees(case.compozy[generation], actual)
            stricter += bool(case.stricter) and agrees(case.pkgmgr[generation], actual)
        result[generation] = (agreed, len(cases), stricter)
    return result
