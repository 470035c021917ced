"""schemas_codegen: the committed validators are those of today's schemas, and the generator
refuses what the fast path could not trust."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import fastjsonschema
import pytest

from pkgmgr._schemas_generated import Invalid
from pkgmgr.schemas_codegen import (
    OUT,
    Unsupported,
    check_keywords,
    generate,
    main,
    schema_digest,
    schema_names,
    target,
    validator_code,
)

NAMES = schema_names()


@pytest.mark.parametrize("name", NAMES)
def test_each_generated_module_is_made_from_the_schema_as_it_is(name: str) -> None:
    """Edit a schema and forget `python -m pkgmgr.schemas_codegen`: this fails."""
    module = import_module(f"pkgmgr._schemas_generated.{name}")
    assert module.SCHEMA_SHA256 == schema_digest(name), f"run `python -m pkgmgr.schemas_codegen` ({name})"
    if module.VERSION == fastjsonschema.VERSION:  # another fastjsonschema may write other code
        assert target(name).read_text(encoding="utf-8") == generate(name), "run `python -m pkgmgr.schemas_codegen`"


def test_no_generated_module_outlives_its_schema() -> None:
    assert sorted(p.stem for p in OUT.glob("*.py") if p.name != "__init__.py") == NAMES


def test_the_check_mode_finds_nothing_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    if any(import_module(f"pkgmgr._schemas_generated.{n}").VERSION != fastjsonschema.VERSION for n in NAMES):
        pytest.skip(f"the modules were generated with another fastjsonschema than {fastjsonschema.VERSION}")
    assert main(["--check"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(("schema", "why"), [
    ({"prefixItems": [{"type": "string"}]}, "prefixItems"),
    ({"items": [{"type": "string"}]}, "tuple form"),
    ({"properties": {"a": {"$ref": "#/$defs/x", "minLength": 3}}, "$defs": {"x": {"type": "string"}}}, "beside"),
    ({"$ref": "https://example.org/other.json"}, "local"),
    ({"type": "string", "format": "uri"}, "format 'uri'"),
    ({"type": "number", "exclusiveMinimum": True}, "must be a number"),
    ({"minimum": 1}, "without a 'type'"),
    ({"dependentRequired": {"a": ["b"]}}, "dependentRequired"),
    ({"patternProperties": {"^x": {}}}, "patternProperties"),
    ({"properties": {"a": {"unevaluatedProperties": False}}}, "#/properties/a"),
    ({"type": "string", "contentMediaType": "application/json"}, "contentMediaType"),
    ({"allOf": [{"type": "object"}, {"if": {"required": ["a"]}}]}, "#/allOf/1"),
])
def test_keywords_whose_meaning_differs_are_refused(schema: dict[str, Any], why: str) -> None:
    with pytest.raises(Unsupported, match=why.replace("$", r"\$")):
        check_keywords(schema)


def test_a_pattern_fastjsonschema_would_compile_otherwise_is_refused() -> None:
    """fastjsonschema turns a `$` not after a backslash into `\\Z`: inside a character class too,
    and not after an escaped backslash (`\\\\$`, which then keeps Python's `$`, true before a final
    newline). pkgmgr's rule (`whole_value_pattern`) differs on both: the generator must refuse."""
    validator_code({"type": "string", "pattern": "^[a-z]+$"}, "plain")
    with pytest.raises(Unsupported, match="compiled as"):
        validator_code({"type": "string", "pattern": r"^a\\$"}, "an escaped backslash, then the end")
    with pytest.raises(Unsupported, match="bad escape"):
        validator_code({"type": "string", "pattern": "^[$]x$"}, "a dollar in a class")


def test_the_generated_code_takes_no_tuple_for_an_array_and_imports_nothing_heavy() -> None:
    namespace: dict[str, Any] = {}
    exec(validator_code({"type": "array", "uniqueItems": True, "items": {"type": "number", "minimum": 0}}, "t"),
         namespace)
    namespace["validate"]([1, 2.5])
    for bad in ((1, 2), [1, 1.0], [-1], [True]):
        with pytest.raises(Invalid):
            namespace["validate"](bad)
    for name in NAMES:
        source = target(name).read_text(encoding="utf-8")
        assert "import fastjsonschema" not in source and "from fastjsonschema" not in source
        assert "from decimal" not in source and "import decimal" not in source


def test_a_long_value_is_refused_by_its_length_before_its_pattern_runs() -> None:
    """Bounded work: a patterned string with a `maxLength` meets the length check first."""
    validate = import_module("pkgmgr._schemas_generated.registry_entry").validate
    entry = {"name": "demo-ext", "tier": "community", "versions": [
        {"version": "1.0.0", "url": "a.tar.gz", "sha256": "a" * 64, "size": 1, "min_compozy_version": "0.5.0",
         "permissions": ["a" * 1_000_000 + "!"]}]}
    with pytest.raises(Invalid) as caught:
        validate(entry)
    assert caught.value.rule == "maxLength"
