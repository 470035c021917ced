"""Compozy conformance: `ext validate`'s verdict against Compozy's own loader, per generation,
over the corpus (manifest_, bundle_, agent_ and layout_cases.toml; each case names the
Go test or function that decides it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pkgmgr.manifest.generations import GENERATIONS
from tests.hosts.compozy.corpus import agrees, figures, judge, load_cases

CASES = load_cases()
DOC = Path(__file__).parents[3] / "docs" / "compatibility.md"


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_pkgmgr_gives_compozys_verdict(case, generation: str, tmp_path: Path) -> None:
    actual = judge(case.build(tmp_path / "ext"), generation)
    expected = case.pkgmgr[generation]
    assert agrees(expected, actual), f"{case.source}: Compozy {generation} says {case.compozy[generation]}, " \
                                     f"pkgmgr expected {expected}, got {actual}"


def test_every_case_names_its_source_and_stricter_cases_say_why() -> None:
    assert len({case.id for case in CASES}) == len(CASES)
    for case in CASES:
        assert case.source and all(case.compozy.values()), case.id
        assert (case.pkgmgr != case.compozy) == bool(case.stricter), case.id
        if case.stricter:
            assert "pkgmgr's rule" in case.stricter, case.id


def test_compatibility_doc_opens_with_the_corpus_figures(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    for generation, (agreed, total, stricter) in figures(tmp_path).items():
        line = f"| `{generation}` | {agreed} of {total} | {stricter} |"
        assert line in text, line
    assert re.search(r"^\| generation \| agreement", text, re.MULTILINE)
