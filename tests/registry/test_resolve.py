"""Resolution rules of SPEC 5.3 (pure)."""

from __future__ import annotations

import pytest

from pkgmgr.errors import PkgmgrError
from pkgmgr.registry.index_format import Entry, VersionEntry
from pkgmgr.registry.resolve import Request, select_version


def v(version: str, *, yanked: bool = False, host: str = "0.5.0") -> VersionEntry:
    return VersionEntry(version, f"archives/{version}.tar.gz", "a" * 64, 10, host, yanked=yanked)


ENTRY = Entry("demo-ext", "", None, "community", (
    v("0.1.0"), v("0.2.0"), v("0.3.0", yanked=True), v("0.4.0-rc.1"), v("0.5.0", host="9.0.0"),
))


def pick(request: Request, **kw) -> str:  # noqa: ANN003
    return select_version(ENTRY, request, **kw).version


def test_highest_allowed_wins() -> None:
    assert pick(Request()) == "0.5.0"


def test_host_compatibility() -> None:
    assert pick(Request(host_version="1.0.0")) == "0.2.0"


def test_yanked_only_when_named_exactly() -> None:
    with pytest.raises(PkgmgrError) as exc:
        pick(Request(spec=">=0.3,<0.4"))
    assert exc.value.code == "version_not_found"
    yanked = {"version": "0.3.0", "reason": "yanked (installable only when named exactly)"}
    assert yanked in exc.value.details["versions"]
    assert pick(Request(spec="==0.3.0", exact="0.3.0")) == "0.3.0"


def test_prereleases_only_when_named_or_pre() -> None:
    assert pick(Request(spec="<0.5", host_version="1.0.0")) == "0.2.0"
    assert pick(Request(spec="<0.5", pre=True)) == "0.4.0-rc.1"
    assert pick(Request(spec=">=0.4.0-rc.1,<0.5")) == "0.4.0-rc.1"
    assert pick(Request(spec="==0.4.0-rc.1", exact="0.4.0-rc.1")) == "0.4.0-rc.1"
    assert pick(Request(spec="==0.4.0-rc1", exact="0.4.0-rc1")) == "0.4.0-rc.1"  # PEP 440 equality


def test_exact_version_incompatible_with_host_is_refused() -> None:
    with pytest.raises(PkgmgrError) as exc:
        pick(Request(spec="==0.5.0", exact="0.5.0", host_version="1.0.0"))
    assert "needs host 9.0.0 or newer (host is 1.0.0)" in exc.value.message


def test_version_not_found_explains_every_version() -> None:
    with pytest.raises(PkgmgrError) as exc:
        pick(Request(spec=">=1.0"), registry="acme")
    reasons = {item["version"]: item["reason"] for item in exc.value.details["versions"]}
    assert set(reasons) == {"0.1.0", "0.2.0", "0.3.0", "0.4.0-rc.1", "0.5.0"}
    assert reasons["0.1.0"] == "does not match >=1.0"
    assert "registry acme" in exc.value.message
    assert exc.value.exit_code == 5


def test_vanished_versions_are_treated_as_yanked() -> None:
    entry = Entry("demo-ext", "", None, "community", (v("0.1.0"),))
    with pytest.raises(PkgmgrError) as exc:
        select_version(entry, Request(spec="==0.2.0", exact="0.2.0"), vanished=("0.2.0",))
    assert "vanished" in exc.value.message
    assert select_version(entry, Request(), vanished=("0.2.0",)).version == "0.1.0"


def test_entry_without_versions() -> None:
    with pytest.raises(PkgmgrError) as exc:
        select_version(Entry("demo-ext", "", None, "community", ()), Request())
    assert exc.value.code == "version_not_found"


def test_build_metadata_is_ignored_as_the_manifest_check_ignores_it() -> None:
    """One host-version check (issue 12): `min 2.0.0+build.7` on host 2.0.0 is compatible at
    resolution too, as `manifest.check_host` has always said."""
    from pkgmgr.registry.resolve import skip_reason
    from pkgmgr.versions import host_satisfies, parse_host_version

    host = parse_host_version("2.0.0")
    assert host is not None and host_satisfies(host, "2.0.0+build.7") and not host_satisfies(host, "2.0.1")
    assert skip_reason(v("1.0.0", host="2.0.0+build.7"), Request(host_version="2.0.0")) is None
    assert skip_reason(v("1.0.0", host="2.0.1"), Request(host_version="2.0.0+build.9")) is not None


def test_host_compatible_is_the_rule_skip_reason_applies() -> None:
    """`ext info`'s "compatible" column asks `host_compatible`, not the wording of a skip reason."""
    from pkgmgr.registry.resolve import host_compatible

    assert host_compatible(v("1.0.0", host="9.0.0"), None)
    assert not host_compatible(v("1.0.0", host="9.0.0"), "1.0.0")
    assert host_compatible(v("1.0.0", host="1.0.0"), "1.0.0")


def test_version_not_found_is_typed_with_why_each_was_skipped() -> None:
    from pkgmgr.errors import Code
    from pkgmgr.registry.resolve import VersionNotFound

    with pytest.raises(VersionNotFound) as caught:
        select_version(ENTRY, Request(spec=">=0.3.0", host_version="1.0.0"), registry="acme")
    assert caught.value.code == Code.VERSION_NOT_FOUND and caught.value.entry is ENTRY
    assert {s.version for s in caught.value.skipped} == {"0.3.0", "0.4.0-rc.1", "0.5.0", "0.1.0", "0.2.0"}
