"""`pkgmgr.store.checks`: the row rules the store and `ext list`'s fast path share, cheap to import."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from pkgmgr.store import checks
from pkgmgr.store import db as dbmod


def test_the_schema_version_is_the_number_of_migrations() -> None:
    assert checks.SCHEMA_VERSION == len(dbmod.MIGRATIONS)


def _old_rule(name: str, version: str, path: str) -> bool:  # the regex this replaced
    return re.fullmatch(rf"extensions/{re.escape(name)}/{re.escape(version)}(?:~[0-9a-f]{{12}})?", path) is not None


@given(st.sampled_from(["a1", "review-pack"]), st.sampled_from(["1.0.0", "1.0.0-rc.1+b.2"]),
       st.text(alphabet="0123456789abcdefA~/.-xz\n", max_size=16), st.booleans())
def test_install_path_is_the_rule_it_was(name: str, version: str, tail: str, prefixed: bool) -> None:
    path = f"extensions/{name}/{version}{tail}" if prefixed else tail
    assert (checks.install_path_problem(name, version, path) is None) == _old_rule(name, version, path)
    assert checks.install_path_problem(name, version, f"extensions/{name}/{version}~{'0a' * 6}") is None


def test_json_value_is_none_unless_the_kind_parses() -> None:
    assert checks.json_value('{"a": 1}', dict) == {"a": 1}
    assert checks.json_value("[]", list) == []
    for text in ("null", "[]", "{", None, 3, "[" * 100_000):
        assert checks.json_value(text, dict) is None


def test_it_imports_no_typing_pathlib_or_dataclasses() -> None:
    code = "import sys, pkgmgr.store.checks; print(__import__('json').dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    assert [m for m in ("typing", "pathlib", "dataclasses", "pkgmgr.store.scope", "pkgmgr.errors") if m in loaded] == []
