"""pkgmgr.toml codec: the declared registries, extensions and activations, and every problem
named by its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.workspace.declaration import Declared, parse_workspace_manifest, read_workspace_manifest

FULL = b"""
[registries]
acme = "github:acme/extension-index"
mirror = { source = "https://mirror.example/index", priority = 5, insecure = false }
vendored = "vendor/index"

[extensions]
marketing-linear = ">=0.1,<0.2"
review-pack = { version = "==0.3.*", registry = "acme" }
local-tool = { path = "./tools/local-tool" }
gh-tool = { github = "acme/gh-tool@v1.2.0" }
anything = "*"
empty = ""

[[activations]]
extension = "marketing-linear"
bundle = "marketing-linear"
profile = "default"

[[activations]]
extension = "local-tool"
confirm_network_requirement = "3f1c000000000000000000000000000000000000000000000000000000000000"
"""


def problems(raw: bytes, tmp_path: Path) -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as caught:
        parse_workspace_manifest(raw, tmp_path)
    assert caught.value.code == "invalid_config" and caught.value.exit_code == 3
    return [(p.key, p.message) for p in caught.value.problems]


def test_the_spec_example_and_more(tmp_path: Path) -> None:
    manifest = parse_workspace_manifest(FULL, tmp_path)
    assert [(r.name, r.priority) for r in manifest.registries] == [("acme", 100), ("mirror", 5), ("vendored", 100)]
    assert manifest.registries[2].source == str(tmp_path / "vendor" / "index")  # relative to the workspace
    assert manifest.lock_sources == {"vendored": "vendor/index"}
    assert manifest.extension("marketing-linear") == Declared("marketing-linear", "registry", spec=">=0.1,<0.2")
    assert manifest.extension("review-pack") == Declared("review-pack", "registry", spec="==0.3.*", registry="acme")
    assert manifest.extension("local-tool") == Declared("local-tool", "path", path="tools/local-tool")
    assert manifest.extension("gh-tool") == Declared("gh-tool", "github", github="acme/gh-tool", tag="v1.2.0")
    assert manifest.extension("anything").spec == "*" and manifest.extension("empty").spec == ""
    first, second = manifest.activations
    assert (first.extension, first.bundle, first.profile, first.confirm) == (
        "marketing-linear", "marketing-linear", "default", None)
    assert (second.bundle, second.profile, second.label) == (None, "default", "local-tool:*/default")
    assert manifest.raw == FULL


@pytest.mark.parametrize("spec, exact", [("==1.2.3", "1.2.3"), ("== v1.2.3", "1.2.3"), ("==1.2.3-rc.1", "1.2.3-rc.1"),
                                         ("==1.2.*", None), ("==1.2.3,<2", None), (">=1.2.3", None), ("", None)])
def test_exact_requirement(spec: str, exact: str | None) -> None:
    assert Declared("x-ext", "registry", spec=spec).exact == exact


def test_every_problem_is_reported_with_its_key(tmp_path: Path) -> None:
    raw = b"""
[registries]
Bad = "x"
default = "y"

[extensions]
ok-ext = "*"
bad-spec = "=>1"
both = { path = "a", github = "o/r" }
mixed = { path = "a", version = "1" }
escape = { path = "../../etc" }
absolute = { path = "/etc" }
gh = { github = "nope" }
reg = { registry = "Not A Name" }
marketplace = "*"

[[activations]]
extension = "ghost"

[[activations]]
extension = "ok-ext"

[[activations]]
extension = "ok-ext"
profile = "DEFAULT"
"""
    keys = [key for key, _ in problems(raw, tmp_path)]
    assert keys == ["registries.Bad", "registries.default", "extensions.bad-spec", "extensions.both",
                    "extensions.mixed", "extensions.escape.path", "extensions.absolute.path", "extensions.gh.github",
                    "extensions.reg.registry", "extensions.marketplace", "activations[0].extension",
                    "activations[2]"]


@pytest.mark.parametrize("raw, key", [
    (b"version = 1\n", "version"),
    (b"[extensions]\nx-ext = 1\n", "extensions.x-ext"),
    (b"[extensions]\nx-ext = { tag = 'v1' }\n", "extensions.x-ext.tag"),  # the unknown key itself
    (b"[extensions]\nx-ext = {}\n", "extensions.x-ext"),
    (b"[[activations]]\nprofile = 'p'\n", "activations[0]"),
    (b"[registries]\nacme = { priority = 1 }\n", "registries.acme"),
    (b"activations = 3\n", "activations"),
])
def test_schema_problems_name_the_key(tmp_path: Path, raw: bytes, key: str) -> None:
    assert problems(raw, tmp_path)[0][0] == key


def test_a_name_with_a_trailing_newline_is_not_a_name(tmp_path: Path) -> None:
    # `$` matches before a final newline: a quoted key could pass for another extension's name
    assert problems(b'[extensions]\n"local-tool\\n" = "*"\n', tmp_path) == [
        ("extensions.local-tool\n", "not an extension name (^[a-z][a-z0-9-]{1,63}$, or a dotted id such as acme.word)")]


def test_a_vera_id_is_declared_with_a_path_or_github_source(tmp_path: Path) -> None:
    (tmp_path / "tools" / "word").mkdir(parents=True)
    manifest = parse_workspace_manifest(b'[extensions]\n"acme.word" = { path = "tools/word", host = "vera" }\n'
                                        b'"acme.tools" = { github = "acme/tools@v1" }\n', tmp_path)
    assert [(d.name, d.kind) for d in manifest.extensions] == [("acme.word", "path"), ("acme.tools", "github")]
    [(key, message)] = problems(b'[extensions]\n"acme.word" = "*"\n', tmp_path)
    assert key == "extensions.acme.word" and "declare it with a path or github source" in message
    [(key, _)] = problems(b'[extensions]\n"acme..word" = { path = "tools/word" }\n', tmp_path)
    assert key == "extensions.acme..word"


@pytest.mark.parametrize("raw", [b'[registries]\nteam = "   "\n', b'[registries]\nteam = { source = " " }\n'])
def test_a_blank_registry_source_is_no_source(tmp_path: Path, raw: bytes) -> None:
    # the schema refuses "", and spaces would name the workspace directory itself
    [(key, message)] = problems(raw, tmp_path)
    assert key == "registries.team" and "not empty" in message


def test_not_toml_and_too_large(tmp_path: Path) -> None:
    assert problems(b"[extensions\n", tmp_path)[0][1].startswith("not valid TOML")
    assert problems(b"\xff\xfe", tmp_path)[0][1].startswith("not valid UTF-8")
    assert "larger than" in problems(b"#" * (1024 * 1024 + 1), tmp_path)[0][1]


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(PkgmgrError) as caught:
        read_workspace_manifest(tmp_path)
    assert caught.value.code == "not_found" and "--save" in (caught.value.hint or "")


def test_symlinked_path_that_escapes_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tools").symlink_to(outside)
    assert problems(b'[extensions]\nx-ext = { path = "tools" }\n', ws) == [
        ("extensions.x-ext.path", "must stay inside the workspace")]
