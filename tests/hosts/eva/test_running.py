"""Eva's verdicts recorded from its own loader running (running.json: aayushmau5/eva's loader.ex,
trust.ex and Eva.Core.Extension modules compiled unmodified, one fresh VM per case, at the commit the
file names), held against pkgmgr: `ext validate` gives Eva's verdict on every case, with Elixir on
the machine (its parser) and without it (pkgmgr's own reader, saying the syntax was not checked);
installs agree with which extensions of a folder Eva loads; content hashes agree with trust.ex.

The only cases where pkgmgr and Eva differ are marked in the corpus and listed in docs/hosts.md:
`needs_running` (Eva refuses only when it runs the script), `pkgmgr_rule` (pkgmgr refuses more, on
purpose), and, without Elixir, `toolchain` (a compile-time refusal only Elixir's parser finds)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from pkgmgr.hosts import elixir_quoted
from pkgmgr.hosts.eva import Eva, content_hash
from tests.hosts.helpers import UNVERIFIED, Homes
from tests.support.cli import run_cli

DOC = json.loads((Path(__file__).parent / "running.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DOC["cases"]
SINGLE = [c for c in CASES if "entries" not in c]
MULTI = [c for c in CASES if "entries" in c]
ELIXIR = elixir_quoted.find()
NOT_CHECKED = "the syntax was not checked"

# What pkgmgr says when it refuses for the reason Eva refused (a fragment of its message), and its code.
SAYS = {
    "name": ("must define",), "no-setup": ("does not export setup/1",), "no-extension-module": ("defines no module",),
    "many-extension-modules": ("expected one",), "namespace": ("namespaced under Eva.Extension",),
    "syntax": ("syntax error", "not UTF-8"), "struct-key": ("in struct", "needs the keys"),
    "undefined-struct": ("is not defined",), "undefined-function": ("undefined",),
    "use-unknown-module": ("struct Spec is not defined", "defines no module"),
    "invalid-module-name": ("invalid module name",), "outside-module": ("Elixir refuses it",),
    "invalid-expression": ("_ used as a value",), "runs-code": ("Eva fails to load it",), "crash": ("too long",),
    "not-a-candidate": ("no extension manifest",),
}
COMPILE = {"syntax", "struct-key", "undefined-struct", "undefined-function", "use-unknown-module",
           "invalid-module-name", "outside-module", "invalid-expression", "namespace"}


def data(spec: Any) -> bytes:
    return base64.b64decode(spec["base64"]) if isinstance(spec, dict) else spec.encode("utf-8")


def put(root: Path, rel: str, spec: Any) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data(spec))
    return path


def source(tmp: Path, case: dict[str, Any]) -> Path:
    """The case as a user hands it to pkgmgr: the script, or the directory."""
    if "script" in case:
        name, text = case["script"]
        return put(tmp / "src", name, text)
    root = tmp / "src" / case["name"]
    for rel, spec in (case.get("files") or case["wrapped"]).items():
        put(root, rel, spec)
    return root


def eva_folder(folder: Path, case: dict[str, Any]) -> None:
    """The case laid out in Eva's folder as the harness laid it out (what pkgmgr installs)."""
    folder.mkdir(parents=True, exist_ok=True)
    if "script" in case:
        put(folder, case["script"][0], case["script"][1])
    elif "files" in case:
        for rel, spec in case["files"].items():
            put(folder / case["name"], rel, spec)
    elif "wrapped" in case:
        [(rel, spec)] = [(r, s) for r, s in case["wrapped"].items() if r.endswith(".exs")]
        put(folder, rel, spec)
    else:
        for rel, spec in case["folder"].items():
            put(folder, rel, spec)


def expected(case: dict[str, Any], *, toolchain: bool) -> str:
    """What pkgmgr must say: "load" or "refuse"."""
    if case.get("pkgmgr_rule"):
        return "refuse"
    if case.get("needs_running") or (case.get("toolchain") and not toolchain):
        return "load"
    return str(case["eva"])


def validate(tmp: Path, case: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    result = run_cli(["ext", "validate", source(tmp, case), "--host", "eva", "-o", "json"])
    assert result.code != 70, result
    return result, result.json


def check(case: dict[str, Any], result: Any, document: dict[str, Any], *, toolchain: bool) -> None:
    if expected(case, toolchain=toolchain) == "refuse":
        assert result.code in (3, 4), (case["id"], result)
        error = document["error"]
        text = " ".join([error["message"], *(p["message"] for p in error.get("details", {}).get("problems", []))])
        if case.get("pkgmgr_rule"):
            assert "pkgmgr's rule" in text, (case["id"], text)
            return
        reason = case["reason"]
        assert error["code"] == ("invalid_archive" if reason == "not-a-candidate" else "invalid_manifest"), result
        if reason in COMPILE and not toolchain and reason != "namespace":
            says: tuple[str, ...] = ("syntax error", "not UTF-8", "Elixir refuses", "defines no module")  # own reader
        else:
            says = SAYS[reason]
        assert any(s in text for s in says), (case["id"], reason, text)
        return
    assert result.code == 0, (case["id"], result)
    assert document["valid"] is True and document["host"] == "eva"
    warned = " ".join(document["warnings"])
    assert (NOT_CHECKED in warned) is (not toolchain), (case["id"], warned)
    if case.get("computed"):
        assert document["entry"] == "" and "when the script runs" in warned, (case["id"], document)
    elif case["eva"] == "load":
        assert document["entry"] == _shown(case["module"]), (case["id"], document["entry"])


def _shown(atom: str) -> str:
    from pkgmgr.hosts.elixir import display

    return display(atom)


def test_the_corpus_names_eva_and_every_verdict() -> None:
    assert len(DOC["commit"]) == 40 and DOC["eva"] == "aayushmau5/eva"
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    reasons = set(SAYS) | {"claimed", "shadowed", "untrusted"}
    for case in CASES:
        for verdict in case.get("entries", {case["id"]: case}).values():
            assert verdict["eva"] in ("load", "refuse") and verdict["decided_by"], case["id"]
            assert verdict["eva"] == "load" or verdict["reason"] in reasons, case["id"]
            assert verdict["eva"] == "refuse" or verdict["module"], case["id"]
        assert case["from"], case["id"]
    marked = {c["id"] for c in CASES if c.get("needs_running")}
    assert marked and all(c["reason"] == "runs-code" for c in CASES if c["id"] in marked)


@pytest.fixture
def no_elixir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH without elixir on it."""
    empty = tmp_path / "no-elixir"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.parametrize("case", SINGLE, ids=[c["id"] for c in SINGLE])
def test_validate_without_elixir(tmp_path: Path, no_elixir: None, case: dict[str, Any]) -> None:
    result, document = validate(tmp_path, case)
    check(case, result, document, toolchain=False)


@pytest.fixture(scope="module")
def parsed_once() -> Iterator[None]:
    """Every script of the corpus parsed in one run of Elixir (pkgmgr keeps each script's quoted form
    by its digest, so the cases below judge without starting Elixir again). The corpus holds more
    scripts than pkgmgr keeps (`_CACHE_MAX`, a bound for one command): here it keeps them all, or
    each case would start Elixir again for the script the previous one evicted."""
    assert ELIXIR is not None
    texts: list[str] = []
    for case in SINGLE:
        files = [case["script"]] if "script" in case else list((case.get("files") or case["wrapped"]).items())
        for name, spec in files:
            try:
                text = data(spec).decode("utf-8")
            except UnicodeDecodeError:
                continue
            if name.endswith(".exs"):
                texts.append(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(elixir_quoted, "_CACHE_MAX", max(elixir_quoted._CACHE_MAX, 2 * len(texts)))
        for start in range(0, len(texts), elixir_quoted.SOURCES_MAX):
            elixir_quoted.parse(texts[start:start + elixir_quoted.SOURCES_MAX], ELIXIR)
        yield


@pytest.mark.skipif(ELIXIR is None, reason="elixir is not installed: the parser-backed checks run where it is "
                                            "(.ci/run installs Debian's elixir)")
@pytest.mark.parametrize("case", SINGLE, ids=[c["id"] for c in SINGLE])
def test_validate_with_elixir(tmp_path: Path, parsed_once: None, case: dict[str, Any]) -> None:
    result, document = validate(tmp_path, case)
    check(case, result, document, toolchain=True)


@pytest.mark.parametrize("case", [c for c in SINGLE if "wrapped" in c], ids=lambda c: c["id"])
def test_a_folder_holding_one_script_installs_what_it_validates(tmp_path: Path, homes: Homes,
                                                               case: dict[str, Any]) -> None:
    """A directory holding only `main.exs` is no Eva extension as it is (Eva needs extension.exs);
    pkgmgr installs its one script, so validate judges that script under its own name, and install
    then does what validate said."""
    assert case["as_is"] == "ignored"
    folder = tmp_path / "as-is"
    for rel, spec in case["wrapped"].items():
        put(folder / case["name"], rel, spec)
    assert Eva().scan(folder) == []
    src = source(tmp_path, case)
    validated = run_cli(["ext", "validate", src, "-o", "json"])
    installed = run_cli(["ext", "install", src, *UNVERIFIED, "-o", "json"])
    assert validated.code == installed.code, (validated, installed)
    [script] = [r for r in case["wrapped"] if r.endswith(".exs")]
    if case["eva"] == "load":
        assert (homes.eva / "extensions" / script).is_file()
        assert [f.name for f in Eva().scan(homes.eva / "extensions")] == [script[: -len(".exs")]]
    else:
        assert installed.json["error"]["message"] == validated.json["error"]["message"]


@pytest.mark.parametrize("case", MULTI, ids=[c["id"] for c in MULTI])
def test_installs_leave_what_eva_loads(tmp_path: Path, homes: Homes, case: dict[str, Any]) -> None:
    """Each entry installed in the order Eva loads them (the global folder first, then the project;
    names sorted): an entry Eva refuses because another took its module is refused by pkgmgr
    (`source_conflict`), a dot-named one by pkgmgr's rule, and what pkgmgr leaves is what Eva loads."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pkgmgr.toml").write_text("")  # a workspace (issue 29: --scope workspace needs one)
    groups = [("global", "", case["folder"])] if "folder" in case else \
        [("global", "global:", case["global"]), ("workspace", "project:", case["project"])]
    installed: dict[str, set[str]] = {"global": set(), "workspace": set()}
    for scope, prefix, files in groups:
        for top in sorted({rel.split("/")[0] for rel in files}):
            src = tmp_path / "src" / scope
            for rel, spec in files.items():
                if rel.split("/")[0] == top:
                    put(src, rel, spec)
            verdict = case["entries"][prefix + top]
            name = top.removesuffix(".exs")
            force = ["--force"] if name in installed[scope] else []  # foo/ then foo.exs: one name, replaced
            result = run_cli(["--scope", scope, "ext", "install", src / top, *UNVERIFIED, *force, "-o", "json"],
                             cwd=project)
            assert result.code != 70, result
            if verdict["eva"] == "refuse" and verdict["reason"] == "claimed":
                assert result.json["error"]["code"] == "source_conflict", result
                assert "already defines" in result.json["error"]["message"], result
            elif name.startswith("."):
                assert result.json["error"]["code"] == "invalid_manifest", result  # pkgmgr's rule (trust hash)
            else:
                assert result.code == 0, result
                installed[scope].add(name)
                if scope == "workspace":
                    assert result.json["installed"][0]["trust"]["approved"] is False  # Eva asks first
    for scope, folder in (("global", homes.eva / "extensions"), ("workspace", project / ".eva" / "extensions")):
        assert {f.name for f in Eva().scan(folder)} == installed[scope]
    eva_loads = {label.split(":")[-1].removesuffix(".exs") for label, v in case["entries"].items() if v["eva"] == "load"}
    assert {n for n in eva_loads if not n.startswith(".")} <= installed["global"] | installed["workspace"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_content_hash_is_trust_ex(tmp_path: Path, case: dict[str, Any]) -> None:
    """trust.ex content_hash/1 of the folder each case left, as Eva computed it."""
    if "global" in case:
        eva_folder(tmp_path / "global", {"folder": case["global"]})
        eva_folder(tmp_path / "project", {"folder": case["project"]})
        folders = {"global": tmp_path / "global", "project": tmp_path / "project"}
    else:
        eva_folder(tmp_path / "global", case)
        folders = {"global": tmp_path / "global"}
    for kind, folder in folders.items():
        assert content_hash(folder) == case["hash"][kind], (case["id"], kind, sorted(os.listdir(folder)))
