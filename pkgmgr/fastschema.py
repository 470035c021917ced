"""A fast, conservative JSON Schema check: "this document is surely valid", without jsonschema.

Importing jsonschema costs ~0.2 s, more than most commands' whole work, and almost every
document pkgmgr validates is valid. `compile_schema(schema)` turns one of pkgmgr's own schemas
(the subset of draft 2020-12 they use) into a plain Python predicate. The predicate is sound,
not complete: True means jsonschema would report no error; False means "not sure", and the
caller runs jsonschema, which decides and explains. So the predicate may be stricter than the
schema (a float 1.0 for an integer, a `date-time` string that is not plain RFC 3339, a
`uniqueItems` array of mixed types) but never more lenient.

Supported keywords: type, enum, const, properties, required, additionalProperties,
propertyNames, minProperties, maxProperties, items, minItems, maxItems, uniqueItems,
minLength, maxLength, pattern, format (`date-time` only), minimum, maximum, exclusiveMinimum,
exclusiveMaximum, allOf, anyOf, oneOf (when its branches are told apart by `type`), and `$ref`
to `#/$defs/...`; annotations are ignored. A schema using anything else compiles to None: the
caller always uses jsonschema for it.
"""

from __future__ import annotations

import operator
import re
from datetime import date
from functools import cache
from typing import Any, Callable, Mapping

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples",
                          "deprecated", "readOnly", "writeOnly"})
# RFC 3339 date-time, strictly (what `rfc3339-validator` accepts is a superset of this)
_DATE_TIME = re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:[0-5]\d"
                        r"(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)", re.ASCII)


class Unsupported(Exception):
    """The schema uses something this checker does not implement."""


def _is_int(x: Any) -> bool:
    return type(x) is int


def _is_number(x: Any) -> bool:
    return type(x) in (int, float)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
    "string": lambda x: type(x) is str,
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
    "integer": _is_int,
    "number": _is_number,
}


def _kind(x: Any) -> str | None:
    """The JSON kind of a Python value, for telling oneOf branches apart (None: unknown)."""
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, (int, float)):
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, dict):
        return "object"
    if isinstance(x, list):
        return "array"
    if x is None:
        return "null"
    return None


def _same(a: Any, b: Any) -> bool:
    """Equality that implies jsonschema's `equal` (stricter: the types must match too)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def compile_schema(schema: Mapping[str, Any]) -> Check | None:
    """The sound predicate of `schema` (module docstring), or None when it uses a keyword this
    checker does not implement."""
    defs = schema.get("$defs", {})
    compiled: dict[str, Check] = {}

    def ref(target: str) -> Check:
        prefix = "#/$defs/"
        if not target.startswith(prefix) or target[len(prefix):] not in defs:
            raise Unsupported(target)
        name = target[len(prefix):]

        def check(x: Any) -> bool:  # late binding: definitions may refer to each other
            return compiled[name](x)

        return check

    def build(node: Any) -> Check:
        if node is True:
            return lambda x: True
        if not isinstance(node, dict):
            raise Unsupported(repr(node))
        checks: list[Check] = []
        for key, value in node.items():
            if key in _ANNOTATIONS:
                continue
            maker = _KEYWORDS.get(key)
            if maker is None:
                raise Unsupported(key)
            checks.append(maker(value, node, build, ref))
        if not checks:
            return lambda x: True
        if len(checks) == 1:
            return checks[0]
        return lambda x: all(check(x) for check in checks)

    try:
        for name, sub in defs.items():
            compiled[name] = build(sub)
        return build(schema)
    except Unsupported:
        return None


Build = Callable[[Any], Check]
Ref = Callable[[str], Check]


def _type(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    names = [value] if isinstance(value, str) else list(value)
    if any(name not in _TYPES for name in names):
        raise Unsupported(f"type {value!r}")
    tests = [_TYPES[name] for name in names]
    return lambda x: any(test(x) for test in tests)


def _enum(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    options = list(value)
    return lambda x: any(_same(x, option) for option in options)


def _const(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    return lambda x: _same(x, value)


def _properties(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    props = {name: build(sub) for name, sub in value.items()}
    extra = node.get("additionalProperties", True)
    extra_check: Check | None
    if extra is True:
        extra_check = None
    elif extra is False:
        extra_check = lambda x: False  # noqa: E731
    else:
        extra_check = build(extra)

    def check(x: Any) -> bool:
        if not isinstance(x, dict):
            return True
        for key, item in x.items():
            prop = props.get(key)
            if prop is not None:
                if not prop(item):
                    return False
            elif extra_check is not None and not extra_check(item):
                return False
        return True

    return check


def _additional_only(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    """`additionalProperties` without `properties`: it applies to every property."""
    if "properties" in node:
        return lambda x: True  # handled by `properties`
    sub = (lambda x: False) if value is False else build(value)
    return lambda x: not isinstance(x, dict) or all(sub(item) for item in x.values())


def _required(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    names = list(value)
    return lambda x: not isinstance(x, dict) or all(name in x for name in names)


def _property_names(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    sub = build(value)
    return lambda x: not isinstance(x, dict) or all(sub(key) for key in x)


def _items(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    if "prefixItems" in node:
        raise Unsupported("prefixItems")
    sub = build(value) if value is not False else (lambda x: False)
    return lambda x: not isinstance(x, list) or all(sub(item) for item in x)


def _unique_items(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    if not value:
        return lambda x: True

    def check(x: Any) -> bool:
        if not isinstance(x, list):
            return True
        if all(type(item) is str for item in x) or all(type(item) is int for item in x):
            return len(set(x)) == len(x)
        return False  # mixed or nested items: let jsonschema decide

    return check


def _size(kind: type, compare: Callable[[int, int], bool]) -> Callable[[Any, Any, Build, Ref], Check]:
    """min/maxProperties, min/maxItems, min/maxLength: a bound on `len` of a `kind` value."""

    def make(value: Any, node: Any, build: Build, ref: Ref) -> Check:
        return lambda x: not isinstance(x, kind) or compare(len(x), value)

    return make


@cache
def whole_value_pattern(pattern: str) -> re.Pattern[str]:
    """A schema `pattern` compiled with ECMA-262's meaning of `$` (the end of the string), which
    Python's `$` does not have: it also matches before a final newline, so `^[0-9a-f]{64}$`
    accepted a hash followed by a newline. Every `$` outside a character class becomes `\\Z`. Both
    schema validators (this module and `schemas.validator`) search with it."""
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


def _pattern(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    regex = whole_value_pattern(value)
    return lambda x: not isinstance(x, str) or regex.search(x) is not None


def _format(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    if value != "date-time":
        raise Unsupported(f"format {value!r}")
    return lambda x: not isinstance(x, str) or _is_date_time(x)


def _is_date_time(text: str) -> bool:
    if _DATE_TIME.fullmatch(text) is None:
        return False
    try:
        date(int(text[0:4]), int(text[5:7]), int(text[8:10]))  # the day exists in that month
    except ValueError:
        return False
    return True


def _bound(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any, Build, Ref], Check]:
    def make(value: Any, node: Any, build: Build, ref: Ref) -> Check:
        if not _is_number(value):
            raise Unsupported(f"bound {value!r}")
        def check(x: Any) -> bool:
            if type(x) in (int, float):
                return compare(x, value)
            # bounds apply to numbers only; another numeric type (Decimal, ...): not sure
            return isinstance(x, (bool, str, list, dict)) or x is None

        return check

    return make


def _all_of(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    subs = [build(sub) for sub in value]
    return lambda x: all(sub(x) for sub in subs)


def _any_of(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    subs = [build(sub) for sub in value]
    return lambda x: any(sub(x) for sub in subs)


def _one_of(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    """Sound only when the branches are told apart by `type`: an instance whose kind only one
    branch admits is valid when that branch surely is (every other branch surely fails)."""
    branches = []
    for sub in value:
        declared = sub.get("type") if isinstance(sub, dict) else None
        if declared is None:
            raise Unsupported("oneOf branch without a type")
        names = [declared] if isinstance(declared, str) else list(declared)
        kinds = {"number" if name in ("integer", "number") else name for name in names}
        branches.append((kinds, build(sub)))

    def check(x: Any) -> bool:
        kind = _kind(x)
        admitting = [sub for kinds, sub in branches if kind in kinds]
        return kind is not None and len(admitting) == 1 and admitting[0](x)

    return check


def _ref(value: Any, node: Any, build: Build, ref: Ref) -> Check:
    return ref(value)


_KEYWORDS: dict[str, Callable[[Any, Any, Build, Ref], Check]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "properties": _properties,
    "additionalProperties": _additional_only,
    "required": _required,
    "propertyNames": _property_names,
    "minProperties": _size(dict, operator.ge),
    "maxProperties": _size(dict, operator.le),
    "items": _items,
    "minItems": _size(list, operator.ge),
    "maxItems": _size(list, operator.le),
    "uniqueItems": _unique_items,
    "minLength": _size(str, operator.ge),
    "maxLength": _size(str, operator.le),
    "pattern": _pattern,
    "format": _format,
    "minimum": _bound(lambda x, bound: not x < bound),
    "maximum": _bound(lambda x, bound: not x > bound),
    "exclusiveMinimum": _bound(lambda x, bound: not x <= bound),
    "exclusiveMaximum": _bound(lambda x, bound: not x >= bound),
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "$ref": _ref,
}
