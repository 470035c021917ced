"""Fixtures of the fuzz suites: the per-module count of examples, and an extension on disk whose
bundle file each example replaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from tests.bundles.helpers import write_bundle_ext
from tests.bundles.test_fuzz import LIGHT_BUNDLE
from tests.fuzz.strategies import report_counts


@pytest.fixture(scope="module", autouse=True)
def _counts() -> Iterator[None]:
    yield
    report_counts()


@pytest.fixture(scope="module")
def extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An extension with one light bundle (bundles/main.json) and its agent; also a `tools/c-ext`
    directory for workspace documents that declare a path extension."""
    root = tmp_path_factory.mktemp("fuzz") / "ext"
    write_bundle_ext(root, LIGHT_BUNDLE, fmt="json")
    (root / "tools" / "c-ext").mkdir(parents=True)
    return root


def replace_bundle(root: Path, name: str = "main.json", raw: bytes | None = None) -> None:
    """Make `bundles/<name>` the extension's only bundle file (by default the light bundle)."""
    directory = root / "bundles"
    for old in directory.iterdir():
        old.unlink()
    (directory / name).write_bytes(json.dumps(LIGHT_BUNDLE).encode() if raw is None else raw)
