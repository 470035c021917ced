"""JSON Schema gate: compiled-once validators over `schemas/*.schema.json`.

Every document is first checked by the schema's generated validator (`pkgmgr/_schemas_generated/`,
made by fastjsonschema at build time: `python -m pkgmgr.schemas_codegen`); jsonschema is imported
only when that says "invalid" (a valid document never pays for the import, ~0.2 s), so it is what
explains invalid documents; read-only commands (`ext list`, `--version`) never load it.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, Callable

from pkgmgr.errors import Problem
from pkgmgr.jsonutil import key_path
from pkgmgr.resources_data import schemas_dir


@cache
def load_schema(name: str) -> dict[str, Any]:
    with open(schemas_dir() / f"{name}.schema.json", encoding="utf-8") as handle:
        return json.load(handle)


@cache
def validator(name: str) -> Any:
    """The compiled Draft 2020-12 validator of `schemas/<name>.schema.json`."""
    from jsonschema import Draft202012Validator

    # The shipped schemas are checked against the metaschema by the tests, not on every run.
    return validator_class()(load_schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


@cache
def validator_class() -> Any:
    """Draft 2020-12 with `pattern` matching whole values, as ECMA-262 does and Python's `$`
    does not (`whole_value_pattern`)."""
    from jsonschema import Draft202012Validator, ValidationError, validators

    def pattern(checker: Any, value: str, instance: Any, schema: Any) -> Any:
        if checker.is_type(instance, "string") and whole_value_pattern(value).search(instance) is None:
            yield ValidationError(f"{instance!r} does not match {value!r}")

    return validators.extend(Draft202012Validator, {"pattern": pattern})


@cache
def whole_value_pattern(pattern: str) -> re.Pattern[str]:
    """A schema `pattern` compiled with ECMA-262's meaning of `$` (the end of the string), which
    Python's `$` does not have: it also matches before a final newline, so `^[0-9a-f]{64}$`
    accepted a hash followed by a newline. Every `$` outside a character class becomes `\\Z`.
    jsonschema searches with it (`validator_class`); the generated validators compile each
    pattern the same way (`pkgmgr.schemas_codegen` refuses to write one that does not)."""
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            char = r"\Z"
        out.append(char)
    return re.compile("".join(out))


@cache
def fast_validator(name: str) -> Callable[[Any], Any]:
    """The generated validator of schema `name` (`pkgmgr/_schemas_generated/<name>.py`): it
    returns a valid document and raises `Invalid` for any other."""
    from importlib import import_module

    return import_module(f"pkgmgr._schemas_generated.{name}").validate


def surely_valid(instance: Any, name: str) -> bool:
    """True when `instance` is valid against schema `name` without asking jsonschema (the
    common case, and the one that must not pay for importing it); False means "ask it"."""
    try:
        fast_validator(name)(instance)
    # `Invalid` (a ValueError); a TypeError from a value no decoder makes (a set among unique
    # items); nested too deeply for the generated code's recursion: jsonschema decides
    except (ValueError, TypeError, RecursionError):
        return False
    return True


def _describe(error: Any) -> str:
    """A message without jsonschema's habit of dumping the whole instance."""
    kind = error.validator
    if kind == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return "unknown key(s): " + ", ".join(repr(k) for k in extra)
    if kind == "required":
        return error.message.replace("is a required property", "is required")
    if kind == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        keys = list(error.schema.get("properties", {})) if "object" in str(expected) else []
        shape = f" (a table with the keys {', '.join(keys)})" if keys else ""  # the expected shape
        return f"must be of type {expected}{shape}"
    if kind == "enum":
        return "must be one of " + ", ".join(json.dumps(v) for v in error.validator_value)
    if kind == "const":
        return f"must be {json.dumps(error.validator_value)}"
    if kind == "pattern":
        return f"{_short(error.instance)} does not match {error.validator_value}"
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def schema_problems(instance: Any, name: str, *, file: str, code: str, prefix: str = "") -> list[Problem]:
    """Validate `instance` against schema `name`; one Problem per leaf error, in document order.
    A document the fast path finds valid costs no jsonschema import (`surely_valid`)."""
    if surely_valid(instance, name):
        return []
    problems: list[Problem] = []
    errors = sorted(validator(name).iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors:
        leaves = _leaf_errors(error)
        for leaf in leaves:
            path = key_path(list(leaf.absolute_path))
            if leaf.validator == "additionalProperties":
                for extra in sorted(set(leaf.instance) - set(leaf.schema.get("properties", {}))):
                    key = f"{path}.{extra}" if path else str(extra)
                    problems.append(Problem(code, file, _prefixed(prefix, key), "unknown key"))
                continue
            problems.append(Problem(code, file, _prefixed(prefix, path), _describe(leaf)))
    return _dedupe(problems)


def _leaf_errors(error: Any) -> list[Any]:
    """For oneOf/anyOf, report the best matching branch's errors rather than the umbrella: a
    branch of the value's own type first (a table with an unknown key is reported by that key,
    not as "must be of type string" by the branch that wanted a string)."""
    if error.context:
        from jsonschema.exceptions import best_match

        typed = [e for e in error.context if not (e.validator == "type" and not e.relative_path)]
        best = best_match(typed or error.context)
        return _leaf_errors(best) if best is not None else [error]
    return [error]


def _prefixed(prefix: str, key: str) -> str:
    if not prefix:
        return key
    if not key:
        return prefix
    return prefix + key if key.startswith("[") else f"{prefix}.{key}"


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    out = []
    for problem in problems:
        marker = (problem.key, problem.message)
        if marker not in seen:
            seen.add(marker)
            out.append(problem)
    return out
