from __future__ import annotations

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.manifest import check_host, parse_manifest
from tests.manifest.helpers import minimal


def manifest(min_version: str = "0.5.0"):
    return parse_manifest(minimal(min_compozy_version=min_version), file="extension.toml", root=None)


@pytest.mark.parametrize("host", [None, "0.5.0", "v0.5.0", "0.5.1", "1.0.0", "0.5.0+build.7"])
def test_compatible_or_unchecked(host: str | None) -> None:
    check_host(manifest(), host)


@pytest.mark.parametrize("host", ["0.4.9", "0.5.0-rc.1", "0.0.1"])
def test_older_host_is_incompatible(host: str) -> None:
    with pytest.raises(PkgmgrError) as caught:
        check_host(manifest(), host)
    error = caught.value
    assert error.code == "incompatible_host" and error.exit_code == 4
    assert "0.5.0" in error.message and host in error.message
    assert error.details["host_version"] == host and error.details["min_compozy_version"] == "0.5.0"


def test_prerelease_minimum() -> None:
    check_host(manifest("1.0.0-rc.1"), "1.0.0-rc1")
    with pytest.raises(PkgmgrError, match="incompatible|needs host"):
        check_host(manifest("1.0.0-rc.2"), "1.0.0-rc.1")


def test_invalid_host_version_is_a_config_error() -> None:
    with pytest.raises(PkgmgrError) as caught:
        check_host(manifest(), "latest")
    assert caught.value.code == "invalid_config"


def test_build_metadata_of_the_minimum_is_ignored() -> None:
    # semver precedence ignores build metadata (PEP 440 would order 1.0.0+build after 1.0.0)
    check_host(manifest("0.5.0+build.7"), "0.5.0")
    check_host(manifest("0.5.0+build.7"), "0.5.0+build.1")
