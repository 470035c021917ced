"""Fuzzing terva's manifest codec (pkgmgr.hosts.terva): whatever extension.json holds — mutations
of a valid manifest (keys in Go's folded spellings, values of every JSON type, escaped lone
surrogates, nesting up to and past pkgmgr's 512 levels), edits of its text, arbitrary bytes —
judging the folder gives a Judged or a PkgmgrError with terva's codes, and either one can be
written as UTF-8 JSON (what `ext validate -o json` prints): never anything else, never exit 70.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts.terva import Terva
from tests.bundles.test_fuzz import json_values, mutations
from tests.fuzz.strategies import FUZZ, edited, encoded, ran

pytestmark = pytest.mark.slow

CODES = {"invalid_manifest", "path_escapes_root"}
VALID = {"name": "hello", "version": "0.1.0", "exec": "./run.sh", "args": ["--x"], "language": "sh",
         "description": "says hello", "enabled": True, "data_secrets": False, "connector": False,
         "config": [{"key": "token", "label": "Token", "type": "secret", "default": None, "required": True,
                     "secret": True, "description": "d", "options": ["a"]}]}
# spellings Go folds onto a field, and escapes Go reads its own way
KEYS = st.sampled_from(["NAME", "Exec", "ARGS", "arg\u017f", "de\u017fcription", "data_\u017fecrets", "\u212aey",
                        "Enabled", "l\u0131nguage", ""])
TRICKS = st.sampled_from(["\\ud800", "\\udc00x", "\\ud83d\\ude00", "\\ude00\\ud83d", "\\u0000", "\\\\ud800", "\u2028",
                          "\\u001b", "\\uffff"])


@st.composite
def folded(draw: st.DrawFn) -> dict[str, Any]:
    """The valid manifest with keys respelled and a value or two replaced."""
    mutated = draw(mutations(VALID)) if draw(st.booleans()) else VALID
    if not isinstance(mutated, dict):
        return {"x": mutated}
    document = dict(mutated)
    for _ in range(draw(st.integers(0, 3))):
        document[draw(KEYS)] = draw(json_values)
    return document


def as_text(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False, default=str)


@st.composite
def with_escapes(draw: st.DrawFn) -> bytes:
    """The valid manifest's text with escapes (lone surrogates, NUL, ...) inside its strings."""
    text = as_text(VALID)
    for _ in range(draw(st.integers(1, 4))):
        quotes = [i for i, char in enumerate(text) if char == '"']
        at = draw(st.sampled_from(quotes))
        text = text[:at + 1] + draw(TRICKS) + text[at + 1:]
    return text.encode("utf-8")


@st.composite
def nested(draw: st.DrawFn) -> bytes:
    """A value nested 1 to 600 levels deep in an unknown key or in config's default."""
    depth = draw(st.integers(1, 600))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    inner = opener * depth + ("1" if opener != "[" else "") + closer * depth
    where = draw(st.sampled_from(['{"name":"deep","exec":"./run.sh","x":%s}',
                                  '{"name":"deep","exec":"./run.sh","config":[{"key":"k","default":%s}]}']))
    return (where % inner).encode()


@pytest.fixture(scope="module")
def extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("terva-fuzz") / "hello"
    (root / "bin").mkdir(parents=True)
    for rel in ("run.sh", "bin/run"):
        (root / rel).write_text("#!/bin/sh\nexit 0\n")
        os.chmod(root / rel, 0o755)
    return root


@FUZZ
@given(raw=st.one_of(
    folded().map(lambda d: as_text(d).encode("utf-8", "surrogatepass")),
    with_escapes(),
    nested(),
    encoded(edited(as_text(VALID))),
    st.binary(max_size=400),
))
def test_terva_manifests(extension: Path, raw: bytes) -> None:
    (extension / "extension.json").write_bytes(raw)
    try:
        judged = Terva().judge(extension)
    except PkgmgrError as error:
        codes = {error.code, *(problem.code for problem in getattr(error, "problems", ()))}
        assert codes <= CODES, error
        json.dumps(error.to_json(), ensure_ascii=False).encode("utf-8")
        ran("terva manifest", error.code)
        return
    json.dumps([judged.summary(), judged.document, judged.details, judged.warnings],
               ensure_ascii=False).encode("utf-8")
    ran("terva manifest", True)
