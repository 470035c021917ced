"""read_manifest / decode_manifest: which file, bytes to document, and the filesystem rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.manifest import MAX_MANIFEST_BYTES, decode_manifest, load_manifest_bytes, read_manifest
from tests.manifest.helpers import FULL_FILES, full_manifest, minimal
from tests.support.builders import write_extension

REPO = Path(__file__).resolve().parents[2]


def read_problems(root: Path) -> list:
    with pytest.raises(ValidationFailed) as caught:
        read_manifest(root)
    return list(caught.value.problems)


# -- fixtures and full manifests ------------------------------------------------------------

def test_review_pack_fixture() -> None:
    manifest = read_manifest(REPO / "fixtures" / "review-pack")
    assert (manifest.name, manifest.version, manifest.kind) == ("review-pack", "0.1.0", "resource")
    assert manifest.skills == ("skills",)
    top, table = manifest.hooks
    assert top.executor_kind is None and table.executor_kind == "subprocess"
    assert "{{config_dir}}/hooks/session-ready.sh" in top.executor.args
    assert dict(manifest.mcp_servers)["git"].env == (("REPO_ROOT", "{{env:REPO_ROOT}}"),)
    assert manifest.warnings == ()
    assert (REPO / "fixtures" / "review-pack" / "skills" / "code-review" / "SKILL.md").is_file()


def test_prompt_enhancer_fixture() -> None:
    root = REPO / "fixtures" / "prompt-enhancer"
    manifest = read_manifest(root)
    assert (manifest.name, manifest.version, manifest.kind) == ("prompt-enhancer", "0.1.0", "subprocess")
    assert manifest.subprocess.command == "node" and manifest.subprocess.args == ("dist/index.js", "serve")
    assert (root / manifest.subprocess.args[0]).is_file()
    assert manifest.capabilities == ("prompt.provider",) and manifest.actions == ("sessions/list",)
    assert manifest.grants == ("session.read",) and manifest.requires_env == ("PROMPT_ENHANCER_MODE",)
    assert manifest.warnings == ()


@pytest.mark.parametrize("json_manifest", [False, True])
def test_full_manifest_in_both_formats(tmp_path: Path, json_manifest: bool) -> None:
    root = write_extension(tmp_path / "ext", full_manifest(), FULL_FILES, json_manifest=json_manifest)
    manifest = read_manifest(root)
    assert manifest.file == ("extension.json" if json_manifest else "extension.toml")
    assert manifest.name == "full-ext" and len(manifest.hooks) == 2


def test_toml_and_json_decode_to_the_same_manifest(tmp_path: Path) -> None:
    from_toml = read_manifest(write_extension(tmp_path / "t", full_manifest(), FULL_FILES))
    from_json = read_manifest(write_extension(tmp_path / "j", full_manifest(), FULL_FILES, json_manifest=True))
    assert from_toml.document == from_json.document
    assert from_toml == type(from_toml)(**{**from_json.__dict__, "file": "extension.toml"})


# -- which file ---------------------------------------------------------------------------

def test_toml_takes_precedence_over_json(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", minimal(name="from-toml"))
    (root / "extension.json").write_text(json.dumps(minimal(name="from-json")))
    manifest = read_manifest(root)
    assert manifest.name == "from-toml" and manifest.file == "extension.toml"
    assert manifest.warnings == ("extension.json ignored: extension.toml takes precedence",)


def test_precedence_even_when_the_json_is_broken(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext")
    (root / "extension.json").write_text("{not json")
    assert read_manifest(root).warnings == ("extension.json ignored: extension.toml takes precedence",)


def test_json_only(tmp_path: Path) -> None:
    manifest = read_manifest(write_extension(tmp_path / "ext", minimal(), json_manifest=True))
    assert manifest.file == "extension.json" and manifest.warnings == ()


def test_json_problems_name_the_json_file(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", minimal(version="1.0"), json_manifest=True)
    assert str(read_problems(root)[0]) == 'extension.json: extension.version: "1.0" is not a semantic version (X.Y.Z)'


@pytest.mark.parametrize("make", [lambda root: None, lambda root: (root / "Extension.toml").write_text("")])
def test_no_manifest(tmp_path: Path, make) -> None:
    root = tmp_path / "ext"
    root.mkdir()
    make(root)
    with pytest.raises(PkgmgrError) as caught:
        read_manifest(root)
    assert caught.value.code == "invalid_manifest"
    assert caught.value.message == f"no extension.toml or extension.json in {root}"


def test_missing_root(tmp_path: Path) -> None:
    with pytest.raises(PkgmgrError, match="no extension.toml or extension.json"):
        read_manifest(tmp_path / "nowhere")


def test_manifest_that_is_a_directory(tmp_path: Path) -> None:
    root = tmp_path / "ext"
    (root / "extension.toml").mkdir(parents=True)
    assert "is not a regular file" in read_problems(root)[0].message


def test_manifest_symlink_out_of_the_root(tmp_path: Path) -> None:
    outside = write_extension(tmp_path / "outside")
    root = tmp_path / "ext"
    root.mkdir()
    (root / "extension.toml").symlink_to(outside / "extension.toml")
    found = read_problems(root)
    assert found[0].code == "path_escapes_root" and found[0].file == "extension.toml"


def test_manifest_symlink_inside_the_root(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", files={"meta/real.toml": ""})
    (root / "extension.toml").rename(root / "meta" / "real.toml")
    (root / "extension.toml").symlink_to("meta/real.toml")
    assert read_manifest(root).name == "demo-ext"


# -- decoding -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("file", "raw", "message"),
    [
        ("extension.toml", b'name = "x"\nname = "y"\n', "not valid TOML"),
        ("extension.toml", b"name = \n", "not valid TOML"),
        ("extension.toml", b'name = "\xff"\n', "not valid UTF-8"),
        ("extension.json", b'{"name": "x",}', "not valid JSON"),
        ("extension.json", b'{"name": "x", "name": "y"}', 'duplicate key "name"'),
        ("extension.json", b'{"version": NaN}', "NaN is not a JSON number"),
        ("extension.json", b'{"version": -Infinity}', "-Infinity is not a JSON number"),
        ("extension.json", b'["name"]', "must be a JSON object"),
        ("extension.json", b"", "not valid JSON"),
        ("extension.json", b'{"n": ' + b"9" * 5000 + b"}", "not valid JSON"),
        ("extension.toml", b"n = " + b"9" * 5000, "not valid TOML"),
        ("extension.toml", b"a = " + b"[" * 100_000, "nested deeper"),
        ("extension.json", b"[" * 100_000, "nested deeper"),
        ("extension.toml", b"a = " + b"{b = " * 20_000, "nested deeper"),
    ],
)
def test_undecodable_manifests(file: str, raw: bytes, message: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        decode_manifest(raw, file=file)
    problem = caught.value.problems[0]
    assert problem.code == "invalid_manifest" and problem.file == file
    assert message in problem.message, problem.message


def test_parser_errors_carry_the_line() -> None:
    with pytest.raises(ValidationFailed) as caught:
        decode_manifest(b'name = "x"\n\nversion = \n', file="extension.toml")
    assert caught.value.problems[0].line == 3
    assert "extension.toml:3:" in str(caught.value)
    with pytest.raises(ValidationFailed) as caught:
        decode_manifest(b'{\n"a": 1,\n}', file="extension.json")
    assert caught.value.problems[0].line == 3


def test_byte_order_mark_is_rejected_in_json_like_go_encoding_json() -> None:
    with pytest.raises(ValidationFailed, match="byte order mark"):
        decode_manifest(b'\xef\xbb\xbf{}', file="extension.json")


def test_byte_order_mark_is_skipped_in_toml_like_burntsushi_toml() -> None:
    # Compozy decodes extension.toml with BurntSushi/toml, whose parse() reads over a UTF-8 BOM
    assert decode_manifest(b'\xef\xbb\xbfname = "demo-ext"\n', file="extension.toml") == {"name": "demo-ext"}


def test_size_limit(tmp_path: Path) -> None:
    padding = "# " + "x" * 100 + "\n"
    text = 'name = "demo-ext"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n'
    at_limit = text + padding * ((MAX_MANIFEST_BYTES - len(text)) // len(padding))
    at_limit += "#" * (MAX_MANIFEST_BYTES - len(at_limit))
    assert len(at_limit.encode()) == MAX_MANIFEST_BYTES
    assert read_manifest(write_extension(tmp_path / "ok", at_limit)).name == "demo-ext"
    found = read_problems(write_extension(tmp_path / "big", at_limit + "#"))
    assert found[0].code == "invalid_manifest" and "larger than 1 MiB" in found[0].message


def test_lone_surrogate_in_json_reads_as_go_reads_it(tmp_path: Path) -> None:
    """encoding/json makes a lone surrogate escape U+FFFD and loads the manifest (recorded:
    manifest_cases.toml recorded-json-lone-surrogate)."""
    root = write_extension(tmp_path / "ext", '{"name": "demo-ext", "version": "0.1.0", "min_compozy_version": "0.5.0",'
                                             ' "description": "\\ud800x"}', json_manifest=True)
    assert read_manifest(root).description == "\ufffdx"


def test_toml_datetime_is_a_type_problem(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", 'name = "demo-ext"\nversion = 1979-05-27\nmin_compozy_version = "0.5.0"\n')
    found = read_problems(root)
    assert [(p.key, p.message) for p in found] == [("version", "must be of type string")]


def test_values_json_cannot_carry_are_rejected_even_in_free_form_tables(tmp_path: Path) -> None:
    text = ('name = "demo-ext"\nversion = "0.1.0"\nmin_compozy_version = "0.5.0"\n'
            "[resources.tools.search]\nhandler = \"search\"\nbackend = { kind = \"extension_host\" }\n"
            "when = 1979-05-27T07:32:00Z\nlimit = nan\nratio = -inf\n")
    found = read_problems(write_extension(tmp_path / "ext", text))
    assert [(p.key, p.message) for p in found] == [
        ("resources.tools.search.limit", "nan is not a finite number"),
        ("resources.tools.search.ratio", "-inf is not a finite number"),
        ("resources.tools.search.when", "a datetime value is not allowed here; write it as a string"),
    ]


def test_json_number_overflowing_to_infinity(tmp_path: Path) -> None:
    text = json.dumps(minimal(resources={"tools": {"t": {"n": 1}}})).replace('"n": 1', '"n": 1e400')
    found = read_problems(write_extension(tmp_path / "ext", text, json_manifest=True))
    assert [(p.key, p.message) for p in found] == [("", "not valid JSON: number 1e400 is out of range")]


def test_load_manifest_bytes() -> None:
    raw = json.dumps(minimal()).encode()
    assert load_manifest_bytes(raw, file="extension.json").name == "demo-ext"


# -- filesystem rules -----------------------------------------------------------------------

def test_resource_paths_must_exist(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", minimal(resources={"skills": ["skills"], "agents": ["agents/x"]}),
                           {"skills/a/SKILL.md": ""})
    found = read_problems(root)
    assert [(p.code, p.key, p.message) for p in found] == [
        ("invalid_manifest", "resources.agents[0]",
         '"agents/x" does not exist (pkgmgr\'s rule: resources are files inside the extension)')]


@pytest.mark.parametrize("kind", ["skills", "agents", "bundles", "loops"])
def test_resource_paths_escaping_the_root(tmp_path: Path, kind: str) -> None:
    (tmp_path / "outside").mkdir()
    root = write_extension(tmp_path / "ext", minimal(resources={kind: ["../outside"]}))
    found = read_problems(root)
    assert [(p.code, p.key) for p in found] == [("path_escapes_root", f"resources.{kind}[0]")]
    error = pytest.raises(ValidationFailed, read_manifest, root).value
    assert error.code == "path_escapes_root" and error.exit_code == 3


def test_symlinked_resource_escaping_the_root(tmp_path: Path) -> None:
    (tmp_path / "outside" / "skill").mkdir(parents=True)
    root = write_extension(tmp_path / "ext", minimal(resources={"skills": ["skills/evil", "skills/good"]}),
                           {"skills/good/SKILL.md": ""})
    (root / "skills" / "evil").symlink_to(tmp_path / "outside" / "skill")
    found = read_problems(root)
    assert [(p.code, p.key) for p in found] == [("path_escapes_root", "resources.skills[0]")]


def test_absolute_resource_path(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", minimal(resources={"bundles": [str(tmp_path)]}))
    assert read_problems(root)[0].code == "path_escapes_root"


def test_command_paths(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    data = minimal(
        resources={
            "hooks": [{"name": "a", "event": "session.post_create", "command": "{{config_dir}}/../outside/run"},
                      {"name": "b", "event": "session.post_create", "executor": {"command": "./bin/run"}}],
            "mcp_servers": {"m": {"command": "vendor/tool"}, "ok": {"command": "uvx"}},
        },
        subprocess={"command": "../outside/server"},
    )
    root = write_extension(tmp_path / "ext", data, {"bin/run": ""})
    (root / "vendor").symlink_to(tmp_path / "outside")
    found = read_problems(root)
    assert [(p.code, p.key) for p in found] == [
        ("path_escapes_root", "resources.hooks[0].command"),
        ("path_escapes_root", "resources.mcp_servers.m.command"),
        ("path_escapes_root", "subprocess.command"),
    ]


def test_path_and_other_problems_together_first_code_wins(tmp_path: Path) -> None:
    root = write_extension(tmp_path / "ext", minimal(version="1.0", resources={"skills": ["../x"]}))
    error = pytest.raises(ValidationFailed, read_manifest, root).value
    assert [p.code for p in error.problems] == ["invalid_manifest", "path_escapes_root"]
    assert error.code == "invalid_manifest"


def test_copied_fixture_with_an_escaping_skill(tmp_path: Path) -> None:
    root = tmp_path / "review-pack"
    shutil.copytree(REPO / "fixtures" / "review-pack", root)
    shutil.rmtree(root / "skills")
    (tmp_path / "stolen").mkdir()
    (root / "skills").symlink_to(tmp_path / "stolen")
    assert read_problems(root)[0].code == "path_escapes_root"
