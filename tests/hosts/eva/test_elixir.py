"""Elixir's names as Eva applies them, the two readers of a script (pkgmgr's own, and Elixir's parser
through the fixed program of elixir_quoted.py), and what happens when the toolchain fails: the
syntax is then said to be unchecked, and the script is still judged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pkgmgr.hosts import elixir, elixir_quoted
from pkgmgr.hosts.eva import PROFILE, Eva
from tests.support.cli import run_cli

ELIXIR = elixir_quoted.find()
needs_elixir = pytest.mark.skipif(ELIXIR is None, reason="elixir is not installed: the parser-backed checks run "
                                                        "where it is (.ci/run installs Debian's elixir)")
VALID = ("defmodule Eva.Extension.Notes do\n  use Eva.Core.Extension\n"
         "  def setup(_ctx), do: {:ok, %Spec{guidelines: [\"g\"]}}\nend\n")


# --- names: Module.concat(Eva.Extension, Macro.camelize(name)), as Elixir 1.14 computed them -----------


@pytest.mark.parametrize("name, atom", [
    ("notes", "Elixir.Eva.Extension.Notes"), ("my-ext", "Elixir.Eva.Extension.MyExt"),
    ("notes.v2", "Elixir.Eva.Extension.Notes.v2"), ("notes.exs", "Elixir.Eva.Extension.Notes.exs"),
    (".hidden", "Elixir.Eva.Extension.hidden"), ("", "Elixir.Eva.Extension."), ("elixir.foo", "Elixir.Eva.Extension.foo"),
    ("elixir", "Elixir.Eva.Extension.Elixir"), ("..x", "Elixir.Eva.Extension..x"), ("a._b", "Elixir.Eva.Extension.A.B"),
    ("a.b_c", "Elixir.Eva.Extension.A.bC"), ("x.", "Elixir.Eva.Extension.X."), ("élan", "Elixir.Eva.Extension.élan"),
    ("a_é", "Elixir.Eva.Extension.A_é"),
])
def test_namespace_is_module_concat_of_camelize(name: str, atom: str) -> None:
    assert elixir.namespace_atom(name) == atom


@pytest.mark.parametrize("atom, shown", [
    ("Elixir.Eva.Extension.Notes", "Eva.Extension.Notes"), ("Elixir.Eva.Extension.Notes.v2", ':"Elixir.Eva.Extension.Notes.v2"'),
    ("Elixir.Eva.Extension.1abc", ':"Elixir.Eva.Extension.1abc"'), ("foo", ':"foo"'), ('Elixir.A"b', ':"Elixir.A\\"b"'),
])
def test_display_is_inspect(atom: str, shown: str) -> None:
    assert elixir.display(atom) == shown


def test_downcase_has_no_final_sigma() -> None:
    assert elixir.downcase("ΟΔΟΣ") == "οδοσ" != "ΟΔΟΣ".lower()
    assert elixir.downcase("İ") == "i\u0307" and elixir.downcase("\u212a") == "k"


@pytest.mark.parametrize("name, module", [
    ("notes.v2", "Eva.Extension.Notes.V2"), ("mcp", "Eva.Extension.Mcp"), ("1abc", ':"Elixir.Eva.Extension.1abc"'),
    ("café", ':"Elixir.Eva.Extension.Café"'),
])
def test_the_suggested_module_is_one_eva_accepts(name: str, module: str) -> None:
    assert elixir.suggested_module(name) == module


# --- pkgmgr's own reader ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "defmodule Eva.Extension.Notes do\n  use(Eva.Core.Extension)\nend\n",
    "defmodule Eva.Extension.Notes do\n  use Elixir.Eva.Core.Extension\nend\n",
    'defmodule Eva.Extension.Notes do\n  use :"Elixir.Eva.Core.Extension"\nend\n',
    "defmodule Eva.Extension.Notes do\n  alias Eva.Core.Extension\n  use Extension\nend\n",
    "defmodule Eva.Extension.Notes do\n  alias Eva.Core.{Extension}\n  use Extension\nend\n",
    "alias Eva.Core.Extension, as: E\ndefmodule Eva.Extension.Notes do\n  use E\nend\n",
    "defmodule Eva.Extension.Notes, do: (use Eva.Core.Extension; def x, do: 1)\n",
])
def test_every_use_form_is_read(text: str) -> None:
    [module] = elixir.read_source(text).modules
    assert module.uses_extension and module.atom == "Elixir.Eva.Extension.Notes"


def test_quoted_atoms_name_modules_and_a_use_in_quote_is_data() -> None:
    text = ('defmodule :"Elixir.Eva.Extension.Notes.v2" do\n  def __eva_extension__, do: true\n'
            "  def setup(_), do: quote(do: use(Eva.Core.Extension))\nend\n")
    [module] = elixir.read_source(text).modules
    assert module.atom == "Elixir.Eva.Extension.Notes.v2" and module.marker and not module.uses_extension
    assert module.name == ':"Elixir.Eva.Extension.Notes.v2"'


@pytest.mark.parametrize("text, says", [
    ("\ufeff" + VALID, "U+FEFF"), (VALID.replace("\n", "\r"), "carriage return"), (VALID[:-4], "missing terminator: end"),
    (VALID + "end\n", "unexpected reserved word: end"), ("{{{" + VALID, "missing terminator: }"),
    ("# \u202e\n" + VALID, "bidirectional"), (VALID.replace("  use", "\u00a0 use"), "U+00A0"),
    ("use Eva.Core.Extension\n" + VALID, "outside a module"),
    ("defmodule Eva.Extension.X do\n  def setup(_) do\n    use Eva.Core.Extension\n  end\nend\n", "inside a function"),
])
def test_the_reader_refuses_what_elixir_cannot_tokenize(text: str, says: str) -> None:
    try:
        problems = elixir.read_source(text).problems
    except elixir.SourceError as exc:
        assert says in str(exc)
        return
    assert any(says in message for _, message in problems), problems


def test_requires_beside_the_script_are_followed(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "extension.exs").write_text('Code.require_file("impl.exs", __DIR__)\n')
    (root / "impl.exs").write_text(VALID.replace("Notes", "Pkg"))
    judged = Eva().judge(root, name_hint="pkg")
    assert judged.entry == "Eva.Extension.Pkg"
    (root / "impl.exs").unlink()
    with pytest.raises(Exception, match="requires impl.exs, which is not in the extension"):
        Eva().judge(root, name_hint="pkg")


# --- the toolchain ---------------------------------------------------------------------------------


def fake_elixir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    """An `elixir` on an otherwise empty PATH that runs `body` (a shell script)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "elixir"
    script.write_text("#!/bin/sh\n" + body)
    os.chmod(script, 0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def validate(tmp_path: Path, text: str = VALID) -> dict[str, object]:
    path = tmp_path / "notes.exs"
    path.write_text(text, encoding="utf-8")
    result = run_cli(["ext", "validate", path, "-o", "json"])
    assert result.code == 0, result
    assert "warning: the syntax" in result.stderr  # said in the human output too
    return result.json


def test_without_elixir_the_result_says_the_syntax_was_not_checked(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    document = validate(tmp_path)
    assert document["entry"] == "Eva.Extension.Notes"
    assert any("the syntax was not checked: there is no elixir on PATH" in w for w in document["warnings"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("body, says", [
    ("exit 3\n", "exited with status 3"),
    ("cat >/dev/null; echo 'not json'; echo 'nor this'\n", "cannot read"),
    ("cat >/dev/null; echo '{\"elixir\": \"9\", \"imports\": []}'\n", "answered for 0 of 1"),
    ("cat >/dev/null; /bin/dd if=/dev/zero bs=1024 count=64 2>/dev/null\n", "larger than"),
    ("exec /bin/sleep 30\n", "did not answer within"),
])
def test_a_failing_toolchain_leaves_the_syntax_unchecked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         body: str, says: str) -> None:
    fake_elixir(tmp_path, monkeypatch, body)
    monkeypatch.setattr(elixir_quoted, "OUTPUT_MAX", 16 * 1024)
    monkeypatch.setattr(elixir_quoted, "TIMEOUT", 0.5)
    document = validate(tmp_path, VALID.replace("Notes", "Notes ") + "\n")  # a text no other test parsed
    warnings = " ".join(document["warnings"])  # type: ignore[arg-type]
    assert "the syntax was not checked" in warnings and says in warnings, warnings
    assert document["entry"] == "Eva.Extension.Notes"  # still judged, by pkgmgr's own reader


@needs_elixir
def test_elixir_parses_and_never_runs_the_script(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = (f'File.write!("{marker}", "top")\n'
            f"defmodule Eva.Extension.Notes do\n  use Eva.Core.Extension\n  @x File.write!(\"{marker}\", \"body\")\n"
            "  def setup(_ctx), do: {:ok, %Spec{}}\nend\n")
    path = tmp_path / "notes.exs"
    path.write_text(text)
    result = run_cli(["ext", "validate", path, "-o", "json"])
    assert result.code == 0, result
    assert not marker.exists()
    assert result.json["warnings"] == []


@needs_elixir
def test_elixir_finds_compile_errors_pkgmgr_alone_cannot(tmp_path: Path) -> None:
    text = VALID.replace('guidelines: ["g"]', "guideline: [build()]")
    path = tmp_path / "notes.exs"
    path.write_text(text)
    result = run_cli(["ext", "validate", path, "-o", "json"])
    assert result.code == 3, result
    messages = [p["message"] for p in result.json["error"]["details"]["problems"]]
    assert any("unknown key :guideline in struct Eva.Core.Extension.Spec" in m for m in messages), messages
    assert any("undefined function build/0" in m for m in messages), messages


@needs_elixir
def test_the_profile_matches_what_the_toolchain_reports() -> None:
    """`use Eva.Core.Extension` injects functions a module may call; Kernel's imports come from the
    toolchain itself (its version's), so a call to them is never taken for an undefined one."""
    assert ELIXIR is not None
    header, [parsed] = elixir_quoted.parse([VALID.replace("{:ok,", "{init(self()) && is_map(%{}),")], ELIXIR)
    reading = elixir_quoted.read(parsed, header, PROFILE)
    assert reading.problems == [] and ("is_map", 1) in header.imports
