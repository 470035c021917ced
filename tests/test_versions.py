"""versions: semantic versions that are also PEP 440 versions, specifiers, equality."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from pkgmgr.versions import normalize_semver, parse_semver, parse_specifier, same_version, strip_v, version_key


@pytest.mark.parametrize("text, pep440", [
    ("0.1.0", "0.1.0"), ("1.2.3", "1.2.3"), ("v1.2.3", "1.2.3"), ("V1.2.3", "1.2.3"), ("10.20.30", "10.20.30"),
    ("1.0.0-alpha.1", "1.0.0a1"), ("1.0.0-beta.2", "1.0.0b2"), ("1.0.0-rc.1", "1.0.0rc1"), ("1.0.0-rc1", "1.0.0rc1"),
    ("1.0.0+build.7", "1.0.0+build.7"), ("1.0.0-rc.1+meta", "1.0.0rc1+meta"),
])
def test_valid(text: str, pep440: str) -> None:
    assert parse_semver(text) == Version(pep440)


@pytest.mark.parametrize("text", [
    "1.0", "1", "1.0.0.0", "01.0.0", "1.01.0", "1.0.01", "1.0.0-", "1.0.0+", "1.0.0-01", "vv1.0.0", "v", "",
    " 1.0.0", "1.0.0 ", "1.0.0\n", "\n1.0.0", "v1.0.0\n", "1.0.0\x00", "1.0.0-rc.1\n", "one.two.three",
])
def test_not_semver(text: str) -> None:
    with pytest.raises(ValueError, match="is not a semantic version"):
        parse_semver(text)


@pytest.mark.parametrize("text", ["1.0.0-foo", "1.0.0-alpha.beta", "1.0.0-x.7.z.92"])
def test_semver_but_not_pep440(text: str) -> None:
    with pytest.raises(ValueError, match="not a PEP 440 version"):
        parse_semver(text)


@pytest.mark.parametrize("value", [None, 1, 1.0, ["1.0.0"], {"v": "1.0.0"}, b"1.0.0"])
def test_non_strings_are_value_errors(value: object) -> None:
    with pytest.raises(ValueError):
        parse_semver(value)  # type: ignore[arg-type]
    if value is not None:
        with pytest.raises(ValueError):
            parse_specifier(value)  # type: ignore[arg-type]


def test_messages_quote_like_json() -> None:
    with pytest.raises(ValueError) as caught:
        parse_semver("1.0")
    assert str(caught.value) == '"1.0" is not a semantic version (X.Y.Z)'


def test_strip_and_normalize() -> None:
    assert strip_v("v1.0.0") == "1.0.0" and strip_v("V2.0.0") == "2.0.0"
    assert strip_v("version") == "version" and strip_v("v") == "v" and strip_v("1.0.0") == "1.0.0"
    assert normalize_semver("v1.2.3-rc.1") == "1.2.3-rc.1"
    with pytest.raises(ValueError):
        normalize_semver("1.2")


def test_specifiers() -> None:
    assert parse_specifier("") == parse_specifier("*") == parse_specifier(None)  # type: ignore[arg-type]
    assert "9.9.9" in parse_specifier("*")
    spec = parse_specifier(" >=0.2,<0.4 ")
    assert "0.3.1" in spec and "0.4.0" not in spec and "0.1.9" not in spec
    for bad in ("=>1", "1.0.0", "latest", ">=1,<<2"):
        with pytest.raises(ValueError, match="not a version specifier"):
            parse_specifier(bad)


def test_equality_is_pep440() -> None:
    assert same_version("1.0.0-rc.1", "1.0.0-rc1")
    assert same_version("v1.0.0", "1.0.0")
    assert not same_version("1.0.0", "1.0.1")
    assert same_version("not-a-version", "not-a-version") and not same_version("a", "b")
    assert version_key("v1.10.0") > version_key("1.9.0")
    assert sorted(["1.0.0", "1.0.0-rc.1", "0.9.0", "1.0.0-alpha.1"], key=version_key) == [
        "0.9.0", "1.0.0-alpha.1", "1.0.0-rc.1", "1.0.0"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_any_text_parses_or_raises_value_error(text: str) -> None:
    try:
        version = parse_semver(text)
    except ValueError:
        return
    assert text.strip() == text and version == Version(strip_v(text))
