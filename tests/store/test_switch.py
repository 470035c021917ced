"""store.switch driven directly with `Fetched` values: what only registry sources reach
(tiers, registry provenance, metadata checks), and the commit sequence itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkgmgr.config import Config
from pkgmgr.errors import PkgmgrError
from pkgmgr.hosts.scope_store import ScopeDestination, remove, set_enabled
from pkgmgr.install.options import InstallOptions
from pkgmgr.install.plan import Expectations, Expected, Fetched
from pkgmgr.install.verify import prepare
from pkgmgr.store.scope import Scope, global_scope
from pkgmgr.store.switch import get_installed, list_installed, same_source
from tests.support.builders import minimal_manifest, write_extension

CONFIG = Config()


@pytest.fixture
def scope(tmp_path: Path):
    scope = global_scope(tmp_path / "home")
    yield scope
    scope.close()


def source(tmp_path: Path, version: str = "0.1.0", **extra) -> Path:
    return write_extension(tmp_path / f"src-{version}", minimal_manifest(version=version, **extra),
                           files={"note.txt": version})


def registry(directory: Path, *, tier: str = "community", name: str = "acme", expected: Expected | None = None
             ) -> Fetched:
    return Fetched(kind="registry", locator=name, directory=directory, verified=tier != "unverified", tier=tier,
                   registry=name, source_url=f"https://{name}.example/x.tar.gz", expects=Expectations(entry=expected))


def run(scope: Scope, fetched: Fetched, options: InstallOptions = InstallOptions()):
    with scope.writer(1):
        staging = scope.new_staging()
        prepared = prepare(fetched, staging, config=CONFIG, options=options)
        return ScopeDestination(scope).switch(prepared, options)


def test_official_tier_keeps_grants_and_max_scope(tmp_path: Path, scope: Scope) -> None:
    extra = {"security": {"capabilities": ["session.write"]},
             "resources": {"publish": {"families": ["skills"], "max_scope": "global"}}}
    outcome = run(scope, registry(source(tmp_path, **extra), tier="official"))
    assert outcome.action == "installed"
    assert outcome.installed.grants == ("session.write",) and outcome.installed.max_scope == "global"
    assert outcome.installed.verified and outcome.installed.tier == "official"


@pytest.mark.parametrize("tier", ["community", "unverified"])
def test_other_tiers_are_capped(tier: str, tmp_path: Path, scope: Scope) -> None:
    extra = {"security": {"capabilities": ["session.write"]}}
    with pytest.raises(PkgmgrError) as caught:
        run(scope, registry(source(tmp_path, **extra), tier=tier))
    assert caught.value.code == "grant_not_allowed" and caught.value.details == {"grants": ["session.write"]}
    assert list_installed(scope) == []
    narrowed = run(scope, registry(source(tmp_path, "0.2.0", resources={
        "publish": {"families": ["skills"], "max_scope": "global"}}), tier=tier))
    assert narrowed.installed.max_scope == "workspace"


def test_registry_provenance_is_recorded(tmp_path: Path, scope: Scope) -> None:
    installed = run(scope, registry(source(tmp_path))).installed
    assert installed.provenance() == {
        "source": "registry", "locator": "acme", "registry": "acme", "source_url": "https://acme.example/x.tar.gz",
        "sha256": None, "verified": True, "tier": "community", "tree_sha256": installed.tree_sha256,
        "installed_at": installed.installed_at, "installed_by": installed.installed_by, "allow_unverified": False,
        "pinned": False,
    }


def test_same_source_rules(tmp_path: Path, scope: Scope) -> None:
    installed = run(scope, registry(source(tmp_path))).installed
    assert same_source(installed, registry(tmp_path, name="acme"))
    assert not same_source(installed, registry(tmp_path, name="other"))
    assert not same_source(installed, Fetched(kind="path", locator="acme"))
    with pytest.raises(PkgmgrError) as caught:
        run(scope, registry(source(tmp_path, "0.2.0"), name="other"))
    assert caught.value.code == "source_conflict"
    forced = run(scope, registry(source(tmp_path, "0.2.0"), name="other"), InstallOptions(force=True))
    assert forced.action == "switched"


def test_metadata_mismatch(tmp_path: Path, scope: Scope) -> None:
    expected = Expected(name="demo-ext", version="0.1.0", permissions=(), network_digest="",
                        min_compozy_version="0.5.0")
    assert run(scope, registry(source(tmp_path), expected=expected)).action == "installed"
    lying = Expected(name="demo-ext", version="0.2.0", permissions=("session.read",), network_digest="x",
                     min_compozy_version="0.4.0")
    with pytest.raises(PkgmgrError) as caught:
        run(scope, registry(source(tmp_path, "0.2.0"), expected=lying))
    assert caught.value.code == "metadata_mismatch"
    assert [d.split(":")[0] for d in caught.value.details["differences"]] == [
        "permissions", "network_digest", "min_compozy_version"]


def test_commit_records_and_remove_forgets(tmp_path: Path, scope: Scope) -> None:
    outcome = run(scope, Fetched(kind="path", locator=str(tmp_path), directory=source(tmp_path)))
    item = outcome.installed
    assert (item.name, item.version, item.path, item.enabled, item.pinned) == (
        "demo-ext", "0.1.0", "extensions/demo-ext/0.1.0", True, False)
    assert item.directory == scope.root / "extensions" / "demo-ext" / "0.1.0"
    assert set(item.tree_listing) == {"extension.toml", "note.txt"}
    assert item.manifest["name"] == "demo-ext"
    with scope.writer(1):
        disabled, changed = set_enabled(scope, "demo-ext", False)
        assert disabled.enabled is False and changed == []
        removed, deactivated = remove(scope, "demo-ext", deactivate=False)
    assert removed.version == "0.1.0" and deactivated == []
    assert get_installed(scope, "demo-ext") is None
    assert not (scope.root / "extensions" / "demo-ext").exists()
    with scope.writer(1), pytest.raises(PkgmgrError) as caught:
        remove(scope, "demo-ext", deactivate=False)
    assert caught.value.code == "not_found"


def test_staging_is_emptied_after_each_outcome(tmp_path: Path, scope: Scope) -> None:
    fetched = Fetched(kind="path", locator=str(tmp_path), directory=source(tmp_path))
    run(scope, fetched)
    run(scope, fetched)  # unchanged
    assert list(scope.staging_dir.iterdir()) == []


def test_a_failed_switch_leaves_the_old_state_and_no_new_tree(tmp_path: Path, scope: Scope,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    run(scope, Fetched(kind="path", locator=str(tmp_path), directory=source(tmp_path)))
    import pkgmgr.activation.lifecycle as lifecycle
    import pkgmgr.hosts.scope_store as scope_destination

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - stands in for an activation refusal
        raise PkgmgrError("an activation refuses the switch", code="extension_has_active_bundles")

    monkeypatch.setattr(lifecycle, "refresh_on_switch", refuse)
    monkeypatch.setattr(scope_destination, "_has_activations", lambda conn, name: True)  # the refresh runs
    with pytest.raises(PkgmgrError) as caught:
        run(scope, Fetched(kind="path", locator=str(tmp_path), directory=source(tmp_path, "0.2.0")))
    assert caught.value.code == "extension_has_active_bundles"
    assert get_installed(scope, "demo-ext").version == "0.1.0"
    assert sorted(p.name for p in (scope.root / "extensions" / "demo-ext").iterdir()) == ["0.1.0"]
