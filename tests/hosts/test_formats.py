"""The hosts' own encodings: Go's json.MarshalIndent (terva), Elixir's Macro.camelize and the
static reading of a script (Eva), localeCompare ordering (Vera)."""

from __future__ import annotations

import pytest

from pkgmgr.hosts import elixir, jsonfmt
from pkgmgr.hosts.vera import locale_key


@pytest.mark.parametrize("value, text", [
    (1.0, "1"), (0.5, "0.5"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"),
    (1.5e-7, "1.5e-7"), (1e-6, "0.000001"), (1e-100, "1e-100"), (-0.0, "-0"), (12345678901234567890.0,
                                                                               "12345678901234567000"),
])
def test_go_formats_float64_as_go_does(value: float, text: str) -> None:
    assert jsonfmt.go_float(value) == text


def test_go_marshal_indent() -> None:
    doc = jsonfmt.decode(b'{"b": [1, {"z": null, "a": "<x>"}], "a": {}, "c": [], "d": "\\u2028"}')
    assert jsonfmt.go_marshal_indent(doc) == (
        '{\n  "a": {},\n  "b": [\n    1,\n    {\n      "a": "\\u003cx\\u003e",\n      "z": null\n    }\n  ],\n'
        '  "c": [],\n  "d": "\\u2028"\n}')


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf{}", b"{\"a\": NaN}", b"{\"a\": Infinity}", b"{", b"[1,]"])
def test_decode_refuses_what_the_hosts_refuse(raw: bytes) -> None:
    with pytest.raises(jsonfmt.JsonError):
        jsonfmt.decode(raw)


def test_go_fold() -> None:
    from pkgmgr.gokeys import go_fold  # the one Go key folding, the bundle and manifest readers' too

    assert go_fold("Name") == go_fold("NAME") == go_fold("name") == "name"
    assert go_fold("\u017fecret") == "secret"  # the long s folds to s, as in Go
    assert go_fold("\u0131d") != go_fold("id")  # the dotless i is in no fold set with i (Go's SimpleFold)


@pytest.mark.parametrize("name, module", [
    ("foo", "Foo"), ("foo_bar", "FooBar"), ("_foo", "Foo"), ("foo__bar", "FooBar"), ("foo_1", "Foo1"),
    ("foo_", "Foo"), ("foo/bar", "Foo.Bar"), ("mcp", "Mcp"), ("a_B", "A_B"), ("", ""),
])
def test_macro_camelize(name: str, module: str) -> None:
    assert elixir.camelize(name) == module


def test_namespace_turns_dashes_into_underscores() -> None:
    assert elixir.namespace("my-ext") == "Eva.Extension.MyExt"


def test_modules_are_read_with_their_nesting() -> None:
    source = (
        'defmodule Eva.Extension.A do\n  @doc "defmodule Fake do"\n  use Eva.Core.Extension\n'
        '  defmodule B do\n    def setup(x), do: x\n  end\n  def run(f), do: fn -> f end\n'
        '  def setup(ctx, opts \\\\ []), do: {ctx, opts}\nend\n'
        'defmodule __MODULE__.C, do: (def x, do: 1)\n'
    )
    modules = {m.name: m for m in elixir.modules(source)}
    assert set(modules) == {"Eva.Extension.A", "Eva.Extension.A.B", "C"}
    assert modules["Eva.Extension.A"].uses_extension and modules["Eva.Extension.A"].exports_setup1
    assert not modules["Eva.Extension.A.B"].uses_extension and modules["Eva.Extension.A.B"].exports_setup1


def test_locale_order_of_names() -> None:
    names = ["file.ts", "File.ts", "file-a.ts", "_x", "-x", ".x", "a10", "a2", "B", "a"]
    assert sorted(names, key=locale_key) == ["_x", "-x", ".x", "a", "a10", "a2", "B", "file-a.ts", "file.ts",
                                             "File.ts"]
