"""Vera's corpus from its code as it runs (`running.json`): every mutation of a manifest field and
of the document, and every source tree, with the verdict Vera's own `manifest.ts`,
`contributions.ts` and `manager.ts` gave when run under Bun (the commits are in the file; the
harness that ran them lives outside this repository, which keeps only cases and verdicts).

- a `load` case: `Vera().judge` and `pkgmgr ext validate` agree with `loadExtensionManifest`
  (accept or refuse, the field it names, the id, version and capabilities it reads);
- an `install` case: `pkgmgr ext install` agrees with `installExtension` (refused or not; the
  digest, the record, the registry and marker bytes, the installed tree, the folders' modes).

A case with `pkgmgr_rule` is one of pkgmgr's own bounds (docs/hosts.md): pkgmgr refuses it where
Vera loads it. No case may end in exit 70.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Any

import pytest

from pkgmgr.errors import ValidationFailed
from pkgmgr.hosts.vera import Vera, shown
from tests.support.cli import run_cli

CORPUS = json.loads((Path(__file__).parent / "running.json").read_text(encoding="utf-8"))
CASES = CORPUS["cases"]
LOAD = [c for c in CASES if c["mode"] == "load"]
INSTALL = [c for c in CASES if c["mode"] == "install"]


def _data(spec: Any) -> bytes:
    if isinstance(spec, str):
        return spec.encode("utf-8", "surrogatepass")
    if "zlib" in spec:
        return zlib.decompress(base64.b64decode(spec["zlib"]))
    if "base64" in spec:
        return base64.b64decode(spec["base64"])
    return str(spec["text"]).encode("utf-8", "surrogatepass")


def _name(rel: str) -> bytes:
    return base64.b64decode(rel[4:]) if rel.startswith("b64:") else rel.encode("utf-8", "surrogatepass")


def materialize(root: Path, files: dict[str, Any]) -> None:
    """A case's files on disk: text, bytes, empty directories, links, FIFOs, non-UTF-8 names."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, spec in files.items():
        path = os.path.join(os.fsencode(root), _name(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(spec, dict) and spec.get("dir"):
            os.makedirs(path, exist_ok=True)
        elif isinstance(spec, dict) and "symlink" in spec:
            os.symlink(spec["symlink"], path)
        elif isinstance(spec, dict) and spec.get("fifo"):
            os.mkfifo(path)
        else:
            with open(path, "wb") as handle:
                handle.write(_data(spec))
            os.chmod(path, int(spec.get("mode", 0o644)) if isinstance(spec, dict) else 0o644)


def build(tmp_path: Path, case: dict[str, Any]) -> Path:
    base = tmp_path / "case"
    materialize(base, case.get("outside", {}))
    materialize(base / "ext", case["files"])
    if case.get("source_link"):
        os.symlink("ext", base / "link")
        return base / "link"
    return base / "ext"


def _same(vera: dict[str, Any], key: str, value: Any) -> None:
    """The value pkgmgr read against Vera's (unpaired surrogates shown as U+FFFD; long values
    are recorded by their sha256)."""
    if f"{key}_sha256" in vera:
        raw = json.dumps(value, sort_keys=True, ensure_ascii=True).encode()
        assert hashlib.sha256(raw).hexdigest() == vera[f"{key}_sha256"], key
    elif key in vera:
        expected = vera[key]
        if isinstance(expected, str):
            expected = shown(expected)
        elif isinstance(expected, list):
            expected = [shown(x) for x in expected]
        assert value == expected, (key, value, expected)


def test_the_corpus_names_vera_and_its_commits() -> None:
    assert CORPUS["host"] == "nashaad/vera"
    assert set(CORPUS["commits"]) >= {"src/extensions/manifest.ts", "src/extensions/contributions.ts",
                                      "src/extensions/manager.ts", "src/profile-paths.ts"}
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    assert {c["vera"]["verdict"] for c in CASES} == {"load", "refuse"}
    assert any("skills" in c["id"] and c["vera"]["verdict"] == "load" and c.get("vera_older") for c in CASES)


@pytest.mark.parametrize("case", LOAD, ids=[c["id"] for c in LOAD])
def test_loading_agrees_with_vera(tmp_path: Path, case: dict[str, Any]) -> None:
    path = build(tmp_path, case)
    vera = case["vera"]
    refused = vera["verdict"] == "refuse" or "pkgmgr_rule" in case
    try:
        judged = Vera().judge(path)
    except ValidationFailed as exc:
        assert refused, (case["id"], [str(p) for p in exc.problems])
        if "pkgmgr_rule" in case:
            assert "pkgmgr's bound" in " ".join(str(p) for p in exc.problems)
        elif vera.get("fields"):  # the field Vera's parse fails on is among those pkgmgr names
            named = {p.key.split("[")[0].split(".")[0] for p in exc.problems} or {""}
            wanted = {"" if f == "<document>" else f.split(".")[0] for f in vera["fields"]}
            assert named & wanted, (case["id"], named, wanted)
            if any(f.startswith("contributes.") for f in vera["fields"]):
                kinds = {p.key.split("[")[0] for p in exc.problems}
                assert kinds & {".".join(f.split(".")[:2]) for f in vera["fields"]}, (case["id"], kinds)
    else:
        assert not refused, (case["id"], "pkgmgr loads what Vera refuses")
        assert judged.name == vera["name"]
        _same(vera, "version", judged.version)
        _same(vera, "capabilities", list(judged.capabilities))
        if "skills" in vera:
            assert judged.details["contributes"]["skills"] == [shown(s) for s in vera["skills"]]
    result = run_cli(["ext", "validate", path, "--host", "vera", "-o", "json"])
    assert result.code == (3 if refused else 0), result
    (result.stdout + result.stderr).encode("utf-8")  # printable as UTF-8: no unpaired surrogate


@pytest.mark.parametrize("case", INSTALL, ids=[c["id"] for c in INSTALL])
def test_installing_agrees_with_vera(tmp_path: Path, case: dict[str, Any]) -> None:
    source = build(tmp_path, case)
    vera = case["vera"]
    result = run_cli(["ext", "install", source, "--host", "vera", "--allow-unverified", "--yes", "-o", "json"])
    (result.stdout + result.stderr).encode("utf-8")
    if vera["verdict"] == "refuse":
        assert result.code in (3, 4), result
        return
    assert result.code == 0, result
    home = Path(os.environ["VERA_HOME"])
    registry = json.loads((home / "extensions.json").read_text(encoding="utf-8"))
    [record] = registry["extensions"]
    assert record["digest"] == vera["digest"]
    assert {k: v for k, v in record.items() if k not in ("source", "installedAt")} == vera["record"]
    assert record["source"] == {"kind": "local", "path": os.path.abspath(source)}

    def normalised(text: str) -> str:
        import re

        text = text.replace(json.dumps(os.path.abspath(source))[1:-1], "<source>")
        return re.sub(r'"installedAt": "[^"]*"', '"installedAt": "X"', text)

    assert normalised((home / "extensions.json").read_text(encoding="utf-8")) == vera["registry_text"]
    marker = home / "extensions" / ".managed" / f"{record['id']}.json"
    assert normalised(marker.read_text(encoding="utf-8")) == vera["marker_text"]
    for key, path in (("home_mode", home), ("extensions_mode", home / "extensions"),
                      ("managed_mode", home / "extensions" / ".managed")):
        assert oct(os.stat(path).st_mode & 0o777)[2:] == vera[key], key
    _same(vera, "tree", _tree(home / "extensions" / record["id"]))
    assert sorted(n for n in os.listdir(home / "extensions") if n != ".pkgmgr-staging") == vera["extensions_entries"]


def _tree(root: Path) -> dict[str, str]:
    """The installed tree as the harness lists it: directories, and files by their sha256."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames:
            out[(name if rel_dir == "." else f"{rel_dir}/{name}") + "/"] = "dir"
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            out[rel] = "file:" + hashlib.sha256(Path(dirpath, name).read_bytes()).hexdigest()
    return dict(sorted(out.items()))
