"""What the store checks of a row of state.db before it believes it (SPEC 4): the rule of every
column, the JSON columns, an install's path, and whether `extensions/` holds installed trees.

The checks answer with the problem (or None) instead of raising, and this module imports only
`os`, `re`, `json` and pkgmgr's patterns: `pkgmgr.store.db` and `pkgmgr.store.model` turn a
problem into `state_inconsistent`, and the start-up fast path of `ext list -o json`
(`pkgmgr.cli.fast_list`) applies the very same rules without importing the store (SPEC 12).
"""

from __future__ import annotations

import json
import os
import re

from pkgmgr.patterns import EXTENSION_NAME as NAME_RE
from pkgmgr.patterns import HEX64, UTC_MOMENT
from pkgmgr.versions import SEMVER, strip_v

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing is a tenth of that start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Rule = Callable[[Any], bool]

# the schema version this pkgmgr writes: len(pkgmgr.store.db.MIGRATIONS) (tests/store check it)
SCHEMA_VERSION = 11
# the host whose installs are the scope store's own trees (`extensions/<name>/<version>`, SPEC 4);
# every other host's are in a folder of that host, named by an absolute path (SPEC 13)
STORE_HOST = "compozy"


def decode_text(raw: bytes) -> str:
    """TEXT as str; bytes that are not UTF-8 survive as lone surrogates, which `row_problem` reports
    with the table and row (the default decoder raises without naming either)."""
    return raw.decode("utf-8", "surrogateescape")


_UNDECODED = re.compile("[\udc80-\udcff]")  # the bytes `decode_text` could not decode
_CONTROL = re.compile("[\x00-\x1f]")
_SUSPECT = re.compile("[\x00-\x1f\udc80-\udcff]")  # either: one search of a sound text instead of two
_FREE_TEXT = frozenset({"source", "source_url", "path", "workspace", "source_path", "disabled_path", "tx", "linked"})  # may name any file
_HEX64 = HEX64
_TREE_SHA = re.compile(r"(?:[a-z0-9-]{1,16}:)?[0-9a-f]{64}")  # sha256 hex, or a prefixed format's
_ACT_ID = re.compile(r"act_[0-9a-f]{16}")
_RESOURCE_ID = re.compile(r"[a-z]{3}_[0-9a-f]{16}")
_MOMENT = UTC_MOMENT
SOURCE_KINDS = frozenset({"registry", "github", "url", "archive", "path", "unknown"})
RESOURCE_KINDS = frozenset({"agent", "agent.soul", "agent.heartbeat", "channel", "job", "trigger", "window_layout"})
STATUSES = frozenset({"active", "awaiting_confirmation"})
PENDING_MOVES = frozenset({"in", "out"})  # pending_trees.pending: before the commit (undone); after it (finished)
PENDING_ACTIONS = frozenset({"tree", "install", "remove", "move", "enable"})  # pending_trees.action (store.pending)

def _text(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _optional(rule: Rule) -> Rule:
    return lambda value: value is None or rule(value)


def _match(pattern: re.Pattern[str]) -> Rule:
    return lambda value: isinstance(value, str) and pattern.fullmatch(value) is not None


def _flag(value: Any) -> bool:
    return value in (0, 1) and isinstance(value, int)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _version(value: Any) -> bool:
    return isinstance(value, str) and SEMVER.fullmatch(strip_v(value)) is not None


def _digest_or_empty(value: Any) -> bool:
    return value == "" or _match(_HEX64)(value)


_NAME, _WHEN = _match(NAME_RE), _match(_MOMENT)
_HOST = re.compile(r"[a-z][a-z0-9-]{0,31}")

# table -> (the column naming a row in messages, {column: rule}); columns without a rule are only
# checked to be decodable. JSON columns are checked where they are decoded (`json_value`).
ROW_RULES: dict[str, tuple[str, dict[str, Rule]]] = {
    "extensions": ("name", {
        "host": _match(_HOST), "name": _text, "version": lambda v: isinstance(v, str), "path": _text,
        "enabled": _flag, "pinned": _flag, "source_kind": lambda v: v in SOURCE_KINDS,
        "source": lambda v: isinstance(v, str), "sha256": _optional(_match(_HEX64)), "verified": _flag,
        "allow_unverified": _flag, "tree_sha256": _match(_TREE_SHA), "network_digest": _digest_or_empty,
        "installed_at": _WHEN, "installed_by": lambda v: isinstance(v, str),
        "layout": lambda v: v in ("directory", "script"),
    }),
    "activations": ("id", {
        "id": _match(_ACT_ID), "extension": _NAME, "extension_version": _version, "bundle": _text,
        "profile": _text, "scope": lambda v: v in ("global", "workspace"), "workspace": lambda v: isinstance(v, str),
        "version": _count, "status": lambda v: v in STATUSES, "network_digest": _digest_or_empty,
        "activation_digest": _match(_HEX64), "confirmed_version": _optional(_count),
        "confirmed_digest": _optional(_digest_or_empty), "confirmed_at": _optional(_WHEN),
        "created_at": _WHEN, "updated_at": _WHEN,
    }),
    "resources": ("id", {
        "id": _match(_RESOURCE_ID), "activation_id": _match(_ACT_ID), "kind": lambda v: v in RESOURCE_KINDS,
        "name": _text, "digest": _match(_HEX64), "source_path": _text, "record": _text,
    }),
    "pending_trees": ("path", {
        "path": _text, "name": _text, "version": lambda v: isinstance(v, str), "pending": lambda v: v in PENDING_MOVES,
        "recorded_at": _WHEN, "host": _match(_HOST), "action": lambda v: v in PENDING_ACTIONS,
    }),
    "workspace_stores": ("id", {"path": _text}),
    "trust_approvals": ("workspace", {"digest": _text}),
    "registry_serials": ("source", {"serial": lambda v: isinstance(v, int)}),
    "registry_versions": ("source", {"sha256": _text}),
}


# the rules a row of the scope store's own installs meets beside those of every row of `extensions`:
# a name pkgmgr's names allow, a semantic version (another host's may have neither)
_STORE_RULES: dict[str, Rule] = {**ROW_RULES["extensions"][1], "name": _NAME, "version": _version}
_STORE_PENDING_RULES: dict[str, Rule] = {**ROW_RULES["pending_trees"][1], "name": _NAME, "version": _version,
                                         "action": lambda v: v == "tree"}


def row_problem(table: str, row: Any) -> tuple[str, str] | None:
    """The first column of `row` (an sqlite3.Row of `table`, or anything with `keys()` and
    `[column]`) holding undecodable text or a value its column never holds, as (column, why);
    None when every column is sound."""
    rules = ROW_RULES[table][1]
    keys = row.keys()
    if table in ("extensions", "pending_trees") and ("host" not in keys or row["host"] == STORE_HOST):
        rules = _STORE_RULES if table == "extensions" else _STORE_PENDING_RULES
    # a Row's values in column order (looking each up by name is a scan of the names); a mapping's
    # values() are in the order of its keys()
    for column, value in zip(keys, row.values() if hasattr(row, "values") else tuple(row)):
        if isinstance(value, str) and _SUSPECT.search(value) is not None:
            if _UNDECODED.search(value) is not None:
                return column, "text that is not UTF-8"
            if column not in _FREE_TEXT and _CONTROL.search(value) is not None:  # JSON escapes them
                return column, f"control characters in {value!a}"
        rule = rules.get(column)
        if rule is not None and not rule(value):
            return column, f"unexpected value {value!a}"
    return None


def json_value(text: Any, kind: type) -> Any:
    """The JSON document `text` (a JSON column) holds when it parses and is a `kind` (dict or
    list); None otherwise."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, kind) else None


def install_path_problem(name: str, version: str, path: str) -> str | None:
    """Why `path` (a checked row's) is not the directory of `name` `version`:
    `extensions/<name>/<version>`, or that with `~<tree prefix>` (a forced reinstall)."""
    base = f"extensions/{name}/{version}"
    rest = path[len(base):] if path.startswith(base) else None
    if rest == "" or (rest is not None and len(rest) == 13 and rest[0] == "~" and _LOWER_HEX.fullmatch(rest[1:])):
        return None
    return f"{path!r} is not the directory of {name} {version}"


_LOWER_HEX = re.compile("[0-9a-f]+")


def has_trees(extensions_dir: str) -> bool:
    """Whether `extensions_dir` holds any version directory (a non-empty directory of a name)."""
    try:
        with os.scandir(extensions_dir) as names:
            for name in names:
                if name.is_dir(follow_symlinks=False) and any(os.scandir(name.path)):
                    return True
    except (FileNotFoundError, NotADirectoryError):
        return False
    return False
