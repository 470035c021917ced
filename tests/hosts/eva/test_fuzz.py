"""No input reaches a user as exit 70: arbitrary bytes and text as an Eva script, arbitrary quoted forms,
arbitrary names — every one gives a result or a validation error, through pkgmgr's own reader and
(where elixir is installed) through Elixir's parser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts import elixir, elixir_quoted
from pkgmgr.hosts.elixir_quoted import Atom, Call, Parsed, Toolchain
from pkgmgr.hosts.eva import PROFILE, Eva, name_problem
from tests.support.cli import run_cli

ELIXIR = elixir_quoted.find()
FRAGMENTS = ["defmodule ", "Eva.Extension.X", " do\n", "end\n", "use Eva.Core.Extension\n", "def setup(x)", ", do: ",
             "%Spec{", "}", "{", "(", ")", "[", "]", '"', "'", '"""\n', "#{", "~s(", ":\"", "?", "\\", "#", "\n", "\r",
             "\ufeff", "\u202e", "\x00", "fn -> ", "x = ", "^x", "&f/1", "|>", "quote do\n", "alias Eva.Core.Extension",
             "Code.require_file(\"h.exs\", __DIR__)\n", "@x 1\n", "_", "é", "É", "\u00a0", "do:", ":do", "x.end"]
scripts = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(lambda parts: "".join(parts).encode("utf-8")),
)


def judge(tmp: Path, raw: bytes, layout: str) -> None:
    if layout == "script":
        path = tmp / "fuzz.exs"
        path.write_bytes(raw)
    else:
        path = tmp / "fuzz"
        path.mkdir(exist_ok=True)
        (path / "extension.exs").write_bytes(raw)
        (path / "h.exs").write_bytes(raw[::-1])
    try:
        judged = Eva().judge(path, layout=layout)
    except PkgmgrError as exc:
        assert exc.code
        return
    assert judged.host == "eva" and judged.name == "fuzz"


@pytest.fixture
def without_elixir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elixir_quoted, "find", lambda: None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=scripts, layout=st.sampled_from(["script", "directory"]))
def test_any_script_is_judged_without_elixir(tmp_path: Path, without_elixir: None, raw: bytes, layout: str) -> None:
    judge(tmp_path, raw, layout)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300) | st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
def test_the_reader_reads_or_says_why_not(text: str) -> None:
    try:
        reading = elixir.read_source(text)
    except elixir.SourceError as exc:
        assert str(exc) and exc.line >= 1
        return
    except RecursionError:
        return  # nested interpolations past Python's stack: the judge says so (pkgmgr's bound)
    assert all(isinstance(m.atom, str) for m in reading.modules)


@settings(max_examples=300, deadline=None)
@given(name=st.text(max_size=300))
def test_any_name_gets_an_answer(name: str) -> None:
    problem = name_problem(name)
    if problem is None:
        assert len(elixir.namespace_atom(name)) <= elixir.ATOM_MAX
        elixir.suggested_module(name)


def _quoted() -> st.SearchStrategy[Any]:
    names = st.sampled_from(["defmodule", "use", "alias", "import", "def", "defp", "defdelegate", "quote", "fn", "case",
                             "cond", "with", "for", "try", "receive", "=", "->", "<-", "%", "%{}", "<<>>", "::", "|>",
                             "&", "@", "^", "when", "\\\\", "__aliases__", "__block__", ".", "|", "x", "setup", "Spec",
                             "Eva", "Core", "Extension", "do", "else", "rescue", "size", "__MODULE__", "__DIR__", "_"])
    leaves = st.one_of(names.map(Atom), st.text(max_size=5), st.integers(-3, 3), st.none(), st.booleans())

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.builds(Call, names.map(Atom) | children, st.integers(1, 9) | st.none(),
                      st.none() | st.lists(children, max_size=4)),
            st.lists(children, max_size=4),
            st.tuples(children, children),
        )
    return st.recursive(leaves, extend, max_leaves=40)


@settings(max_examples=500, deadline=None)
@given(ast=_quoted())
def test_any_quoted_form_is_read(ast: Any) -> None:
    toolchain = Toolchain("elixir", "0", frozenset({("def", 2), ("is_map", 1), ("inspect", 1)}))
    reading = elixir_quoted.read(Parsed(ast=ast), toolchain, PROFILE)
    assert all(isinstance(line, int) and message for line, message in reading.problems)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=scripts)
def test_ext_validate_never_exits_70(tmp_path: Path, without_elixir: None, raw: bytes) -> None:
    path = tmp_path / "fuzz.exs"
    path.write_bytes(raw)
    result = run_cli(["ext", "validate", path, "-o", "json"])
    assert result.code in (0, 3, 4), result


@pytest.mark.skipif(ELIXIR is None, reason="elixir is not installed (.ci/run installs Debian's elixir)")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(scripts, min_size=1, max_size=25))
def test_any_script_is_judged_with_elixir(tmp_path: Path, batch: list[bytes]) -> None:
    """Through Elixir's parser: one run parses the batch, then each script is judged from it."""
    assert ELIXIR is not None
    texts = []
    for raw in batch:
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    if texts:
        header, parsed = elixir_quoted.parse(texts, ELIXIR)
        assert len(parsed) == len(texts) and header.version
    for index, raw in enumerate(batch):
        folder = tmp_path / str(index)
        folder.mkdir(exist_ok=True)
        judge(folder, raw, "script")
