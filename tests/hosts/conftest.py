"""Every host test installs into temporary host homes: TERVA_HOME, VERA_HOME, GEMINI_CLI_HOME and
CLAUDE_CONFIG_DIR under tmp_path, and Eva's ~/.eva under the HOME that tests/conftest.py already
points into tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts.helpers import Homes


@pytest.fixture(autouse=True)
def _host_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERVA_HOME", str(tmp_path / "terva-home"))
    monkeypatch.setenv("VERA_HOME", str(tmp_path / "vera-home"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    # Gemini CLI's system settings (security.allowedExtensions) where the tests put them, not /etc's
    monkeypatch.setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", str(tmp_path / "gemini-system" / "settings.json"))
    for var in ("ZOT_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def homes(tmp_path: Path) -> Homes:
    return Homes(tmp_path)
