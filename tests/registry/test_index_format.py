"""The index format: strict parsers of registry.toml, entry files and index.json, and the
deterministic index.json writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkgmgr.errors import PkgmgrError, ValidationFailed
from pkgmgr.registry.index_format import (
    ENTRY_MAX_BYTES,
    INDEX_MAX_BYTES,
    build_index,
    entry_path,
    latest_version,
    parse_entry,
    parse_index,
    parse_registry,
    url_problem,
)
from tests.registry.helpers import RegistryDir

SHA = "a" * 64
ENTRY = f"""\
name = "marketing-linear"
description = "Marketing presets"
repository = "acme/marketing-linear"
tier = "community"

[[versions]]
version = "0.1.0"
url = "https://github.com/acme/marketing-linear/releases/download/v0.1.0/m.tar.gz"
sha256 = "{SHA}"
size = 18342
min_compozy_version = "0.5.0"
network_digest = ""
permissions = ["session.read"]
published = 2026-11-29T12:00:00Z
yanked = false

[[versions]]
version = "0.2.0-rc.1"
url = "archives/marketing-linear-0.2.0-rc.1.tar.gz"
sha256 = "{SHA}"
size = 1
min_compozy_version = "0.6.0"
"""
FILE = "extensions/ma/marketing-linear.toml"


def problems(exc: pytest.ExceptionInfo) -> list[tuple[str, str]]:
    return [(p.key, p.message) for p in exc.value.problems]


def test_entry_path_is_sharded_by_first_two_characters() -> None:
    assert entry_path("marketing-linear") == "extensions/ma/marketing-linear.toml"


def test_format_2_entry_paths_spread_by_a_hash_of_the_name() -> None:
    import hashlib

    digest = hashlib.sha256(b"compozy-linear").hexdigest()
    assert entry_path("compozy-linear", 2) == f"extensions/{digest[:2]}/{digest[2:4]}/compozy-linear.toml"
    tops = {entry_path(f"compozy-{i}", 2).split("/")[1] for i in range(2000)}
    assert len(tops) == 256  # a common prefix does not crowd one directory


def test_min_compozy_version_belongs_to_compozy_entries() -> None:
    without = ENTRY.replace('min_compozy_version = "0.5.0"\n', "")
    with pytest.raises(ValidationFailed) as exc:
        parse_entry(without.encode(), FILE)
    assert problems(exc) == [("versions[0]", "min_compozy_version is required in a Compozy extension's versions "
                                             "(the manifest's minimum Compozy version)")]
    terva = parse_entry(('host = "terva"\n' + without).encode(), FILE)
    assert [v.min_compozy_version for v in terva.versions] == ["0.0.0", "0.6.0"]


def test_parse_entry_reads_every_field() -> None:
    entry = parse_entry(ENTRY.encode(), FILE, expected_name="marketing-linear")
    assert entry.name == "marketing-linear" and entry.tier == "community" and entry.verified
    first, second = entry.versions
    assert first.permissions == ("session.read",) and first.published is not None and not first.yanked
    assert second.prerelease and second.network_digest == "" and second.published is None
    assert entry.latest == "0.1.0"


def test_parse_registry_requires_offset_datetime_for_expires() -> None:
    meta = parse_registry(b'[registry]\nformat = 1\nname = "acme"\nserial = 4\nexpires = 2027-01-01T00:00:00Z\n')
    assert meta.serial == 4 and meta.expires is not None and meta.expires.year == 2027
    with pytest.raises(ValidationFailed) as exc:
        parse_registry(b'[registry]\nformat = 1\nname = "acme"\nserial = 4\nexpires = "2027-01-01"\n')
    assert problems(exc) == [("registry.expires", "must be a TOML offset date-time such as 2027-01-01T00:00:00Z")]
    with pytest.raises(ValidationFailed):
        parse_registry(b'[registry]\nformat = 1\nname = "acme"\nserial = 4\nexpires = 2027-01-01T00:00:00\n')


@pytest.mark.parametrize(
    "document, key",
    [
        ('[registry]\nformat = 3\nname = "a"\nserial = 1\n', "registry.format"),
        ('[registry]\nformat = 1\nname = "a"\nserial = -1\n', "registry.serial"),
        ('[registry]\nformat = 1\nname = "a"\n', "registry"),
        ('[registry]\nformat = 1\nname = "a"\nserial = 1\nmirror = "x"\n', "registry.mirror"),
        ('other = 1\n[registry]\nformat = 1\nname = "a"\nserial = 1\n', "other"),
    ],
)
def test_parse_registry_is_strict(document: str, key: str) -> None:
    with pytest.raises(ValidationFailed) as exc:
        parse_registry(document.encode())
    assert exc.value.code == "invalid_index"
    assert key in [p.key for p in exc.value.problems]
    assert all(p.file == "registry.toml" for p in exc.value.problems)


def test_parse_entry_reports_every_problem_with_file_and_key() -> None:
    bad = ENTRY.replace('sha256 = "' + SHA + '"\nsize = 1\n', 'sha256 = "ABC"\nsize = 0\n') \
               .replace('version = "0.1.0"', 'version = "0.1"').replace("yanked = false", "yanked = false\nextra = 1")
    with pytest.raises(ValidationFailed) as exc:
        parse_entry(bad.encode(), FILE, expected_name="other-name")
    keys = [p.key for p in exc.value.problems]
    assert {"versions[0].extra", "versions[1].sha256", "versions[1].size", "versions[0].version", "name"} <= set(keys)
    assert all(p.file == FILE and p.code == "invalid_index" for p in exc.value.problems)


def test_versions_must_be_unique_and_sorted() -> None:
    swapped = ENTRY.replace('version = "0.2.0-rc.1"', 'version = "0.0.9"')
    with pytest.raises(ValidationFailed) as exc:
        parse_entry(swapped.encode(), FILE)
    assert problems(exc)[0][0] == "versions[1].version" and "out of order" in problems(exc)[0][1]
    twice = ENTRY.replace('version = "0.1.0"', 'version = "0.2.0-rc1"')  # PEP 440: the same as 0.2.0-rc.1
    with pytest.raises(ValidationFailed) as exc:
        parse_entry(twice.encode(), FILE)
    assert "listed twice" in problems(exc)[0][1]


@pytest.mark.parametrize(
    "url, ok",
    [
        ("https://example.com/a.tar.gz", True),
        ("http://127.0.0.1:8000/a.tar.gz", True),  # the http rule is applied when used
        ("archives/a.tar.gz", True),
        ("ftp://example.com/a", False),
        ("https://user:pw@example.com/a", False),
        ("https://example.com/a#frag", False),
        ("/etc/passwd", False),
        ("../outside.tar.gz", False),
        ("archives//a", False),
        ("a b.tar.gz", False),
        ("archives\\a", False),
        ("https:///nohost", False),
    ],
)
def test_url_rules(url: str, ok: bool) -> None:
    assert (url_problem(url) is None) is ok


def test_size_caps() -> None:
    with pytest.raises(ValidationFailed) as exc:
        parse_entry(b"#" * (ENTRY_MAX_BYTES + 1), FILE)
    assert "larger than 1 MiB" in str(exc.value)
    with pytest.raises(ValidationFailed):
        parse_index(b" " * (INDEX_MAX_BYTES + 1))


def test_latest_is_highest_stable_not_yanked_else_highest() -> None:
    assert latest_version([("1.0.0", False), ("1.1.0", True), ("2.0.0-rc.1", False)]) == "1.0.0"
    assert latest_version([("1.1.0", True), ("2.0.0-rc.1", False)]) == "2.0.0-rc.1"
    assert latest_version([]) is None


def test_build_index_is_deterministic_and_parses(tmp_path: Path) -> None:
    reg = RegistryDir(tmp_path / "r", "acme")
    reg.publish("zeta-ext", "1.0.0")
    reg.publish("alpha-ext", "0.2.0")
    reg.publish("alpha-ext", "0.3.0-beta.1")
    reg.publish("alpha-ext", "0.2.5", yanked=True, bump=False)
    first = build_index(reg.root)
    assert first == build_index(reg.root)
    doc = json.loads(first)
    assert [e["name"] for e in doc["extensions"]] == ["alpha-ext", "zeta-ext"]
    assert doc["serial"] == reg.serial
    assert doc["extensions"][0]["latest"] == "0.2.0"
    index = parse_index(first)
    assert index.extensions[0].versions[-1].version == "0.3.0-beta.1"


def test_build_index_refuses_misplaced_entries(tmp_path: Path) -> None:
    reg = RegistryDir(tmp_path / "r", "acme")
    reg.publish("alpha-ext", "0.2.0")
    (reg.root / "extensions" / "al" / "alpha-ext.toml").rename(reg.root / "extensions" / "al" / "alpha-two.toml")
    with pytest.raises(ValidationFailed) as exc:
        build_index(reg.root)
    assert exc.value.code == "invalid_index"


def test_shipped_default_registry_is_valid(repo_root: Path) -> None:
    root = repo_root / "registry_index"
    meta = parse_registry((root / "registry.toml").read_bytes())
    assert meta.name == "default"
    assert build_index(root) == (root / "index.json").read_bytes()


# --- hostile input never escapes as anything but PkgmgrError ------------------------------------

toml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20), st.floats(allow_nan=True)),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_random_bytes_never_crash(raw: bytes) -> None:
    for parse in (lambda b: parse_entry(b, FILE), parse_registry, parse_index):
        try:
            parse(raw)
        except PkgmgrError as error:
            assert error.code == "invalid_index"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["name", "tier", "versions", "description", "repository", "x"]),
                       toml_values, max_size=5),
       st.lists(st.dictionaries(st.sampled_from(["version", "url", "sha256", "size", "min_compozy_version",
                                                 "permissions", "published", "yanked", "network_digest"]),
                                toml_values, max_size=9), max_size=3))
def test_random_documents_never_crash(doc: dict, versions: list) -> None:
    import tomlkit

    doc = dict(doc)
    doc["versions"] = versions
    try:
        raw = tomlkit.dumps(_tomlable(doc)).encode()
    except Exception:  # noqa: BLE001 - hypothesis made something TOML cannot say
        return
    try:
        parse_entry(raw, FILE)
    except PkgmgrError as error:
        assert error.code == "invalid_index"
    try:
        parse_index(json.dumps({"format": 1, "serial": 1, "extensions": [doc]}).encode())
    except PkgmgrError as error:
        assert error.code == "invalid_index"
    except ValueError:
        pass  # json.dumps of NaN is fine; only the parser is under test


def _tomlable(value):  # noqa: ANN001, ANN202
    if isinstance(value, dict):
        return {str(k): _tomlable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_tomlable(v) for v in value if v is not None]
    return value


@pytest.mark.parametrize("raw", [
    b'{"format": 1, "serial": 1, "serial": 2, "extensions": []}',
    b'{"format": 1, "serial": 1, "extensions": [{"name": "a", "name": "b", "description": "", "tier": "community",'
    b' "latest": "1.0.0", "versions": []}]}',
], ids=["top-level", "in-a-record"])
def test_a_key_given_twice_in_index_json_is_an_index_error(raw: bytes) -> None:
    """Which of the two a JSON reader keeps is the reader's choice, not the registry's: refused, as
    format 2's summary files are."""
    with pytest.raises(ValidationFailed) as caught:
        parse_index(raw)
    assert caught.value.code == "invalid_index"
    assert "duplicate key" in caught.value.message


def test_deeply_nested_json_is_an_index_error() -> None:
    with pytest.raises(ValidationFailed):
        parse_index(b"[" * 100000 + b"]" * 100000)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["format", "serial", "extensions", "name", "description", "tier", "latest", "versions",
                        "version", "yanked", "min_compozy_version", "extra"]), toml_values)
def test_index_fast_check_never_accepts_what_the_schema_refuses(key: str, value: object) -> None:
    from pkgmgr.registry.index_format import _index_shape_ok
    from pkgmgr.schemas import schema_problems

    doc = {"format": 1, "serial": 3, "extensions": [{"name": "demo-ext", "description": "", "tier": "community",
                                                     "latest": "1.0.0", "versions": [
                                                         {"version": "1.0.0", "yanked": False,
                                                          "min_compozy_version": "0.5.0"}]}]}
    target = doc if key in doc or key == "extra" and value is None else \
        doc["extensions"][0] if key in doc["extensions"][0] or key == "extra" else doc["extensions"][0]["versions"][0]
    target[key] = value
    if _index_shape_ok(doc):
        assert schema_problems(doc, "index", file="index.json", code="invalid_index") == []


@pytest.mark.parametrize("text", ['name = "demo-ext\\n"', 'version = "0.1.0\\n"'])
def test_a_trailing_newline_is_not_part_of_a_name_or_version(text: str) -> None:
    # Python's `$` matches before a final newline: the checks must match the whole value
    from pkgmgr.registry.index_format import is_extension_name

    assert not is_extension_name("demo-ext\n")
    entry = ('name = "demo-ext"\ntier = "community"\n[[versions]]\nversion = "0.1.0"\n'
             'url = "archives/demo-ext-0.1.0.tar.gz"\nsha256 = "' + "a" * 64 + '"\nsize = 10\n'
             'min_compozy_version = "0.5.0"\n')
    key = text.split(" = ")[0]
    hostile = "\n".join(text if line.startswith(key + " = ") else line for line in entry.splitlines()) + "\n"
    with pytest.raises(ValidationFailed):
        parse_entry(hostile.encode(), "extensions/de/demo-ext.toml", expected_name="demo-ext")


@pytest.mark.parametrize("field", ["name", "version"])
def test_an_index_with_a_trailing_newline_in_a_name_or_version_is_invalid(field: str) -> None:
    from pkgmgr.resources_data import default_registry_dir

    doc = json.loads((default_registry_dir() / "index.json").read_text(encoding="utf-8"))
    extension = doc["extensions"][0]
    if field == "name":
        extension["name"] += "\n"
    else:
        extension["versions"][0]["version"] += "\n"
    with pytest.raises(ValidationFailed) as exc:
        parse_index(json.dumps(doc).encode(), "index.json")
    assert any(p.key.endswith(field) for p in exc.value.problems), exc.value.problems
