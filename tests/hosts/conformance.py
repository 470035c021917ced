"""What the conformance corpora recorded from the real CLIs (tests/hosts/gemini/,
tests/hosts/claude/) share: materialising a case's files, the case helpers, the bookkeeping every
corpus is held to, a JSON strategy for the codecs' property tests, and the record scripts' main.

A case's files: relative path -> text, or {"text"|"base64", "mode"}, or {"symlink": target}. A
path may start with `../` (a file beside the extension: what a path that leaves it reaches)."""

from __future__ import annotations

import base64
import datetime
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st


def build(root: Path, files: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, spec in files.items():
        path = Path(os.path.normpath(root / rel))
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o644
        if isinstance(spec, dict) and "symlink" in spec:
            os.symlink(spec["symlink"], path)
            continue
        if isinstance(spec, dict):
            mode = int(spec.get("mode", 0o644))
            data = base64.b64decode(spec["base64"]) if "base64" in spec else spec["text"].encode("utf-8")
        else:
            data = spec.encode("utf-8", "surrogatepass")
        path.write_bytes(data)
        os.chmod(path, mode)
    return root


DROP = object()  # a field value in `document` that leaves the field out


def document(defaults: dict[str, Any], fields: dict[str, Any]) -> str:
    """A manifest's JSON: `defaults` with `fields` set (DROP removes one)."""
    value = dict(defaults)
    for key, item in fields.items():
        if item is DROP:
            value.pop(key, None)
        else:
            value[key] = item
    return json.dumps(value)


def case(manifest: str, case_id: str, text: str | dict[str, Any] | None, source: str,
         extra: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    """A case whose manifest file `manifest` holds `text` (None: no manifest), with `extra` files."""
    files = {manifest: text} if text is not None else {}
    return {"id": case_id, "files": {**files, **(extra or {})}, "from": source, **more}


def raw(data: bytes) -> dict[str, Any]:
    """A file given as bytes (a document that is not UTF-8 text)."""
    return {"base64": base64.b64encode(data).decode("ascii")}


def stricter(why: str, message: str) -> dict[str, Any]:
    """A case the host takes and pkgmgr refuses: why (a "pkgmgr's rule: ..." sentence) and a
    fragment of pkgmgr's message."""
    return {"pkgmgr_rule": why, "message": message}


def check_bookkeeping(host: str, recorded: dict[str, Any], cases: list[dict[str, Any]],
                      host_takes: Callable[[Any], bool]) -> None:
    """The verdicts were recorded from the pinned CLI; every case has a unique id, a recorded
    verdict and a source; a rule of pkgmgr's is only ever claimed where the host takes the input,
    and says why."""
    from tests.hosts.realcli import PINNED

    assert (recorded["cli"], recorded["version"]) == PINNED[host]
    verdicts = recorded["cases"]
    ids = [case["id"] for case in cases]
    assert len(ids) == len(set(ids))
    assert sorted(verdicts) == sorted(ids)
    for case in cases:
        assert case["from"], case["id"]
        if case.get("pkgmgr_rule"):
            assert host_takes(verdicts[case["id"]]), (case["id"], verdicts[case["id"]])
            assert "pkgmgr's rule" in case["pkgmgr_rule"] and case["message"], case["id"]


def assert_refused(error: Exception, case: dict[str, Any]) -> None:
    """pkgmgr's refusal of a case: invalid_manifest or path_escapes_root problems only, and the
    case's message fragment among them."""
    from pkgmgr.errors import Code, PkgmgrError, ValidationFailed

    assert isinstance(error, PkgmgrError), error
    codes = {Code.INVALID_MANIFEST, Code.PATH_ESCAPES_ROOT}
    problems = error.problems if isinstance(error, ValidationFailed) else []
    assert {p.code for p in problems} <= codes and (problems or error.code in codes), error
    if case.get("message"):
        text = " ".join([error.message, *(p.message for p in problems)])
        assert case["message"] in text, text


def json_values() -> st.SearchStrategy[Any]:
    """Arbitrary JSON values, small."""
    return st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                        | st.text(max_size=20),
                        lambda children: st.lists(children, max_size=4)
                        | st.dictionaries(st.text(max_size=12), children, max_size=4), max_leaves=20)


def manifests(fields: list[str]) -> st.SearchStrategy[bytes]:
    """Bytes: arbitrary, or a JSON object of arbitrary values for `fields`."""
    documents = st.dictionaries(st.sampled_from(fields), json_values()).map(lambda d: json.dumps(d).encode())
    return st.binary(max_size=300) | documents


def record_main(host: str, argv: list[str], cases: list[dict[str, Any]], verdicts_file: Path,
                record: Callable[[Path, dict[str, Any]], dict[str, Any]]) -> int:
    """The record scripts: each case (or only those named) through the real CLI of `host`, the
    verdicts written to `verdicts_file` with the CLI's package and version."""
    from tests.hosts import realcli

    cli = realcli.executable(host)
    package = realcli.PINNED[host][0]
    if cli is None:
        print(f"no {package}: set {realcli.PREFIX_VARIABLE} to an npm prefix holding it", file=sys.stderr)
        return 2
    wanted = set(argv)
    verdicts = dict(json.loads(verdicts_file.read_text(encoding="utf-8"))["cases"]) \
        if verdicts_file.exists() and wanted else {}
    for case in cases:
        if wanted and case["id"] not in wanted:
            continue
        verdicts[case["id"]] = record(cli, case)
        print(case["id"], json.dumps(verdicts[case["id"]]), flush=True)
    document = {"cli": package, "version": realcli.installed_version(host),
                "recorded": datetime.date.today().isoformat(),
                "cases": {c["id"]: verdicts[c["id"]] for c in cases if c["id"] in verdicts}}
    verdicts_file.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0
