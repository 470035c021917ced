"""`ext validate`'s check driven directly (the command's end is tests/cli/test_ext_cmds.py and
the e2e suites): a missing path, and the warnings of what only activation decides."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pkgmgr.config import load_config
from pkgmgr.errors import PkgmgrError
from pkgmgr.validation import activation_warnings, validate_extension


def test_a_missing_path_is_not_found_as_the_user_wrote_it(tmp_path: Path, home: Path) -> None:
    with pytest.raises(PkgmgrError) as raised:
        validate_extension(tmp_path / "nope", load_config(home), shown="./nope")
    assert raised.value.code == "not_found" and raised.value.message == "./nope: no such file or directory"


def test_activation_warnings_name_reserved_agents_and_unpackaged_runners() -> None:
    agent = SimpleNamespace(name="Sam", reserved=True)
    job = SimpleNamespace(name="daily", agent="planner")
    trigger = SimpleNamespace(name="on-push", agent="host-agent")
    profile = SimpleNamespace(name="default", agents=[agent], jobs=[job], triggers=[trigger],
                              agent_names=lambda: ["Sam"])
    bundle = SimpleNamespace(name="crew", profiles=[profile])
    assert activation_warnings((bundle,), ("Host-Agent",)) == [  # type: ignore[arg-type]
        "crew/default: agent 'Sam' uses a name the host reserves; activation will refuse it (agent_conflict)",
        "crew/default: job 'daily' runs agent 'planner', which the profile does not package: it must be visible "
        "where the profile is activated",
    ]
