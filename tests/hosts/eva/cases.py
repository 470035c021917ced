"""Eva's conformance corpus: inputs built from Eva's own tests (test/eva/extension/loader_test.exs,
trust_test.exs) and loader code, each with Eva's verdict and the line that decides it
(aayushmau5/eva at b5cea5e875cddc5f11d6d28f145ff93eff43a724; see docs/hosts.md). Every verdict here
was checked against Eva's loader running (tests/hosts/eva/running.py holds that larger corpus).

A case is a script (`script`: its file name and text) or a directory (`files`, with
`extension.exs`), installed under `name`; `verdict` is what Eva's loader does with it.
`pkgmgr_rule` marks a refusal that is pkgmgr's own rule; `divergence` marks what pkgmgr cannot see
without running the script (it says why).
"""

LOADER = "lib/eva/extension/loader.ex"
CORE = "core/lib/eva/core/extension.ex"


def valid(module: str, body: str = "") -> str:
    return (f"defmodule {module} do\n  use Eva.Core.Extension\n\n"
            f"  def setup(_ctx) do\n    {{:ok, %Eva.Core.Extension.Spec{{guidelines: [\"test guideline\"]}}}}\n  end\n"
            f"{body}end\n")


CASES = [
    {"id": "script-valid", "name": "my_ext", "script": ("my_ext.exs", valid("Eva.Extension.MyExt")),
     "verdict": "load", "module": "Eva.Extension.MyExt",
     "decided_by": f"{LOADER}:168 candidates_in_dir, :276 validate", "from": "loader_test.exs finds .exs files"},
    {"id": "directory-valid", "name": "my_package",
     "files": {"extension.exs": valid("Eva.Extension.MyPackage"), "README.md": "# docs"},
     "verdict": "load", "module": "Eva.Extension.MyPackage",
     "decided_by": f"{LOADER}:166 candidates_in_dir (dir/extension.exs)",
     "from": "loader_test.exs finds extension.exs inside a subdirectory"},
    {"id": "no-setup", "name": "bad",
     "script": ("bad.exs", ("defmodule Eva.Extension.Bad do\n  use Eva.Core.Extension\n\n"
                           "  def init(_ctx), do: {:ok, nil}\nend\n")),
     "verdict": "refuse", "code": "invalid_manifest", "message": "does not export setup/1",
     "decided_by": f"{LOADER}:286 validate", "from": "loader_test.exs extension without setup/1"},
    {"id": "no-use", "name": "plain",
     "script": ("plain.exs", "defmodule PlainModule_1 do\n  def setup(_ctx), do: {:ok, %{}}\nend\n"),
     "verdict": "refuse", "code": "invalid_manifest", "message": "defines no module that uses Eva.Core.Extension",
     "decided_by": f"{LOADER}:259 extension_module", "from": "loader_test.exs module without use"},
    {"id": "outside-namespace", "name": "outsider",
     "script": ("outsider.exs", valid("NotNamespaced_7")),
     "verdict": "refuse", "code": "invalid_manifest", "message": "must be namespaced under Eva.Extension.*",
     "decided_by": f"{CORE}:129 __using__", "from": "loader_test.exs refuses a module outside the namespace"},
    {"id": "impostor", "name": "impostor", "script": ("impostor.exs", valid("Eva.Extension.Victim")),
     "verdict": "refuse", "code": "invalid_manifest", "message": "must define Eva.Extension.Impostor",
     "decided_by": f"{LOADER}:288 validate", "from": "loader_test.exs claiming another extension's name"},
    {"id": "nested-own-namespace", "name": "nested",
     "script": ("nested.exs", "defmodule Eva.Extension.Nested.Client do\n  def ping, do: :pong\nend\n\n"
                              + valid("Eva.Extension.Nested")),
     "verdict": "load", "module": "Eva.Extension.Nested",
     "decided_by": f"{LOADER}:288 validate (own subtree)", "from": "loader_test.exs modules nested under the namespace"},
    {"id": "nested-defmodule-inside", "name": "inner",
     "script": ("inner.exs", ("defmodule Eva.Extension.Inner do\n  use Eva.Core.Extension\n\n"
                             "  defmodule Helper do\n    def setup(a, b), do: {a, b}\n  end\n\n"
                             "  def setup(_ctx), do: {:ok, %Eva.Core.Extension.Spec{}}\nend\n")),
     "verdict": "load", "module": "Eva.Extension.Inner",
     "decided_by": f"{LOADER}:253 extension_module (Helper is Eva.Extension.Inner.Helper)",
     "from": "Elixir nesting rules"},
    {"id": "compile-error", "name": "broken", "script": ("broken.exs", "{{{" + valid("Eva.Extension.Broken")),
     "verdict": "refuse", "code": "invalid_manifest", "message": "missing terminator",
     "decided_by": f"{LOADER}:222 require_modules (failed to compile)",
     "from": "loader_test.exs file with compile error"},
    {"id": "unterminated-string", "name": "open", "script": ("open.exs", valid("Eva.Extension.Open") + '"oops\n'),
     "verdict": "refuse", "code": "invalid_manifest", "message": "missing terminator",
     "decided_by": f"{LOADER}:222 require_modules (failed to compile)", "from": "loader.ex require_modules"},
    {"id": "stateful", "name": "stateful",
     "script": ("stateful.exs", ("defmodule Eva.Extension.Stateful do\n  use Eva.Core.Extension\n\n"
                                "  def setup(_ctx) do\n    {:ok, %Eva.Core.Extension.Spec{\n"
                                "      hooks: [:tool_call],\n      event_classes: [:stream]\n    }}\n  end\nend\n")),
     "verdict": "load", "module": "Eva.Extension.Stateful",
     "decided_by": f"{LOADER}:276 validate", "from": "loader_test.exs loads a stateful extension"},
    {"id": "two-extension-modules", "name": "twice",
     "script": ("twice.exs", valid("Eva.Extension.Twice") + valid("Eva.Extension.Twice.Again")),
     "verdict": "refuse", "code": "invalid_manifest", "message": "expected one",
     "decided_by": f"{LOADER}:263 extension_module", "from": "loader.ex extension_module"},
    {"id": "case-insensitive-namespace", "name": "mcp", "script": ("mcp.exs", valid("Eva.Extension.MCP")),
     "verdict": "load", "module": "Eva.Extension.MCP",
     "decided_by": f"{LOADER}:279 validate (compared case-insensitively)", "from": "loader.ex validate comment"},
    {"id": "dash-becomes-underscore", "name": "my-ext", "script": ("my-ext.exs", valid("Eva.Extension.MyExt")),
     "verdict": "load", "module": "Eva.Extension.MyExt",
     "decided_by": f"{CORE}:124 namespace (String.replace - with _, Macro.camelize)", "from": "extension.ex namespace"},
    {"id": "digit-after-underscore", "name": "tool_2", "script": ("tool_2.exs", valid("Eva.Extension.Tool2")),
     "verdict": "load", "module": "Eva.Extension.Tool2",
     "decided_by": f"{CORE}:124 namespace (Macro.camelize drops _ before a digit)", "from": "Macro.camelize"},
    {"id": "requires-a-sibling", "name": "parent",
     "files": {"extension.exs": 'Code.require_file(Path.join(__DIR__, "helper.exs"))\n\n'
                                + valid("Eva.Extension.Parent", "  def value, do: Eva.Extension.Parent.Helper.value()\n"),
               "helper.exs": "defmodule Eva.Extension.Parent.Helper do\n  def value, do: :before\nend\n"},
     "verdict": "load", "module": "Eva.Extension.Parent",
     "decided_by": f"{LOADER}:253 extension_module", "from": "loader_test.exs reloads modules the extension required"},
    {"id": "heredoc-is-not-code", "name": "doc",
     "script": ("doc.exs", ('defmodule Eva.Extension.Doc do\n  @moduledoc """\n  defmodule Fake do\n'
                           '    use Eva.Core.Extension\n  end\n  """\n  use Eva.Core.Extension\n\n'
                           "  def setup(_ctx), do: {:ok, %Eva.Core.Extension.Spec{}}\nend\n")),
     "verdict": "load", "module": "Eva.Extension.Doc",
     "decided_by": "Elixir: a heredoc is a string", "from": "research.exs (@research_system_prompt heredoc)"},
    {"id": "comment-is-not-code", "name": "quiet",
     "script": ("quiet.exs", "# defmodule Eva.Extension.Other do use Eva.Core.Extension end\n"
                             + valid("Eva.Extension.Quiet")),
     "verdict": "load", "module": "Eva.Extension.Quiet", "decided_by": "Elixir: # starts a comment",
     "from": "Elixir syntax"},
    {"id": "sigil-holding-end", "name": "sig",
     "script": ("sig.exs", valid("Eva.Extension.Sig", "  @words ~w(do end fn)\n  def x, do: ~s(end)\n")),
     "verdict": "load", "module": "Eva.Extension.Sig", "decided_by": "Elixir: a sigil is a literal",
     "from": "Elixir syntax"},
    {"id": "setup-with-default", "name": "defaults",
     "script": ("defaults.exs", ("defmodule Eva.Extension.Defaults do\n  use Eva.Core.Extension\n\n"
                                "  def setup(ctx, opts \\\\ []), do: {:ok, %Eva.Core.Extension.Spec{}}\nend\n")),
     "verdict": "load", "module": "Eva.Extension.Defaults",
     "decided_by": f"{LOADER}:285 validate (function_exported? setup/1: a default argument exports it)",
     "from": "Elixir default arguments"},
    {"id": "setup-arity-two", "name": "two",
     "script": ("two.exs", ("defmodule Eva.Extension.Two do\n  use Eva.Core.Extension\n\n"
                           "  def setup(ctx, opts), do: {:ok, {ctx, opts}}\nend\n")),
     "verdict": "refuse", "code": "invalid_manifest", "message": "does not export setup/1",
     "decided_by": f"{LOADER}:286 validate", "from": "loader.ex validate"},
    {"id": "setup-delegated", "name": "delegate",
     "script": ("delegate.exs", ("defmodule Eva.Extension.Delegate do\n  use Eva.Core.Extension\n"
                                "  defdelegate setup(ctx), to: Eva.Extension.Delegate.Impl\nend\n")),
     "verdict": "load", "module": "Eva.Extension.Delegate",
     "decided_by": f"{LOADER}:285 validate (defdelegate exports setup/1)", "from": "Elixir defdelegate"},
    {"id": "not-utf8", "name": "latin", "script": ("latin.exs", {"base64": "ZGVmbW9kdWxlIOk="}),
     "verdict": "refuse", "code": "invalid_manifest", "message": "not UTF-8",
     "decided_by": f"{LOADER}:222 require_modules (Elixir source is UTF-8)", "from": "Elixir tokenizer"},
    {"id": "dot-name", "name": ".hidden", "script": (".hidden.exs", valid("Eva.Extension.Hidden")),
     "verdict": "load", "pkgmgr_rule": True, "code": "invalid_manifest", "message": "pkgmgr's rule",
     "decided_by": f"{LOADER}:288 validate (Module.concat drops the leading dot: Eva.Extension.hidden, which "
                   "Eva.Extension.Hidden matches); pkgmgr's rule: trust.ex content_hash leaves dot-named scripts out",
     "from": "loader.ex validate"},
    {"id": "name-starting-with-digit", "name": "1abc", "script": ("1abc.exs", valid("Eva.Extension.Abc")),
     "verdict": "refuse", "code": "invalid_manifest", "message": "must define :\"Elixir.Eva.Extension.1abc\"",
     "decided_by": f"{LOADER}:288 validate (only a quoted atom can name Eva.Extension.1abc)",
     "from": "loader.ex validate"},
    {"id": "directory-without-entry", "name": "empty", "files": {"lib.exs": valid("Eva.Extension.Empty"),
                                                                 "other.exs": "1 + 1\n"},
     "verdict": "refuse", "code": "invalid_archive", "message": "no extension manifest",
     "decided_by": f"{LOADER}:166 candidates_in_dir (a directory needs extension.exs)", "from": "loader.ex"},
    {"id": "tasks-example", "name": "tasks", "files": {"extension.exs": valid("Eva.Extension.Tasks")},
     "verdict": "load", "module": "Eva.Extension.Tasks",
     "decided_by": f"{LOADER}:166 candidates_in_dir", "from": ".eva/extensions/tasks/extension.exs"},
]
