"""status: the `ext status` document of a Compozy install, built without the CLI."""

from __future__ import annotations

from pathlib import Path

from pkgmgr.config import RegistryConfig, load_config
from pkgmgr.status import signature, status_document
from pkgmgr.store.scope import global_scope
from pkgmgr.store.switch import get_installed
from tests.cli.helpers import FIXTURES, install
from tests.cli.test_ext_cmds import crew


def test_the_document_describes_the_install(tmp_path: Path, home: Path) -> None:
    install(FIXTURES / "prompt-enhancer")
    scope = global_scope(home)
    item = get_installed(scope, "prompt-enhancer")
    assert item is not None
    data = status_document(item, scope, config=load_config(home), home=home, environ={})
    assert (data["name"], data["scope"], data["path"]) == ("prompt-enhancer", "global", str(item.directory))
    assert data["requires_env"] == data["missing_env"] == ["PROMPT_ENHANCER_MODE"]
    assert data["provenance"]["signed"] is False and data["activations"] == [] and "commands" not in data
    found = status_document(item, scope, config=load_config(home), home=home, resolved=True,
                            environ={"PROMPT_ENHANCER_MODE": "x"})
    assert found["missing_env"] == [] and [c["key"] for c in found["commands"]] == ["subprocess"]


def test_unreadable_bundles_are_a_warning(tmp_path: Path, home: Path) -> None:
    install(crew(tmp_path / "crew"))
    scope = global_scope(home)
    item = get_installed(scope, "crew-ext")
    assert item is not None
    config = load_config(home)
    assert status_document(item, scope, config=config, home=home)["bundles"] == [
        {"name": "crew-ext", "profiles": ["default"]}]
    (item.directory / "bundles" / "crew-ext.toml").write_text("name = \n")
    warnings: list[str] = []
    assert status_document(item, scope, config=config, home=home, warn=warnings.append)["bundles"] == []
    assert [w.split(": bundles cannot be read: ")[0] for w in warnings] == ["crew-ext"]


def test_only_a_configured_signed_registry_is_signed(tmp_path: Path, home: Path) -> None:
    install(FIXTURES / "prompt-enhancer")
    item = get_installed(global_scope(home), "prompt-enhancer")
    assert item is not None
    config = load_config(home)
    assert signature(item, config=config, home=home) == {"signed": False}  # a path install
    from dataclasses import replace

    from_registry = replace(item, source_kind="registry", registry="team")
    assert signature(from_registry, config=config, home=home) == {"signed": False}  # not configured
    unsigned = replace(config, registries=(RegistryConfig("team", str(tmp_path)),))
    assert signature(from_registry, config=unsigned, home=home) == {"signed": False}
