"""The documents at their extremes: nested 10,000 levels deep (arrays, inline tables, dotted keys,
JSON objects, YAML flow collections, a directory chain in an archive) and huge (just under and
just over each size cap, or several MiB where there is no cap). Every target answers with a
value or its own error code — no RecursionError, MemoryError or traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from pkgmgr.archive import extract_archive
from pkgmgr.bundles import load_bundles, parse_layout
from pkgmgr.config import Limits, parse_config
from pkgmgr.errors import PkgmgrError
from pkgmgr.manifest import load_manifest_bytes
from pkgmgr.registry.index_format import parse_entry, parse_index, parse_registry
from pkgmgr.workspace.declaration import parse_workspace_manifest
from pkgmgr.workspace.lockfile import parse_lock
from tests.archive.conftest import make_sandbox
from tests.archive.corpus import MANIFEST, T, Z, tar_gz, zip_file
from tests.bundles.test_fuzz import LIGHT_BUNDLE, VALID_AGENT, VALID_LAYOUT
from tests.fuzz.conftest import replace_bundle
from tests.fuzz.strategies import as_toml, ran
from tests.fuzz.test_documents import CONFIG, ENTRY, LOCK, REGISTRY, WORKSPACE

pytestmark = pytest.mark.slow

DEPTH = 10_000
MIB = 1024 * 1024


def _outcome(call: Callable[[], object]) -> bool | str:
    try:
        call()
    except PkgmgrError as error:
        json.dumps(error.to_json())
        return error.code
    return True


def _bundle(root: Path, name: str, raw: bytes) -> bool | str:
    replace_bundle(root, name, raw)
    return _outcome(lambda: load_bundles(root, ["bundles"], reserved_agent_names=[]))


def _agent(root: Path, raw: bytes) -> bool | str:
    replace_bundle(root)
    agent = root / "agents" / "planner" / "AGENT.md"
    original = agent.read_bytes()
    agent.write_bytes(raw)
    try:
        return _outcome(lambda: load_bundles(root, ["bundles"], reserved_agent_names=[]))
    finally:
        agent.write_bytes(original)


def _problems(problems: list) -> bool | str:
    return problems[0].code if problems else True


@dataclass(frozen=True)
class Target:
    name: str
    kind: str  # toml | json | yaml
    valid: bytes  # a valid document
    code: str  # its error code
    cap: int | None  # its size cap (None: no cap)
    check: Callable[[Path, bytes], bool | str]


TARGETS = [
    Target("manifest", "toml", b'name = "demo-ext"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n',
           "invalid_manifest", MIB, lambda r, raw: _outcome(lambda: load_manifest_bytes(raw))),
    Target("manifest.json", "json", b'{"name": "demo-ext", "version": "0.1.0", "min_compozy_version": "0.5.0"}',
           "invalid_manifest", MIB, lambda r, raw: _outcome(lambda: load_manifest_bytes(raw, file="extension.json"))),
    Target("registry entry", "toml", as_toml(ENTRY), "invalid_index", MIB,
           lambda r, raw: _outcome(lambda: parse_entry(raw, "extensions/de/demo-ext.toml", expected_name="demo-ext"))),
    Target("registry.toml", "toml", as_toml(REGISTRY), "invalid_index", MIB,
           lambda r, raw: _outcome(lambda: parse_registry(raw))),
    Target("index.json", "json", b'{"format": 1, "serial": 1, "extensions": []}', "invalid_index", 16 * MIB,
           lambda r, raw: _outcome(lambda: parse_index(raw))),
    Target("config.toml", "toml", as_toml(CONFIG), "invalid_config", MIB,
           lambda r, raw: _outcome(lambda: parse_config(raw, Path("config.toml")))),
    Target("pkgmgr.toml", "toml", as_toml(WORKSPACE), "invalid_config", MIB,
           lambda r, raw: _outcome(lambda: parse_workspace_manifest(raw, r))),
    Target("pkgmgr.lock", "toml", as_toml(LOCK), "invalid_config", 4 * MIB,
           lambda r, raw: _outcome(lambda: parse_lock(raw))),
    Target("bundle", "json", json.dumps(LIGHT_BUNDLE).encode(), "invalid_bundle", 4 * MIB,
           lambda r, raw: _bundle(r, "main.json", raw)),
    Target("bundle.toml", "toml", as_toml(LIGHT_BUNDLE), "invalid_bundle", 4 * MIB,
           lambda r, raw: _bundle(r, "main.toml", raw)),
    Target("window layout", "json", json.dumps(VALID_LAYOUT).encode(), "invalid_layout", 4 * MIB,
           lambda r, raw: _problems(parse_layout(raw, file="layout.json")[1])),
    Target("AGENT.md", "yaml", VALID_AGENT.encode(), "invalid_bundle", MIB, lambda r, raw: _agent(r, raw)),
]
IDS = [t.name for t in TARGETS]


def nested(kind: str, shape: str, depth: int = DEPTH) -> bytes:
    """A document nested `depth` levels deep, in the syntax of `kind`."""
    if kind == "json":
        body = "[" * depth + "]" * depth if shape == "array" else '{"a": ' * depth + "1" + "}" * depth
        return ('{"name": ' + body + "}").encode()
    if kind == "yaml":
        body = "[" * depth + "]" * depth if shape == "array" else "{a: " * depth + "1" + "}" * depth
        return f"---\nname: planner\ntools: {body}\n---\n\nPrompt.\n".encode()
    if shape == "array":
        return ("name = " + "[" * depth + "]" * depth + "\n").encode()
    if shape == "table":
        return ("name = " + "{a = " * depth + "1" + "}" * depth + "\n").encode()
    return ("name" + ".a" * depth + " = 1\n").encode()  # dotted keys: no recursion in the TOML parser


SHAPES = {"toml": ["array", "table", "dotted"], "json": ["array", "object"], "yaml": ["array", "mapping"]}
DEEP = [(t, shape) for t in TARGETS for shape in SHAPES[t.kind]]


@pytest.mark.parametrize("target, shape", DEEP, ids=[f"{t.name}-{shape}" for t, shape in DEEP])
def test_nested_ten_thousand_levels(target: Target, shape: str, extension: Path) -> None:
    outcome = target.check(extension, nested(target.kind, shape))
    assert outcome == target.code, outcome
    ran("nested 10,000 levels", outcome)


def padded(target: Target, size: int) -> bytes:
    """The valid document grown to exactly `size` bytes with what its syntax ignores."""
    raw = target.valid
    if target.kind == "toml":
        line = b"# " + b"x" * 1021 + b"\n"  # 1 KiB comment lines
        raw += line * ((size - len(raw)) // len(line))
        return raw + b"#" * (size - len(raw) - 1) + b"\n" if size - len(raw) > 0 else raw
    if target.kind == "json":
        return raw + b" " * (size - len(raw))
    return raw + b"Prompt line.\n" * ((size - len(raw)) // 13) + b"x" * ((size - len(raw)) % 13)


HUGE = [(t, which) for t in TARGETS for which in (("under", "over") if t.cap else ("several-mib",))]


@pytest.mark.parametrize("target, which", HUGE, ids=[f"{t.name}-{w}" for t, w in HUGE])
def test_huge_documents(target: Target, which: str, extension: Path) -> None:
    assert target.check(extension, target.valid) is True
    size = {"under": (target.cap or 0) - 1, "over": (target.cap or 0) + 1, "several-mib": 6 * MIB}[which]
    raw = padded(target, size)
    assert len(raw) == size
    outcome = target.check(extension, raw)
    assert outcome == (target.code if which == "over" else True), outcome
    ran(f"huge ({which} the cap)" if target.cap else "huge (no cap)", outcome)


def test_an_archive_nested_ten_thousand_directories(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path / "top")
    chain = "pkg/" + "d/" * DEPTH + "f"
    archive = tar_gz(box.archives / "deep.tar.gz", [T("pkg/extension.toml", MANIFEST), T(chain, b"x")])
    before = box.snapshot()
    outcome = _outcome(lambda: extract_archive(archive, box.staging, Limits()))
    assert outcome in ("unsafe_archive", "invalid_archive", True), outcome
    if outcome is not True:
        box.assert_untouched(before)
    ran("nested 10,000 levels", outcome)


def test_an_archive_one_member_over_the_entry_limit(tmp_path: Path) -> None:
    """10,001 members (the default limit is 10,000), as a zip: refused from its central directory
    before anything is written. (A tar.gz is refused at its 10,001st member, after streaming the
    others; the corpus checks that with small limits.)"""
    box = make_sandbox(tmp_path / "top")
    members = [Z("pkg/extension.toml", MANIFEST)] + [Z(f"pkg/f/{i}", b"") for i in range(Limits().max_entries)]
    archive = zip_file(box.archives / "many.zip", members)
    before = box.snapshot()
    outcome = _outcome(lambda: extract_archive(archive, box.staging, Limits()))
    assert outcome == "archive_too_large", outcome
    box.assert_untouched(before)
    ran("huge (over the cap)", outcome)


def huge_integer(kind: str, digits: int = 5000) -> bytes:
    """A document whose `name` is an integer of `digits` digits (Python's int() refuses > 4,300)."""
    number = "1" + "0" * (digits - 1)
    if kind == "json":
        return ('{"name": ' + number + "}").encode()
    if kind == "yaml":
        return f"---\nname: {number}\n---\n\nPrompt.\n".encode()
    return f"name = {number}\n".encode()


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_integers_beyond_pythons_digit_limit(target: Target, extension: Path) -> None:
    outcome = target.check(extension, huge_integer(target.kind))
    assert outcome == target.code, outcome
    ran("integer of 5,000 digits", outcome)


TOML_TARGETS = [t for t in TARGETS if t.kind == "toml"]


@pytest.mark.parametrize("target", TOML_TARGETS, ids=[t.name for t in TOML_TARGETS])
@pytest.mark.parametrize("shape", ["key", "table", "array-table"])
def test_dotted_keys_of_80_kb(target: Target, shape: str, extension: Path) -> None:
    path = "a." * 40_000 + "b"  # tomllib is quadratic in a key's depth: a minute for this one
    text = {"key": f"{path} = 1\n", "table": f"[{path}]\n", "array-table": f"[[{path}]]\n"}[shape]
    outcome = target.check(extension, text.encode())
    assert outcome == target.code, outcome
    ran("dotted key of 80 KB", outcome)
