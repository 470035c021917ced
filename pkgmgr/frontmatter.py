"""Front matter: the YAML (or, as Compozy's second try, TOML) block at the top of AGENT.md and
SKILL.md, read with a strict safe loader — no duplicate keys, no anchors or aliases (so no alias
bombs), bounded depth and size (`MAX_FRONT_MATTER_BYTES`), plain scalars typed by the YAML 1.2 core
schema as Compozy's goccy/go-yaml types them; a YAML error is a problem with its line, never a
traceback. Shared by the bundle codec (`bundles.agent`) and the manifest's resource warnings
(`manifest.resources`)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any, ClassVar

from pkgmgr.documents import DocumentError, plain_issues
from pkgmgr.errors import ProblemSink

MAX_FRONT_MATTER_BYTES = 64 * 1024


def load_front_matter(sink: ProblemSink, text: str) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    """The front matter mapping and its plain-JSON issues, or None after filing the problem."""
    import yaml

    size = len(text.encode("utf-8"))
    if size > MAX_FRONT_MATTER_BYTES:
        sink.add("", f"front matter is larger than {MAX_FRONT_MATTER_BYTES // 1024} KiB ({size} bytes; pkgmgr's limit)",
                 line=1)
        return None, []
    try:
        value = yaml.load(text, Loader=strict_loader())  # noqa: S506 - a SafeLoader subclass
        issues = plain_issues(value)
    except yaml.YAMLError as exc:
        toml_value = toml_front_matter(text)
        if toml_value is not None:
            return toml_value, plain_issues(toml_value)
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        sink.add("", f"front matter is not valid YAML: {problem} (nor TOML)",
                 line=mark.line + 2 if mark is not None else None)
        return None, []
    except RecursionError:
        sink.add("", "front matter is nested too deeply")
        return None, []
    except (ValueError, TypeError, OverflowError) as exc:  # what a constructor may raise past its own checks
        sink.add("", f"front matter is not valid YAML: {exc}")
        return None, []
    except DocumentError as exc:
        sink.add(exc.key, f"front matter {exc.message}")
        return None, []
    if value is None:
        sink.add("name", "is required (the front matter is empty)")
        return None, []
    if not isinstance(value, dict):
        toml_value = toml_front_matter(text)
        if toml_value is not None:
            return toml_value, plain_issues(toml_value)
        sink.add("", "front matter must be a YAML mapping of fields (or a TOML table)")
        return None, []
    return value, issues


def toml_front_matter(text: str) -> dict[str, Any] | None:
    """The front matter read as TOML, Compozy's second try when YAML does not decode
    (`decodeAgentFrontmatter`: strict YAML first, then BurntSushi TOML, unknown keys refused
    through `meta.Undecoded`); None when it is not TOML either."""
    import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


_CORE_NULL = re.compile(r"(?:~|null|Null|NULL|)\Z")
_CORE_BOOL = re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z")
_CORE_INT = re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z")
_CORE_FLOAT = re.compile(r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                         r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z")
_CORE_MERGE = re.compile(r"<<\Z")


@cache
def strict_loader() -> Any:
    """A safe YAML loader (libyaml when available) refusing duplicate keys and aliases, typing
    plain scalars by the YAML 1.2 core schema (no YAML 1.1 base-60, yes/no or timestamps)."""
    import yaml
    from yaml.constructor import ConstructorError

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def construct_int(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node)
        if not _CORE_INT.match(text):
            raise ConstructorError(None, None, f"{text[:40]!r} is not a YAML 1.2 integer", node.start_mark)
        try:
            if text.startswith(("0o", "0x")):
                return int(text[2:], 8 if text[1] == "o" else 16)
            return int(text)
        except ValueError:  # more digits than Python converts
            raise ConstructorError(None, None, f"integer of {len(text)} digits is too large", node.start_mark) from None

    def construct_float(loader: Any, node: Any) -> float:
        text = loader.construct_scalar(node)
        if not _CORE_FLOAT.match(text):
            raise ConstructorError(None, None, f"{text[:40]!r} is not a YAML 1.2 float", node.start_mark)
        special = text.lstrip("+").lower()
        if special in (".inf", "-.inf", ".nan"):
            return float(special.replace(".", ""))
        return float(text)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        yaml_implicit_resolvers: ClassVar[dict[Any, list[Any]]] = {}  # only the core schema's, below

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            if node in self.constructed_objects or node in self.recursive_objects:
                raise ConstructorError(None, None, "anchors and aliases are not allowed in front matter", node.start_mark)
            return super().construct_object(node, deep=deep)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: set[tuple[str, str]] = set()
                for key_node, _ in node.value:
                    if isinstance(key_node, yaml.ScalarNode):
                        marker = (key_node.tag, key_node.value)
                        if marker in seen:
                            raise ConstructorError(None, None, f"duplicate key {key_node.value!r}", key_node.start_mark)
                        seen.add(marker)
            return super().construct_mapping(node, deep=deep)

    for tag, pattern, first in (
        ("null", _CORE_NULL, ["~", "n", "N", ""]),
        ("bool", _CORE_BOOL, list("tTfF")),
        ("int", _CORE_INT, list("-+0123456789")),
        ("float", _CORE_FLOAT, list("-+0123456789.")),
        ("merge", _CORE_MERGE, ["<"]),
    ):
        StrictLoader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", pattern, first)
    StrictLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    StrictLoader.add_constructor("tag:yaml.org,2002:float", construct_float)
    return StrictLoader
