"""Which host a tree is for, from its manifest file (SPEC 13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts.detect import detect


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize("files, host", [
    ({"extension.toml": ""}, "compozy"),
    ({"extension.json": '{"name": "x", "version": "1.0.0", "min_compozy_version": "0.5.0"}'}, "compozy"),
    ({"extension.json": '{"name": "x", "exec": "./run"}'}, "terva"),
    ({"extension.json": '{"name": "x", "EXEC": "./run"}'}, "terva"),  # Go folds key case
    ({"extension.json": '{"name": "x"}', "theme.json": "{}"}, "terva"),
    ({"extension.json": '{"name": "x"}', "themes/theme.json": "{}"}, "terva"),
    ({"vera.extension.json": "{}"}, "vera"),
    ({"extension.exs": ""}, "eva"),
    ({"notes.exs": ""}, "eva"),
    ({"extension.exs": "", "helper.exs": ""}, "eva"),
    ({"extension.json": '{"name": "x", "exec": "elixir", "args": ["main.exs"]}', "main.exs": ""}, "terva"),
])
def test_detected(tmp_path: Path, files: dict[str, str], host: str) -> None:
    assert detect(tree(tmp_path, files)) == host


@pytest.mark.parametrize("files, named", [
    ({"extension.toml": "", "vera.extension.json": "{}"}, ("extension.toml (compozy)", "vera.extension.json (vera)")),
    ({"extension.toml": "", "extension.json": '{"exec": "x"}'}, ("compozy", "terva")),
    ({"extension.exs": "", "vera.extension.json": "{}"}, ("eva", "vera")),
])
def test_two_hosts_are_refused_unless_one_is_picked(tmp_path: Path, files: dict[str, str],
                                                    named: tuple[str, str]) -> None:
    root = tree(tmp_path, files)
    with pytest.raises(PkgmgrError) as caught:
        detect(root)
    assert caught.value.code == "invalid_archive"
    assert all(part in caught.value.message for part in named)
    for host in caught.value.details["hosts"]:
        assert detect(root, host) == host


def test_forcing_a_host_without_its_manifest(tmp_path: Path) -> None:
    root = tree(tmp_path, {"extension.toml": ""})
    with pytest.raises(PkgmgrError) as caught:
        detect(root, "vera")
    assert caught.value.code == "invalid_archive"
    with pytest.raises(PkgmgrError) as caught:
        detect(root, "nope")
    assert caught.value.code == "usage"
