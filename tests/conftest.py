from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the user's home, config or tokens."""
    home = tmp_path / "pkgmgr-home"
    monkeypatch.setenv("PKGMGR_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    for var in ("PKGMGR_CONFIG", "PKGMGR_HOST_VERSION", "GITHUB_TOKEN", "GH_TOKEN", "PKGMGR_GITHUB_API_URL",
                "PKGMGR_GITHUB_RAW_URL", "NO_COLOR", "PKGMGR_TEST_CRASH_AT", "PKGMGR_SHARED_CACHE", "DOCKER_CONFIG",
                "TERVA_HOME", "ZOT_HOME", "XDG_STATE_HOME", "VERA_HOME", "GEMINI_CLI_HOME",
                "CLAUDE_CONFIG_DIR"):  # the hosts' homes (SPEC 13)
        monkeypatch.delenv(var, raising=False)
    for var in [v for v in os.environ if v.startswith("PKGMGR_OCI_AUTH_")]:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "pkgmgr-home"


@pytest.fixture
def repo_root() -> Path:
    return REPO


# The files whose cases take seconds each (a loop-mounted disk, a process killed and checked, a
# host's real CLI) run first: with `-n 2` the workers then share them from the start instead of one
# worker finishing a queue of them alone at the end. `--dist worksteal` (pyproject.toml) evens out
# the rest.
_LONGEST_FIRST = ("tests/reliability/test_disk_faults.py", "tests/reliability/test_power_loss.py",
                  "tests/reliability/test_crash_harness.py", "tests/hosts/test_real_clis.py",
                  "tests/reliability/test_registry_crash.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: each file's order kept
