"""The metadata protections of SPEC 5.4 as pure functions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.index_format import Entry, RegistryMeta, VersionEntry
from pkgmgr.registry.metadata_checks import check_entry, check_meta, known_versions

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def meta(serial: int = 5, expires: datetime | None = None) -> RegistryMeta:
    return RegistryMeta("acme", "", 1, serial, expires)


def test_rollback() -> None:
    check_meta(meta(5), label="acme", remembered_serial=5, allow_expired=False, now=NOW)
    check_meta(meta(5), label="acme", remembered_serial=None, allow_expired=False, now=NOW)
    with pytest.raises(PkgmgrError) as exc:
        check_meta(meta(4), label="acme", remembered_serial=5, allow_expired=False, now=NOW)
    assert exc.value.code == "registry_rollback" and exc.value.exit_code == 4


def test_expired() -> None:
    past = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(PkgmgrError) as exc:
        check_meta(meta(expires=past), label="acme", remembered_serial=None, allow_expired=False, now=NOW)
    assert exc.value.code == "registry_expired"
    check_meta(meta(expires=past), label="acme", remembered_serial=None, allow_expired=True, now=NOW)
    check_meta(meta(expires=datetime(2027, 1, 1, tzinfo=UTC)), label="acme", remembered_serial=None,
               allow_expired=False, now=NOW)


def test_checksum_changed_and_vanished() -> None:
    entry = Entry("demo-ext", "", None, "community", (VersionEntry("0.1.0", "a", "a" * 64, 1, "0.5.0"),))
    assert check_entry(entry, label="acme", known=known_versions([("0.1.0", "a" * 64)])) == ()
    assert check_entry(entry, label="acme", known=known_versions([("0.1.0", "a" * 64), ("0.2.0", "b" * 64)])) \
        == ("0.2.0",)
    with pytest.raises(PkgmgrError) as exc:
        check_entry(entry, label="acme", known=known_versions([("0.1.0", "c" * 64)]))
    assert exc.value.code == "registry_checksum_changed"
