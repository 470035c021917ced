"""refs.parse_ref: every kind of install ref, and strings that are none of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkgmgr.errors import PkgmgrError
from pkgmgr.refs import Ref, parse_ref


def usage(text: str) -> PkgmgrError:
    with pytest.raises(PkgmgrError) as caught:
        parse_ref(text)
    assert caught.value.code == "usage" and caught.value.exit_code == 2
    return caught.value


def test_bare_name() -> None:
    assert parse_ref("review-pack") == Ref("name", "review-pack", name="review-pack", spec="")


@pytest.mark.parametrize("text, exact", [
    ("review-pack@1.2.3", "1.2.3"),
    ("review-pack@v1.2.3", "1.2.3"),
    ("review-pack@V0.1.0", "0.1.0"),
    ("review-pack@1.0.0-rc.1", "1.0.0-rc.1"),
    ("review-pack@1.0.0+build.5", "1.0.0+build.5"),
])
def test_exact_version(text: str, exact: str) -> None:
    ref = parse_ref(text)
    assert (ref.kind, ref.name, ref.exact, ref.spec) == ("name", "review-pack", exact, f"=={exact}")


@pytest.mark.parametrize("spec", [">=0.2,<0.4", "~=1.2", "==1.*", "!=0.3.0", ">1", " >=1.0"])
def test_specifier(spec: str) -> None:
    ref = parse_ref(f"review-pack@{spec}")
    assert (ref.kind, ref.name, ref.exact, ref.spec) == ("name", "review-pack", None, spec.strip())


@pytest.mark.parametrize("text", ["./ext", "../ext", ".", "/abs/ext.tar.gz", "dir/ext.zip", "a/b/c.tgz",
                                  "some/dir@1.0.0", "ext/"])
def test_paths(text: str) -> None:
    ref = parse_ref(text)
    assert (ref.kind, ref.path, ref.name) == ("path", Path(text), None)


def test_home_relative_path_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_ref("~/exts/demo").path == tmp_path / "exts" / "demo"
    assert parse_ref("~").path == tmp_path


@pytest.mark.parametrize("text, owner, repo, tag", [
    ("github:acme/review-pack", "acme", "review-pack", None),
    ("github:acme/review-pack@v1.2.0", "acme", "review-pack", "v1.2.0"),
    ("github:Acme-Corp/my.repo_name@release/2024", "Acme-Corp", "my.repo_name", "release/2024"),
    ("github:a/.github", "a", ".github", None),
])
def test_github(text: str, owner: str, repo: str, tag: str | None) -> None:
    ref = parse_ref(text)
    assert (ref.kind, ref.owner, ref.repo, ref.tag, ref.text) == ("github", owner, repo, tag, text)


@pytest.mark.parametrize("text", ["https://example.com/x.tar.gz", "http://127.0.0.1:8080/a.zip"])
def test_urls(text: str) -> None:
    assert parse_ref(text) == Ref("url", text, url=text)


@pytest.mark.parametrize("text", [
    "", " review-pack", "review-pack ", "review-pack\n", "Review-Pack", "review_pack", "r", "1review", "-x",
    "review-pack@", "review-pack@ ", "review-pack@@1", "review-pack@not a spec", "review-pack@>=>1",
    "x" * 65, "review-pack\x00", "./ok\x00/../../etc", "dir\x1b[31m/x", "ext\x7f",
    "github:", "github:acme", "github:acme/", "github:/repo", "github:acme/repo/extra", "github:-acme/repo",
    "github:acme/..", "github:acme/.", "github:acme/..@v1", "github:../repo", "github:acme/repo@",
    "github:acme/repo@v 1", "github:ac me/repo", "github:acme/re#po",
])
def test_hostile_or_malformed_strings_are_usage_errors(text: str) -> None:
    usage(text)


def test_a_bare_archive_name_gets_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "./ext.tar.gz" in (usage("ext.tar.gz").hint or "")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "My_Ext").mkdir()
    assert "./My_Ext" in (usage("My_Ext").hint or "")
    assert usage("Not_There").hint is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_string_is_a_ref_or_a_usage_error(text: str) -> None:
    try:
        ref = parse_ref(text)
    except PkgmgrError as error:
        assert error.code == "usage"
        return
    assert ref.kind in ("name", "path", "github", "url") and ref.text == text
    if ref.kind == "name":
        assert ref.name and ref.name == ref.name.lower() and "/" not in ref.name
