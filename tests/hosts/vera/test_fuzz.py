"""Vera's codec under arbitrary input: any JSON value, any field value and any bytes give a result
or an error code (never another exception, never exit 70); and the two JavaScript semantics
Vera's verdicts hang on — `String.prototype.trim` and `localeCompare` — checked against Node
when it is on the machine."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts import jsonfmt
from pkgmgr.hosts.vera import JS_WHITESPACE, Vera, js_trim, locale_key

BASE = {"id": "acme.context-tools", "version": "1.0.0", "sdk": "1", "entrypoint": "./extension.ts",
        "capabilities": ["commands.register"]}
# every code point class that matters: surrogates, NUL, controls, the trim differences, marks, astral
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                      max_leaves=20)
FIELDS = st.sampled_from(["id", "version", "sdk", "entrypoint", "capabilities", "contributes"])
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def judge(root: Path, raw: bytes) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "extension.ts").write_text("export default {}\n")
    (root / "vera.extension.json").write_bytes(raw)
    try:
        judged = Vera().judge(root)
    except PkgmgrError as exc:
        assert exc.code in ("invalid_manifest", "path_escapes_root"), exc
        return
    for text in (judged.name, judged.version, judged.entry, *judged.capabilities):
        text.encode("utf-8")  # what pkgmgr prints and records is UTF-8


def encoded(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode()  # unpaired surrogates as \\udXXX escapes


@SETTINGS
@given(value=VALUES)
def test_any_json_document(tmp_path_factory: pytest.TempPathFactory, value: Any) -> None:
    judge(tmp_path_factory.mktemp("doc"), encoded(value))


@SETTINGS
@given(field=FIELDS, value=VALUES)
def test_any_value_of_a_field(tmp_path_factory: pytest.TempPathFactory, field: str, value: Any) -> None:
    judge(tmp_path_factory.mktemp("field"), encoded({**BASE, field: value}))


@SETTINGS
@given(kind=st.sampled_from(["watches", "sidecars", "skills", "other"]), value=VALUES)
def test_any_contribution(tmp_path_factory: pytest.TempPathFactory, kind: str, value: Any) -> None:
    judge(tmp_path_factory.mktemp("contrib"), encoded({**BASE, "contributes": {kind: value}}))


@SETTINGS
@given(raw=st.binary(max_size=300))
def test_any_bytes(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    judge(tmp_path_factory.mktemp("bytes"), raw)


@SETTINGS
@given(version=TEXT, path=TEXT)
def test_records_are_written_as_utf8(version: str, path: str) -> None:
    """A record holds strings from the manifest (an unpaired surrogate escaped, as JSON.stringify does)."""
    record = {"id": "a", "version": version, "source": {"kind": "local", "path": "/" + path}}
    text = jsonfmt.js_stringify(record)
    assert json.loads(text.encode("utf-8")) == record


def test_js_trim_is_not_str_strip() -> None:
    assert js_trim("\ufeff1.0\ufeff") == "1.0" and "\ufeff1.0".strip() == "\ufeff1.0"
    for char in "\x85\x1c\x1d\x1e\x1f":
        assert js_trim(char) == char and char.strip() == ""
    assert js_trim("\u180e") == "\u180e"  # no longer a space in Unicode


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed: the trim and collation checks need it")
def test_trim_and_locale_compare_agree_with_node(tmp_path: Path) -> None:
    rng = random.Random(28)
    pool = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,;:!?'\"()[]{}@*/\\&#%`^+<=>|~$")
    pool += list("éèêëÉÈáàâäÄåÅæÆçñÑóòöÖøØœßúüÜýÿíïłŁđðþħαβΩωάабвяЯёЁ€£—–«»…©°±×½²ﬁＡａ") + [
        "e\u0301", "o\u0338", "\u0301", "\x01", "\x1f", "\u00ad", "\u200b", "\ufeff", "😀", "🎉", "①", "Ⅳ", "한", "ש", "ا"]
    names = list({"".join(rng.choice(pool) for _ in range(rng.randint(1, 5))) for _ in range(600)})
    pairs = [[rng.choice(names), rng.choice(names)] for _ in range(3000)]
    script = ("const fs=require('fs');const p=JSON.parse(fs.readFileSync(process.argv[1],'utf8'));"
              "const ws=[];for(let c=0;c<=0xffff;c++){if(String.fromCharCode(c).trim()==='')ws.push(c)}"
              "console.log(JSON.stringify({ws,cmp:p.map(([a,b])=>a.localeCompare(b))}))")
    (tmp_path / "pairs.json").write_text(json.dumps(pairs))
    out = json.loads(subprocess.run([NODE, "-e", script, str(tmp_path / "pairs.json")], check=True,
                                    capture_output=True, text=True, timeout=120).stdout)
    assert "".join(chr(c) for c in out["ws"]) == "".join(sorted(JS_WHITESPACE))
    wrong = []
    for (a, b), node in zip(pairs, out["cmp"], strict=True):
        mine = (locale_key(a) > locale_key(b)) - (locale_key(a) < locale_key(b))
        if mine != node:
            wrong.append((a, b, node, mine))
    assert not wrong, wrong[:10]
