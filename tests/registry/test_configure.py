"""`registry add`/`remove` driven directly (the CLI's end is tests/e2e/test_registry_cli.py): the
rules that refuse before anything is recorded, and what an add records and a remove forgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.config import config_path, load_config
from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.configure import NewRegistry, add_registry, remove_registry


@pytest.mark.parametrize("name, code", [("Acme", "usage"), ("default", "usage")])
def test_a_bad_or_reserved_name_is_refused_and_nothing_recorded(home: Path, tmp_path: Path, name: str,
                                                                code: str) -> None:
    with pytest.raises(PkgmgrError) as raised:
        add_registry(home, load_config(home), NewRegistry(name, str(tmp_path), check=False))
    assert raised.value.code == code
    assert not config_path(home).exists()


def test_add_unread_records_the_source_and_remove_forgets_it(home: Path, tmp_path: Path) -> None:
    added = add_registry(home, load_config(home), NewRegistry("acme", str(tmp_path), priority=5, check=False))
    assert added == {"name": "acme", "source": str(tmp_path), "priority": 5, "insecure": False, "serial": None,
                     "signed": False}
    config = load_config(home)
    assert [(r.name, r.priority) for r in config.registries if r.name == "acme"] == [("acme", 5)]
    with pytest.raises(PkgmgrError) as taken:
        add_registry(home, config, NewRegistry("acme", str(tmp_path), check=False))
    assert taken.value.code == "usage" and taken.value.hint == "'pkgmgr registry remove acme' first to replace it"
    assert remove_registry(home, config, "acme") == {"name": "acme", "source": str(tmp_path)}
    assert all(r.name != "acme" for r in load_config(home).registries)
    with pytest.raises(PkgmgrError) as gone:
        remove_registry(home, load_config(home), "acme")
    assert gone.value.code == "not_found"
