from __future__ import annotations

from pathlib import Path

import pytest

from tests.publish.helpers import init_index


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """A fresh registry index made by `pkgmgr registry init` (name acme)."""
    return init_index(tmp_path / "index")
